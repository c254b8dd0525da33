// The transaction's pure core: decide(state, command, ctx) → events or a typed rejection, and
// evolve(state, event) → state. The TransactionActor loads the state, calls decide, appends the
// events, folds them with evolve, then runs the effects the events ask for (payout, crypto
// delivery, refund, webhooks, limit reservations). Time comes in as `ctx.nowMs`; nothing here reads
// a clock, draws randomness or does I/O. Decisions where the spec is silent: docs/decisions-states.md.
//
// Vocabulary. A "deposit" is the money a transaction is funded with: the partner's on-chain transfer
// for a payout (rail 'chain', id = the transfer's hash/signature) or the payer's PIX payment for an
// onramp (rail 'pix', id = the provider's payment id). The first deposit seen is the transaction's
// own; any later, different one is a "stray" deposit, refunded without touching the status.
// A chain deposit that would be refunded (wrong amount, late, stray) but is below its network's
// refund floor is dust: refused (`below_refund_floor`), so it neither changes the transaction nor
// costs a refund; the deposit actor records it for operations (src/domain/refund-floor.ts).
// The "settlement" is what the service does once funded: the fiat payout (payout direction) or the
// crypto delivery (onramp direction).
import type { CryptoAsset, FiatCurrency, Network, PaymentMethod } from './assets.ts';
import { compare, isPositive } from './money.ts';
import type { Decimal } from './money.ts';
import type { Direction, Quote } from './quote.ts';
import { isCanonicalUuid } from './ids.ts';
import { isBelowRefundFloor, refundFloorOf, type ChainRefundFloors } from './refund-floor.ts';

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

// ---------------------------------------------------------------------------------------------
// decide

const accepted = (...events: TransactionEvent[]): TransactionDecision => ({ ok: true, events });
const rejected = (rejection: TransactionRejection): TransactionDecision => ({ ok: false, rejection });

/**
 * Checks, in order: existence (Create needs no state, everything else needs one), direction,
 * the transition table, then the command's own rules.
 */
export function decide(
  state: TransactionState | null,
  command: TransactionCommand,
  ctx: DecideContext,
): TransactionDecision {
  assert(Number.isSafeInteger(ctx.nowMs) && ctx.nowMs >= 0, 'nowMs is a non-negative integer');
  const decision = decideUnchecked(state, command, ctx);
  if (decision.ok && decision.events.length > 0) assertDecisionOutcome(state, command, decision.events);
  return decision;
}

/**
 * A decision's events are stored and applied together, so the state between two of them may be
 * half-way (funded, payout not yet requested). The full invariants are checked on the result.
 */
function assertDecisionOutcome(
  state: TransactionState | null,
  command: TransactionCommand,
  events: readonly TransactionEvent[],
): void {
  let after = state;
  for (const event of events) after = evolve(after, event);
  assert(after !== null, 'an accepted decision leaves a transaction');
  assertTransactionInvariants(after);
  if (state !== null) {
    assert(transitionTable[state.status][command.kind].includes(after.status), `table allows ${after.status}`);
  }
}

function decideUnchecked(
  state: TransactionState | null,
  command: TransactionCommand,
  ctx: DecideContext,
): TransactionDecision {
  if (state === null) {
    return command.kind === 'Create'
      ? decideCreate(command, ctx.nowMs)
      : rejected({ code: 'not_found', command: command.kind });
  }
  if (command.kind !== 'Create' && !commandDirections[command.kind].includes(state.direction)) {
    return rejected({ code: 'wrong_direction', direction: state.direction, command: command.kind });
  }
  if (transitionTable[state.status][command.kind].length === 0) {
    return rejected({ code: 'illegal_transition', from: state.status, command: command.kind });
  }
  const nowMs = Math.max(ctx.nowMs, state.updatedAtMs); // time never runs backwards in a record
  switch (command.kind) {
    case 'Create':
      throw new Error('transaction invariant violated: Create is illegal from every status');
    case 'DepositDetected':
      return decideDeposit(state, chainDeposit(command, nowMs), nowMs, refundFloorOf(ctx.chainRefundFloors, command.network));
    case 'PixPaymentReceived':
      // PIX payments go back through the provider: no chain fee or rent, no floor.
      return decideDeposit(
        state,
        { rail: 'pix', id: command.providerPaymentId, amount: command.amount, receivedAtMs: nowMs },
        nowMs,
        null,
      );
    case 'Expire':
      return decideExpire(state, nowMs);
    case 'PayoutSucceeded':
      return decideSuccess(state, command.railReference, nowMs);
    case 'CryptoDelivered':
      return decideSuccess(state, command.onChainId, nowMs);
    case 'PayoutFailed':
      return decideFailure(state, command.reason, command.railReference, nowMs);
    case 'CryptoDeliveryFailed':
      return decideFailure(state, command.reason, null, nowMs);
    case 'RefundSettled':
      return decideRefundSettled(state, command, nowMs);
  }
}

