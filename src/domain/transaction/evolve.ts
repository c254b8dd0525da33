// evolve(state, event) → state: folds the events decide made; a misfit is a bug and throws.
import { assert, assertEventFits, checked } from './invariants.ts';
import type { CreatedEvent, Deposit, RefundState, TransactionEvent, TransactionState, TransactionStatus } from './types.ts';

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
      return applyRefund(state, event.deposit.id, at.updatedAtMs, 'pending', null, event.atMs);
    case 'RefundSettled':
      return applyRefund(state, event.depositId, at.updatedAtMs, 'settled', event.refundOnChainId, event.atMs);
  }
}

function applyRefund(
  state: TransactionState,
  depositId: string,
  updatedAtMs: number,
  refund: 'pending' | 'settled',
  refundOnChainId: string | null,
  atMs: number,
): TransactionState {
  const from: RefundState = refund === 'pending' ? 'none' : 'pending';
  if (state.deposit?.id === depositId) {
    assert(state.refund === from, `refund ${state.refund} → ${refund}`);
    const times = state.refundTimes ?? { requestedAtMs: null, settledAtMs: null };
    const refundTimes = refund === 'pending' ? { ...times, requestedAtMs: atMs } : { ...times, settledAtMs: atMs };
    return { ...state, updatedAtMs, refund, refundOnChainId, refundTimes };
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
