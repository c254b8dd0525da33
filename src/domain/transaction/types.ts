// The transaction's vocabulary: statuses, state, commands, events, rejections and the decision
// shape. Types and constants only; the rules live beside it (transitions, decide, evolve,
// invariants). See src/domain/transaction.ts for the vocabulary of deposits and settlements.
import type { CryptoAsset, FiatCurrency, Network, PaymentMethod } from '../assets.ts';
import type { Decimal } from '../money.ts';
import type { Direction, Quote } from '../quote.ts';
import type { ChainRefundFloors } from '../refund-floor.ts';

// ---------------------------------------------------------------------------------------------
// Statuses and state

export const transactionStatuses = [
  'AWAITING_PAYMENT',
  'PROCESSING_PAYMENT',
  'PAYMENT_COMPLETED',
  'PAYMENT_EXPIRED',
  /** Ours: the payout or crypto delivery failed; the deposit is refunded. */
  'PAYMENT_FAILED',
  /** Ours: the deposit did not equal the quoted amount (or asset/network); it is refunded. */
  'WRONG_AMOUNT',
] as const;
export type TransactionStatus = (typeof transactionStatuses)[number];

/**
 * Stray deposits kept per transaction (a bound on its state); beyond this a deposit is refused
 * (`too_many_deposits`) and the deposit actor refunds it as an unmatched deposit.
 */
export const strayDepositsMax = 32;

export type Deposit =
  | {
      readonly rail: 'chain';
      /** Transaction hash (Stellar, Celo) or signature (Solana). */
      readonly id: string;
      /** In token units (e.g. 12.5 USDC), not base units. */
      readonly amount: Decimal;
      readonly network: Network;
      readonly asset: CryptoAsset;
      /** Address the funds came from: where a refund goes. */
      readonly sender: string;
      readonly receivedAtMs: number;
    }
  | {
      readonly rail: 'pix';
      /** The PIX provider's payment id; a refund goes back to the payer through the provider. */
      readonly id: string;
      /** BRL. */
      readonly amount: Decimal;
      readonly receivedAtMs: number;
    };

/** Progress of the primary refund (of the transaction's own deposit). */
export type RefundState = 'none' | 'pending' | 'settled';

export type RefundReason = 'wrong_amount' | 'late' | 'payout_failed' | 'delivery_failed' | 'stray';

export interface Settlement {
  readonly state: 'none' | 'requested' | 'succeeded' | 'failed';
  /** Payout: the rail's reference. Onramp: the delivery's on-chain hash/signature. */
  readonly reference: string | null;
  readonly failureReason: string | null;
  readonly requestedAtMs: number | null;
  readonly finishedAtMs: number | null;
}

export interface StrayDeposit {
  readonly deposit: Deposit;
  /** 'none' only between StrayDepositReceived and its RefundRequested (same decision). */
  readonly refund: RefundState;
  readonly refundOnChainId: string | null;
}

export interface TransactionState {
  readonly id: string;
  readonly partnerId: string;
  /** The partner's external user id (`user_id`); `partnerUserId` in webhooks. */
  readonly userId: string;
  readonly direction: Direction;
  readonly quote: Quote;
  /** Payout: recipient key (BreB key, PIX key). Onramp: the wallet address that receives crypto. */
  readonly accountNumber: string | null;
  readonly qrCode: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
  readonly status: TransactionStatus;
  /** Payout: the deposit's hash/signature. Onramp: the crypto delivery's hash/signature. */
  readonly onChainId: string | null;
  /** Of the primary refund: on-chain hash (crypto) or the provider's refund id (PIX). */
  readonly refundOnChainId: string | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  readonly expiresAtMs: number;
  /** The transaction's own deposit; null until one is seen. */
  readonly deposit: Deposit | null;
  readonly settlement: Settlement;
  readonly refund: RefundState;
  /**
   * When the primary refund was requested and when it settled (a settlement receipt names both).
   * Absent in states written before they were kept: unknown then.
   */
  readonly refundTimes?: { readonly requestedAtMs: number | null; readonly settledAtMs: number | null };
  readonly strayDeposits: readonly StrayDeposit[];
}