function decideCreate(command: CreateCommand, nowMs: number): TransactionDecision {
  const { quote } = command;
  assert(isCanonicalUuid(command.transactionId), 'transaction id is a canonical uuid');
  if (quote.partnerId !== command.partnerId) return rejected({ code: 'quote_partner_mismatch' });
  if (nowMs >= quote.expiresAtMs) return rejected({ code: 'quote_expired', expiresAtMs: quote.expiresAtMs });
  const hasAccount = nonEmpty(command.accountNumber);
  const hasRecipient = quote.direction === 'onramp' ? hasAccount : hasAccount || nonEmpty(command.qrCode);
  if (!hasRecipient) return rejected({ code: 'recipient_missing' });
  return accepted({
    type: 'Created',
    atMs: nowMs,
    transactionId: command.transactionId,
    partnerId: command.partnerId,
    userId: command.userId,
    quote,
    accountNumber: command.accountNumber,
    qrCode: command.qrCode,
    taxId: command.taxId,
    externalId: command.externalId,
  });
}

function chainDeposit(command: DepositDetectedCommand, nowMs: number): Deposit {
  return {
    rail: 'chain',
    id: command.onChainId,
    amount: command.amount,
    network: command.network,
    asset: command.asset,
    sender: command.sender,
    receivedAtMs: nowMs,
  };
}

function sameDeposit(a: Deposit, b: Deposit): boolean {
  if (a.id !== b.id || compare(a.amount, b.amount) !== 0) return false;
  if (a.rail === 'chain' && b.rail === 'chain') {
    return a.network === b.network && a.asset === b.asset && a.sender === b.sender;
  }
  return a.rail === b.rail;
}

function knownDeposits(state: TransactionState): Deposit[] {
  const stray = state.strayDeposits.map((entry) => entry.deposit);
  return state.deposit === null ? stray : [state.deposit, ...stray];
}

/**
 * Checks, in order: a positive amount; the same deposit again (no-op, or a conflict); then what the
 * deposit is — stray (the transaction has its own), late, wrong amount, or the exact payment. Any
 * of the first three is refunded, unless it is below the refund floor (`floor`): then it is refused
 * as dust before anything else, even beyond the stray slots, so dust never costs a refund nor
 * changes the transaction (a dust "wrong amount" does not end an awaiting one).
 */
