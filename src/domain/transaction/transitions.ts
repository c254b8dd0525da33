// Which command may run in which status, and for which direction: two tables, read by decide
// (before the command's own rules) and by the decision's outcome check.
import type { Direction } from '../quote.ts';
import type { TransactionCommandKind, TransactionStatus } from './types.ts';

// ---------------------------------------------------------------------------------------------
// The transition table: for each status and command kind, the statuses the transaction can be in
// after the command is accepted. An empty list means the command is an illegal transition there.
// Create is accepted only when there is no state (it is illegal from every status). Which command
// kinds apply to which direction is a second, separate table.

const none: readonly TransactionStatus[] = [];

export const transitionTable: Readonly<
  Record<TransactionStatus, Readonly<Record<TransactionCommandKind, readonly TransactionStatus[]>>>
> = {
  AWAITING_PAYMENT: {
    Create: none,
    // matched → processing; wrong amount → WRONG_AMOUNT; at/after expiry → expired + refund
    DepositDetected: ['PROCESSING_PAYMENT', 'WRONG_AMOUNT', 'PAYMENT_EXPIRED'],
    PixPaymentReceived: ['PROCESSING_PAYMENT', 'WRONG_AMOUNT', 'PAYMENT_EXPIRED'],
    Expire: ['PAYMENT_EXPIRED'],
    PayoutSucceeded: none,
    PayoutFailed: none,
    CryptoDelivered: none,
    CryptoDeliveryFailed: none,
    RefundSettled: none,
  },
  PROCESSING_PAYMENT: {
    Create: none,
    DepositDetected: ['PROCESSING_PAYMENT'], // duplicate: no-op; stray: refund it
    PixPaymentReceived: ['PROCESSING_PAYMENT'],
    Expire: none,
    PayoutSucceeded: ['PAYMENT_COMPLETED'],
    PayoutFailed: ['PAYMENT_FAILED'],
    CryptoDelivered: ['PAYMENT_COMPLETED'],
    CryptoDeliveryFailed: ['PAYMENT_FAILED'],
    RefundSettled: ['PROCESSING_PAYMENT'], // of a stray deposit
  },
  PAYMENT_COMPLETED: {
    Create: none,
    DepositDetected: ['PAYMENT_COMPLETED'],
    PixPaymentReceived: ['PAYMENT_COMPLETED'],
    Expire: none,
    PayoutSucceeded: ['PAYMENT_COMPLETED'], // same rail reference: no-op; other: outcome_conflict
    PayoutFailed: none,
    CryptoDelivered: ['PAYMENT_COMPLETED'],
    CryptoDeliveryFailed: none,
    RefundSettled: ['PAYMENT_COMPLETED'],
  },
  PAYMENT_EXPIRED: {
    Create: none,
    DepositDetected: ['PAYMENT_EXPIRED'], // first: late, refund; later: stray, refund
    PixPaymentReceived: ['PAYMENT_EXPIRED'],
    Expire: ['PAYMENT_EXPIRED'], // a repeated timer: no-op
    PayoutSucceeded: none,
    PayoutFailed: none,
    CryptoDelivered: none,
    CryptoDeliveryFailed: none,
    RefundSettled: ['PAYMENT_EXPIRED'],
  },
  PAYMENT_FAILED: {
    Create: none,
    DepositDetected: ['PAYMENT_FAILED'],
    PixPaymentReceived: ['PAYMENT_FAILED'],
    Expire: none,
    PayoutSucceeded: none,
    PayoutFailed: ['PAYMENT_FAILED'], // repeated report: no-op
    CryptoDelivered: none,
    CryptoDeliveryFailed: ['PAYMENT_FAILED'],
    RefundSettled: ['PAYMENT_FAILED'],
  },
  WRONG_AMOUNT: {
    Create: none,
    DepositDetected: ['WRONG_AMOUNT'],
    PixPaymentReceived: ['WRONG_AMOUNT'],
    Expire: none,
    PayoutSucceeded: none,
    PayoutFailed: none,
    CryptoDelivered: none,
    CryptoDeliveryFailed: none,
    RefundSettled: ['WRONG_AMOUNT'],
  },
};

/** Which directions each command kind applies to. */
export const commandDirections: Readonly<Record<TransactionCommandKind, readonly Direction[]>> = {
  Create: ['payout', 'onramp'],
  DepositDetected: ['payout'],
  PixPaymentReceived: ['onramp'],
  Expire: ['payout', 'onramp'],
  PayoutSucceeded: ['payout'],
  PayoutFailed: ['payout'],
  CryptoDelivered: ['onramp'],
  CryptoDeliveryFailed: ['onramp'],
  RefundSettled: ['payout', 'onramp'],
};
