// The quote registry: one actor per quote id. `create` prices the request with the pure pricing
// core, and the quote becomes durable (snapshot + the `quotes` read model) before the partner sees
// it, so an acceptance can always find the quote it names.
import type { CorridorConfig, FeeConfig } from '../domain/corridors.ts';
import type { FiatCurrency } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import { priceQuoteRequest, quoteToJson, type QuoteRequest } from '../domain/pricing.ts';
import type { Quote } from '../domain/quote.ts';
import type { ActorBehavior, JsonValue } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export const quoteActorType = 'quote';
export const quotesCollection = 'quotes';

export interface QuoteActorDeps {
  corridors(): CorridorConfig;
  rates(): Readonly<Partial<Record<FiatCurrency, Decimal>>>;
  partnerFee(partnerId: string): FeeConfig | undefined;
}

export interface CreateQuotePayload {
  readonly partnerId: string;
  readonly request: QuoteRequest;
}

export type QuoteReply =
  | { readonly ok: true; readonly quote: JsonValue }
  | { readonly ok: false; readonly error: { code: string; reason: string; retryable: boolean } };

/**
 * A quote's JSON form, computed once per quote object: a new quote is written twice, as the
 * actor's snapshot and inside its read-model document. (Quotes are immutable values.)
 */
const quoteJson = new WeakMap<Quote, JsonValue>();

function quoteToJsonValue(quote: Quote): JsonValue {
  let json = quoteJson.get(quote);
  if (json === undefined) {
    json = toJsonValue(quote);
    quoteJson.set(quote, json);
  }
  return json;
}

/** The read-model document of a quote (what acceptance loads). */
export function quoteDocument(quote: Quote): { [key: string]: JsonValue } {
  return { partnerId: quote.partnerId, expiresAtMs: quote.expiresAtMs, quote: quoteToJsonValue(quote) };
}

export function quoteFromDocument(doc: { [key: string]: JsonValue }): Quote {
  return fromJsonValue<Quote>(doc.quote ?? null);
}

export function quoteBehavior(deps: QuoteActorDeps): ActorBehavior<Quote> {
  return {
    type: quoteActorType,
    encode: (state) => quoteToJsonValue(state),
    decode: (json) => fromJsonValue<Quote>(json),
    handle(state, command, ctx) {
      if (command.kind !== 'create') {
        return { reply: { ok: false, error: { code: 'invalid_request', reason: `unknown command ${command.kind}`, retryable: false } } };
      }
      if (state !== null) {
        // The same quote id twice (a client reusing an id would be a bug upstream): answer as before.
        return { reply: { ok: true, quote: quoteToJson(state) as unknown as JsonValue } };
      }
      const payload = command.payload as unknown as CreateQuotePayload;
      const priced = priceQuoteRequest(deps.corridors(), payload.request, {
        rates: deps.rates(),
        partnerFee: deps.partnerFee(payload.partnerId),
        quoteId: command.actorKey,
        partnerId: payload.partnerId,
        nowMs: ctx.nowMs,
      });
      if (!priced.ok) return { reply: { ok: false, error: { ...priced.error } } };
      return {
        state: priced.quote,
        reply: { ok: true, quote: quoteToJson(priced.quote) as unknown as JsonValue },
        readModels: [{ collection: quotesCollection, id: priced.quote.id, doc: quoteDocument(priced.quote) }],
      };
    },
  };
}
