// The transaction state machine: every status × command kind (both directions), every rule of the
// spec's "States and transitions" and "Events", and seeded random command sequences.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decimal } from '../../src/domain/money.ts';
import type { Decimal } from '../../src/domain/money.ts';
import type { Direction, Quote } from '../../src/domain/quote.ts';
import {
  commandDirections,
  decide,
  evolve,
  limitEffectFor,
  strayDepositsMax,
  transactionCommandKinds,
  transactionStatuses,
  transitionTable,
  webhooksFor,
} from '../../src/domain/transaction.ts';
import type {
  LimitEffect,
  TransactionCommand,
  TransactionCommandKind,
  TransactionEvent,
  TransactionEventType,
  TransactionRejectionCode,
  TransactionState,
  TransactionStatus,
  Webhook,
} from '../../src/domain/transaction.ts';
import { brebPayoutQuote } from '../support/quotes.ts';

// ---------------------------------------------------------------------------------------------
// Fixtures

const t0 = 1_700_000_000_000;
const expiresAtMs = t0 + 3_600_000;
const during = t0 + 60_000;
const txId = '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f';

const payoutQuote: Quote = { ...brebPayoutQuote(t0), id: 'q-payout', expiresAtMs };

const onrampQuote: Quote = {
  ...payoutQuote,
  id: 'q-onramp',
  kind: 'onramp',
  direction: 'onramp',
  network: 'SOLANA',
  paymentMethod: 'PIX',
  targetCurrency: 'BRL',
  tokenDecimals: 6,
  sourceAmount: decimal(10_000n, 2), // 100.00 BRL
  targetAmount: decimal(18_500_000n, 6), // 18.5 USDC
  fee: { amount: decimal(100_000n, 6), currency: 'USDC', type: 'fixed' },
  rate: decimal(54n, 1),
};

const quoteOf = (direction: Direction): Quote => (direction === 'payout' ? payoutQuote : onrampQuote);

function create(direction: Direction, overrides: Partial<Extract<TransactionCommand, { kind: 'Create' }>> = {}): TransactionCommand {
  return {
    kind: 'Create',
    transactionId: txId,
    partnerId: 'acme',
    userId: 'user-1',
    quote: quoteOf(direction),
    accountNumber: direction === 'payout' ? '@breb-key' : 'GDESTINATIONWALLET',
    qrCode: null,
    taxId: '123456789',
    externalId: 'ext-1',
    ...overrides,
  };
}

function deposit(id: string, amount: Decimal = payoutQuote.sourceAmount, extra: Partial<Extract<TransactionCommand, { kind: 'DepositDetected' }>> = {}): TransactionCommand {
  return { kind: 'DepositDetected', onChainId: id, amount, network: 'STELLAR', asset: 'USDC', sender: 'GSENDER', ...extra };
}

function pix(id: string, amount: Decimal = onrampQuote.sourceAmount): TransactionCommand {
  return { kind: 'PixPaymentReceived', providerPaymentId: id, amount };
}

/** The exact-amount funding command for a direction. */
const fund = (direction: Direction, id = 'dep-1'): TransactionCommand => (direction === 'payout' ? deposit(id) : pix(id));
const short = (direction: Direction, id = 'dep-1'): TransactionCommand =>
  direction === 'payout' ? deposit(id, decimal(25n, 0)) : pix(id, decimal(9_999n, 2));
const succeed = (direction: Direction, reference = 'ref-1'): TransactionCommand =>
  direction === 'payout' ? { kind: 'PayoutSucceeded', railReference: reference } : { kind: 'CryptoDelivered', onChainId: reference };
const fail = (direction: Direction): TransactionCommand =>
  direction === 'payout' ? { kind: 'PayoutFailed', reason: 'account closed', railReference: 'rail-x' } : { kind: 'CryptoDeliveryFailed', reason: 'rpc down' };

interface Step {
  state: TransactionState | null;
  events: readonly TransactionEvent[];
  webhooks: Webhook[];
}

/** decide + evolve every event; throws on a rejection (use `decide` directly to test those). */
function apply(state: TransactionState | null, command: TransactionCommand, nowMs = during): Step {
  const decision = decide(state, command, { nowMs });
  if (!decision.ok) throw new Error(`unexpected rejection ${JSON.stringify(decision.rejection)}`);
  let current = state;
  const webhooks: Webhook[] = [];
  for (const event of decision.events) {
    current = evolve(current, event);
    webhooks.push(...webhooksFor(event, current));
  }
  return { state: current, events: decision.events, webhooks };
}

function run(commands: readonly [TransactionCommand, number?][]): TransactionState {
  let state: TransactionState | null = null;
  for (const [command, nowMs] of commands) state = apply(state, command, nowMs).state;
  assert.ok(state !== null);
  return state;
}

/** A transaction of `direction` in `status`, reached the ordinary way. */
function inStatus(direction: Direction, status: TransactionStatus): TransactionState {
  const start: [TransactionCommand, number?] = [create(direction), t0];
  switch (status) {
    case 'AWAITING_PAYMENT':
      return run([start]);
    case 'PROCESSING_PAYMENT':
      return run([start, [fund(direction)]]);
    case 'PAYMENT_COMPLETED':
      return run([start, [fund(direction)], [succeed(direction)]]);
    case 'PAYMENT_FAILED':
      return run([start, [fund(direction)], [fail(direction)]]);
    case 'WRONG_AMOUNT':
      return run([start, [short(direction)]]);
    case 'PAYMENT_EXPIRED':
      return run([start, [{ kind: 'Expire' }, expiresAtMs]]);
  }
}