function decideDeposit(state: TransactionState, deposit: Deposit, nowMs: number, floor: Decimal | null): TransactionDecision {
  if (!isPositive(deposit.amount)) return rejected({ code: 'invalid_amount' });
  const known = knownDeposits(state).find((candidate) => candidate.id === deposit.id);
  if (known !== undefined) {
    // Watchers, notify calls and ops reconciliation may all report the same transfer.
    return sameDeposit(known, deposit) ? accepted() : rejected({ code: 'deposit_conflict', depositId: deposit.id });
  }
  const lateNow = state.status === 'PAYMENT_EXPIRED' || nowMs >= state.expiresAtMs;
  const funds = state.deposit === null && !lateNow && mismatchOf(state.quote, deposit) === null;
  if (!funds && floor !== null && isBelowRefundFloor(deposit.amount, floor)) {
    return rejected({ code: 'below_refund_floor', depositId: deposit.id, floor });
  }
  if (state.deposit !== null) {
    if (state.strayDeposits.length >= strayDepositsMax) {
      return rejected({ code: 'too_many_deposits', depositId: deposit.id });
    }
    return accepted(
      { type: 'StrayDepositReceived', atMs: nowMs, deposit },
      { type: 'RefundRequested', atMs: nowMs, deposit, reason: 'stray' },
    );
  }
  if (state.status === 'PAYMENT_EXPIRED') {
    return accepted(
      { type: 'DepositLate', atMs: nowMs, deposit },
      { type: 'RefundRequested', atMs: nowMs, deposit, reason: 'late' },
    );
  }
  assert(state.status === 'AWAITING_PAYMENT', 'only an awaiting or expired transaction lacks a deposit');
  if (nowMs >= state.expiresAtMs) {
    // The expiry timer has not fired yet; the deposit is late all the same.
    return accepted(
      { type: 'Expired', atMs: nowMs },
      { type: 'DepositLate', atMs: nowMs, deposit },
      { type: 'RefundRequested', atMs: nowMs, deposit, reason: 'late' },
    );
  }
  const mismatch = mismatchOf(state.quote, deposit);
  if (mismatch !== null) {
    return accepted(
      { type: 'DepositMismatched', atMs: nowMs, deposit, expectedAmount: state.quote.sourceAmount, mismatch },
      { type: 'RefundRequested', atMs: nowMs, deposit, reason: 'wrong_amount' },
    );
  }
  assert(funds, 'the exact, timely first deposit funds the transaction');
  return accepted({ type: 'DepositMatched', atMs: nowMs, deposit }, settlementRequest(state, nowMs));
}

/** Null when the deposit is exactly what the quote asked for. */
export function mismatchOf(quote: Quote, deposit: Deposit): MismatchKind | null {
  if (deposit.rail === 'chain') {
    if (deposit.network !== quote.network) return 'wrong_network';
    if (deposit.asset !== quote.cryptoCurrency) return 'wrong_asset';
  }
  const order = compare(deposit.amount, quote.sourceAmount);
  return order < 0 ? 'short' : order > 0 ? 'over' : null;
}

function settlementRequest(state: TransactionState, nowMs: number): TransactionEvent {
  const { quote } = state;
  if (state.direction === 'payout') {
    return {
      type: 'PayoutRequested',
      atMs: nowMs,
      amount: quote.targetAmount,
      currency: quote.targetCurrency,
      paymentMethod: quote.paymentMethod,
      accountNumber: state.accountNumber,
      qrCode: state.qrCode,
      taxId: state.taxId,
    };
  }
  assert(state.accountNumber !== null, 'an onramp transaction names its destination wallet');
  return {
    type: 'DeliveryRequested',
    atMs: nowMs,
    amount: quote.targetAmount,
    network: quote.network,
    asset: quote.cryptoCurrency,
    destination: state.accountNumber,
  };
}

function decideExpire(state: TransactionState, nowMs: number): TransactionDecision {
  if (state.status === 'PAYMENT_EXPIRED') return accepted(); // the timer fired again
  if (nowMs < state.expiresAtMs) return rejected({ code: 'not_yet_expired', expiresAtMs: state.expiresAtMs });
  return accepted({ type: 'Expired', atMs: nowMs });
}

/** PayoutSucceeded (rail reference) or CryptoDelivered (delivery hash). */
function decideSuccess(state: TransactionState, reference: string, nowMs: number): TransactionDecision {
  if (state.status === 'PAYMENT_COMPLETED') {
    const recorded = state.settlement.reference;
    assert(recorded !== null, 'a completed transaction records its settlement reference');
    return recorded === reference ? accepted() : rejected({ code: 'outcome_conflict', recorded, reported: reference });
  }
  return accepted(
    state.direction === 'payout'
      ? { type: 'PayoutCompleted', atMs: nowMs, railReference: reference }
      : { type: 'CryptoDelivered', atMs: nowMs, onChainId: reference },
  );
}

