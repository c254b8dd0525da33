// decide(state, command, ctx) → events or a typed rejection. Time comes in as `ctx.nowMs`.
import { compare, isPositive } from '../money.ts';
import type { Decimal } from '../money.ts';
import { isCanonicalUuid } from '../ids.ts';
import { isBelowRefundFloor, refundFloorOf } from '../refund-floor.ts';
import { knownDeposits, mismatchOf } from './deposits.ts';
import { evolve } from './evolve.ts';
import { assert, assertTransactionInvariants, nonEmpty } from './invariants.ts';
import { commandDirections, transitionTable } from './transitions.ts';
import type {
  CreateCommand,
  DecideContext,
  Deposit,
  DepositDetectedCommand,
  RefundSettledCommand,
  RefundState,
  TransactionCommand,
  TransactionDecision,
  TransactionEvent,
  TransactionRejection,
  TransactionState,
} from './types.ts';
import { strayDepositsMax } from './types.ts';

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
  if (state.deposit === null && lateNow && deposit.rail === 'chain') {
    // A chain deposit after expiry is not this transaction's: it goes back to its deposit actor as
    // an unmatched deposit its partner decides on (refund, or apply to a new quote;
    // docs/unmatched-deposits.md). The transaction stays as it is (the expiry timer expires it).
    return rejected({ code: 'deposit_late', depositId: deposit.id });
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