// ---------------------------------------------------------------------------------------------
// Commands

export interface CreateCommand {
  readonly kind: 'Create';
  /** Canonical lowercase UUID drawn by the shell. */
  readonly transactionId: string;
  readonly partnerId: string;
  readonly userId: string;
  readonly quote: Quote;
  readonly accountNumber: string | null;
  readonly qrCode: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
}

export interface DepositDetectedCommand {
  readonly kind: 'DepositDetected';
  readonly onChainId: string;
  /** Token units. */
  readonly amount: Decimal;
  readonly network: Network;
  readonly asset: CryptoAsset;
  readonly sender: string;
  /**
   * The deposit actor that relayed it (its key names a per-transaction address when there is one),
   * where a refused transfer is handed back; absent in commands from before per-transaction addresses.
   */
  readonly depositKey?: string;
}

export interface PixPaymentReceivedCommand {
  readonly kind: 'PixPaymentReceived';
  readonly providerPaymentId: string;
  /** BRL. */
  readonly amount: Decimal;
}

export interface ExpireCommand {
  readonly kind: 'Expire';
}

export interface PayoutSucceededCommand {
  readonly kind: 'PayoutSucceeded';
  readonly railReference: string;
}

export interface PayoutFailedCommand {
  readonly kind: 'PayoutFailed';
  readonly reason: string;
  readonly railReference: string | null;
}

export interface CryptoDeliveredCommand {
  readonly kind: 'CryptoDelivered';
  readonly onChainId: string;
}

export interface CryptoDeliveryFailedCommand {
  readonly kind: 'CryptoDeliveryFailed';
  readonly reason: string;
}

export interface RefundSettledCommand {
  readonly kind: 'RefundSettled';
  /** Which deposit was returned (its hash/signature or PIX payment id). */
  readonly depositId: string;
  /** Refund hash/signature (crypto) or the provider's refund id (PIX). */
  readonly refundOnChainId: string;
}

export type TransactionCommand =
  | CreateCommand
  | DepositDetectedCommand
  | PixPaymentReceivedCommand
  | ExpireCommand
  | PayoutSucceededCommand
  | PayoutFailedCommand
  | CryptoDeliveredCommand
  | CryptoDeliveryFailedCommand
  | RefundSettledCommand;

export type TransactionCommandKind = TransactionCommand['kind'];

export const transactionCommandKinds = [
  'Create',
  'DepositDetected',
  'PixPaymentReceived',
  'Expire',
  'PayoutSucceeded',
  'PayoutFailed',
  'CryptoDelivered',
  'CryptoDeliveryFailed',
  'RefundSettled',
] as const satisfies readonly TransactionCommandKind[];

// ---------------------------------------------------------------------------------------------
// Events

export type MismatchKind = 'short' | 'over' | 'wrong_asset' | 'wrong_network';

