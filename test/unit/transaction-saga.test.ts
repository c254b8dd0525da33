// The acceptance saga of the transaction actor, driven command by command through its pure
// `handle`: which counters (and the quote, claimed for its single use) are asked and when, which
// answer wins, what is released (and what is not), and that a transaction releases its
// reservations exactly once.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import type { CounterCommand, CounterWindow, ReservationOutcome } from '../../src/actors/counter-actor.ts';
import { reservationResultKind } from '../../src/actors/counter-actor.ts';
import { quoteClaimResultKind } from '../../src/actors/quote-actor.ts';
import type { CommandEnvelope, CommandToSend, JsonValue, Outcome } from '../../src/actors/envelope.ts';
import { timerCommandKind } from '../../src/actors/envelope.ts';
import { fromJsonValue, toJsonValue } from '../../src/actors/state-codec.ts';
import {
  transactionBehavior,
  type AcceptPayload,
  type AcceptReply,
  type TransactionActorState,
} from '../../src/actors/transaction-actor.ts';
import { acceptanceCounterKeys } from '../../src/domain/limits.ts';
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { brebPayoutQuote, pixPayoutQuote } from '../support/quotes.ts';
import { handleCommand } from '../support/handle-command.ts';

const t0 = 1_700_000_000_000;
const txId = '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f';
const replyTo = { stream: 'reply:edge-1', requestId: 'r-1' };

const brebQuote = brebPayoutQuote(t0);
const pixQuote = pixPayoutQuote(t0);


const behavior = transactionBehavior({ limits: () => defaultLimitsConfig });
const keys = acceptanceCounterKeys(defaultLimitsConfig, { partnerId: 'acme', userId: 'user-1', method: 'BREB', nowMs: t0 });
const windowOfKey = new Map<string, CounterWindow>([
  [keys.userDay ?? '', 'userDay'],
  [keys.methodDay ?? '', 'methodDay'],
  [keys.kycMonth, 'kycMonth'],
  [keys.kyb, 'kyb'],
]);

/** One transaction actor, its state carried from command to command as the runtime would. */
class Saga {
  state: TransactionActorState | null = null;
  private sequence = 0;

  apply(kind: string, payload: JsonValue, options: { replyTo?: typeof replyTo; nowMs?: number } = {}): Outcome<TransactionActorState> {
    this.sequence += 1;
    const command: CommandEnvelope = {
      commandId: `c-${this.sequence}`,
      actorType: 'transaction',
      actorKey: txId,
      kind,
      payload,
      ...(options.replyTo ? { replyTo: options.replyTo } : {}),
      sentAtMs: t0,
    };
    const outcome = handleCommand(behavior, this.state, command, { nowMs: options.nowMs ?? t0, commandId: command.commandId });
    // What the runtime persists is the encoded state: every step goes through a round trip.
    if (outcome.state !== undefined) this.state = behavior.decode(behavior.encode(outcome.state));
    return outcome;
  }

  /**
   * The acceptance; the quote's claim is then answered with `quote` (granted unless a test says
   * otherwise; null leaves it unanswered). Returns the acceptance's own outcome.
   */
  accept(payload: AcceptPayload, quote: ReservationOutcome | null = { ok: true }): Outcome<TransactionActorState> {
    const outcome = this.apply('accept', toJsonValue(payload), { replyTo });
    if (quote !== null && quoteSends(outcome).includes('claim')) this.answer('quote', quote);
    return outcome;
  }

  answer(window: CounterWindow | 'quote', outcome: ReservationOutcome): Outcome<TransactionActorState> {
    if (window === 'quote') return this.apply(quoteClaimResultKind, toJsonValue({ outcome }));
    return this.apply(reservationResultKind, toJsonValue({ window, outcome }));
  }
}

/** The commands sent to the quote (`claim`, `release`, `consume`), in order. */
function quoteSends(outcome: Outcome<TransactionActorState>): string[] {
  return (outcome.send ?? []).filter((send) => send.actorType === 'quote').map((send) => {
    assert.ok([brebQuote.id, pixQuote.id].includes(send.actorKey), 'sent to the accepted quote');
    assert.equal(fromJsonValue<{ transactionId: string }>(send.payload).transactionId, txId);
    return send.kind;
  });
}

interface CounterSend {
  readonly window: CounterWindow;
  readonly command: CounterCommand;
}

function counterSends(outcome: Outcome<TransactionActorState>): CounterSend[] {
  return (outcome.send ?? []).filter((send) => send.actorType !== 'quote').map((send: CommandToSend) => {
    assert.equal(send.actorType, 'counter');
    const window = windowOfKey.get(send.actorKey);
    assert.ok(window !== undefined, `a send to an unexpected counter ${send.actorKey}`);
    return { window, command: fromJsonValue<CounterCommand>(send.payload) };
  });
}

