// The quote registry's single-use half: one actor per quote id, the one writer of the quote's use
// (single use, `src/domain/quote-use.ts`). A quote is priced by the edge and kept as an offer
// (src/ports/quote-offers.ts) until a transaction accepts it; the accepting transaction `claim`s it
// in the first stage of its saga, carrying the quote, and the actor adopts that quote as its state
// (with the use) when it has none: from then on the quote is durable (the actor's snapshot) and
// `loadQuote` finds it. The claim is answered with a `quote_claim_result` command; the transaction
// then `consume`s the quote (created) or `release`s it (created nothing).
//
// `create` (the actor pricing a request itself, its quote durable before the partner saw it) is
// what the edges of the release before quotes were offers sent; it is kept so that such a command
// still in a stream during a rolling upgrade is answered, and so are the tests and tools that
// create a quote directly through the actor. No edge of this release sends it.
import type { CorridorConfig, FeeConfig } from '../domain/corridors.ts';
import type { FiatCurrency } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import { priceQuoteRequest, quoteToJson, type QuoteRequest } from '../domain/pricing.ts';
import type { Quote } from '../domain/quote.ts';
import { claim, consume, releaseClaim, type QuoteClaimOutcome, type QuoteUse } from '../domain/quote-use.ts';
import type { SnapshotStore } from '../store/store.ts';
import { z } from 'zod';
import { decoderOf, idText, quoteSchema } from './commands.ts';
import { actorId, type ActorBehavior, type CommandMap, type CommandToSend, type JsonValue, type Outcome } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export const quoteActorType = 'quote';
/**
 * One document per quote, `{ partnerId, expiresAtMs }`, written with it: what the retention sweep
 * (src/service/retention.ts) reads, by expiry, to find expired quotes without scanning actors.
 */
export const quoteExpiryCollection = 'quote_expiry';

/** The kind of the command the quote actor sends back to a transaction that claimed it. */
export const quoteClaimResultKind = 'quote_claim_result';

export interface QuoteActorDeps {
  corridors(): CorridorConfig;
  rates(): Readonly<Partial<Record<FiatCurrency, Decimal>>>;
  partnerFee(partnerId: string): FeeConfig | undefined;
}

export interface CreateQuotePayload {
  readonly partnerId: string;
  readonly request: QuoteRequest;
}

/**
 * What a transaction sends to claim a quote (`partnerId`: the acceptance's, checked against the
 * quote's). `quote`: the quote the transaction accepted, adopted by an actor that has none yet (an
 * offer); absent in claims written by the release before quotes were offers.
 */
export interface ClaimQuotePayload {
  readonly transactionId: string;
  readonly partnerId: string;
  readonly quote?: Quote;
}

/** `release` and `consume`: the claiming transaction. */
export interface QuoteUsePayload {
  readonly transactionId: string;
}

/** The answer to a claim, as the claiming transaction receives it. */
export interface QuoteClaimResultPayload {
  readonly outcome: QuoteClaimOutcome | { readonly ok: false; readonly rejection: { readonly code: 'quote_not_found' } };
}

/** A quote's commands: its creation (from an edge of the previous release) and its use (from the accepting transaction). */
export type QuoteCommands = {
  readonly create: CreateQuotePayload;
  readonly claim: ClaimQuotePayload;
  readonly release: QuoteUsePayload;
  readonly consume: QuoteUsePayload;
};

// The request's fields are checked by the pricing core, which answers each with a reason the
// partner reads (`priceQuoteRequest`): here only their presence and type. `amount` is as sent.
const quoteRequestSchema: z.ZodType<QuoteRequest> = z.object({
  kind: z.enum(['payout', 'reverse', 'onramp']),
  amount: z.unknown(),
  cryptoCurrency: z.string(),
  network: z.string(),
  paymentMethod: z.string(),
  targetCurrency: z.string(),
});

const quoteUseSchema = z.object({ transactionId: idText });

export const quoteCommands: CommandMap<QuoteCommands> = {
  create: decoderOf<CreateQuotePayload>(z.object({ partnerId: idText, request: quoteRequestSchema }), { revive: false }),
  claim: decoderOf<ClaimQuotePayload>(z.object({ transactionId: idText, partnerId: idText, quote: quoteSchema.exactOptional() })),
  release: decoderOf<QuoteUsePayload>(quoteUseSchema),
  consume: decoderOf<QuoteUsePayload>(quoteUseSchema),
};

export type QuoteReply =
  | { readonly ok: true; readonly quote: JsonValue }
  | { readonly ok: false; readonly error: { code: string; reason: string; retryable: boolean } };

/** A quote and its use (null: never claimed, or given back). */
export interface QuoteRecord {
  readonly quote: Quote;
  readonly use: QuoteUse | null;
}

// Snapshot format: the quote's own fields, plus `acceptance` (the use) once claimed. A quote written
// before quotes were single-use has no `acceptance` and loads as unclaimed.
type QuoteSnapshot = Quote & { readonly acceptance?: QuoteUse };

function encodeQuoteRecord(record: QuoteRecord): JsonValue {
  return toJsonValue(record.use === null ? record.quote : { ...record.quote, acceptance: record.use });
}

function decodeQuoteRecord(json: JsonValue): QuoteRecord {
  const { acceptance, ...quote } = fromJsonValue<QuoteSnapshot>(json);
  return { quote, use: acceptance ?? null };
}

