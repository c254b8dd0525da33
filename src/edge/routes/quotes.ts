// POST /quote, /quote/reverse, /quote/onramp: the edge prices the request itself with the pure
// pricing core (corridors, rates and partner fees are all in its context) and keeps the quote as an
// offer (src/ports/quote-offers.ts) until a transaction accepts it: no actor, no durable write and
// no round trip through a shard (docs/actors.md, "Quotes are offers"). Errors produced by the quote
// itself use the spec's quote error shape and codes (src/domain/quote-errors.ts): `invalid_request`
// for a body that is not the documented shape, then whatever pricing answers, and
// `quote_unavailable` (retryable) when the partner already holds its share of valid quotes.
// Transport-level refusals (401 is `authentication_failed` already; 413, 415, 429 …) keep the
// toolkit's catalogue codes (docs/api.md), and so does a quote we cannot keep because Redis does not
// answer: 503 `service_unavailable` with Retry-After, as on every other endpoint.
import { randomUUID } from 'node:crypto';
import { priceQuoteRequest, quoteToJson, type QuoteRequest } from '../../domain/pricing.ts';
import type { Quote, QuoteKind } from '../../domain/quote.ts';
import { cryptoAssets, isOneOf, networks } from '../../domain/assets.ts';
import { quoteError, type QuoteErrorCode } from '../../domain/quote-errors.ts';
import { idempotencyHeader, knownFields, type Ids } from '../idempotency.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { parseQuoteRoute } from '../schemas.ts';
import { rejectionResponse, unavailableResponse } from '../errors.ts';
import { idOf, idempotentPost, jsonObjectBody, partnerOf, type EdgeEnv } from './common.ts';

const amountFields: Readonly<Record<QuoteKind, 'amount' | 'source_amount' | 'fiat_amount'>> = {
  payout: 'amount',
  reverse: 'source_amount',
  onramp: 'fiat_amount',
};

/** Every body field a quote of each kind reads; the Idempotency-Key fingerprint covers these only. */
const quoteFields: Readonly<Record<QuoteKind, readonly string[]>> = {
  payout: ['amount', 'crypto_currency', 'network', 'payment_method', 'target_currency'],
  reverse: ['source_amount', 'crypto_currency', 'network', 'payment_method', 'target_currency'],
  onramp: ['fiat_amount', 'crypto_currency', 'network', 'payment_method', 'target_currency'],
};

function quoteErrorResponse(code: QuoteErrorCode, reason: string): HttpResponse {
  const error = quoteError(code, reason);
  return rejectionResponse(error.code, error.reason, error.retryable);
}

/** The body's quote request, or the quote error for a body that is not the documented shape. */
function quoteRequest(kind: QuoteKind, body: Record<string, unknown>): { ok: true; request: QuoteRequest } | { ok: false; response: HttpResponse } {
  const amount = body[amountFields[kind]];
  if (amount === undefined) return { ok: false, response: quoteErrorResponse('invalid_request', `${amountFields[kind]} is required`) };
  // The wire type is number; anything else never reaches the actor (pricing would refuse it too).
  if (typeof amount !== 'number') return { ok: false, response: quoteErrorResponse('invalid_request', `${amountFields[kind]} must be a number`) };
  const parsed = parseQuoteRoute(body);
  if (!parsed.ok) return { ok: false, response: quoteErrorResponse('invalid_request', parsed.reason) };
  const route = parsed.value;
  return {
    ok: true,
    request: {
      kind,
      amount,
      cryptoCurrency: route.crypto_currency,
      network: route.network,
      paymentMethod: route.payment_method,
      targetCurrency: route.target_currency,
    },
  };
}

async function createQuote(env: EdgeEnv, kind: QuoteKind, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const parsed = quoteRequest(kind, body.value);
  if (!parsed.ok) return parsed.response;
  const quoteRequestValue = parsed.request;
  // A network/asset without a deposit setup is not listed in /public/corridors; quoting it is the
  // same `corridor_unavailable` as any other route that is not enabled.
  const { network, cryptoCurrency } = quoteRequestValue;
  const availability = env.deps.chainAvailability;
  if (availability && isOneOf(networks, network) && isOneOf(cryptoAssets, cryptoCurrency) && !availability.active(network, cryptoCurrency)) {
    return quoteErrorResponse('corridor_unavailable', `${cryptoCurrency} on ${network} is not available`);
  }
  return idempotentPost(env, request, partnerId, knownFields(body.value, quoteFields[kind]), newQuoteIds, async (ids) => {
    try {
      return await priceAndOffer(env, partnerId, quoteRequestValue, idOf(ids, 'quoteId'), request.headers[idempotencyHeader] !== undefined);
    } catch (error) {
      return quoteOfferFailed(error);
    }
  });
}

/**
 * Prices the request and keeps the quote as an offer. A retry of a first attempt that stored its
 * offer (same Idempotency-Key, same quote id) is answered with that offer unchanged, never repriced:
 * the store keeps the first one, and a retry that pricing would now refuse looks for it first
 * (`keyed`: only a request with an Idempotency-Key can be such a retry). That lookup never turns a
 * pricing refusal into a 503: if Redis does not answer, the refusal stands.
 */
async function priceAndOffer(env: EdgeEnv, partnerId: string, quoteRequestValue: QuoteRequest, quoteId: string, keyed: boolean): Promise<HttpResponse> {
  const priced = priceQuoteRequest(env.ctx.config.corridors(), quoteRequestValue, {
    rates: env.ctx.config.rates(),
    partnerFee: env.ctx.partners.get(partnerId)?.fees,
    quoteId,
    partnerId,
    nowMs: env.ctx.clock.nowMs(),
  });
  if (!priced.ok) {
    const earlier = keyed ? await env.ctx.quoteOffers.find(partnerId, quoteId).catch(() => null) : null;
    return earlier === null ? quoteErrorResponse(priced.error.code, priced.error.reason) : quoteResponse(earlier);
  }
  const offered = await env.ctx.quoteOffers.offer(priced.quote);
  if (offered.ok) return quoteResponse(offered.offer);
  return quoteErrorResponse(
    'quote_unavailable',
    `This partner already holds ${offered.perPartnerMax} quotes that are still valid; accept some or let them expire, then quote again`,
  );
}

function newQuoteIds(): Ids {
  return { quoteId: randomUUID() };
}

function quoteResponse(quote: Quote): HttpResponse {
  return jsonResponse(200, quoteToJson(quote));
}

/** An infrastructure failure is the 503 of every endpoint (errors.ts); anything else is a bug (500). */
function quoteOfferFailed(error: unknown): HttpResponse {
  const response = unavailableResponse(error);
  if (response !== null) return response;
  throw error;
}

export function quoteRoutes(env: EdgeEnv): Route[] {
  const route = (pattern: string, kind: QuoteKind): Route => ({
    method: 'POST',
    pattern,
    guard: env.partnerGuard,
    handler: (request) => createQuote(env, kind, request),
  });
  return [route('/quote', 'payout'), route('/quote/reverse', 'reverse'), route('/quote/onramp', 'onramp')];
}