function rejectionOf(state: TransactionState | null, command: TransactionCommand, nowMs = during) {
  const decision = decide(state, command, { nowMs });
  assert.ok(!decision.ok, `expected a rejection, got ${decision.ok ? JSON.stringify(decision.events.map((e) => e.type)) : ''}`);
  return decision.rejection;
}

const types = (events: readonly TransactionEvent[]): TransactionEventType[] => events.map((event) => event.type);

// ---------------------------------------------------------------------------------------------
// The transition table, exhaustively

/** A representative command of each kind: new ids, the quoted amount, time within validity. */
function representative(kind: TransactionCommandKind, direction: Direction, state: TransactionState): [TransactionCommand, number] {
  switch (kind) {
    case 'Create': return [create(direction), during];
    case 'DepositDetected': return [deposit('dep-new'), during];
    case 'PixPaymentReceived': return [pix('pix-new'), during];
    case 'Expire': return [{ kind: 'Expire' }, expiresAtMs];
    case 'PayoutSucceeded': return [{ kind: 'PayoutSucceeded', railReference: 'rail-new' }, during];
    case 'PayoutFailed': return [{ kind: 'PayoutFailed', reason: 'rejected by bank', railReference: null }, during];
    case 'CryptoDelivered': return [{ kind: 'CryptoDelivered', onChainId: 'delivery-new' }, during];
    case 'CryptoDeliveryFailed': return [{ kind: 'CryptoDeliveryFailed', reason: 'no gas' }, during];
    case 'RefundSettled': return [{ kind: 'RefundSettled', depositId: state.deposit?.id ?? 'dep-none', refundOnChainId: 'refund-new' }, during];
  }
}

type Expected = { to: TransactionStatus; events: TransactionEventType[] } | { rejection: TransactionRejectionCode };

/** The documented outcome of each representative command, spelled independently of the table. */
function expected(direction: Direction, status: TransactionStatus, kind: TransactionCommandKind): Expected {
  const payoutOnly: TransactionCommandKind[] = ['DepositDetected', 'PayoutSucceeded', 'PayoutFailed'];
  const onrampOnly: TransactionCommandKind[] = ['PixPaymentReceived', 'CryptoDelivered', 'CryptoDeliveryFailed'];
  if (kind === 'Create') return { rejection: 'illegal_transition' };
  if ((direction === 'payout' ? onrampOnly : payoutOnly).includes(kind)) return { rejection: 'wrong_direction' };
  const stay = (events: TransactionEventType[] = []): Expected => ({ to: status, events });
  const illegal: Expected = { rejection: 'illegal_transition' };
  const isFunding = kind === 'DepositDetected' || kind === 'PixPaymentReceived';
  const isSuccess = kind === 'PayoutSucceeded' || kind === 'CryptoDelivered';
  const isFailure = kind === 'PayoutFailed' || kind === 'CryptoDeliveryFailed';
  if (isFunding) {
    if (status === 'AWAITING_PAYMENT') {
      return { to: 'PROCESSING_PAYMENT', events: ['DepositMatched', direction === 'payout' ? 'PayoutRequested' : 'DeliveryRequested'] };
    }
    // A late chain deposit is handed back (an unmatched deposit its partner decides on); a late PIX is refunded here.
    if (status === 'PAYMENT_EXPIRED') return direction === 'payout' ? { rejection: 'deposit_late' } : stay(['DepositLate', 'RefundRequested']);
    return stay(['StrayDepositReceived', 'RefundRequested']);
  }
  if (kind === 'Expire') {
    if (status === 'AWAITING_PAYMENT') return { to: 'PAYMENT_EXPIRED', events: ['Expired'] };
    return status === 'PAYMENT_EXPIRED' ? stay() : illegal;
  }
  if (isSuccess) {
    if (status === 'PROCESSING_PAYMENT') {
      return { to: 'PAYMENT_COMPLETED', events: [direction === 'payout' ? 'PayoutCompleted' : 'CryptoDelivered'] };
    }
    return status === 'PAYMENT_COMPLETED' ? { rejection: 'outcome_conflict' } : illegal;
  }
  if (isFailure) {
    if (status === 'PROCESSING_PAYMENT') {
      return { to: 'PAYMENT_FAILED', events: [direction === 'payout' ? 'PayoutFailed' : 'DeliveryFailed', 'RefundRequested'] };
    }
    return status === 'PAYMENT_FAILED' ? stay() : illegal;
  }
  // RefundSettled
  switch (status) {
    case 'AWAITING_PAYMENT': return illegal;
    case 'PROCESSING_PAYMENT':
    case 'PAYMENT_COMPLETED': return { rejection: 'no_refund_pending' };
    case 'PAYMENT_EXPIRED': return { rejection: 'unknown_deposit' };
    case 'PAYMENT_FAILED':
    case 'WRONG_AMOUNT': return stay(['RefundSettled']);
  }
}

for (const direction of ['payout', 'onramp'] as const) {
  test(`table (${direction}): every status × command kind is the documented transition or a typed rejection`, () => {
    let cases = 0;
    for (const status of transactionStatuses) {
      for (const kind of transactionCommandKinds) {
        const state = inStatus(direction, status);
        assert.equal(state.status, status);
        const [command, nowMs] = representative(kind, direction, state);
        const want = expected(direction, status, kind);
        const decision = decide(state, command, { nowMs });
        const label = `${direction} ${status} × ${kind}`;
        const tableAllows = transitionTable[status][kind];
        const directionAllows = commandDirections[kind].includes(direction);
        if ('rejection' in want) {
          assert.ok(!decision.ok, `${label}: expected ${want.rejection}`);
          assert.equal(decision.rejection.code, want.rejection, label);
          if (want.rejection === 'illegal_transition') {
            assert.deepEqual(decision.rejection, { code: 'illegal_transition', from: status, command: kind }, label);
            assert.equal(tableAllows.length, 0, `${label}: table must forbid`);
          } else if (want.rejection === 'wrong_direction') {
            assert.deepEqual(decision.rejection, { code: 'wrong_direction', direction, command: kind }, label);
            assert.ok(!directionAllows, label);
          } else {
            assert.ok(tableAllows.length > 0 && directionAllows, `${label}: a business rejection of an allowed kind`);
          }
        } else {
          assert.ok(decision.ok, `${label}: ${decision.ok ? '' : JSON.stringify(decision.rejection)}`);
          assert.deepEqual(types(decision.events), want.events, label);
          let after = state;
          for (const event of decision.events) after = evolve(after, event);
          assert.equal(after.status, want.to, label);
          assert.ok(tableAllows.includes(want.to), `${label}: table lists ${want.to}`);
        }
        cases += 1;
      }
    }
    assert.equal(cases, transactionStatuses.length * transactionCommandKinds.length);
  });
}