/** The quote and its use as the actor last wrote them; null when no quote has this id. */
export async function loadQuoteRecord(store: Pick<SnapshotStore, 'load'>, quoteId: string): Promise<QuoteRecord | null> {
  const snapshot = await store.load(actorId(quoteActorType, quoteId));
  return snapshot === null || snapshot.state === null ? null : decodeQuoteRecord(snapshot.state);
}

/**
 * The quote as its actor last wrote it; null when no quote has this id. Quotes written by earlier
 * versions also have a snapshot (besides a `quotes` read-model document), so they load here too.
 */
export async function loadQuote(store: Pick<SnapshotStore, 'load'>, quoteId: string): Promise<Quote | null> {
  return (await loadQuoteRecord(store, quoteId))?.quote ?? null;
}

/** The command a transaction sends to the quote it accepts (`kind`: claim, release or consume). */
export function quoteUseCommand(quoteId: string, kind: 'claim' | 'release' | 'consume', payload: ClaimQuotePayload | QuoteUsePayload): CommandToSend {
  return { actorType: quoteActorType, actorKey: quoteId, kind, payload: toJsonValue(payload) };
}

function claimResult(transactionId: string, outcome: QuoteClaimResultPayload['outcome']): CommandToSend {
  const payload: QuoteClaimResultPayload = { outcome };
  return { actorType: 'transaction', actorKey: transactionId, kind: quoteClaimResultKind, payload: toJsonValue(payload) };
}

/**
 * The record a claim works on: the actor's own, or else the quote the claim carries (an offer being
 * accepted), taken only when it is this actor's quote and the claiming partner's. Null: no quote.
 */
function claimedRecord(record: QuoteRecord | null, payload: ClaimQuotePayload, quoteId: string): QuoteRecord | null {
  if (record !== null) return record;
  const offered = payload.quote;
  return offered !== undefined && offered.id === quoteId && offered.partnerId === payload.partnerId ? { quote: offered, use: null } : null;
}

function handleClaim(state: QuoteRecord | null, payload: ClaimQuotePayload, quoteId: string): Outcome<QuoteRecord> {
  const record = claimedRecord(state, payload, quoteId);
  // No such quote for this partner: the edge answered that before asking, so only a bug gets here;
  // the transaction still needs an answer. (A write with no state: see docs/actors.md.)
  if (record === null || record.quote.partnerId !== payload.partnerId) {
    return { send: [claimResult(payload.transactionId, { ok: false, rejection: { code: 'quote_not_found' } })] };
  }
  const claimed = claim(record.use, payload.transactionId);
  // An adopted quote is written with its first use, and with the document retention reads by expiry
  // (a claim given back leaves an unclaimed quote, which the sweep removes after its grace).
  const adopted = state === null;
  return {
    ...(claimed.use !== record.use || adopted ? { state: { ...record, use: claimed.use } } : {}),
    ...(adopted ? { readModels: [expiryDocument(record.quote)] } : {}),
    send: [claimResult(payload.transactionId, claimed.outcome)],
  };
}

function expiryDocument(quote: Quote): { collection: string; id: string; doc: { partnerId: string; expiresAtMs: number } } {
  return { collection: quoteExpiryCollection, id: quote.id, doc: { partnerId: quote.partnerId, expiresAtMs: quote.expiresAtMs } };
}

function handleUse(record: QuoteRecord | null, kind: 'release' | 'consume', payload: QuoteUsePayload): Outcome<QuoteRecord> {
  if (record === null) return {};
  const use = kind === 'release' ? releaseClaim(record.use, payload.transactionId) : consume(record.use, payload.transactionId);
  return use === record.use ? {} : { state: { ...record, use } };
}

export function quoteBehavior(deps: QuoteActorDeps): ActorBehavior<QuoteRecord, QuoteCommands> {
  return {
    type: quoteActorType,
    // A repeated `create` is answered from the quote itself (below), so the dedupe log needs no
    // copy of the reply: a new quote is written once, as this snapshot. Claims, releases and
    // consumptions are deduplicated by the log: a claim delivered again after its transaction gave
    // the quote back must not take it again. (One delivered after the log forgot it does; its
    // refused transaction gives the claim back when the grant reaches it: transaction-actor.ts.)
    dedupeByState: (kind) => kind === 'create',
    encode: encodeQuoteRecord,
    decode: decodeQuoteRecord,
    commands: quoteCommands,
    handle(state, command, ctx) {
      switch (command.kind) {
        case 'claim':
          return handleClaim(state, command.payload, command.actorKey);
        case 'release':
        case 'consume':
          return handleUse(state, command.kind, command.payload);
        case 'create':
          break;
      }
      if (state !== null) {
        // The same quote id twice (a client reusing an id would be a bug upstream): answer as before.
        return { reply: { ok: true, quote: toJsonValue(quoteToJson(state.quote)) } };
      }
      const payload = command.payload;
      const priced = priceQuoteRequest(deps.corridors(), payload.request, {
        rates: deps.rates(),
        partnerFee: deps.partnerFee(payload.partnerId),
        quoteId: command.actorKey,
        partnerId: payload.partnerId,
        nowMs: ctx.nowMs,
      });
      if (!priced.ok) return { reply: { ok: false, error: { ...priced.error } } };
      return {
        state: { quote: priced.quote, use: null },
        reply: { ok: true, quote: toJsonValue(quoteToJson(priced.quote)) },
        readModels: [expiryDocument(priced.quote)],
      };
    },
  };
}
