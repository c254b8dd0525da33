// Early refusal at a spent method cap: the edge's answer, worked out from the decisive steps'
// committed counters (the method day, the KYB total) and the quote's use with `earlyRefusalStage`,
// must be the one the acceptance saga gives when it really asks every counter (and the quote, for
// its single use) in its one round — the edge refuses only when the saga would refuse, with the
// same answer, whatever the user's day and KYC month (which it does not read) answer; and it
// answers nothing when the saga would grant or the refusal is the user's windows' alone. Each case
// runs both: the real transaction, quote and counter actors' `handle`, command by command, and the
// early check on the same states.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { counterBehavior, reservationResultKind } from '../../src/actors/counter-actor.ts';
import { quoteBehavior, quoteClaimResultKind, type QuoteRecord } from '../../src/actors/quote-actor.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import type { QuoteUse } from '../../src/domain/quote-use.ts';
import type { CommandEnvelope, JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { earlyRefusalStage } from '../../src/domain/acceptance.ts';
import {
  answerReply,
  transactionBehavior,
  type AcceptPayload,
  type AcceptReply,
  type TransactionActorState,
} from '../../src/actors/transaction-actor.ts';
import { acceptanceCounterKeys, emptyCounter, release, reserve, type CounterState } from '../../src/domain/limits.ts';
import type { CounterWindow } from '../../src/domain/acceptance.ts';
import { add, decimal, subtract, type Decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { brebPayoutQuote, pixPayoutQuote } from '../support/quotes.ts';
import { handleCommand } from '../support/handle-command.ts';

const t0 = 1_700_000_000_000;
const txId = '7d3c1f0e-8a2b-4c5d-9e6f-0a1b2c3d4e5f';
const limits = defaultLimitsConfig;
const transactions = transactionBehavior({ limits: () => limits });
const counters = counterBehavior({ limits: () => limits });
const corridors = loadDefaultCorridors();
const quotes = quoteBehavior({ corridors: () => corridors, rates: () => corridors.rates, partnerFee: () => undefined });

const brebQuote = brebPayoutQuote(t0);
const pixQuote = pixPayoutQuote(t0);

const methodCap = decimal(2_500_000_000n, 2); // the default BREB cap, 25,000,000.00 COP
const quoteAmount = brebQuote.targetAmount;

/** A counter holding one other transaction of `reserved`, plus `own` for this transaction. */
function counterOf(reserved: Decimal, own?: 'open' | 'released'): CounterState {
  const reserveOk = (state: CounterState, transactionId: string, amount: Decimal): CounterState => {
    const result = reserve(state, { transactionId, amount, cap: null, countCap: null });
    assert.ok(result.ok);
    return result.state;
  };
  const other = reserveOk(emptyCounter(), 'other-tx', reserved);
  if (own === undefined) return other;
  const withOwn = reserveOk(other, txId, quoteAmount);
  return own === 'open' ? withOwn : release(withOwn, txId);
}

let sequence = 0;
function envelope(actorType: string, actorKey: string, kind: string, payload: JsonValue): CommandEnvelope {
  sequence += 1;
  return { commandId: `c-${sequence}`, actorType, actorKey, kind, payload, sentAtMs: t0 };
}

/**
 * The saga run for real: the transaction actor asks, each counter (in `states`, the empty counter
 * for one not there) and the quote (in `quoteUse`) answer with their own `handle`, until the edge
 * gets its answer. `rounds`: how many rounds of asks it took (one: everything asked at once).
 */
function runSaga(accept: AcceptPayload, states: ReadonlyMap<string, CounterState>, quoteUse: QuoteUse | null): { answer: AcceptReply | null; rounds: number } {
  const quoteRecord: QuoteRecord = { quote: accept.quote, use: quoteUse };
  let state: TransactionActorState | null = null;
  const step = (command: CommandEnvelope): ReturnType<typeof transactions.handle> => {
    const outcome = handleCommand(transactions, state, command, { nowMs: t0, commandId: command.commandId });
    if (outcome.state !== undefined) state = outcome.state;
    return outcome;
  };
  let outcome = step({ ...envelope('transaction', txId, 'accept', toJsonValue(accept)), replyTo: { stream: 'reply:edge-1', requestId: 'r-1' } });
  if (outcome.reply !== undefined) return { answer: outcome.reply as unknown as AcceptReply, rounds: 0 };
  for (let round = 1; ; round += 1) {
    const asks = (outcome.send ?? []).filter((send) => (send.actorType === 'counter' && send.kind === 'reserve') || (send.actorType === 'quote' && send.kind === 'claim'));
    if (asks.length === 0) return { answer: null, rounds: round - 1 };
    let last = outcome;
    for (const ask of asks) {
      const context = { nowMs: t0, commandId: 'x' };
      const answered =
        ask.actorType === 'quote'
          ? handleCommand(quotes, quoteRecord, envelope('quote', ask.actorKey, 'claim', ask.payload), context)
          : handleCommand(counters, states.get(ask.actorKey) ?? emptyCounter(), envelope('counter', ask.actorKey, 'reserve', ask.payload), context);
      const result = answered.send?.[0];
      assert.ok(result !== undefined && (result.kind === reservationResultKind || result.kind === quoteClaimResultKind));
      last = step(envelope('transaction', txId, result.kind, result.payload));
    }
    const replies = last.replies ?? [];
    if (replies.length > 0) {
      assert.equal(replies.length, 1, 'the waiting edge gets one answer');
      return { answer: replies[0]?.payload as unknown as AcceptReply, rounds: round };
    }
    outcome = last;
  }
}

/**
 * Both answers for one case: the early check's, and the real saga's, on the same committed states
 * (`state(window)`, undefined: never written). The early check may read only the counters it lists,
 * and those are the decisive steps' (the method day, the KYB total), never the user's windows.
 */
function both(accept: AcceptPayload, state: (window: CounterWindow) => CounterState | undefined, quoteUse: QuoteUse | null = null) {
  const windowKeys = acceptanceCounterKeys(limits, { partnerId: accept.partnerId, userId: accept.userId, method: accept.quote.paymentMethod, nowMs: t0 });
  const states = new Map<string, CounterState>();
  const windowOf = new Map<string, CounterWindow>();
  for (const window of ['userDay', 'methodDay', 'kycMonth', 'kyb'] as const) {
    const key = windowKeys[window];
    if (key === null) continue;
    windowOf.set(key, window);
    const value = state(window);
    if (value !== undefined) states.set(key, value);
  }
  const stage = earlyRefusalStage(accept, limits, t0, txId);
  const keys = stage === null ? null : stage.counters;
  for (const key of keys ?? []) {
    const window = windowOf.get(key);
    assert.ok(window === 'methodDay' || window === 'kyb', `the edge reads only the decisive counters, not ${key}`);
  }
  const refusal =
    stage === null
      ? null
      : stage.refusal((key) => {
          assert.ok(stage.counters.includes(key), `a read of ${key}, not listed`);
          return states.get(key) ?? emptyCounter();
        }, quoteUse);
  const early = refusal === null ? null : answerReply(refusal);
  const saga = runSaga(accept, states, quoteUse);
  if (saga.rounds > 0) assert.equal(saga.rounds, 1, 'the saga asks every step in one round');
  // The edge refuses only when the saga would, with the same answer.
  if (early !== null) assert.deepEqual(early, saga.answer, 'an early answer is the saga\'s');
  return { keys, early, saga };
}

/** A counter holding `count` other transactions of 0.01 each (the user day's count). */
function counterOfCount(count: number): CounterState {
  let state = emptyCounter();
  for (let index = 0; index < count; index += 1) {
    const result = reserve(state, { transactionId: `other-${index}`, amount: decimal(1n, 2), cap: null, countCap: null });
    assert.ok(result.ok);
    state = result.state;
  }
  return state;
}

describe('early refusal at a spent method cap', () => {
  test('a spent cap: the early answer is the saga\'s method_daily_cap refusal, to the letter', () => {
    const { keys, early, saga } = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(subtract(methodCap, decimal(9_999_999n, 2))) : undefined));
    assert.equal(keys?.length, 1, 'one counter read: the method × day counter');
    assert.ok(early !== null && !early.ok && early.code === 'method_daily_cap', JSON.stringify(early));
    assert.equal(early.httpStatus, undefined, 'a reply carries no HTTP status: the edge maps the code');
    assert.deepEqual(early, saga.answer);
    assert.equal(saga.rounds, 1);
  });

  test('room for exactly this amount: no early answer (the saga grants)', () => {
    const { early, saga } = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(subtract(methodCap, quoteAmount)) : undefined));
    assert.equal(early, null);
    assert.ok(saga.answer !== null && saga.answer.ok, JSON.stringify(saga.answer));
  });

  test('a retry of a transaction that used the quote goes to its actor, though the counter no longer lists it (a completed entry folded)', () => {
    // The counter folds old completed entries into its totals (src/domain/counter.ts): the cap is
    // spent and this transaction's id is gone from the entries. Its actor answers a retry (the same
    // ids) from its own state; the edge must not answer method_daily_cap in its place.
    const { early } = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(methodCap) : undefined), { transactionId: txId, status: 'used' });
    assert.equal(early, null, 'quote used by this transaction');
    const other = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(methodCap) : undefined), { transactionId: 'another-tx', status: 'used' });
    assert.ok(other.early !== null && !other.early.ok && other.early.code === 'quote_used', 'a quote another transaction used is still refused early');
  });

  test('a transaction the counter holds already is never refused early, even with the cap spent', () => {
    for (const own of ['open', 'released'] as const) {
      const full = subtract(methodCap, own === 'open' ? quoteAmount : decimal(1n, 2));
      const { early, saga } = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(full, own) : undefined));
      assert.equal(early, null, `entry ${own}`);
      assert.ok(saga.answer !== null && saga.answer.ok, `entry ${own}: the saga grants (${JSON.stringify(saga.answer)})`);
    }
  });

  test('not KYB-approved: the KYB cap outranks the spent method cap, early as in the saga', () => {
    const kybTotal = decimal(9_000n, 2); // 90 USDC completed; 25.5 more passes the 100 USDC cap
    for (const kybState of [undefined, counterOf(kybTotal)]) {
      const { keys, early, saga } = both(acceptPayload(brebQuote, { kybApproved: false }), (window) =>
        window === 'methodDay' ? counterOf(methodCap) : kybState,
      );
      assert.equal(keys?.length, 2, 'the method counter and the KYB counter');
      assert.ok(early !== null && !early.ok);
      assert.deepEqual(early, saga.answer);
      assert.equal(early.code, kybState === undefined ? 'method_daily_cap' : 'kyb_cap');
    }
  });

  test('a quote used (or being accepted) by another transaction outranks the spent cap, early as in the saga', () => {
    const uses: QuoteUse[] = [{ transactionId: 'the-winner', status: 'used' }, { transactionId: 'the-winner', status: 'held' }];
    for (const use of uses) {
      const { early, saga } = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(methodCap) : undefined), use);
      assert.ok(early !== null && !early.ok, use.status);
      assert.equal(early.code, use.status === 'used' ? 'quote_used' : 'quote_in_use');
      assert.deepEqual(early, saga.answer);
    }
    // The quote held by this very transaction (a retry with the same ids) is no refusal of its own.
    const own = both(acceptPayload(brebQuote), (window) => (window === 'methodDay' ? counterOf(methodCap) : undefined), { transactionId: txId, status: 'held' });
    assert.ok(own.early !== null && !own.early.ok && own.early.code === 'method_daily_cap');
    assert.deepEqual(own.early, own.saga.answer);
  });

  test('the user\'s day and KYC month are not read early; refusing too, they do not change the answer', () => {
    const accept = acceptPayload(brebQuote, { kycEnabled: true }); // 25.5 USDC: above the KYC-free month
    const { keys, early, saga } = both(accept, (window) => (window === 'methodDay' ? counterOf(methodCap) : window === 'userDay' ? counterOfCount(15) : undefined));
    assert.equal(keys?.length, 1, 'the method × day counter alone');
    assert.ok(early !== null && !early.ok && early.code === 'method_daily_cap', JSON.stringify(early));
    assert.deepEqual(early, saga.answer, 'the method cap outranks the user cap and the KYC gate the saga also met');
  });

  test('the user\'s windows alone refusing: no early answer, the saga refuses (the edge never answers for them)', () => {
    const userCapped = both(acceptPayload(brebQuote), (window) => (window === 'userDay' ? counterOfCount(15) : undefined));
    assert.equal(userCapped.early, null);
    assert.ok(userCapped.saga.answer !== null && !userCapped.saga.answer.ok && userCapped.saga.answer.code === 'user_daily_count_cap', JSON.stringify(userCapped.saga.answer));
    const gated = both(acceptPayload(brebQuote, { kycEnabled: true }), () => undefined);
    assert.equal(gated.early, null);
    assert.deepEqual(gated.saga.answer, { ok: true, kycRequired: true });
  });

  test('random committed states: an early answer is always the saga\'s, and every refusal of a decisive step is answered early', () => {
    let seed = 7;
    const random = (): number => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed / 4294967296;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const methodStates = [undefined, counterOf(subtract(methodCap, quoteAmount)), counterOf(add(subtract(methodCap, quoteAmount), decimal(1n, 2))), counterOf(methodCap), counterOf(methodCap, 'open')];
    const kybStates = [undefined, counterOf(decimal(7_450n, 2)), counterOf(decimal(9_000n, 2))]; // room for 25.5 USDC exactly, and not
    const userStates = [undefined, counterOfCount(14), counterOfCount(15)];
    const uses: Array<QuoteUse | null> = [null, null, { transactionId: 'the-winner', status: 'used' }, { transactionId: 'the-winner', status: 'held' }, { transactionId: txId, status: 'held' }];
    const decisiveCodes = ['quote_used', 'quote_in_use', 'kyb_cap', 'method_daily_cap'];
    let early = 0;
    let actorOnly = 0;
    for (let run = 0; run < 300; run += 1) {
      const accept = acceptPayload(brebQuote, { kybApproved: random() < 0.5, kycEnabled: random() < 0.3 });
      const states = { methodDay: pick(methodStates), kyb: pick(kybStates), userDay: pick(userStates), kycMonth: undefined };
      const result = both(accept, (window) => states[window], pick(uses));
      assert.ok(result.saga.answer !== null, `run ${run}: the saga answers`);
      const answer = result.saga.answer;
      const decisive = !answer.ok && decisiveCodes.includes(answer.code);
      if (decisive) assert.deepEqual(result.early, answer, `run ${run}: a decisive refusal is answered early`);
      else assert.equal(result.early, null, `run ${run}: no early answer when the saga grants or only the user's windows refuse`);
      if (result.early !== null) early += 1;
      else if (!answer.ok || answer.kycRequired) actorOnly += 1;
    }
    assert.ok(early > 50 && actorOnly > 20, `both kinds of refusal met (${early} early, ${actorOnly} by the actor alone)`);
  });

  test('no method × day counter (PIX), or a refusal before any counter: nothing is read early', () => {
    assert.equal(earlyRefusalStage(acceptPayload(pixQuote), limits, t0, txId), null);
    const expired = acceptPayload(brebQuote);
    assert.equal(earlyRefusalStage(expired, limits, brebQuote.expiresAtMs, txId), null, 'the actor answers quote_expired itself');
    const dry = acceptPayload(brebQuote, { liquidity: decimal(1n, 2) });
    assert.equal(earlyRefusalStage(dry, limits, t0, txId), null, 'the actor answers liquidity_insufficient itself');
  });
});