/** PayoutFailed or CryptoDeliveryFailed: refund the deposit in full. */
function decideFailure(
  state: TransactionState,
  reason: string,
  railReference: string | null,
  nowMs: number,
): TransactionDecision {
  if (state.status === 'PAYMENT_FAILED') return accepted(); // a repeated report
  const { deposit } = state;
  assert(deposit !== null, 'a processing transaction has its deposit');
  return state.direction === 'payout'
    ? accepted(
        { type: 'PayoutFailed', atMs: nowMs, reason, railReference },
        { type: 'RefundRequested', atMs: nowMs, deposit, reason: 'payout_failed' },
      )
    : accepted(
        { type: 'DeliveryFailed', atMs: nowMs, reason },
        { type: 'RefundRequested', atMs: nowMs, deposit, reason: 'delivery_failed' },
      );
}

function decideRefundSettled(
  state: TransactionState,
  command: RefundSettledCommand,
  nowMs: number,
): TransactionDecision {
  const { depositId, refundOnChainId } = command;
  let refund: RefundState;
  let recorded: string | null;
  if (state.deposit?.id === depositId) {
    refund = state.refund;
    recorded = state.refundOnChainId;
  } else {
    const stray = state.strayDeposits.find((entry) => entry.deposit.id === depositId);
    if (stray === undefined) return rejected({ code: 'unknown_deposit', depositId });
    refund = stray.refund;
    recorded = stray.refundOnChainId;
  }
  if (refund === 'none') return rejected({ code: 'no_refund_pending', depositId });
  if (refund === 'settled') {
    assert(recorded !== null, 'a settled refund has its id');
    return recorded === refundOnChainId ? accepted() : rejected({ code: 'refund_conflict', depositId, recorded });
  }
  return accepted({ type: 'RefundSettled', atMs: nowMs, depositId, refundOnChainId });
}

// ---------------------------------------------------------------------------------------------
// evolve

/**
 * Fold one event into the state. Events come from decide, so a misfit is a bug: it throws. The
 * per-event invariants are checked here; the status-shape invariants hold between decisions
 * (see assertDecisionOutcome) and are checked by assertTransactionInvariants.
 */
export function evolve(state: TransactionState | null, event: TransactionEvent): TransactionState {
  if (event.type === 'Created') {
    assert(state === null, 'Created starts a transaction');
    return checked(created(event));
  }
  assert(state !== null, `${event.type} needs an existing transaction`);
  assertEventFits(state, event);
  const before = state.status;
  const next = checked(applyTo(state, event));
  assert(
    next.status === before || legalStatusChanges[before].includes(next.status),
    `status ${before} → ${next.status} on ${event.type}`,
  );
  return next;
}

/** Status changes an event may make (a superset check on top of the command table). */
const legalStatusChanges: Readonly<Record<TransactionStatus, readonly TransactionStatus[]>> = {
  AWAITING_PAYMENT: ['PROCESSING_PAYMENT', 'WRONG_AMOUNT', 'PAYMENT_EXPIRED'],
  PROCESSING_PAYMENT: ['PAYMENT_COMPLETED', 'PAYMENT_FAILED'],
  PAYMENT_COMPLETED: [],
  PAYMENT_EXPIRED: [],
  PAYMENT_FAILED: [],
  WRONG_AMOUNT: [],
};

type CreatedEvent = Extract<TransactionEvent, { type: 'Created' }>;

function created(event: CreatedEvent): TransactionState {
  return {
    id: event.transactionId,
    partnerId: event.partnerId,
    userId: event.userId,
    direction: event.quote.direction,
    quote: event.quote,
    accountNumber: event.accountNumber,
    qrCode: event.qrCode,
    taxId: event.taxId,
    externalId: event.externalId,
    status: 'AWAITING_PAYMENT',
    onChainId: null,
    refundOnChainId: null,
    createdAtMs: event.atMs,
    updatedAtMs: event.atMs,
    expiresAtMs: event.quote.expiresAtMs,
    deposit: null,
    settlement: { state: 'none', reference: null, failureReason: null, requestedAtMs: null, finishedAtMs: null },
    refund: 'none',
    strayDeposits: [],
  };
}

