// A settlement receipt: the document a partner hands its end user or its auditor after a payout
// (or an onramp delivery, or a refund), tying together the deposit, the rail's payment, the quote's
// rate and fee, and the time of each step. Built here from the transaction's own state, purely; the
// edge signs its RFC 8785 bytes (src/domain/canonical-json.ts, src/edge/receipt-signing.ts).
// Choices (docs/receipts.md):
// - Only a transaction whose money has finished moving has one: PAYMENT_COMPLETED, or a primary
//   deposit whose refund settled. Anything else is `receipt_not_available` (409): a receipt is
//   never issued for money still in flight.
// - Every amount is a decimal string at its own scale (never a JSON number: a signed float would
//   be a different receipt on every parser); every time is RFC 3339 UTC with milliseconds.
// - Nothing in it changes once issued: no "issued at". The same transaction always gives the same
//   receipt, so the same key always gives the same signature (Ed25519 is deterministic).
import { methodCurrency, type CryptoAsset, type FiatCurrency, type Network, type PaymentMethod } from './assets.ts';
import { toPlainString, type Decimal } from './money.ts';
import type { Direction, Quote } from './quote.ts';
import type { Deposit, RefundState, Settlement, TransactionStatus } from './transaction.ts';

/** Bumped when a field's meaning changes; a verifier reads it before anything else. */
export const receiptVersion = 1;

/** What a receipt is built from: the transaction's read model (src/actors/transaction-actor.ts). */
export interface ReceiptSource {
  readonly id: string;
  readonly reference: string;
  readonly userId: string;
  readonly direction: Direction;
  readonly status: TransactionStatus;
  readonly quote: Quote;
  readonly createdAtMs: number;
  readonly deposit: Deposit | null;
  readonly settlement: Settlement | null;
  readonly refund: RefundState | null;
  readonly refundOnChainId: string | null;
  readonly refundTimes: { readonly requestedAtMs: number | null; readonly settledAtMs: number | null } | null;
}

export type ReceiptDeposit =
  | { readonly rail: 'chain'; readonly network: Network; readonly asset: CryptoAsset; readonly hash: string; readonly amount: string; readonly received_at: string }
  | { readonly rail: 'pix'; readonly payment_id: string; readonly amount: string; readonly currency: 'BRL'; readonly received_at: string };

export type ReceiptSettlement =
  | {
      readonly kind: 'payout';
      readonly rail: PaymentMethod;
      readonly payment_id: string;
      readonly amount: string;
      readonly currency: FiatCurrency;
      readonly requested_at: string | null;
      readonly completed_at: string;
    }
  | {
      readonly kind: 'delivery';
      readonly network: Network;
      readonly asset: CryptoAsset;
      readonly hash: string;
      readonly amount: string;
      readonly requested_at: string | null;
      readonly completed_at: string;
    };

export interface SettlementReceipt {
  readonly receipt_version: number;
  readonly transaction_id: string;
  readonly transaction_reference: string;
  readonly user_id: string;
  readonly direction: Direction;
  /** `PAYMENT_COMPLETED`, or the status a refunded transaction ended in. */
  readonly status: TransactionStatus;
  readonly outcome: 'settled' | 'refunded';
  readonly quote: {
    readonly id: string;
    readonly source_amount: string;
    readonly source_currency: string;
    readonly target_amount: string;
    readonly target_currency: string;
    /** Fiat units per one crypto unit, as quoted. */
    readonly rate: string;
    readonly fee: { readonly amount: string; readonly currency: CryptoAsset; readonly type: string };
    readonly created_at: string;
  };
  readonly deposit: ReceiptDeposit;
  /** The payout (or delivery); null when the transaction was refunded instead. */
  readonly settlement: ReceiptSettlement | null;
  /** The deposit's return; null when the money went out as quoted. */
  readonly refund: { readonly refund_id: string; readonly requested_at: string | null; readonly settled_at: string | null } | null;
  readonly created_at: string;
}

export type ReceiptOutcome = { readonly ok: true; readonly receipt: SettlementReceipt } | { readonly ok: false; readonly reason: string };

