// What must hold of every transaction state, and of every event applied to one.
import { isPositive } from '../money.ts';
import { knownDeposits, mismatchOf } from './deposits.ts';
import type { CreatedEvent, TransactionEvent, TransactionState } from './types.ts';
import { strayDepositsMax, transactionStatuses } from './types.ts';

// ---------------------------------------------------------------------------------------------
// Invariants

export function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`transaction invariant violated: ${what}`);
}

export function nonEmpty(text: string | null): boolean {
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
export function assertEventFits(state: TransactionState, event: Exclude<TransactionEvent, CreatedEvent>): void {
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

export function checked(state: TransactionState): TransactionState {
  assertEventInvariants(state);
  return state;
}
