// Early refusal at a spent method cap: the edge's answer, worked out from the counters' committed
// states with `earlyRefusalStage`, must be the one the acceptance saga gives when it really asks
// those counters (and the quote, for its single use) — and it must answer nothing when the saga
// would not refuse in its first stage. Each case runs both: the real transaction, quote and
// counter actors' `handle`, command by command, and the early check on the same states.
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
import { emptyCounter, kybCounterKey, release, reserve, type CounterState } from '../../src/domain/limits.ts';
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
 * The saga run for real: the transaction actor asks, each counter (in `states`) and the quote (in
 * `quoteUse`) answer with their own `handle`, until the edge gets its answer. `firstStage` is that
 * answer when it came from the first stage alone (what an early refusal may stand for).
 */
function runSaga(accept: AcceptPayload, states: ReadonlyMap<string, CounterState>, quoteUse: QuoteUse | null): { answer: AcceptReply | null; firstStage: boolean } {
  const quoteRecord: QuoteRecord = { quote: accept.quote, use: quoteUse };
  let state: TransactionActorState | null = null;
  const step = (command: CommandEnvelope): ReturnType<typeof transactions.handle> => {
    const outcome = handleCommand(transactions, state, command, { nowMs: t0, commandId: command.commandId });
    if (outcome.state !== undefined) state = outcome.state;
    return outcome;
  };
  let outcome = step({ ...envelope('transaction', txId, 'accept', toJsonValue(accept)), replyTo: { stream: 'reply:edge-1', requestId: 'r-1' } });
  if (outcome.reply !== undefined) return { answer: outcome.reply as unknown as AcceptReply, firstStage: false };
  for (let stage = 1; ; stage += 1) {
    const asks = (outcome.send ?? []).filter((send) => (send.actorType === 'counter' && send.kind === 'reserve') || (send.actorType === 'quote' && send.kind === 'claim'));
    if (asks.length === 0) return { answer: null, firstStage: false };
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
    if (replies.length > 0) return { answer: replies[0]?.payload as unknown as AcceptReply, firstStage: stage === 1 };
    outcome = last;
  }
}

/** Both answers for one case: the early check's, and the real saga's. */
function both(accept: AcceptPayload, state: (window: 'methodDay' | 'kyb') => CounterState | undefined, quoteUse: QuoteUse | null = null) {
  const stage = earlyRefusalStage(accept, limits, t0, txId);
  const keys = stage === null ? null : stage.counters;
  const states = new Map<string, CounterState>();
  for (const key of keys ?? []) {
    const window = key === kybCounterKey(accept.partnerId) ? 'kyb' : 'methodDay';
    const value = state(window);
    if (value !== undefined) states.set(key, value);
  }
  const refusal = stage === null ? null : stage.refusal((key) => states.get(key) ?? emptyCounter(), quoteUse);
  const early = refusal === null ? null : answerReply(refusal);
  return { keys, early, saga: runSaga(accept, states, quoteUse) };
}

describe('early refusal at a spent method cap', () => {
  test('a spent cap: the early answer is the saga\'s method_daily_cap refusal, to the letter', () => {
    const { keys, early, saga } = both(acceptPayload(brebQuote), () => counterOf(subtract(methodCap, decimal(9_999_999n, 2))));
    assert.equal(keys?.length, 1, 'one counter read: the method × day counter');
    assert.ok(early !== null && !early.ok && early.code === 'method_daily_cap', JSON.stringify(early));
    assert.equal(early.httpStatus, undefined, 'a reply carries no HTTP status: the edge maps the code');
    assert.deepEqual(early, saga.answer);
    assert.equal(saga.firstStage, true);
  });

  test('room for exactly this amount: no early answer (the saga grants)', () => {
    const { early, saga } = both(acceptPayload(brebQuote), () => counterOf(subtract(methodCap, quoteAmount)));
    assert.equal(early, null);
    assert.ok(saga.answer !== null && saga.answer.ok, JSON.stringify(saga.answer));
  });

  test('a transaction the counter holds already is never refused early, even with the cap spent', () => {
    for (const own of ['open', 'released'] as const) {
      const full = subtract(methodCap, own === 'open' ? quoteAmount : decimal(1n, 2));
      const { early, saga } = both(acceptPayload(brebQuote), () => counterOf(full, own));
      assert.equal(early, null, `entry ${own}`);
      assert.ok(saga.answer === null || saga.answer.ok || !saga.firstStage, `entry ${own}: the saga does not refuse in its first stage`);
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
      const { early, saga } = both(acceptPayload(brebQuote), () => counterOf(methodCap), use);
      assert.ok(early !== null && !early.ok, use.status);
      assert.equal(early.code, use.status === 'used' ? 'quote_used' : 'quote_in_use');
      assert.deepEqual(early, saga.answer);
    }
    // The quote held by this very transaction (a retry with the same ids) is no refusal of its own.
    const own = both(acceptPayload(brebQuote), () => counterOf(methodCap), { transactionId: txId, status: 'held' });
    assert.ok(own.early !== null && !own.early.ok && own.early.code === 'method_daily_cap');
    assert.deepEqual(own.early, own.saga.answer);
  });

  test('no method × day counter (PIX), or a refusal before any counter: nothing is read early', () => {
    assert.equal(earlyRefusalStage(acceptPayload(pixQuote), limits, t0, txId), null);
    const expired = acceptPayload(brebQuote);
    assert.equal(earlyRefusalStage(expired, limits, brebQuote.expiresAtMs, txId), null, 'the actor answers quote_expired itself');
    const dry = acceptPayload(brebQuote, { liquidity: decimal(1n, 2) });
    assert.equal(earlyRefusalStage(dry, limits, t0, txId), null, 'the actor answers liquidity_insufficient itself');
  });
});