test('table: covers every status and kind; the kinds list is the command union', () => {
  assert.deepEqual(Object.keys(transitionTable).sort(), [...transactionStatuses].sort());
  for (const status of transactionStatuses) {
    assert.deepEqual(Object.keys(transitionTable[status]).sort(), [...transactionCommandKinds].sort());
    assert.deepEqual(transitionTable[status].Create, [], 'Create is only accepted without state');
  }
  assert.deepEqual(Object.keys(commandDirections).sort(), [...transactionCommandKinds].sort());
});

test('no state: Create is the only accepted command; everything else is not_found', () => {
  for (const kind of transactionCommandKinds) {
    if (kind === 'Create') continue;
    const [command] = representative(kind, 'payout', inStatus('payout', 'AWAITING_PAYMENT'));
    assert.deepEqual(rejectionOf(null, command), { code: 'not_found', command: kind });
  }
});

// ---------------------------------------------------------------------------------------------
// Create

test('Create: AWAITING_PAYMENT with the request fields, expiry from the quote', () => {
  const { state, events } = apply(null, create('payout'), t0);
  assert.deepEqual(types(events), ['Created']);
  assert.ok(state);
  assert.equal(state.status, 'AWAITING_PAYMENT');
  assert.equal(state.id, txId);
  assert.equal(state.direction, 'payout');
  assert.equal(state.expiresAtMs, expiresAtMs);
  assert.equal(state.createdAtMs, t0);
  assert.equal(state.updatedAtMs, t0);
  assert.equal(state.accountNumber, '@breb-key');
  assert.equal(state.taxId, '123456789');
  assert.equal(state.externalId, 'ext-1');
  assert.equal(state.onChainId, null);
  assert.equal(state.refundOnChainId, null);
  assert.equal(state.refund, 'none');
  assert.equal(state.deposit, null);
});

test('Create: rejected as quote_expired at and after the quote expiry', () => {
  assert.ok(decide(null, create('payout'), { nowMs: expiresAtMs - 1 }).ok);
  assert.deepEqual(rejectionOf(null, create('payout'), expiresAtMs), { code: 'quote_expired', expiresAtMs });
  assert.deepEqual(rejectionOf(null, create('onramp'), expiresAtMs + 1), { code: 'quote_expired', expiresAtMs });
});

test('Create: a recipient is required (account or QR for payout, the wallet for onramp)', () => {
  assert.deepEqual(rejectionOf(null, create('payout', { accountNumber: null, qrCode: null })), { code: 'recipient_missing' });
  assert.deepEqual(rejectionOf(null, create('payout', { accountNumber: '  ', qrCode: '' })), { code: 'recipient_missing' });
  assert.ok(decide(null, create('payout', { accountNumber: null, qrCode: '000201...' }), { nowMs: during }).ok);
  assert.deepEqual(rejectionOf(null, create('onramp', { accountNumber: null, qrCode: 'x' })), { code: 'recipient_missing' });
});

test('Create: another partner\'s quote is rejected; a non-canonical id is a bug', () => {
  assert.deepEqual(rejectionOf(null, create('payout', { partnerId: 'other' })), { code: 'quote_partner_mismatch' });
  assert.throws(() => decide(null, create('payout', { transactionId: txId.toUpperCase() }), { nowMs: during }), /invariant/);
});

// ---------------------------------------------------------------------------------------------
// Deposits (payout)

test('deposit: equal by value (any scale) → PROCESSING_PAYMENT and a payout request', () => {
  const awaiting = inStatus('payout', 'AWAITING_PAYMENT');
  const { state, events } = apply(awaiting, deposit('hash-1', decimal(255n, 1)));
  assert.ok(state);
  assert.equal(state.status, 'PROCESSING_PAYMENT');
  assert.equal(state.onChainId, 'hash-1');
  assert.equal(state.deposit?.amount.units, 255n);
  assert.equal(state.settlement.state, 'requested');
  const request = events[1];
  assert.ok(request?.type === 'PayoutRequested');
  assert.deepEqual(request.amount, payoutQuote.targetAmount);
  assert.equal(request.currency, 'COP');
  assert.equal(request.paymentMethod, 'BREB');
  assert.equal(request.accountNumber, '@breb-key');
});

