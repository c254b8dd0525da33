// The edge's early refusal (src/edge/early-refusal.ts) against the real runtime and store: it
// refuses exactly when the counters, asked for real, refuse; it follows the committed counter as it
// changes (a release makes room again, whatever it decoded before); and a transaction that holds a
// reservation already is left to its actor.
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

// A small method cap: two 50,000 COP payouts fill the day.
const limits = parseLimitsConfig({
  ...defaultLimitsConfigInput,
  methods: { ...defaultLimitsConfigInput.methods, BREB: { ...defaultLimitsConfigInput.methods.BREB, methodDailyAmountMax: '100000' } },
});

describe('early refusal at a spent method cap, on the real runtime and store', () => {
  let harness: ActorHarness;
  let refusals: EarlyRefusals;
  let quote: Quote;
  const partnerId = `p-${randomUUID()}`;

  before(async () => {
    harness = await startActorHarness({ busKind: 'memory', limits });
    refusals = createEarlyRefusals(harness.store, () => limits);
    const quoteId = randomUUID();
    const created = await harness.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
      partnerId,
      request: { kind: 'payout', amount: 50_000, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' },
    });
    assert.equal(created.ok, true);
    const loaded = await loadQuote(harness.store, quoteId);
    assert.ok(loaded);
    quote = loaded;
  });
  after(async () => {
    await harness.stop();
  });

  const payload = (userId: string): AcceptPayload => acceptPayload(quote, { userId });
  const ask = (transactionId: string, userId: string): Promise<AcceptReply> =>
    harness.client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload(userId)), { timeoutMs: 20_000 });

  test('room left: no early answer; spent: the same refusal the actors give; a release: room again', async () => {
    const first = randomUUID();
    const second = randomUUID();
    assert.equal(await refusals.check(payload('u-1'), first, Date.now()), null, 'an empty counter refuses nothing');
    assert.equal((await ask(first, 'u-1')).ok, true);
    assert.equal(await refusals.check(payload('u-2'), second, Date.now()), null, 'room for one more');
    assert.equal((await ask(second, 'u-2')).ok, true);

    const third = randomUUID();
    const early = await refusals.check(payload('u-3'), third, Date.now());
    assert.ok(early !== null && !early.ok, 'the cap is spent: refused early');
    assert.deepEqual(early, await ask(randomUUID(), 'u-3'), 'the actors, asked, give the same answer');
    assert.equal(await harness.store.load(`transaction/${third}`), null, 'an early refusal writes no transaction');

    // The edge has the spent counter decoded; a release commits a new version, and the next check
    // must see it.
    const key = methodDayCounterKey('BREB', methodDayKey(limits, 'BREB', Date.now()));
    await harness.client.tell(counterActorType, key, 'release', toJsonValue({ kind: 'release', transactionId: first }), randomUUID());
    await eventually(async () => assert.equal(await refusals.check(payload('u-3'), third, Date.now()), null, 'the release made room'));
    assert.equal((await ask(third, 'u-3')).ok, true, 'and the actors grant it');
  });

  test('a transaction that holds its reservation is never refused early, though the cap is spent', async () => {
    // Two transactions hold the day's 100,000 COP. Asked again (a retried request with the same
    // ids), a holder must reach its actor, which answers with the accepted transaction.
    const held = randomUUID();
    const key = methodDayCounterKey('BREB', methodDayKey(limits, 'BREB', Date.now()));
    const counter = await harness.store.load(`counter/${key}`);
    assert.ok(counter !== null);
    const entryIds = [...String((counter.state as { entryLines: string }).entryLines).matchAll(/^o \S+ (\S+)$/gm)].map((match) => match[1] ?? '');
    assert.equal(entryIds.length, 2, 'two open reservations');
    const holder = entryIds[0] ?? '';
    assert.notEqual(await refusals.check(payload('u-4'), held, Date.now()), null, 'a newcomer is refused early');
    assert.equal(await refusals.check(payload('u-2'), holder, Date.now()), null, 'a holder is left to its actor');
  });
});
