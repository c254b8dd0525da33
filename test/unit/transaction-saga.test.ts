// The acceptance saga of the transaction actor, driven command by command through its pure
// `handle`: which counters (and the quote, claimed for its single use) are asked — all at once, in
// one round; the rest of a saga an older release stored mid-way — which answer wins, what is
// released (and what is not), and that a transaction releases its reservations exactly once.
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

describe('acceptance saga: every step is asked at once, in one round', () => {
  test('a BREB acceptance asks every counter at once (the KYB total too when not approved), with the quote\'s claim', () => {
    const approved = new Saga().accept(acceptPayload(brebQuote), null);
    assert.deepEqual(asked(approved, 'reserve'), ['kycMonth', 'methodDay', 'userDay']);
    assert.deepEqual(quoteSends(approved), ['claim']);
    assert.equal(approved.replies, undefined, 'no answer yet');
    assert.deepEqual(asked(new Saga().accept(acceptPayload(brebQuote, { kybApproved: false })), 'reserve'), ['kyb', 'kycMonth', 'methodDay', 'userDay']);
  });

  test('a refusal at the method cap is answered once every asked step answered: nothing before, one answer after', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    const capped = saga.answer('methodDay', methodCap);
    assert.equal(capped.replies, undefined, 'waits for the other counters');
    assert.equal(capped.send, undefined, 'nothing released, nothing asked');
    const userDay = saga.answer('userDay', granted);
    assert.equal(userDay.replies, undefined, 'waits for the KYC month counter');
    assert.equal(userDay.send, undefined);
    const refused = saga.answer('kycMonth', granted);
    const reply = answerOf(refused);
    assert.ok(!reply.ok);
    assert.equal(reply.code, 'method_daily_cap');
    assert.equal(reply.httpStatus, undefined, 'a reply carries no HTTP status: the edge maps the code');
    assert.equal(saga.state?.phase, 'rejected');
  });

  test('a method-cap refusal in one round releases the granted user-day and KYC-month reservations and the claimed quote: nothing stays held', () => {
    const saga = new Saga();
    const started = saga.accept(acceptPayload(brebQuote));
    const reserved = asked(started, 'reserve');
    saga.answer('userDay', granted);
    saga.answer('kycMonth', granted);
    const refused = saga.answer('methodDay', methodCap);
    assert.ok(!answerOf(refused).ok);
    const released = asked(refused, 'release');
    assert.deepEqual(released, ['kycMonth', 'userDay'], 'every granted counter gets its release');
    assert.deepEqual(quoteSends(refused), ['release'], 'the claimed quote is given back');
    assert.deepEqual(reserved.filter((window) => !released.includes(window)), ['methodDay'], 'only the refused method reservation, which holds nothing, is not released');
    for (const send of counterSends(refused)) assert.deepEqual(send.command, { kind: 'release', transactionId: txId });
    assert.equal(saga.state?.phase, 'rejected');
    // A grant after the refusal may be a reserve delivered again once its counter forgot it, which
    // counted the transaction again: its step gets a release again (a no-op at a counter that gave
    // it back already; test/unit/late-grant.test.ts), and nothing else happens.
    const redelivered = saga.answer('userDay', granted);
    assert.deepEqual([redelivered.state, redelivered.replies, redelivered.reply], [undefined, undefined, undefined], 'no new state, nobody answered');
    assert.deepEqual(asked(redelivered, 'release'), ['userDay'], 'a redelivered grant after the refusal reserves nothing and releases its step once more');
    assert.deepEqual(quoteSends(redelivered), []);
  });

  test('the method cap outranks the KYC gate and the user caps refusing in the same round', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kycEnabled: true }));
    saga.answer('userDay', userCountCap);
    saga.answer('kycMonth', kycRequired);
    const refused = saga.answer('methodDay', methodCap);
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'method_daily_cap');
    assert.deepEqual(counterSends(refused), [], 'no counter granted: nothing to release');
    assert.deepEqual(quoteSends(refused), ['release']);
  });

  test('every counter granting, in any order: created when the last one answers, not before', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    for (const window of ['methodDay', 'userDay'] as const) {
      const waiting = saga.answer(window, granted);
      assert.equal(waiting.replies, undefined, `${window}: no answer yet`);
      assert.equal(waiting.send, undefined, `${window}: nothing else asked`);
    }
    const created = saga.answer('kycMonth', granted);
    const reply = answerOf(created);
    assert.ok(reply.ok && !reply.kycRequired);
    assert.equal(reply.id, txId);
    assert.equal(saga.state?.phase, 'live');
  });

  test('a refusal at the user cap releases exactly the reservations that were granted', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    saga.answer('methodDay', granted);
    saga.answer('kycMonth', granted);
    const refused = saga.answer('userDay', userCountCap);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'methodDay']);
    assert.deepEqual(quoteSends(refused), ['release']);
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'user_daily_count_cap');
  });

  test('kycRequired releases the others and answers 200 with kycRequired', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kycEnabled: true }));
    saga.answer('methodDay', granted);
    saga.answer('userDay', granted);
    const gated = saga.answer('kycMonth', kycRequired);
    assert.deepEqual(asked(gated, 'release'), ['methodDay', 'userDay']);
    assert.deepEqual(answerOf(gated), { ok: true, kycRequired: true });
  });

  test('the KYB cap outranks the method cap; every granted reservation is given back', () => {
    const both = new Saga();
    both.accept(acceptPayload(brebQuote, { kybApproved: false }));
    both.answer('methodDay', methodCap);
    both.answer('kyb', kybCap);
    both.answer('userDay', granted);
    const bothRefused = both.answer('kycMonth', granted);
    assert.deepEqual(asked(bothRefused, 'release'), ['kycMonth', 'userDay'], 'the refused KYB and method reservations hold nothing');
    const first = answerOf(bothRefused);
    assert.ok(!first.ok && first.code === 'kyb_cap');

    const kybOnly = new Saga();
    kybOnly.accept(acceptPayload(brebQuote, { kybApproved: false }));
    kybOnly.answer('kyb', kybCap);
    kybOnly.answer('userDay', granted);
    kybOnly.answer('kycMonth', granted);
    const refused = kybOnly.answer('methodDay', granted);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'methodDay', 'userDay'], 'the refused KYB reservation holds nothing');
    const second = answerOf(refused);
    assert.ok(!second.ok && second.code === 'kyb_cap');
  });

  test('a refusal at the method cap gives back a granted KYB reservation', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote, { kybApproved: false }));
    saga.answer('kyb', granted);
    saga.answer('userDay', granted);
    saga.answer('kycMonth', granted);
    const refused = saga.answer('methodDay', methodCap);
    assert.deepEqual(asked(refused, 'release'), ['kyb', 'kycMonth', 'userDay']);
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
    assert.deepEqual(saga.answer('kyb', kybCap), {}, 'the KYB total of a KYB-approved partner is never asked');
    assert.deepEqual(saga.answer('quote', { ok: false, rejection: { code: 'quote_in_use' } }), {}, 'the quote already answered');
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
    assert.deepEqual(sent, ['quote', 'userDay', 'methodDay', 'kycMonth'], 'every step sent at start');
    saga.state = behavior.decode(toJsonValue({ ...legacy, windows: windows.filter((window) => window !== 'quote') }));
    saga.answer('userDay', granted);
    saga.answer('methodDay', methodCap);
    const refused = saga.answer('kycMonth', granted);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'userDay']);
    assert.deepEqual(quoteSends(refused), [], 'it never claimed the quote');
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'method_daily_cap');
  });

  test('a saga stored mid-way by the two-stage release (only its first stage sent) asks the rest once that granted', () => {
    const stored = (): Saga => {
      const saga = new Saga();
      saga.accept(acceptPayload(brebQuote, { kybApproved: false }), null);
      assert.ok(saga.state?.phase === 'reserving');
      // What the older release stored after asking its first stage: the quote, the method day, the KYB total.
      saga.state = behavior.decode(toJsonValue({ ...saga.state, sent: ['quote', 'methodDay', 'kyb'] }));
      return saga;
    };
    const saga = stored();
    assert.deepEqual(saga.answer('userDay', granted), {}, 'not asked yet by that saga: ignored');
    saga.answer('quote', granted);
    saga.answer('kyb', granted);
    const next = saga.answer('methodDay', granted);
    assert.deepEqual(asked(next, 'reserve'), ['kycMonth', 'userDay'], 'the rest, asked once');
    assert.deepEqual(quoteSends(next), []);
    assert.equal(next.replies, undefined);
    saga.answer('userDay', granted);
    const created = saga.answer('kycMonth', granted);
    assert.ok(answerOf(created).ok);
    assert.deepEqual(quoteSends(created), ['consume']);
    assert.equal(saga.state?.phase, 'live');

    const capped = stored();
    capped.answer('quote', granted);
    capped.answer('kyb', granted);
    const refused = capped.answer('methodDay', methodCap);
    assert.deepEqual(asked(refused, 'release'), ['kyb'], 'the rest was never asked: only what it granted goes back');
    assert.deepEqual(quoteSends(refused), ['release']);
    const reply = answerOf(refused);
    assert.ok(!reply.ok && reply.code === 'method_daily_cap');
  });

  test('an accept sent again while the saga runs waits for the same answer; after it, gets it replayed', () => {
    const saga = new Saga();
    saga.accept(acceptPayload(brebQuote));
    const again = saga.apply('accept', toJsonValue(acceptPayload(brebQuote)), { replyTo: { stream: 'reply:edge-2', requestId: 'r-2' } });
    assert.deepEqual(counterSends(again), [], 'no second reservation');
    assert.deepEqual(quoteSends(again), [], 'no second claim');
    saga.answer('methodDay', methodCap);
    saga.answer('userDay', granted);
    const refused = saga.answer('kycMonth', granted);
    assert.equal(refused.replies?.length, 2, 'both waiting edges are answered');
    assert.ok(refused.replies?.every((answer) => (answer.payload as unknown as AcceptReply).ok === false && (answer.payload as unknown as { code: string }).code === 'method_daily_cap'));
    const later = saga.apply('accept', toJsonValue(acceptPayload(brebQuote)), { replyTo });
    assert.deepEqual(later.reply, refused.replies?.[0]?.payload);
  });
});

