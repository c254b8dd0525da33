// The quote registry: one actor per quote id. `create` prices the request with the pure pricing
// core, and the quote becomes durable (the actor's snapshot) before the partner sees it, so an
// acceptance can always find the quote it names (`loadQuote`).
import type { CorridorConfig, FeeConfig } from '../domain/corridors.ts';
import type { FiatCurrency } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import { priceQuoteRequest, quoteToJson, type QuoteRequest } from '../domain/pricing.ts';
import type { Quote } from '../domain/quote.ts';
import type { SnapshotStore } from '../store/store.ts';
import { actorId, type ActorBehavior, type JsonValue } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export const quoteActorType = 'quote';

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
 * The quote as its actor last wrote it; null when no quote has this id. Quotes written by earlier
 * versions also have a snapshot (besides a `quotes` read-model document), so they load here too.
 */
export async function loadQuote(store: Pick<SnapshotStore, 'load'>, quoteId: string): Promise<Quote | null> {
  const snapshot = await store.load(actorId(quoteActorType, quoteId));
  return snapshot === null || snapshot.state === null ? null : decodeQuote(snapshot.state);
}

function decodeQuote(json: JsonValue): Quote {
  return fromJsonValue<Quote>(json);
}

export function quoteBehavior(deps: QuoteActorDeps): ActorBehavior<Quote> {
  return {
    type: quoteActorType,
    // A repeated `create` is answered from the quote itself (below), so the dedupe log needs no
    // copy of the reply: a new quote is written once, as this snapshot.
    dedupeByState: true,
    encode: (state) => toJsonValue(state),
    decode: decodeQuote,
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
      };
    },
  };
}