function asked(outcome: Outcome<TransactionActorState>, kind: CounterCommand['kind']): CounterWindow[] {
  const sends = counterSends(outcome);
  for (const send of sends) assert.equal(send.command.kind, kind);
  return sends.map((send) => send.window).sort();
}

function answerOf(outcome: Outcome<TransactionActorState>): AcceptReply {
  const replies = outcome.replies ?? [];
  assert.equal(replies.length, 1, 'the waiting edge gets one answer');
  return replies[0]?.payload as unknown as AcceptReply;
}

const granted: ReservationOutcome = { ok: true };
const methodCap: ReservationOutcome = { ok: false, rejection: { code: 'method_daily_cap', method: 'BREB' } };
const userCountCap: ReservationOutcome = { ok: false, rejection: { code: 'user_daily_count_cap', method: 'BREB', countCap: 15 } };
const kybCap: ReservationOutcome = { ok: false, rejection: { code: 'kyb_cap', cap: defaultLimitsConfig.kybUnapprovedCompletedTotalMax } };
const kycRequired: ReservationOutcome = { ok: false, kycRequired: true };

describe('acceptance saga: the method × day counter is asked first', () => {
  test('a BREB acceptance asks the method counter alone first (with the KYB total when not approved)', () => {
    assert.deepEqual(asked(new Saga().accept(acceptPayload(brebQuote)), 'reserve'), ['methodDay']);
    assert.deepEqual(asked(new Saga().accept(acceptPayload(brebQuote, { kybApproved: false })), 'reserve'), ['kyb', 'methodDay']);
  });

  test('a refusal at the method cap answers at once, asks no other counter and releases nothing', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    const refused = saga.answer('methodDay', methodCap);
    assert.deepEqual(counterSends(refused), [], 'nothing to release, nobody else to ask');
    const reply = answerOf(refused);
    assert.ok(!reply.ok);
    assert.equal(reply.code, 'method_daily_cap');
    assert.equal(reply.httpStatus, undefined, 'a reply carries no HTTP status: the edge maps the code');
    assert.equal(saga.state?.phase, 'rejected');
  });

  test('the method cap answers before the KYC gate and the user caps: they are never asked', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kycEnabled: true }));
    const reply = answerOf(saga.answer('methodDay', methodCap));
    assert.ok(!reply.ok && reply.code === 'method_daily_cap');
  });

  test('once the method counter grants, the user × day and KYC month counters are asked together', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    const next = saga.answer('methodDay', granted);
    assert.deepEqual(asked(next, 'reserve'), ['kycMonth', 'userDay']);
    assert.equal(next.replies, undefined, 'no answer yet');
    assert.deepEqual(counterSends(saga.answer('userDay', granted)), [], 'waits for the KYC month counter');
    const created = saga.answer('kycMonth', granted);
    const reply = answerOf(created);
    assert.ok(reply.ok && !reply.kycRequired);
    assert.equal(reply.id, txId);
    assert.equal(saga.state?.phase, 'live');
  });

  test('a refusal in the second stage releases exactly the reservations that were granted', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    saga.answer('methodDay', granted);
    saga.answer('kycMonth', granted);
    const refused = saga.answer('userDay', userCountCap);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'methodDay']);
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'user_daily_count_cap');
  });

  test('kycRequired in the second stage releases the others and answers 200 with kycRequired', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kycEnabled: true }));
    saga.answer('methodDay', granted);
    saga.answer('userDay', granted);
    const gated = saga.answer('kycMonth', kycRequired);
    assert.deepEqual(asked(gated, 'release'), ['methodDay', 'userDay']);
    assert.deepEqual(answerOf(gated), { ok: true, kycRequired: true });
  });

  test('the KYB cap outranks the method cap; a granted method reservation is given back', () => {
    const both = new Saga();
    both.accept(acceptPayload(brebQuote, { kybApproved: false }));
    both.answer('methodDay', methodCap);
    const bothRefused = both.answer('kyb', kybCap);
    assert.deepEqual(counterSends(bothRefused), []);
    const first = answerOf(bothRefused);
    assert.ok(!first.ok && first.code === 'kyb_cap');

    const kybOnly = new Saga();
    kybOnly.accept(acceptPayload(brebQuote, { kybApproved: false }));
    kybOnly.answer('kyb', kybCap);
    const refused = kybOnly.answer('methodDay', granted);
    assert.deepEqual(asked(refused, 'release'), ['methodDay'], 'the refused KYB reservation holds nothing');
    const second = answerOf(refused);
    assert.ok(!second.ok && second.code === 'kyb_cap');
  });

  test('a refusal at the method cap gives back a granted KYB reservation', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kybApproved: false }));
    saga.answer('kyb', granted);
    const refused = saga.answer('methodDay', methodCap);
    assert.deepEqual(asked(refused, 'release'), ['kyb']);
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'method_daily_cap');
  });

  test('kycRequired gives back a granted KYB reservation (PIX: every counter at once)', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(pixQuote, { kybApproved: false, kycEnabled: true }));
    saga.answer('kyb', granted);
    const gated = saga.answer('kycMonth', kycRequired);
    assert.deepEqual(asked(gated, 'release'), ['kyb']);
    assert.deepEqual(answerOf(gated), { ok: true, kycRequired: true });
  });

  test('without a method counter (PIX) every counter is asked at once', () => {
    const saga = new Saga();
    assert.deepEqual(asked(saga.accept(acceptPayload(pixQuote, { kybApproved: false })), 'reserve'), ['kyb', 'kycMonth']);
  });

  test('duplicate and unasked results change nothing', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    assert.deepEqual(saga.answer('userDay', userCountCap), {}, 'userDay was not asked yet');
    saga.answer('methodDay', granted);
    assert.deepEqual(saga.answer('methodDay', methodCap), {}, 'the method counter already answered');
    saga.answer('userDay', granted);
    const created = saga.answer('kycMonth', granted);
    assert.equal(saga.state?.phase, 'live');
    assert.ok(answerOf(created).ok);
    assert.deepEqual(saga.answer('kycMonth', granted), {}, 'after the saga settled');
  });

  test('a saga stored before stages existed (every counter asked at once, no `sent`, no quote) still settles', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote), null);
    assert.ok(saga.state?.phase === 'reserving');
    const { sent, windows, ...legacy } = saga.state;
    assert.deepEqual(sent, ['quote', 'methodDay']);
    saga.state = behavior.decode(toJsonValue({ ...legacy, windows: windows.filter((window) => window !== 'quote') }));
    saga.answer('userDay', granted);
    saga.answer('methodDay', methodCap);
    const refused = saga.answer('kycMonth', granted);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'userDay']);
    assert.deepEqual(quoteSends(refused), [], 'it never claimed the quote');
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'method_daily_cap');
  });

  test('an accept sent again while the saga runs waits for the same answer; after it, gets it replayed', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    const again = saga.apply('accept', toJsonValue(acceptPayload(brebQuote)), { replyTo: { stream: 'reply:edge-2', requestId: 'r-2' } });
    assert.deepEqual(counterSends(again), [], 'no second reservation');
    const refused = saga.answer('methodDay', methodCap);
    assert.equal(refused.replies?.length, 2, 'both waiting edges are answered');
    const later = saga.apply('accept', toJsonValue(acceptPayload(brebQuote)), { replyTo });
    assert.deepEqual(later.reply, refused.replies?.[0]?.payload);
  });
});