test('deposit: short, over, wrong asset or network → WRONG_AMOUNT and a full refund', () => {
  const cases: [TransactionCommand, string][] = [
    [deposit('h', decimal(254_999_999n, 7)), 'short'],
    [deposit('h', decimal(255_000_001n, 7)), 'over'],
    [deposit('h', payoutQuote.sourceAmount, { asset: 'USDT' }), 'wrong_asset'],
    [deposit('h', payoutQuote.sourceAmount, { network: 'CELO' }), 'wrong_network'],
  ];
  for (const [command, mismatch] of cases) {
    const { state, events } = apply(inStatus('payout', 'AWAITING_PAYMENT'), command);
    assert.ok(state);
    assert.equal(state.status, 'WRONG_AMOUNT');
    assert.equal(state.onChainId, 'h');
    assert.equal(state.refund, 'pending');
    assert.equal(state.refundOnChainId, null);
    assert.deepEqual(types(events), ['DepositMismatched', 'RefundRequested']);
    const [mismatched, refund] = events;
    assert.ok(mismatched?.type === 'DepositMismatched' && refund?.type === 'RefundRequested');
    assert.equal(mismatched.mismatch, mismatch);
    assert.deepEqual(refund.deposit, state.deposit);
    assert.equal(refund.reason, 'wrong_amount');
    assert.equal(state.settlement.state, 'none');
  }
});

test('deposit (payout): a chain deposit at or after expiry is handed back as deposit_late, the transaction unchanged', () => {
  // Still AWAITING_PAYMENT (the timer has not fired) or already expired: either way the transfer is
  // not this transaction's; its deposit actor makes it an unmatched deposit for the partner.
  for (const [status, nowMs] of [['AWAITING_PAYMENT', expiresAtMs], ['PAYMENT_EXPIRED', expiresAtMs + 10]] as const) {
    assert.deepEqual(rejectionOf(inStatus('payout', status), deposit('late-1'), nowMs), { code: 'deposit_late', depositId: 'late-1' }, status);
    assert.deepEqual(rejectionOf(inStatus('payout', status), deposit('late-2'), nowMs + 10), { code: 'deposit_late', depositId: 'late-2' }, status);
  }
});

test('deposit (onramp): a late PIX while still AWAITING_PAYMENT → expired, then refunded; a later one is stray', () => {
  const { state, events } = apply(inStatus('onramp', 'AWAITING_PAYMENT'), pix('late-1'), expiresAtMs);
  assert.ok(state);
  assert.deepEqual(types(events), ['Expired', 'DepositLate', 'RefundRequested']);
  assert.equal(state.status, 'PAYMENT_EXPIRED');
  assert.equal(state.refund, 'pending');
  const second = apply(state, pix('late-2'), expiresAtMs + 20);
  assert.deepEqual(types(second.events), ['StrayDepositReceived', 'RefundRequested']);
});

test('deposit: the same onChainId again is a no-op in every status; different content is a conflict', () => {
  for (const status of transactionStatuses) {
    // An expired payout never records a chain deposit (a late one is handed back).
    if (status === 'PAYMENT_EXPIRED') continue;
    let state = inStatus('payout', status);
    if (state.deposit === null) state = apply(state, deposit('dep-1'), Math.max(during, state.updatedAtMs)).state ?? state;
    const recorded = state.deposit;
    assert.ok(recorded?.rail === 'chain');
    const again = decide(state, deposit(recorded.id, recorded.amount), { nowMs: expiresAtMs + 5 });
    assert.deepEqual(again, { ok: true, events: [] }, status);
    assert.deepEqual(rejectionOf(state, deposit(recorded.id, decimal(1n, 0))), { code: 'deposit_conflict', depositId: recorded.id });
    assert.deepEqual(rejectionOf(state, deposit(recorded.id, recorded.amount, { sender: 'GOTHER' })), { code: 'deposit_conflict', depositId: recorded.id });
  }
});

test('deposit: a second, different deposit on a funded transaction is refunded; status unchanged', () => {
  for (const status of ['PROCESSING_PAYMENT', 'PAYMENT_COMPLETED', 'PAYMENT_FAILED', 'WRONG_AMOUNT'] as const) {
    const before = inStatus('payout', status);
    const { state, events, webhooks } = apply(before, deposit('dup-2'));
    assert.ok(state);
    assert.equal(state.status, status);
    assert.deepEqual(types(events), ['StrayDepositReceived', 'RefundRequested']);
    assert.deepEqual(webhooks, []);
    assert.equal(state.onChainId, before.onChainId);
    assert.equal(state.refund, before.refund);
    assert.deepEqual(state.strayDeposits.map((s) => [s.deposit.id, s.refund]), [['dup-2', 'pending']]);
    // Its refund settles without a webhook and without touching the transaction's refund fields.
    const settled = apply(state, { kind: 'RefundSettled', depositId: 'dup-2', refundOnChainId: 'r-dup' });
    assert.deepEqual(settled.webhooks, []);
    assert.equal(settled.state?.refundOnChainId, before.refundOnChainId);
    assert.deepEqual(settled.state?.strayDeposits.map((s) => [s.refund, s.refundOnChainId]), [['settled', 'r-dup']]);
  }
});

test('deposit: stray deposits are bounded', () => {
  let state = inStatus('payout', 'PAYMENT_COMPLETED');
  for (let index = 0; index < strayDepositsMax; index += 1) state = apply(state, deposit(`stray-${index}`)).state ?? state;
  assert.equal(state.strayDeposits.length, strayDepositsMax);
  assert.deepEqual(rejectionOf(state, deposit('one-more')), { code: 'too_many_deposits', depositId: 'one-more' });
});

// Refund floors (docs/decisions-states.md, "Dust below the refund floor"): here 1 USDC on Stellar.
const floors = { STELLAR: decimal(1n, 0), SOLANA: decimal(1n, 0), CELO: decimal(1n, 1) };

function decideWithFloors(state: TransactionState | null, command: TransactionCommand, nowMs = during) {
  return decide(state, command, { nowMs, chainRefundFloors: floors });
}