function recordDeposit(state: TransactionState, deposit: Deposit): Pick<TransactionState, 'deposit' | 'onChainId'> {
  return { deposit, onChainId: deposit.rail === 'chain' ? deposit.id : state.onChainId };
}

function applyTo(state: TransactionState, event: Exclude<TransactionEvent, CreatedEvent>): TransactionState {
  const at = { updatedAtMs: Math.max(state.updatedAtMs, event.atMs) };
  switch (event.type) {
    case 'DepositMatched':
      return { ...state, ...at, ...recordDeposit(state, event.deposit), status: 'PROCESSING_PAYMENT' };
    case 'DepositMismatched':
      return { ...state, ...at, ...recordDeposit(state, event.deposit), status: 'WRONG_AMOUNT' };
    case 'DepositLate':
      return { ...state, ...at, ...recordDeposit(state, event.deposit) };
    case 'StrayDepositReceived':
      return {
        ...state,
        ...at,
        strayDeposits: [...state.strayDeposits, { deposit: event.deposit, refund: 'none', refundOnChainId: null }],
      };
    case 'Expired':
      return { ...state, ...at, status: 'PAYMENT_EXPIRED' };
    case 'PayoutRequested':
    case 'DeliveryRequested':
      return { ...state, ...at, settlement: { ...state.settlement, state: 'requested', requestedAtMs: event.atMs } };
    case 'PayoutCompleted':
      return {
        ...state,
        ...at,
        status: 'PAYMENT_COMPLETED',
        settlement: { ...state.settlement, state: 'succeeded', reference: event.railReference, finishedAtMs: event.atMs },
      };
    case 'CryptoDelivered':
      return {
        ...state,
        ...at,
        status: 'PAYMENT_COMPLETED',
        onChainId: event.onChainId,
        settlement: { ...state.settlement, state: 'succeeded', reference: event.onChainId, finishedAtMs: event.atMs },
      };
    case 'PayoutFailed':
    case 'DeliveryFailed':
      return {
        ...state,
        ...at,
        status: 'PAYMENT_FAILED',
        settlement: {
          ...state.settlement,
          state: 'failed',
          reference: event.type === 'PayoutFailed' ? event.railReference : null,
          failureReason: event.reason,
          finishedAtMs: event.atMs,
        },
      };
    case 'RefundRequested':
      return applyRefund(state, event.deposit.id, at.updatedAtMs, 'pending', null);
    case 'RefundSettled':
      return applyRefund(state, event.depositId, at.updatedAtMs, 'settled', event.refundOnChainId);
  }
}

function applyRefund(
  state: TransactionState,
  depositId: string,
  updatedAtMs: number,
  refund: 'pending' | 'settled',
  refundOnChainId: string | null,
): TransactionState {
  const from: RefundState = refund === 'pending' ? 'none' : 'pending';
  if (state.deposit?.id === depositId) {
    assert(state.refund === from, `refund ${state.refund} → ${refund}`);
    return { ...state, updatedAtMs, refund, refundOnChainId };
  }
  let found = false;
  const strayDeposits = state.strayDeposits.map((entry) => {
    if (entry.deposit.id !== depositId) return entry;
    assert(entry.refund === from, `stray refund ${entry.refund} → ${refund}`);
    found = true;
    return { ...entry, refund, refundOnChainId };
  });
  assert(found, `refund of an unknown deposit ${depositId}`);
  return { ...state, updatedAtMs, strayDeposits };
}

// ---------------------------------------------------------------------------------------------
// Invariants

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`transaction invariant violated: ${what}`);
}

function nonEmpty(text: string | null): boolean {
  return text !== null && text.trim() !== '';
}

/**
 * What must hold after every decision (and of every stored snapshot); a failure is a bug: crash,
 * reload from the last durable snapshot.
 */