describe('acceptance saga: the quote is claimed once, used by a created transaction, given back otherwise', () => {
  const quoteUsed: ReservationOutcome = { ok: false, rejection: { code: 'quote_used', transactionId: 'the-winner' } };
  const quoteInUse: ReservationOutcome = { ok: false, rejection: { code: 'quote_in_use' } };

  test('the quote is claimed in the first stage, with the method counter (BREB) or with every counter (PIX)', () => {
    const breb = new Saga().accept(acceptPayload(brebQuote, { kybApproved: false }), null);
    assert.deepEqual(quoteSends(breb), ['claim']);
    assert.deepEqual(asked(breb, 'reserve'), ['kyb', 'methodDay']);
    const pix = new Saga().accept(acceptPayload(pixQuote), null);
    assert.deepEqual(quoteSends(pix), ['claim']);
    assert.deepEqual(asked(pix, 'reserve'), ['kycMonth']);
  });

  test('a created transaction marks the quote used; nothing is given back', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    saga.answer('methodDay', granted);
    saga.answer('userDay', granted);
    const created = saga.answer('kycMonth', granted);
    assert.ok(answerOf(created).ok);
    assert.deepEqual(quoteSends(created), ['consume']);
    assert.deepEqual(counterSends(created), []);
  });

  test('a quote used by another transaction: quote_used (ahead of the KYB and method caps); the counters granted are given back', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kybApproved: false }), quoteUsed);
    saga.answer('kyb', kybCap);
    const refused = saga.answer('methodDay', granted);
    assert.deepEqual(asked(refused, 'release'), ['methodDay']);
    assert.deepEqual(quoteSends(refused), [], 'the quote was not claimed: nothing to give back');
    assert.deepEqual(answerOf(refused), {
      ok: false,
      code: 'quote_used',
      reason: 'The quote was already accepted (transaction the-winner); request a new quote',
      retryable: false,
    });
  });

  test('a quote another acceptance holds: quote_in_use, retryable', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(pixQuote), quoteInUse);
    const refused = saga.answer('kycMonth', granted);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth']);
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'quote_in_use' && reply.retryable && reply.httpStatus === undefined);
  });

  test('refused elsewhere (a cap) or answered kycRequired: the claim is given back with the reservations', () => {
    const capped = new Saga();
    capped.accept(acceptPayload(brebQuote));
    const refused = capped.answer('methodDay', methodCap);
    assert.deepEqual(quoteSends(refused), ['release']);
    assert.ok(!answerOf(refused).ok);

    const gated = new Saga();
    gated.accept(acceptPayload(pixQuote, { kycEnabled: true }));
    const kyc = gated.answer('kycMonth', kycRequired);
    assert.deepEqual(quoteSends(kyc), ['release']);
    assert.deepEqual(answerOf(kyc), { ok: true, kycRequired: true });
  });

  test('the quote expiring while the counters answered: nothing created, the claim given back', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(pixQuote));
    const late = saga.apply(reservationResultKind, toJsonValue({ window: 'kycMonth', outcome: granted }), { nowMs: pixQuote.expiresAtMs });
    assert.deepEqual(quoteSends(late), ['release']);
    const reply = answerOf(late);
    assert.ok(!reply.ok && reply.code === 'quote_expired');
  });

  test('a transaction accepted before quotes were single-use (no quote step) is created without marking one', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(pixQuote), null);
    assert.ok(saga.state?.phase === 'reserving');
    const { windows, sent, results } = saga.state;
    saga.state = behavior.decode(toJsonValue({ ...saga.state, windows: windows.filter((w) => w !== 'quote'), sent: (sent ?? []).filter((w) => w !== 'quote'), results }));
    const created = saga.answer('kycMonth', granted);
    assert.ok(answerOf(created).ok);
    assert.deepEqual(quoteSends(created), []);
  });
});

