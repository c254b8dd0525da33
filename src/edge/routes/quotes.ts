// POST /quote, /quote/reverse, /quote/onramp → the quote actor's `create`. Errors produced by the
// quote itself use the spec's quote error shape and codes (src/domain/quote-errors.ts):
// `invalid_request` for a body that is not the documented shape, then whatever pricing answers.
// Transport-level refusals (401 is `authentication_failed` already; 413, 415, 429 …) keep the
// toolkit's catalogue codes (docs/api.md), and so does a quote we cannot compute because the
// service is not reachable (Redis down, no shard worker, no reply in time): 503
// `service_unavailable` with Retry-After, as on every other endpoint — not a quote outcome.
import { quoteActorType, type CreateQuotePayload, type QuoteReply } from '../../actors/quote-actor.ts';
import type { JsonValue } from '../../actors/envelope.ts';
import type { QuoteRequest } from '../../domain/pricing.ts';
import type { QuoteKind } from '../../domain/quote.ts';
import { cryptoAssets, isOneOf, networks } from '../../domain/assets.ts';
import { quoteError, quoteErrorCodes, type QuoteErrorCode } from '../../domain/quote-errors.ts';
import { knownFields, type Ids } from '../idempotency.ts';
import { jsonResponse, jsonTextResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { lastObjectMemberText } from '../json-text.ts';
import { parseQuoteRoute } from '../schemas.ts';
import { randomUuid } from '../uuid.ts';
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

// Not `async`: it only returns the ask's promise (one promise layer less per quote); a throw is a
// bug and becomes the toolkit's 500 either way.
function createQuote(env: EdgeEnv, kind: QuoteKind, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const body = jsonObjectBody(request);
  if (!body.ok) return Promise.resolve(body.response);
  const parsed = quoteRequest(kind, body.value);
  if (!parsed.ok) return Promise.resolve(parsed.response);
  const quoteRequestValue = parsed.request;
  // A network/asset without a deposit setup is not listed in /public/corridors; quoting it is the
  // same `corridor_unavailable` as any other route that is not enabled.
  const { network, cryptoCurrency } = quoteRequestValue;
  const availability = env.deps.chainAvailability;
  if (availability && isOneOf(networks, network) && isOneOf(cryptoAssets, cryptoCurrency) && !availability.active(network, cryptoCurrency)) {
    return Promise.resolve(quoteErrorResponse('corridor_unavailable', `${cryptoCurrency} on ${network} is not available`));
  }
  return idempotentPost(env, request, partnerId, knownFields(body.value, quoteFields[kind]), newQuoteIds, (ids) => {
    const payload: CreateQuotePayload = { partnerId, request: quoteRequestValue };
    // One promise step from the reply text to the response (no decoded reply in between).
    return env.actors
      .askText(quoteActorType, idOf(ids, 'quoteId'), 'create', payload as unknown as JsonValue, idOf(ids, 'commandId'))
      .then(quoteReplyResponse, quoteAskFailed);
  });
}

function newQuoteIds(): Ids {
  return { quoteId: randomUuid(), commandId: randomUuid() };
}

/** How a created quote's reply starts when the quote actor's `{ ok: true, quote }` is JSON text. */
const quoteCreatedPrefix = '{"ok":true,"quote":';

/**
 * The HTTP answer to the quote actor's reply text. A created quote is answered with the reply's
 * `quote` text as it is: the runtime writes replies with JSON.stringify, so decoding and encoding
 * it again would give the same bytes. Anything else is decoded and mapped.
 */
export function quoteReplyResponse(replyText: string): HttpResponse {
  const quoteText = lastObjectMemberText(replyText, quoteCreatedPrefix);
  if (quoteText !== null) return jsonTextResponse(200, quoteText);
  const reply = JSON.parse(replyText) as QuoteReply;
  if (reply.ok) return jsonResponse(200, reply.quote);
  const code = isOneOf(quoteErrorCodes, reply.error.code) ? reply.error.code : 'server_error';
  return rejectionResponse(code, reply.error.reason, reply.error.retryable);
}

/** An infrastructure failure is the 503 of every endpoint (errors.ts); anything else is a bug (500). */
function quoteAskFailed(error: unknown): HttpResponse {
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