export function assertTransactionInvariants(state: TransactionState): void {
  assertEventInvariants(state);
  assertStatusShape(state);
}

/** Preconditions of an event that the status change check alone does not catch. */
function assertEventFits(state: TransactionState, event: Exclude<TransactionEvent, CreatedEvent>): void {
  switch (event.type) {
    case 'DepositMatched':
    case 'DepositMismatched':
      assert(state.status === 'AWAITING_PAYMENT' && state.deposit === null, `${event.type} on an unfunded transaction`);
      return;
    case 'DepositLate':
      assert(state.status === 'PAYMENT_EXPIRED' && state.deposit === null, 'DepositLate on an expired, unfunded one');
      return;
    case 'StrayDepositReceived':
      assert(state.deposit !== null, 'a stray deposit follows the own deposit');
      return;
    case 'Expired':
      assert(state.status === 'AWAITING_PAYMENT', 'Expired from AWAITING_PAYMENT');
      return;
    case 'PayoutRequested':
    case 'DeliveryRequested':
      assert(state.status === 'PROCESSING_PAYMENT' && state.settlement.state === 'none', 'one settlement request');
      return;
    case 'PayoutCompleted':
    case 'CryptoDelivered':
    case 'PayoutFailed':
    case 'DeliveryFailed':
      assert(state.status === 'PROCESSING_PAYMENT' && state.settlement.state === 'requested', 'settlement outcome');
      return;
    case 'RefundRequested':
    case 'RefundSettled':
      return; // applyRefund checks the deposit exists
  }
}

/** Invariants that hold after every single event. */
function assertEventInvariants(state: TransactionState): void {
  assert(transactionStatuses.includes(state.status), `status ${String(state.status)}`);
  assert(state.direction === state.quote.direction, 'direction is the quote direction');
  assert(state.expiresAtMs === state.quote.expiresAtMs, 'expiry is the quote expiry');
  assert(state.createdAtMs <= state.updatedAtMs, 'updated after created');
  assert(isPositive(state.quote.sourceAmount) && isPositive(state.quote.targetAmount), 'quote amounts positive');
  for (const deposit of knownDeposits(state)) {
    assert(isPositive(deposit.amount), `deposit ${deposit.id} amount positive`);
    assert(deposit.rail === (state.direction === 'payout' ? 'chain' : 'pix'), 'deposit rail fits the direction');
  }
  assert(state.strayDeposits.length <= strayDepositsMax, 'stray deposits bounded');
  assert(state.strayDeposits.length === 0 || state.deposit !== null, 'stray deposits follow the own deposit');
  assert((state.refund === 'settled') === (state.refundOnChainId !== null), 'refund id iff refund settled');
  for (const stray of state.strayDeposits) {
    assert((stray.refund === 'settled') === (stray.refundOnChainId !== null), 'stray refund id iff settled');
  }
  if (state.direction === 'payout') {
    assert(state.onChainId === (state.deposit?.id ?? null), 'payout onChainId is the deposit hash');
  } else {
    assert(
      (state.onChainId !== null) === (state.status === 'PAYMENT_COMPLETED'),
      'onramp onChainId is the delivery hash, set on completion',
    );
  }
}

function assertStatusShape(state: TransactionState): void {
  const { deposit, settlement, refund, status } = state;
  assert(state.strayDeposits.every((stray) => stray.refund !== 'none'), 'every stray deposit is refunded');
  const funded = deposit !== null && mismatchOf(state.quote, deposit) === null;
  switch (status) {
    case 'AWAITING_PAYMENT':
      assert(deposit === null && refund === 'none' && settlement.state === 'none', 'awaiting: nothing yet');
      return;
    case 'PROCESSING_PAYMENT':
      assert(funded && refund === 'none' && settlement.state === 'requested', 'processing: funded, settling');
      return;
    case 'PAYMENT_COMPLETED':
      assert(funded && refund === 'none' && settlement.state === 'succeeded', 'completed: funded, settled');
      return;
    case 'PAYMENT_FAILED':
      assert(funded && refund !== 'none' && settlement.state === 'failed', 'failed: funded, refunding');
      return;
    case 'WRONG_AMOUNT':
      assert(deposit !== null && !funded && refund !== 'none' && settlement.state === 'none', 'wrong amount: refunding');
      return;
    case 'PAYMENT_EXPIRED':
      assert(settlement.state === 'none' && (deposit === null) === (refund === 'none'), 'expired: late deposit refunded');
      return;
  }
}