export type TransactionEvent =
  | {
      readonly type: 'Created';
      readonly atMs: number;
      readonly transactionId: string;
      readonly partnerId: string;
      readonly userId: string;
      readonly quote: Quote;
      readonly accountNumber: string | null;
      readonly qrCode: string | null;
      readonly taxId: string | null;
      readonly externalId: string | null;
    }
  /** The deposit equals the quote: AWAITING_PAYMENT → PROCESSING_PAYMENT. */
  | { readonly type: 'DepositMatched'; readonly atMs: number; readonly deposit: Deposit }
  /** The deposit differs from the quote: AWAITING_PAYMENT → WRONG_AMOUNT. */
  | {
      readonly type: 'DepositMismatched';
      readonly atMs: number;
      readonly deposit: Deposit;
      readonly expectedAmount: Decimal;
      readonly mismatch: MismatchKind;
    }
  /** The transaction's first deposit arrived after expiry; status stays PAYMENT_EXPIRED. */
  | { readonly type: 'DepositLate'; readonly atMs: number; readonly deposit: Deposit }
  /** A further, different deposit on a transaction that already has one; status unchanged. */
  | { readonly type: 'StrayDepositReceived'; readonly atMs: number; readonly deposit: Deposit }
  | { readonly type: 'Expired'; readonly atMs: number }
  /** Ask the payout worker to pay the recipient (idempotency key: the transaction id). */
  | {
      readonly type: 'PayoutRequested';
      readonly atMs: number;
      readonly amount: Decimal;
      readonly currency: FiatCurrency;
      readonly paymentMethod: PaymentMethod;
      readonly accountNumber: string | null;
      readonly qrCode: string | null;
      readonly taxId: string | null;
    }
  | { readonly type: 'PayoutCompleted'; readonly atMs: number; readonly railReference: string }
  | {
      readonly type: 'PayoutFailed';
      readonly atMs: number;
      readonly reason: string;
      readonly railReference: string | null;
    }
  /** Ask the chain to send the onramp crypto (idempotency key: the transaction id). */
  | {
      readonly type: 'DeliveryRequested';
      readonly atMs: number;
      readonly amount: Decimal;
      readonly network: Network;
      readonly asset: CryptoAsset;
      readonly destination: string;
    }
  | { readonly type: 'CryptoDelivered'; readonly atMs: number; readonly onChainId: string }
  | { readonly type: 'DeliveryFailed'; readonly atMs: number; readonly reason: string }
  /** Ask for `deposit` to be returned in full to where it came from. */
  | {
      readonly type: 'RefundRequested';
      readonly atMs: number;
      readonly deposit: Deposit;
      readonly reason: RefundReason;
    }
  | {
      readonly type: 'RefundSettled';
      readonly atMs: number;
      readonly depositId: string;
      readonly refundOnChainId: string;
    };

export type TransactionEventType = TransactionEvent['type'];

// ---------------------------------------------------------------------------------------------
// Rejections

export type TransactionRejection =
  /** A command other than Create for a transaction that does not exist. */
  | { readonly code: 'not_found'; readonly command: TransactionCommandKind }
  /** The transition table forbids this command in this status. */
  | {
      readonly code: 'illegal_transition';
      readonly from: TransactionStatus;
      readonly command: TransactionCommandKind;
    }
  /** A payout-only command on an onramp transaction, or the reverse. */
  | {
      readonly code: 'wrong_direction';
      readonly direction: Direction;
      readonly command: TransactionCommandKind;
    }
  | { readonly code: 'quote_expired'; readonly expiresAtMs: number }
  | { readonly code: 'quote_partner_mismatch' }
  /** Payout without account_number and qr_code; onramp without a destination wallet. */
  | { readonly code: 'recipient_missing' }
  | { readonly code: 'not_yet_expired'; readonly expiresAtMs: number }
  /** A deposit of zero or less: nothing was received, nothing can be refunded. */
  | { readonly code: 'invalid_amount' }
  /** The same deposit id reported again with a different amount, asset, network or sender. */
  | { readonly code: 'deposit_conflict'; readonly depositId: string }
  | { readonly code: 'too_many_deposits'; readonly depositId: string }
  /** A chain deposit at or after expiry, with none before: handed back as an unmatched deposit. */
  | { readonly code: 'deposit_late'; readonly depositId: string }
  /** A chain deposit that would be refunded, below its network's refund floor: dust, not taken. */
  | { readonly code: 'below_refund_floor'; readonly depositId: string; readonly floor: Decimal }
  /** A second success with a different rail reference / delivery hash than the one recorded. */
  | { readonly code: 'outcome_conflict'; readonly recorded: string; readonly reported: string }
  | { readonly code: 'unknown_deposit'; readonly depositId: string }
  | { readonly code: 'no_refund_pending'; readonly depositId: string }
  /** The refund of this deposit already settled with a different id. */
  | { readonly code: 'refund_conflict'; readonly depositId: string; readonly recorded: string };

export type TransactionRejectionCode = TransactionRejection['code'];

export type TransactionDecision =
  | { readonly ok: true; readonly events: readonly TransactionEvent[] }
  | { readonly ok: false; readonly rejection: TransactionRejection };

export interface DecideContext {
  readonly nowMs: number;
  /** Refund floors of chain deposits (configuration); absent: every amount is refunded. */
  readonly chainRefundFloors?: ChainRefundFloors;
}

export type CreatedEvent = Extract<TransactionEvent, { type: 'Created' }>;