describe('acceptance saga: the quote is claimed once, used by a created transaction, given back otherwise', () => {
  const quoteUsed: ReservationOutcome = { ok: false, rejection: { code: 'quote_used', transactionId: 'the-winner' } };
  const quoteInUse: ReservationOutcome = { ok: false, rejection: { code: 'quote_in_use' } };

  test('the quote is claimed in the same round as every counter (BREB and PIX)', () => {
    const breb = new Saga().accept(acceptPayload(brebQuote, { kybApproved: false }), null);
    assert.deepEqual(quoteSends(breb), ['claim']);
    assert.deepEqual(asked(breb, 'reserve'), ['kyb', 'kycMonth', 'methodDay', 'userDay']);
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
    saga.answer('userDay', granted);
    saga.answer('kycMonth', granted);
    const refused = saga.answer('methodDay', methodCap);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'userDay']);
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
    capped.answer('methodDay', methodCap);
    capped.answer('userDay', granted);
    const refused = capped.answer('kycMonth', granted);
    assert.deepEqual(quoteSends(refused), ['release']);
    assert.deepEqual(asked(refused, 'release'), ['kycMonth', 'userDay']);
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

// The transaction actor declares its saga's answers `dedupeByState` (the runtime keeps no dedupe-log
// copy of them): that is only right if an answer handled again, against the state its first
// handling produced, changes nothing, answers nobody and sends nothing — at every point of a saga —
// except, once the saga refused, a release of the granted step again (idempotent at the counter
// and the quote; test/unit/late-grant.test.ts).
describe('a step\'s answer handled again changes nothing (the dedupe log keeps no copy of it)', () => {
  const kinds = behavior.dedupeByState;
  test('the saga\'s answers are deduplicated by state, and nothing else of the transaction is', () => {
    assert.ok(typeof kinds === 'function');
    assert.deepEqual(['accept', reservationResultKind, quoteClaimResultKind, 'DepositDetected', timerCommandKind].map((kind) => kinds(kind)), [false, true, true, false, false]);
  });

  const unchanged = (outcome: Outcome<TransactionActorState>, what: string): void => {
    assert.equal(outcome.state, undefined, `${what}: no new state`);
    assert.deepEqual([outcome.send ?? [], outcome.replies ?? [], outcome.reply], [[], [], undefined], `${what}: nothing sent or answered`);
  };

  /** The answer handled again: unchanged, but for a grant once the saga refused, which releases its step again. */
  const repeated = (saga: Saga, window: CounterWindow | 'quote', outcome: ReservationOutcome, what: string): void => {
    const again = saga.answer(window, outcome);
    if (saga.state?.phase !== 'rejected' || !outcome.ok) {
      unchanged(again, what);
      return;
    }
    assert.deepEqual([again.state, again.replies ?? [], again.reply], [undefined, [], undefined], `${what}: no new state, nobody answered`);
    if (window === 'quote') assert.deepEqual([quoteSends(again), counterSends(again)], [['release'], []], `${what}: the claim given back again`);
    else assert.deepEqual([asked(again, 'release'), quoteSends(again)], [[window], []], `${what}: its reservation given back again`);
  };

  for (const [name, answers] of [
    ['granted throughout', [['quote', granted], ['methodDay', granted], ['userDay', granted], ['kycMonth', granted]]],
    ['refused at the method cap', [['quote', granted], ['methodDay', methodCap], ['userDay', granted], ['kycMonth', granted]]],
    ['KYC required, the user capped', [['kycMonth', kycRequired], ['quote', granted], ['userDay', userCountCap], ['methodDay', granted]]],
  ] as const) {
    test(`${name}: each answer repeated right after it, and every answer repeated once the saga settled`, () => {
      const saga = new Saga();
      saga.accept(acceptPayload(brebQuote), null);
      for (const [window, outcome] of answers) {
        saga.answer(window, outcome);
        repeated(saga, window, outcome, `${window} again`);
      }
      assert.notEqual(saga.state?.phase, 'reserving', 'settled');
      for (const [window, outcome] of answers) repeated(saga, window, outcome, `${window} after the saga settled`);
    });
  }
});
