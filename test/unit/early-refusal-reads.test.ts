// The edge's early refusal reads the decisive counters' heads fresh for every check (a head holds
// the totals and per-bucket counts: a few hundred bytes whatever the day holds), refuses only on
// what they and the transaction's own bucket say, and never reads a lost part as an empty bucket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { actorPartId, actorPartsCollection } from '../../src/actors/actor-parts.ts';
import { actorId } from '../../src/actors/envelope.ts';
import { createEarlyRefusals } from '../../src/edge/early-refusal.ts';
import { emptyCounter, methodDayCounterKey, methodDayKey, release, reserve, type CounterState } from '../../src/domain/limits.ts';
import { decimal } from '../../src/domain/money.ts';
import { windowAmount } from '../../src/domain/acceptance.ts';
import type { ActorSnapshot, JsonObject } from '../../src/store/store.ts';
import { storedCounter } from '../support/counter-snapshots.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { brebPayoutQuote } from '../support/quotes.ts';

const t0 = 1_700_000_000_000;
const quote = brebPayoutQuote(t0);
const counterId = actorId('counter', methodDayCounterKey('BREB', methodDayKey(defaultLimitsConfig, 'BREB', t0)));
const cap = defaultLimitsConfig.methods.BREB.methodDailyAmountMax ?? decimal(0n, 2);

/** A store holding one method-day counter (its snapshot and parts), counting its snapshot's and its parts' reads. */
function counterStore() {
  let snapshot: ActorSnapshot | null = null;
  let parts = new Map<string, JsonObject>();
  let version = 0;
  const store = {
    loads: 0,
    set(state: CounterState): void {
      version += 1;
      const stored = storedCounter(state);
      snapshot = { version, state: stored.head };
      parts = new Map([...stored.parts].map(([index, text]) => [actorPartId(counterId, index), { text }]));
    },
    async load(id: string): Promise<ActorSnapshot | null> {
      if (id === counterId) store.loads += 1;
      return id === counterId ? snapshot : null;
    },
    partReads: 0,
    async get(collection: string, id: string): Promise<JsonObject | null> {
      if (collection === actorPartsCollection) store.partReads += 1;
      return collection === actorPartsCollection ? (parts.get(id) ?? null) : null;
    },
    /** Loses every part record (a store that lost data): the snapshot still names them. */
    loseParts(): void {
      parts = new Map();
    },
  };
  return store;
}

function holding(amount: typeof cap): CounterState {
  const result = reserve(emptyCounter(), { transactionId: 'someone-else', amount, cap: null, countCap: null });
  assert.ok(result.ok);
  return result.state;
}

const ask = (refusals: ReturnType<typeof createEarlyRefusals>, nowMs: number, id = 'tx-1') => refusals.check(acceptPayload(quote), id, nowMs, null);

test('every check reads the counter fresh: with room, one head read per check (no bucket), and nothing is refused', async () => {
  const store = counterStore();
  store.set(holding(decimal(100_000n, 2)));
  const refusals = createEarlyRefusals(store, () => defaultLimitsConfig);
  for (const offsetMs of [0, 1, 2]) assert.equal(await ask(refusals, t0 + offsetMs), null);
  assert.equal(store.loads, 3);
  assert.equal(store.partReads, 0, 'totals with room grant whatever the buckets hold');
});

test('a cap spent since the previous check is refused at the next one, with the actors\' answer', async () => {
  const store = counterStore();
  store.set(holding(decimal(100_000n, 2)));
  const refusals = createEarlyRefusals(store, () => defaultLimitsConfig);
  assert.equal(await ask(refusals, t0), null);
  store.set(holding(cap)); // the cap is spent meanwhile
  const refused = await ask(refusals, t0 + 1);
  assert.equal(refused !== null && !refused.ok ? refused.code : null, 'method_daily_cap');
});

test('a release made since a refusal is seen at the next check', async () => {
  const store = counterStore();
  const full = holding(cap);
  store.set(full);
  const refusals = createEarlyRefusals(store, () => defaultLimitsConfig);
  const refused = await ask(refusals, t0);
  assert.equal(refused?.ok, false);
  store.set(release(full, 'someone-else'));
  assert.equal(await ask(refusals, t0 + 1), null);
});

/** The cap spent, tx-1 among those holding it (at the amount its acceptance reserves). */
function spentWithTx1(): CounterState {
  const withTx1 = reserve(emptyCounter(), { transactionId: 'tx-1', amount: windowAmount(quote, 'methodDay'), cap: null, countCap: null });
  assert.ok(withTx1.ok);
  const full = reserve(withTx1.state, { transactionId: 'someone-else', amount: cap, cap: null, countCap: null });
  assert.ok(full.ok);
  return full.state;
}

test('a transaction counted already is not refused at a spent cap: its bucket is read from its part', async () => {
  const store = counterStore();
  // The cap is spent, and tx-1 is among those holding it (a retry of its acceptance).
  store.set(spentWithTx1());
  const refusals = createEarlyRefusals(store, () => defaultLimitsConfig);
  assert.equal(await ask(refusals, t0, 'tx-1'), null, 'granted again by its actor, not refused here');
  const refused = await ask(refusals, t0, 'tx-2');
  assert.equal(refused !== null && !refused.ok ? refused.code : null, 'method_daily_cap');
});

test('a part the snapshot names and the store lacks is an error, never read as an empty bucket (the route then asks the actors)', async () => {
  const store = counterStore();
  store.set(spentWithTx1());
  store.loseParts();
  const refusals = createEarlyRefusals(store, () => defaultLimitsConfig);
  await assert.rejects(ask(refusals, t0, 'tx-1'), /missing/);
});