function at(ms: number): string {
  return new Date(ms).toISOString();
}

function atOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : at(ms);
}

function amount(value: Decimal): string {
  return toPlainString(value);
}

function depositOf(deposit: Deposit): ReceiptDeposit {
  if (deposit.rail === 'pix') {
    return { rail: 'pix', payment_id: deposit.id, amount: amount(deposit.amount), currency: 'BRL', received_at: at(deposit.receivedAtMs) };
  }
  return { rail: 'chain', network: deposit.network, asset: deposit.asset, hash: deposit.id, amount: amount(deposit.amount), received_at: at(deposit.receivedAtMs) };
}

/** The payout (fiat out) or delivery (crypto out) that completed the transaction. */
function settlementOf(source: ReceiptSource, settlement: Settlement, reference: string, finishedAtMs: number): ReceiptSettlement {
  const { quote } = source;
  if (source.direction === 'onramp') {
    return {
      kind: 'delivery',
      network: quote.network,
      asset: quote.cryptoCurrency,
      hash: reference,
      amount: amount(quote.targetAmount),
      requested_at: atOrNull(settlement.requestedAtMs),
      completed_at: at(finishedAtMs),
    };
  }
  return {
    kind: 'payout',
    rail: quote.paymentMethod,
    payment_id: reference,
    amount: amount(quote.targetAmount),
    currency: methodCurrency[quote.paymentMethod],
    requested_at: atOrNull(settlement.requestedAtMs),
    completed_at: at(finishedAtMs),
  };
}

function quoteOf(quote: Quote): SettlementReceipt['quote'] {
  const sourceCurrency = quote.direction === 'onramp' ? quote.targetCurrency : quote.cryptoCurrency;
  const targetCurrency = quote.direction === 'onramp' ? quote.cryptoCurrency : quote.targetCurrency;
  return {
    id: quote.id,
    source_amount: amount(quote.sourceAmount),
    source_currency: sourceCurrency,
    target_amount: amount(quote.targetAmount),
    target_currency: targetCurrency,
    rate: amount(quote.rate),
    fee: { amount: amount(quote.fee.amount), currency: quote.fee.currency, type: quote.fee.type },
    created_at: at(quote.createdAtMs),
  };
}

/** The receipt of a transaction whose money finished moving, or why there is none yet. */
export function settlementReceipt(source: ReceiptSource): ReceiptOutcome {
  const { deposit, settlement } = source;
  if (deposit === null) return { ok: false, reason: `No receipt yet: the transaction is ${source.status} and no deposit was received` };
  const common = {
    receipt_version: receiptVersion,
    transaction_id: source.id,
    transaction_reference: source.reference,
    user_id: source.userId,
    direction: source.direction,
    status: source.status,
    quote: quoteOf(source.quote),
    deposit: depositOf(deposit),
    created_at: at(source.createdAtMs),
  };
  if (source.status === 'PAYMENT_COMPLETED') {
    if (settlement === null || settlement.state !== 'succeeded' || settlement.reference === null || settlement.finishedAtMs === null) {
      return { ok: false, reason: 'No receipt: the completed transaction predates receipts (its settlement was not recorded)' };
    }
    const completed = settlementOf(source, settlement, settlement.reference, settlement.finishedAtMs);
    return { ok: true, receipt: { ...common, outcome: 'settled', settlement: completed, refund: null } };
  }
  if (source.refund === 'settled' && source.refundOnChainId !== null) {
    const times = source.refundTimes;
    const refund = { refund_id: source.refundOnChainId, requested_at: atOrNull(times?.requestedAtMs), settled_at: atOrNull(times?.settledAtMs) };
    return { ok: true, receipt: { ...common, outcome: 'refunded', settlement: null, refund } };
  }
  const waiting = source.refund === 'pending' ? 'its refund has not settled yet' : 'the money has not finished moving';
  return { ok: false, reason: `No receipt yet: the transaction is ${source.status} and ${waiting}; a receipt exists once it is PAYMENT_COMPLETED or its deposit is refunded` };
}