function checked(state: TransactionState): TransactionState {
  assertEventInvariants(state);
  return state;
}

// ---------------------------------------------------------------------------------------------
// Webhooks and limit effects

export type WebhookEventName = 'transaction.created' | 'transaction.updated';

/** Exactly the spec's webhook data object; `bankCode` and `origin` do not exist here. */
export interface WebhookData {
  readonly id: string;
  readonly status: TransactionStatus;
  readonly quoteId: string;
  readonly accountNumber: string | null;
  readonly onChainId: string | null;
  readonly refundOnChainId: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
  readonly partnerUserId: string;
}

export interface Webhook {
  readonly event: WebhookEventName;
  readonly data: WebhookData;
}

export function webhookData(state: TransactionState): WebhookData {
  return {
    id: state.id,
    status: state.status,
    quoteId: state.quote.id,
    accountNumber: state.accountNumber,
    onChainId: state.onChainId,
    refundOnChainId: state.refundOnChainId,
    taxId: state.taxId,
    externalId: state.externalId,
    partnerUserId: state.userId,
  };
}

/**
 * The webhooks one event causes, built from the state right after that event (so a decision with
 * several events yields their webhooks in order, each with the data of its moment):
 * - Created → transaction.created.
 * - The transaction's own on-chain deposit detected (matched, wrong amount or late) →
 *   transaction.created again, carrying its onChainId; then transaction.updated if the status
 *   changed. PIX payments are not on-chain: status change only.
 * - Every status change → transaction.updated (refundOnChainId is null at that moment).
 * - The primary refund settled → transaction.updated, same status, refundOnChainId set.
 * - Stray deposits and their refunds, and effect requests → nothing.
 */
export function webhooksFor(event: TransactionEvent, stateAfter: TransactionState): Webhook[] {
  const data = webhookData(stateAfter);
  const created: Webhook = { event: 'transaction.created', data };
  const updated: Webhook = { event: 'transaction.updated', data };
  const onChain = 'deposit' in event && event.deposit.rail === 'chain';
  switch (event.type) {
    case 'Created':
      return [created];
    case 'DepositMatched':
    case 'DepositMismatched':
      return onChain ? [created, updated] : [updated];
    case 'DepositLate':
      return onChain ? [created] : [];
    case 'Expired':
    case 'PayoutCompleted':
    case 'PayoutFailed':
    case 'CryptoDelivered':
    case 'DeliveryFailed':
      return [updated];
    case 'RefundSettled':
      return stateAfter.deposit?.id === event.depositId ? [updated] : [];
    case 'StrayDepositReceived':
    case 'PayoutRequested':
    case 'DeliveryRequested':
    case 'RefundRequested':
      return [];
  }
}

/**
 * What an event does to the limit reservations (daily caps, KYC monthly volume, KYB cap):
 * accepting reserves; expiry, failure and a wrong amount release (no payout happens);
 * completion keeps the reservation, which then also counts toward the KYB cap.
 */
export type LimitEffect = 'reserve' | 'release' | 'keep';

export function limitEffectFor(event: TransactionEvent): LimitEffect | null {
  switch (event.type) {
    case 'Created':
      return 'reserve';
    case 'Expired':
    case 'PayoutFailed':
    case 'DeliveryFailed':
    case 'DepositMismatched':
      return 'release';
    case 'PayoutCompleted':
    case 'CryptoDelivered':
      return 'keep';
    case 'DepositMatched':
    case 'DepositLate':
    case 'StrayDepositReceived':
    case 'PayoutRequested':
    case 'DeliveryRequested':
    case 'RefundRequested':
    case 'RefundSettled':
      return null;
  }
}
