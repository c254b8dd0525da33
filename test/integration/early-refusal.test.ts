// The edge's early refusal (src/edge/early-refusal.ts) against the real runtime and store: it
// refuses exactly when the counters, asked for real, refuse; it follows the committed counter as it
// changes (a release makes room again, whatever it decoded before); and a transaction that holds a
// reservation already is left to its actor. Each acceptance takes a quote of its own (a quote is
// accepted at most once).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { counterActorType } from '../../src/actors/counter-actor.ts';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { AcceptPayload, AcceptReply } from '../../src/actors/transaction-actor.ts';
import { defaultLimitsConfigInput, parseLimitsConfig } from '../../src/config/limits.ts';
import { createEarlyRefusals, type EarlyRefusals } from '../../src/edge/early-refusal.ts';
import { methodDayCounterKey, methodDayKey } from '../../src/domain/limits.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { startActorHarness, type ActorHarness } from '../support/actor-harness.ts';
import { eventually } from '../support/eventually.ts';
import { storedCounterLines } from '../support/counter-snapshots.ts';

// A small method cap: two 50,000 COP payouts fill the day.
const limits = parseLimitsConfig({
  ...defaultLimitsConfigInput,
  methods: { ...defaultLimitsConfigInput.methods, BREB: { ...defaultLimitsConfigInput.methods.BREB, methodDailyAmountMax: '100000' } },
});

describe('early refusal at a spent method cap, on the real runtime and store', () => {
  let harness: ActorHarness;
  let refusals: EarlyRefusals;
  const partnerId = `p-${randomUUID()}`;

  before(async () => {
    harness = await startActorHarness({ busKind: 'memory', limits });
    refusals = createEarlyRefusals(harness.store, () => limits);
  });
  after(async () => {
    await harness.stop();
  });

  /** A new 50,000 COP quote (unclaimed: its use, as the edge reads it, is null). */
  async function newQuote(): Promise<Quote> {
    const quoteId = randomUUID();
    const created = await harness.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
      partnerId,
      request: { kind: 'payout', amount: 50_000, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' },
    });
    assert.equal(created.ok, true);
    const loaded = await loadQuote(harness.store, quoteId);
    assert.ok(loaded);
    return loaded;
  }

  const payload = (quote: Quote, userId: string): AcceptPayload => acceptPayload(quote, { userId });
  const check = (quote: Quote, userId: string, transactionId: string) => refusals.check(payload(quote, userId), transactionId, Date.now(), null);
  const ask = (transactionId: string, quote: Quote, userId: string): Promise<AcceptReply> =>
    harness.client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload(quote, userId)), { timeoutMs: 20_000 });

  test('room left: no early answer; spent: the same refusal the actors give; a release: room again', async () => {
    const first = randomUUID();
    const second = randomUUID();
    const [q1, q2, q3, q4] = [await newQuote(), await newQuote(), await newQuote(), await newQuote()];
    assert.equal(await check(q1, 'u-1', first), null, 'an empty counter refuses nothing');
    assert.equal((await ask(first, q1, 'u-1')).ok, true);
    assert.equal(await check(q2, 'u-2', second), null, 'room for one more');
    assert.equal((await ask(second, q2, 'u-2')).ok, true);

    const third = randomUUID();
    const early = await check(q3, 'u-3', third);
    assert.ok(early !== null && !early.ok, 'the cap is spent: refused early');
    assert.deepEqual(early, await ask(randomUUID(), q3, 'u-3'), 'the actors, asked, give the same answer');
    assert.equal(await harness.store.load(`transaction/${third}`), null, 'an early refusal writes no transaction');

    // The edge has the spent counter decoded; a release commits a new version, and the next check
    // must see it.
    const key = methodDayCounterKey('BREB', methodDayKey(limits, 'BREB', Date.now()));
    await harness.client.tell(counterActorType, key, 'release', toJsonValue({ kind: 'release', transactionId: first }), randomUUID());
    await eventually(async () => assert.equal(await check(q4, 'u-3', third), null, 'the release made room'));
    assert.equal((await ask(third, q4, 'u-3')).ok, true, 'and the actors grant it');
  });

  test('a quote used by another transaction is refused early, before the spent cap, as the saga ranks them', async () => {
    const quote = await newQuote();
    const early = await refusals.check(payload(quote, 'u-5'), randomUUID(), Date.now(), { transactionId: 'the-winner', status: 'used' });
    assert.deepEqual(early, {
      ok: false,
      code: 'quote_used',
      reason: 'The quote was already accepted (transaction the-winner); request a new quote',
      retryable: false,
    });
  });

  test('a transaction that holds its reservation is never refused early, though the cap is spent', async () => {
    // Two transactions hold the day's 100,000 COP. Asked again (a retried request with the same
    // ids), a holder must reach its actor, which answers with the accepted transaction.
    const held = randomUUID();
    const key = methodDayCounterKey('BREB', methodDayKey(limits, 'BREB', Date.now()));
    const lines = await storedCounterLines(harness.store, `counter/${key}`);
    assert.ok(lines !== null);
    const entryIds = [...lines.matchAll(/^o \S+ (\S+)$/gm)].map((match) => match[1] ?? '');
    assert.equal(entryIds.length, 2, 'two open reservations');
    const holder = entryIds[0] ?? '';
    const quote = await newQuote();
    assert.notEqual(await check(quote, 'u-4', held), null, 'a newcomer is refused early');
    assert.equal(await check(quote, 'u-2', holder), null, 'a holder is left to its actor');
  });
});