describe('a live transaction gives its reservations back exactly once', () => {
  function live(accept: AcceptPayload): Saga {
    const saga = new Saga();
    saga.accept(accept);
    saga.answer('methodDay', granted);
    if (!accept.kybApproved) saga.answer('kyb', granted);
    saga.answer('userDay', granted);
    saga.answer('kycMonth', granted);
    assert.equal(saga.state?.phase, 'live');
    return saga;
  }

  test('expiry releases every reservation once (the KYB total too); a second timer does nothing', () => {
    const saga = live(acceptPayload(brebQuote, { kybApproved: false }));
    const expired = saga.apply(timerCommandKind, { dueAtMs: brebQuote.expiresAtMs }, { nowMs: brebQuote.expiresAtMs });
    assert.deepEqual(asked(expired, 'release'), ['kyb', 'kycMonth', 'methodDay', 'userDay']);
    assert.deepEqual(quoteSends(expired), [], 'the quote stays used');
    const again = saga.apply(timerCommandKind, { dueAtMs: brebQuote.expiresAtMs }, { nowMs: brebQuote.expiresAtMs + 1 });
    assert.deepEqual(counterSends(again), []);
  });

  test('completion keeps every reservation (the KYB total too): a commit each, never a release', () => {
    const saga = live(acceptPayload(brebQuote, { kybApproved: false }));
    const deposit = { kind: 'DepositDetected', onChainId: 'hash-1', amount: brebQuote.sourceAmount, network: 'STELLAR', asset: 'USDC', sender: 'GSENDER' };
    assert.deepEqual(counterSends(saga.apply('DepositDetected', toJsonValue(deposit))), []);
    const completed = saga.apply('PayoutSucceeded', toJsonValue({ kind: 'PayoutSucceeded', railReference: 'rail-1' }));
    assert.deepEqual(asked(completed, 'commit'), ['kyb', 'kycMonth', 'methodDay', 'userDay']);
    assert.deepEqual(quoteSends(completed), []);
    const late = saga.apply(timerCommandKind, { dueAtMs: brebQuote.expiresAtMs }, { nowMs: brebQuote.expiresAtMs });
    assert.deepEqual(counterSends(late), [], 'a completed transaction never expires');
  });
});