function applyWithFloors(state: TransactionState, command: TransactionCommand, nowMs = during): TransactionState {
  const decision = decideWithFloors(state, command, nowMs);
  if (!decision.ok) throw new Error(`unexpected rejection ${JSON.stringify(decision.rejection)}`);
  let current: TransactionState | null = state;
  for (const event of decision.events) current = evolve(current, event);
  assert.ok(current !== null);
  return current;
}

test('refund floor: a chain deposit it would refund below its network floor is refused as dust, the transaction untouched', () => {
  const dust = decimal(9_999_999n, 7); // 0.9999999 USDC: one base unit under the floor
  const belowFloor = (depositId: string) => ({ ok: false, rejection: { code: 'below_refund_floor', depositId, floor: floors.STELLAR } });
  // A wrong amount while awaiting: not WRONG_AMOUNT; the exact payment can still come.
  const awaiting = inStatus('payout', 'AWAITING_PAYMENT');
  assert.deepEqual(decideWithFloors(awaiting, deposit('dust-1', dust)), belowFloor('dust-1'));
  assert.equal(applyWithFloors(awaiting, deposit('paid')).status, 'PROCESSING_PAYMENT');
  // Late (the timer has not fired yet, or it has), and stray on every funded status.
  assert.deepEqual(decideWithFloors(awaiting, deposit('dust-2', dust), expiresAtMs), belowFloor('dust-2'));
  assert.deepEqual(decideWithFloors(inStatus('payout', 'PAYMENT_EXPIRED'), deposit('dust-3', dust), expiresAtMs + 1), belowFloor('dust-3'));
  for (const status of ['PROCESSING_PAYMENT', 'PAYMENT_COMPLETED', 'PAYMENT_FAILED', 'WRONG_AMOUNT'] as const) {
    assert.deepEqual(decideWithFloors(inStatus('payout', status), deposit('dust-4', dust)), belowFloor('dust-4'), status);
  }
  // Dust beyond the stray slots is dust too (not too_many_deposits): it never costs a refund.
  let full = inStatus('payout', 'PAYMENT_COMPLETED');
  for (let index = 0; index < strayDepositsMax; index += 1) full = applyWithFloors(full, deposit(`stray-${index}`));
  assert.deepEqual(decideWithFloors(full, deposit('dust-5', dust)), belowFloor('dust-5'));
  assert.deepEqual(decideWithFloors(full, deposit('big', decimal(2n, 0))), { ok: false, rejection: { code: 'too_many_deposits', depositId: 'big' } });
  // The floor is the deposit's network's: 0.5 on Celo is above Celo's 0.1.
  assert.equal(applyWithFloors(awaiting, deposit('celo', decimal(5n, 1), { network: 'CELO' })).status, 'WRONG_AMOUNT');
});

test('refund floor: at or above it a deposit is refunded in full; an exact payment below it funds; failures and PIX are always refunded', () => {
  const atFloor = applyWithFloors(inStatus('payout', 'AWAITING_PAYMENT'), deposit('at-floor', decimal(1n, 0)));
  assert.deepEqual([atFloor.status, atFloor.refund], ['WRONG_AMOUNT', 'pending']);
  const stray = applyWithFloors(inStatus('payout', 'PAYMENT_COMPLETED'), deposit('stray', decimal(10_000_001n, 7)));
  assert.deepEqual(stray.strayDeposits.map((entry) => [entry.deposit.id, entry.refund]), [['stray', 'pending']]);
  // A quote below the floor (a tiny PIX payout): its exact deposit is a payment, not dust; when the
  // payout fails, the refund is ours to make whatever the amount.
  const tiny: Quote = { ...payoutQuote, sourceAmount: decimal(5n, 1) };
  const funded = applyWithFloors(run([[create('payout', { quote: tiny }), t0]]), deposit('tiny', decimal(5n, 1)));
  assert.equal(funded.status, 'PROCESSING_PAYMENT');
  const failed = applyWithFloors(funded, fail('payout'));
  assert.deepEqual([failed.status, failed.refund], ['PAYMENT_FAILED', 'pending']);
  // PIX payments (onramp) are refunded through the provider: no chain floor applies.
  const pixShort = applyWithFloors(inStatus('onramp', 'AWAITING_PAYMENT'), pix('p', decimal(1n, 2)));
  assert.deepEqual([pixShort.status, pixShort.refund], ['WRONG_AMOUNT', 'pending']);
});

test('deposit: zero or negative amounts are rejected', () => {
  const awaiting = inStatus('payout', 'AWAITING_PAYMENT');
  assert.deepEqual(rejectionOf(awaiting, deposit('z', decimal(0n, 7))), { code: 'invalid_amount' });
  assert.deepEqual(rejectionOf(awaiting, deposit('n', decimal(-1n, 7))), { code: 'invalid_amount' });
  assert.deepEqual(rejectionOf(inStatus('onramp', 'AWAITING_PAYMENT'), pix('z', decimal(0n, 2))), { code: 'invalid_amount' });
});

// ---------------------------------------------------------------------------------------------
// Expiry

test('Expire: before expiresAtMs → not_yet_expired; at it → PAYMENT_EXPIRED; again → no-op', () => {
  const awaiting = inStatus('payout', 'AWAITING_PAYMENT');
  assert.deepEqual(rejectionOf(awaiting, { kind: 'Expire' }, expiresAtMs - 1), { code: 'not_yet_expired', expiresAtMs });
  const { state, events } = apply(awaiting, { kind: 'Expire' }, expiresAtMs);
  assert.deepEqual(types(events), ['Expired']);
  assert.equal(state?.status, 'PAYMENT_EXPIRED');
  assert.equal(state?.refund, 'none');
  assert.deepEqual(decide(state, { kind: 'Expire' }, { nowMs: expiresAtMs + 1 }), { ok: true, events: [] });
});

// ---------------------------------------------------------------------------------------------
// Payout outcome and refunds

