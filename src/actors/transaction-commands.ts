// The transaction actor's commands: the acceptance (from the edge), the answers of the saga's
// steps (from the counters and the quote), its payment expiry timer, and the facts of its life
// (deposits, payout and delivery outcomes, refunds), each checked on arrival (src/actors/envelope.ts,
// "Typed commands").
import { z } from 'zod';
import type { AcceptanceRequest, ReservationOutcome } from '../domain/acceptance.ts';
import type { TransactionCommand } from '../domain/transaction.ts';
import {
  acceptanceRejectionSchema,
  amountSchema,
  cryptoAssetSchema,
  decoderOf,
  idText,
  ignoredPayload,
  jsonValueSchema,
  networkSchema,
  quoteSchema,
} from './commands.ts';
import type { ReservationResultPayload } from './counter-actor.ts';
import type { CommandMap, JsonValue, PayloadDecoder } from './envelope.ts';
import type { QuoteClaimResultPayload } from './quote-actor.ts';

/**
 * What the edge sends to accept a quote (it has checked auth, scoping, shapes and the account):
 * what acceptance decides on (src/domain/acceptance.ts), and what the transaction is created with.
 */
export interface AcceptPayload extends AcceptanceRequest {
  readonly accountNumber: string | null;
  readonly qrCode: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
  /** The deposit (or charge) instructions fixed for this transaction; returned on acceptance. */
  readonly paymentContext: JsonValue;
}

/** The facts a live transaction takes, by kind (the kind is also in the payload). */
type Fact<K extends TransactionCommand['kind']> = Extract<TransactionCommand, { kind: K }>;

export type TransactionCommands = {
  readonly accept: AcceptPayload;
  readonly reservation_result: ReservationResultPayload;
  readonly quote_claim_result: QuoteClaimResultPayload;
  /** The payment expiry (its payload, the due time, is the runtime's). */
  readonly timer: JsonValue;
  /** Sandbox mode only: the transaction's clock is advanced to its expiry, now (docs/sandbox.md). */
  readonly sandbox_expire: JsonValue;
  readonly DepositDetected: Fact<'DepositDetected'>;
  readonly PixPaymentReceived: Fact<'PixPaymentReceived'>;
  readonly PayoutSucceeded: Fact<'PayoutSucceeded'>;
  readonly PayoutFailed: Fact<'PayoutFailed'>;
  readonly CryptoDelivered: Fact<'CryptoDelivered'>;
  readonly CryptoDeliveryFailed: Fact<'CryptoDeliveryFailed'>;
  readonly RefundSettled: Fact<'RefundSettled'>;
};

const text = z.string().max(2_000);
const nullableText = text.nullable();

const acceptSchema: z.ZodType<AcceptPayload> = z.object({
  partnerId: idText,
  userId: idText,
  quote: quoteSchema,
  accountNumber: nullableText,
  qrCode: nullableText,
  taxId: nullableText,
  externalId: nullableText,
  kycEnabled: z.boolean(),
  kycApproved: z.boolean(),
  kybApproved: z.boolean(),
  liquidity: amountSchema.nullable(),
  railAvailable: z.boolean(),
  paymentContext: jsonValueSchema,
});

const reservationOutcomeSchema: z.ZodType<ReservationOutcome> = z.union([
  z.object({ ok: z.literal(true) }),
  z.object({ ok: z.literal(false), rejection: acceptanceRejectionSchema }),
  z.object({ ok: z.literal(false), kycRequired: z.literal(true) }),
]);

const quoteClaimResultSchema: z.ZodType<QuoteClaimResultPayload> = z.object({
  outcome: z.union([
    z.object({ ok: z.literal(true) }),
    z.object({
      ok: z.literal(false),
      rejection: z.discriminatedUnion('code', [z.object({ code: z.literal('quote_used'), transactionId: idText }), z.object({ code: z.literal('quote_in_use') })]),
    }),
    z.object({ ok: z.literal(false), rejection: z.object({ code: z.literal('quote_not_found') }) }),
  ]),
});

function fact<K extends TransactionCommand['kind']>(schema: z.ZodType<Fact<K>>): PayloadDecoder<Fact<K>> {
  return decoderOf(schema);
}

export const transactionCommands: CommandMap<TransactionCommands> = {
  accept: decoderOf(acceptSchema),
  reservation_result: decoderOf<ReservationResultPayload>(
    z.object({ window: z.enum(['userDay', 'methodDay', 'kycMonth', 'kyb']), outcome: reservationOutcomeSchema }),
  ),
  quote_claim_result: decoderOf(quoteClaimResultSchema),
  timer: ignoredPayload,
  sandbox_expire: ignoredPayload,
  DepositDetected: fact<'DepositDetected'>(
    z.object({
      kind: z.literal('DepositDetected'),
      onChainId: idText,
      amount: amountSchema,
      network: networkSchema,
      asset: cryptoAssetSchema,
      sender: text,
      depositKey: idText.exactOptional(),
    }),
  ),
  PixPaymentReceived: fact<'PixPaymentReceived'>(z.object({ kind: z.literal('PixPaymentReceived'), providerPaymentId: idText, amount: amountSchema })),
  PayoutSucceeded: fact<'PayoutSucceeded'>(z.object({ kind: z.literal('PayoutSucceeded'), railReference: text })),
  PayoutFailed: fact<'PayoutFailed'>(z.object({ kind: z.literal('PayoutFailed'), reason: text, railReference: nullableText })),
  CryptoDelivered: fact<'CryptoDelivered'>(z.object({ kind: z.literal('CryptoDelivered'), onChainId: idText })),
  CryptoDeliveryFailed: fact<'CryptoDeliveryFailed'>(z.object({ kind: z.literal('CryptoDeliveryFailed'), reason: text })),
  RefundSettled: fact<'RefundSettled'>(z.object({ kind: z.literal('RefundSettled'), depositId: idText, refundOnChainId: idText })),
};
