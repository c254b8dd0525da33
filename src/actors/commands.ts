// Decoders for typed actor commands (`CommandMap` in src/actors/envelope.ts: the runtime decodes
// and checks every command on arrival with its actor type's map). Payloads are JSON with exact decimals tagged (src/actors/state-codec.ts): a decoder revives
// them, then checks the shape with zod, whose schemas are typed against the actor's own command
// types (a schema that drifts from its type does not compile).
import { z } from 'zod';
import { cryptoAssets, fiatCurrencies, networks, paymentMethods } from '../domain/assets.ts';
import type { AcceptanceRejection } from '../domain/limits.ts';
import type { Decimal } from '../domain/money.ts';
import { feeTypes, type Quote } from '../domain/quote.ts';
import type { ActorBehavior, CommandEnvelope, CommandPayloads, Decoded, JsonValue, PayloadDecoder, TypedCommand } from './envelope.ts';
import { fromJsonValue } from './state-codec.ts';

/** Longest reason kept in a log line or a reply (a payload may be large and partner-shaped). */
const reasonCharsMax = 300;

/**
 * A decoder from a zod schema typed as the payload: revive the decimals, then check the shape.
 * `revive: false` for a payload that holds none but carries a partner's raw JSON (a quote
 * request's amount, checked by the pricing core as sent).
 */
export function decoderOf<P>(schema: z.ZodType<P>, options: { readonly revive?: boolean } = {}): PayloadDecoder<P> {
  return (payload) => {
    let revived: unknown = payload;
    try {
      if (options.revive !== false) revived = fromJsonValue<unknown>(payload);
    } catch (error) {
      return { ok: false, reason: `bad decimal: ${String(error)}`.slice(0, reasonCharsMax) };
    }
    const parsed = schema.safeParse(revived);
    if (parsed.success) return { ok: true, value: parsed.data };
    const reason = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(payload)'}: ${issue.message}`).join('; ');
    return { ok: false, reason: reason.slice(0, reasonCharsMax) };
  };
}

/**
 * A command with its payload decoded by its actor type's command map, as `handle` receives it; a
 * kind not in the map is malformed too. An actor type without a map gets the command as it came.
 * The runtime decodes every command on arrival with this (src/actors/runtime.ts).
 */
export function decodeArrived<C extends CommandPayloads>(behavior: Pick<ActorBehavior<unknown, C>, 'type' | 'commands'>, command: CommandEnvelope): Decoded<TypedCommand<C>> {
  const map: Readonly<Record<string, PayloadDecoder<unknown>>> | undefined = behavior.commands;
  // Without a map, the actor takes any kind with its JSON payload (`Commands` is then the default,
  // kind → JsonValue): the command as it came is that.
  if (map === undefined) return { ok: true, value: command as TypedCommand<C> };
  const decoder = Object.hasOwn(map, command.kind) ? map[command.kind] : undefined;
  if (decoder === undefined) return { ok: false, reason: `unknown command kind for ${behavior.type}` };
  const payload = decoder(command.payload);
  if (!payload.ok) return payload;
  // The decoded payload is no longer JSON (exact decimals are revived): it goes to `handle` only,
  // never back onto the wire or into the store (those keep the envelope as it came). The map's
  // decoder for this kind made it, so it is this kind's payload: TypeScript cannot correlate a
  // kind looked up at run time with its entry in the map, hence the assertion.
  return { ok: true, value: { ...command, payload: payload.value } as TypedCommand<C> };
}

/** For a kind whose payload the handler does not read (e.g. a timer's): anything is accepted. */
export const ignoredPayload: PayloadDecoder<JsonValue> = (payload) => ({ ok: true, value: payload });

// ---------------------------------------------------------------------------------------------
// Schemas shared by several actors

function isDecimal(value: unknown): value is Decimal {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Decimal>;
  return typeof candidate.units === 'bigint' && typeof candidate.scale === 'number' && Number.isSafeInteger(candidate.scale) && candidate.scale >= 0;
}

/** An exact decimal (revived from its `{ decimal__: "…" }` tag). */
export const decimalSchema = z.custom<Decimal>(isDecimal, { message: 'expected an exact decimal' });

/** A decimal that is never negative (amounts). */
export const amountSchema = decimalSchema.refine((value) => value.units >= 0n, { message: 'expected a non-negative amount' });

/** Any JSON value (kept as it is: e.g. payment instructions handed back to the partner). */
export const jsonValueSchema = z.custom<JsonValue>(() => true);

/** An id (transaction, partner, quote, chain transaction, actor key): non-empty, bounded. */
export const idText = z.string().min(1).max(1_000);
export const networkSchema = z.enum(networks);
export const cryptoAssetSchema = z.enum(cryptoAssets);
export const paymentMethodSchema = z.enum(paymentMethods);
export const fiatCurrencySchema = z.enum(fiatCurrencies);

export const quoteSchema: z.ZodType<Quote> = z.object({
  id: idText,
  partnerId: idText,
  kind: z.enum(['payout', 'reverse', 'onramp']),
  direction: z.enum(['payout', 'onramp']),
  network: networkSchema,
  cryptoCurrency: cryptoAssetSchema,
  paymentMethod: paymentMethodSchema,
  targetCurrency: fiatCurrencySchema,
  tokenDecimals: z.number().int().min(0).max(36),
  sourceAmount: amountSchema,
  targetAmount: amountSchema,
  fee: z.object({ amount: amountSchema, currency: cryptoAssetSchema, type: z.enum(feeTypes) }),
  rate: decimalSchema,
  createdAtMs: z.number().int(),
  expiresAtMs: z.number().int(),
});

/** Every acceptance rejection (src/domain/limits.ts), as a counter or the quote answers one. */
export const acceptanceRejectionSchema: z.ZodType<AcceptanceRejection> = z.discriminatedUnion('code', [
  z.object({ code: z.literal('user_disabled') }),
  z.object({ code: z.literal('quote_not_found') }),
  z.object({ code: z.literal('quote_expired') }),
  z.object({ code: z.literal('quote_used'), transactionId: idText }),
  z.object({ code: z.literal('quote_in_use') }),
  z.object({ code: z.literal('transaction_cap'), method: paymentMethodSchema, cap: decimalSchema }),
  z.object({ code: z.literal('kyb_cap'), cap: decimalSchema }),
  z.object({ code: z.literal('rail_unavailable'), method: paymentMethodSchema }),
  z.object({ code: z.literal('account_unverifiable') }),
  z.object({ code: z.literal('liquidity_insufficient') }),
  z.object({ code: z.literal('user_daily_count_cap'), method: paymentMethodSchema, countCap: z.number().int() }),
  z.object({ code: z.literal('user_daily_amount_cap'), method: paymentMethodSchema, cap: decimalSchema }),
  z.object({ code: z.literal('method_daily_cap'), method: paymentMethodSchema }),
]);