test('PayoutSucceeded → PAYMENT_COMPLETED; same reference again no-op; another → outcome_conflict', () => {
  const { state, events } = apply(inStatus('payout', 'PROCESSING_PAYMENT'), { kind: 'PayoutSucceeded', railReference: 'rail-9' });
  assert.deepEqual(types(events), ['PayoutCompleted']);
  assert.ok(state);
  assert.equal(state.status, 'PAYMENT_COMPLETED');
  assert.equal(state.settlement.reference, 'rail-9');
  assert.equal(state.onChainId, 'dep-1');
  assert.deepEqual(decide(state, { kind: 'PayoutSucceeded', railReference: 'rail-9' }, { nowMs: during }), { ok: true, events: [] });
  assert.deepEqual(rejectionOf(state, { kind: 'PayoutSucceeded', railReference: 'rail-8' }), {
    code: 'outcome_conflict', recorded: 'rail-9', reported: 'rail-8',
  });
});

test('PayoutFailed → PAYMENT_FAILED with a refund of the deposit; repeated report is a no-op', () => {
  const { state, events } = apply(inStatus('payout', 'PROCESSING_PAYMENT'), { kind: 'PayoutFailed', reason: 'closed', railReference: 'r1' });
  assert.ok(state);
  assert.deepEqual(types(events), ['PayoutFailed', 'RefundRequested']);
  const refund = events[1];
  assert.ok(refund?.type === 'RefundRequested');
  assert.equal(refund.reason, 'payout_failed');
  assert.equal(refund.deposit.id, 'dep-1');
  assert.equal(refund.deposit.rail === 'chain' && refund.deposit.sender, 'GSENDER');
  assert.equal(state.status, 'PAYMENT_FAILED');
  assert.equal(state.refund, 'pending');
  assert.equal(state.settlement.failureReason, 'closed');
  assert.deepEqual(decide(state, { kind: 'PayoutFailed', reason: 'closed again', railReference: null }, { nowMs: during }), { ok: true, events: [] });
});

test('RefundSettled: sets refundOnChainId, status unchanged; idempotent; a different id is refund_conflict', () => {
  for (const status of ['PAYMENT_FAILED', 'WRONG_AMOUNT'] as const) {
    const before = inStatus('payout', status);
    const depositId = before.deposit?.id ?? '';
    const { state } = apply(before, { kind: 'RefundSettled', depositId, refundOnChainId: 'refund-1' });
    assert.ok(state);
    assert.equal(state.status, status);
    assert.equal(state.refund, 'settled');
    assert.equal(state.refundOnChainId, 'refund-1');
    assert.deepEqual(decide(state, { kind: 'RefundSettled', depositId, refundOnChainId: 'refund-1' }, { nowMs: during }), { ok: true, events: [] });
    assert.deepEqual(rejectionOf(state, { kind: 'RefundSettled', depositId, refundOnChainId: 'refund-2' }), {
      code: 'refund_conflict', depositId, recorded: 'refund-1',
    });
    assert.deepEqual(rejectionOf(state, { kind: 'RefundSettled', depositId: 'nope', refundOnChainId: 'x' }), {
      code: 'unknown_deposit', depositId: 'nope',
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Onramp

test('onramp: exact PIX payment → PROCESSING_PAYMENT and a crypto delivery to the named wallet', () => {
  const { state, events, webhooks } = apply(inStatus('onramp', 'AWAITING_PAYMENT'), pix('pix-1', decimal(100n, 0)));
  assert.ok(state);
  assert.equal(state.status, 'PROCESSING_PAYMENT');
  assert.equal(state.onChainId, null, 'onChainId is the delivery hash, not the PIX id');
  assert.equal(state.deposit?.id, 'pix-1');
  const request = events[1];
  assert.ok(request?.type === 'DeliveryRequested');
  assert.deepEqual(request.amount, onrampQuote.targetAmount);
  assert.equal(request.network, 'SOLANA');
  assert.equal(request.asset, 'USDC');
  assert.equal(request.destination, 'GDESTINATIONWALLET');
  assert.deepEqual(webhooks.map((w) => [w.event, w.data.status]), [['transaction.updated', 'PROCESSING_PAYMENT']]);
});

test('onramp: short or over PIX payment → WRONG_AMOUNT and a refund to the payer', () => {
  for (const [amount, mismatch] of [[decimal(9_999n, 2), 'short'], [decimal(10_001n, 2), 'over']] as const) {
    const { state, events } = apply(inStatus('onramp', 'AWAITING_PAYMENT'), pix('pix-1', amount));
    assert.equal(state?.status, 'WRONG_AMOUNT');
    const [mismatched, refund] = events;
    assert.ok(mismatched?.type === 'DepositMismatched' && refund?.type === 'RefundRequested');
    assert.equal(mismatched.mismatch, mismatch);
    assert.equal(refund.deposit.rail, 'pix');
    assert.equal(refund.reason, 'wrong_amount');
  }
});

test('onramp: late PIX payment → PAYMENT_EXPIRED and refund, with no created webhook (not on-chain)', () => {
  const { state, events, webhooks } = apply(inStatus('onramp', 'AWAITING_PAYMENT'), pix('pix-late'), expiresAtMs + 1);
  assert.deepEqual(types(events), ['Expired', 'DepositLate', 'RefundRequested']);
  assert.equal(state?.status, 'PAYMENT_EXPIRED');
  assert.equal(state?.onChainId, null);
  assert.deepEqual(webhooks.map((w) => w.event), ['transaction.updated']);
});

test('onramp: CryptoDelivered → PAYMENT_COMPLETED with the delivery hash; conflicting hash rejected', () => {
  const { state } = apply(inStatus('onramp', 'PROCESSING_PAYMENT'), { kind: 'CryptoDelivered', onChainId: 'sig-1' });
  assert.ok(state);
  assert.equal(state.status, 'PAYMENT_COMPLETED');
  assert.equal(state.onChainId, 'sig-1');
  assert.deepEqual(decide(state, { kind: 'CryptoDelivered', onChainId: 'sig-1' }, { nowMs: during }), { ok: true, events: [] });
  assert.deepEqual(rejectionOf(state, { kind: 'CryptoDelivered', onChainId: 'sig-2' }), { code: 'outcome_conflict', recorded: 'sig-1', reported: 'sig-2' });
});

test('onramp: CryptoDeliveryFailed → PAYMENT_FAILED, PIX refund; the provider refund id settles it', () => {
  const failed = apply(inStatus('onramp', 'PROCESSING_PAYMENT'), { kind: 'CryptoDeliveryFailed', reason: 'rpc' });
  assert.deepEqual(types(failed.events), ['DeliveryFailed', 'RefundRequested']);
  const refund = failed.events[1];
  assert.ok(refund?.type === 'RefundRequested' && refund.deposit.rail === 'pix');
  assert.equal(refund.reason, 'delivery_failed');
  const settled = apply(failed.state, { kind: 'RefundSettled', depositId: 'dep-1', refundOnChainId: 'prov-refund-7' });
  assert.equal(settled.state?.status, 'PAYMENT_FAILED');
  assert.equal(settled.state?.refundOnChainId, 'prov-refund-7');
  assert.deepEqual(settled.webhooks.map((w) => [w.event, w.data.status, w.data.refundOnChainId]), [
    ['transaction.updated', 'PAYMENT_FAILED', 'prov-refund-7'],
  ]);
});

// ---------------------------------------------------------------------------------------------
// Webhooks

function lifecycle(commands: readonly [TransactionCommand, number?][]): Webhook[] {
  let state: TransactionState | null = null;
  const all: Webhook[] = [];
  for (const [command, nowMs] of commands) {
    const step = apply(state, command, nowMs);
    state = step.state;
    all.push(...step.webhooks);
  }
  return all;
}

const summary = (webhooks: Webhook[]) => webhooks.map((w) => [w.event, w.data.status, w.data.onChainId, w.data.refundOnChainId]);

test('webhooks: data object has exactly the spec fields', () => {
  const [first] = lifecycle([[create('payout'), t0]]);
  assert.ok(first);
  assert.deepEqual(first, {
    event: 'transaction.created',
    data: {
      id: txId, status: 'AWAITING_PAYMENT', quoteId: 'q-payout', accountNumber: '@breb-key', onChainId: null,
      refundOnChainId: null, taxId: '123456789', externalId: 'ext-1', partnerUserId: 'user-1',
    },
  });
});

test('webhooks: payout happy path', () => {
  assert.deepEqual(summary(lifecycle([[create('payout'), t0], [deposit('h1')], [succeed('payout')]])), [
    ['transaction.created', 'AWAITING_PAYMENT', null, null],
    ['transaction.created', 'PROCESSING_PAYMENT', 'h1', null],
    ['transaction.updated', 'PROCESSING_PAYMENT', 'h1', null],
    ['transaction.updated', 'PAYMENT_COMPLETED', 'h1', null],
  ]);
});

test('webhooks: failure, wrong amount and expiry each send the status first, then the refund', () => {
  const settle = (depositId: string): [TransactionCommand] => [{ kind: 'RefundSettled', depositId, refundOnChainId: 'rf' }];
  assert.deepEqual(summary(lifecycle([[create('payout'), t0], [deposit('h1')], [fail('payout')], settle('h1')])).slice(3), [
    ['transaction.updated', 'PAYMENT_FAILED', 'h1', null],
    ['transaction.updated', 'PAYMENT_FAILED', 'h1', 'rf'],
  ]);
  assert.deepEqual(summary(lifecycle([[create('payout'), t0], [deposit('h1', decimal(1n, 0))], settle('h1')])).slice(1), [
    ['transaction.created', 'WRONG_AMOUNT', 'h1', null],
    ['transaction.updated', 'WRONG_AMOUNT', 'h1', null],
    ['transaction.updated', 'WRONG_AMOUNT', 'h1', 'rf'],
  ]);
  // Payout: a late chain deposit is handed back (unmatched), so expiry sends its one update only.
  assert.deepEqual(summary(lifecycle([[create('payout'), t0], [{ kind: 'Expire' }, expiresAtMs]])).slice(1), [
    ['transaction.updated', 'PAYMENT_EXPIRED', null, null],
  ]);
});

test('webhooks: an expiry without any deposit sends one updated and nothing more', () => {
  assert.deepEqual(summary(lifecycle([[create('onramp'), t0], [{ kind: 'Expire' }, expiresAtMs]])), [
    ['transaction.created', 'AWAITING_PAYMENT', null, null],
    ['transaction.updated', 'PAYMENT_EXPIRED', null, null],
  ]);
});

// ---------------------------------------------------------------------------------------------
// Limits

test('limitEffectFor: reserve on accept, release on expiry/failure/wrong amount, keep on completion', () => {
  const effects = new Map<TransactionEventType, LimitEffect | null>();
  const record = (events: readonly TransactionEvent[]) => { for (const e of events) effects.set(e.type, limitEffectFor(e)); };
  for (const direction of ['payout', 'onramp'] as const) {
    record(apply(null, create(direction), t0).events);
    record(apply(inStatus(direction, 'AWAITING_PAYMENT'), fund(direction)).events);
    record(apply(inStatus(direction, 'AWAITING_PAYMENT'), short(direction)).events);
    // A late payout deposit is handed back (no event); a late PIX is refunded by the transaction.
    if (direction === 'onramp') record(apply(inStatus(direction, 'AWAITING_PAYMENT'), fund(direction), expiresAtMs).events);
    record(apply(inStatus(direction, 'PROCESSING_PAYMENT'), succeed(direction)).events);
    record(apply(inStatus(direction, 'PROCESSING_PAYMENT'), fail(direction)).events);
    record(apply(inStatus(direction, 'PROCESSING_PAYMENT'), fund(direction, 'dep-2')).events);
    record(apply(inStatus(direction, 'WRONG_AMOUNT'), { kind: 'RefundSettled', depositId: 'dep-1', refundOnChainId: 'r' }).events);
  }
  assert.deepEqual(Object.fromEntries([...effects].sort(([a], [b]) => a.localeCompare(b))), {
    Created: 'reserve',
    CryptoDelivered: 'keep',
    DeliveryFailed: 'release',
    DeliveryRequested: null,
    DepositLate: null,
    DepositMatched: null,
    DepositMismatched: 'release',
    Expired: 'release',
    PayoutCompleted: 'keep',
    PayoutFailed: 'release',
    PayoutRequested: null,
    RefundRequested: null,
    RefundSettled: null,
    StrayDepositReceived: null,
  });
});

// ---------------------------------------------------------------------------------------------
// evolve guards

test('evolve: an event that does not fit the state is a bug and throws', () => {
  const awaiting = inStatus('payout', 'AWAITING_PAYMENT');
  assert.throws(() => evolve(null, { type: 'Expired', atMs: t0 }), /invariant/);
  assert.throws(() => evolve(awaiting, { type: 'PayoutCompleted', atMs: during, railReference: 'x' }), /invariant/);
  const createdEvent = apply(null, create('payout'), t0).events[0];
  assert.ok(createdEvent);
  assert.throws(() => evolve(awaiting, createdEvent), /invariant/);
  const expired = inStatus('payout', 'PAYMENT_EXPIRED');
  assert.throws(() => evolve(expired, { type: 'DepositMatched', atMs: during, deposit: { rail: 'chain', id: 'h', amount: payoutQuote.sourceAmount, network: 'STELLAR', asset: 'USDC', sender: 'G', receivedAtMs: during } }), /invariant/);
  assert.throws(() => evolve(awaiting, { type: 'RefundSettled', atMs: during, depositId: 'h', refundOnChainId: 'r' }), /invariant/);
});

test('time never runs backwards in a record: an early nowMs is clamped to updatedAtMs', () => {
  const processing = inStatus('payout', 'PROCESSING_PAYMENT');
  const { state } = apply(processing, succeed('payout'), t0 - 10_000);
  assert.equal(state?.updatedAtMs, processing.updatedAtMs);
});

// ---------------------------------------------------------------------------------------------
// Seeded random sequences

function prng(seed: number): () => number {
  let value = seed >>> 0;
  return () => {
    value = (value + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(value ^ (value >>> 15), 1 | value);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

test('random sequences: no throws, typed rejections, legal statuses, every deposit either funds or is refunded', () => {
  const rejectionCodes = new Set<string>();
  for (let seed = 1; seed <= 300; seed += 1) {
    const random = prng(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const direction = pick(['payout', 'onramp'] as const);
    let state: TransactionState | null = null;
    let nowMs = t0;
    const depositIds: string[] = [];
    for (let step = 0; step < 40; step += 1) {
      nowMs += Math.floor(random() * 400_000);
      const reuse = depositIds.length > 0 && random() < 0.3;
      const id = reuse ? pick(depositIds) : `d-${seed}-${step}`;
      const amount = pick([quoteOf(direction).sourceAmount, decimal(1n, 0), decimal(1_000n, 0)]);
      const command: TransactionCommand = pick<TransactionCommand>([
        create(direction),
        deposit(id, amount),
        pix(id, amount),
        { kind: 'Expire' },
        succeed(direction, pick(['a', 'b'])),
        fail(direction),
        { kind: 'RefundSettled', depositId: depositIds.length > 0 ? pick(depositIds) : 'x', refundOnChainId: pick(['r1', 'r2']) },
      ]);
      const before = state as TransactionState | null;
      const decision = decide(state, command, { nowMs });
      if (!decision.ok) {
        rejectionCodes.add(decision.rejection.code);
        continue;
      }
      const updates: Webhook[] = [];
      for (const event of decision.events) {
        state = evolve(state, event);
        updates.push(...webhooksFor(event, state).filter((w) => w.event === 'transaction.updated' && w.data.refundOnChainId === null));
        if (event.type === 'DepositMatched' || event.type === 'DepositMismatched' || event.type === 'DepositLate' || event.type === 'StrayDepositReceived') {
          depositIds.push(event.deposit.id);
        }
      }
      assert.ok(state !== null);
      // A status change is announced exactly once by a transaction.updated without refund id.
      const changed: boolean = before !== null && before.status !== state.status;
      assert.equal(updates.length, changed ? 1 : 0, `seed ${seed} step ${step}`);
      if (before !== null) assert.ok(before.status === state.status || transitionTable[before.status][command.kind].includes(state.status));
      // Money: only the matched deposit of a processing/completed transaction is kept.
      const kept: boolean = state.status === 'PROCESSING_PAYMENT' || state.status === 'PAYMENT_COMPLETED';
      if (state.deposit !== null) assert.equal(state.refund === 'none', kept, `seed ${seed}`);
      for (const stray of state.strayDeposits) assert.notEqual(stray.refund, 'none');
    }
  }
  for (const code of ['illegal_transition', 'wrong_direction', 'deposit_conflict', 'outcome_conflict']) {
    assert.ok(rejectionCodes.has(code), `random runs reach ${code}`);
  }
});
