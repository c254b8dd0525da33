// The limit counter's snapshot: what a counter writes on every command must load back to the same
// state, snapshots written by the previous format must still load (a running service is upgraded
// in place), and a refusal does not re-encode the counter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { counterBehavior, counterDecodeMemo, decodeCounter, decodeCounterTotals, encodeCounter, reservationResultKind } from '../../src/actors/counter-actor.ts';
import type { CommandEnvelope, JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { commit, counterEntries, counterEntry, emptyCounter, release, reserve, type CounterState } from '../../src/domain/limits.ts';
import { bucketIndexOf, counterBucketCount } from '../../src/domain/counter.ts';
import { decimal, decimalFromString, toFixedString } from '../../src/domain/money.ts';
import { handleCommand } from '../support/handle-command.ts';

const cop = (text: string) => decimalFromString(text, 2);

function mustReserve(state: CounterState, transactionId: string, amount = cop('50000')): CounterState {
  const result = reserve(state, { transactionId, amount, cap: null, countCap: null });
  assert.ok(result.ok);
  return result.state;
}

function sample(options: { protoId: boolean } = { protoId: true }): CounterState {
  let state = emptyCounter();
  state = mustReserve(state, 'a3d1c0de-0000-4000-8000-000000000001');
  state = mustReserve(state, 'a3d1c0de-0000-4000-8000-000000000002', cop('4850000.5'));
  state = mustReserve(state, 'id with spaces and % signs');
  state = mustReserve(state, 'line\nbreak', cop('1'));
  if (options.protoId) state = mustReserve(state, '__proto__', cop('2'));
  state = mustReserve(state, 'usdc', decimal(255_000_000n, 7));
  state = commit(state, { transactionId: 'a3d1c0de-0000-4000-8000-000000000001', amount: cop('50000') });
  return release(state, 'id with spaces and % signs');
}

function roundTrip(state: CounterState): CounterState {
  // Through JSON text, as a store would keep it.
  return decodeCounter(JSON.parse(JSON.stringify(encodeCounter(state))) as JsonValue);
}

test('a counter loads back exactly: totals, every entry, its amount with its scale, completed or not', () => {
  const state = sample();
  const loaded = roundTrip(state);
  assert.deepEqual(loaded, state);
  const protoBucket = loaded.buckets[bucketIndexOf('__proto__')];
  assert.ok(protoBucket !== undefined);
  assert.equal(Object.getPrototypeOf(protoBucket), Object.prototype, 'an id `__proto__` is an entry, not a prototype');
  assert.deepEqual(counterEntry(loaded, '__proto__'), { amount: cop('2'), status: 'open' });
  assert.deepEqual(roundTrip(emptyCounter()), emptyCounter());
});

test('the snapshot keeps the totals readable and the entries as one string per bucket', () => {
  const snapshot = encodeCounter(sample()) as { reservedCount: number; reservedAmount: { decimal__: string }; foldedCount: number; bucketLines: unknown };
  assert.equal(snapshot.reservedCount, 5);
  assert.equal(snapshot.reservedAmount.decimal__, '4900029.0000000'); // 50,000 + 4,850,000.50 + 1 + 2 + 25.5
  assert.equal(snapshot.foldedCount, 0);
  assert.ok(Array.isArray(snapshot.bucketLines) && snapshot.bucketLines.length === counterBucketCount);
  assert.ok(snapshot.bucketLines.every((text) => typeof text === 'string'));
  assert.ok(snapshot.bucketLines.includes('o 4850000.50 a3d1c0de-0000-4000-8000-000000000002'));
});

test('snapshots of the two previous formats (one string of every entry; one object per entry) still load, and are written anew', () => {
  const current = sample({ protoId: false });
  const listed = [...counterEntries(current)];
  // Format 2: every entry as a line of one string.
  const lines = listed.map(([id, entry]) => `${id.includes('\n') ? entry.status[0]?.toUpperCase() : entry.status[0]} ${toFixedString(entry.amount)} ${id.includes('\n') ? encodeURIComponent(id) : id}`);
  const formatTwo = { reservedAmount: toJsonValue(current.reservedAmount), reservedCount: current.reservedCount, entryLines: lines.join('\n') };
  assert.deepEqual(decodeCounter(formatTwo), current);
  // Format 1 deleted released entries and marked the others `completed: true | false`
  // (its writer could not keep an id `__proto__`).
  const kept = listed.filter(([, entry]) => entry.status !== 'released');
  const formatOne = toJsonValue({
    reservedAmount: current.reservedAmount,
    reservedCount: current.reservedCount,
    entries: Object.fromEntries(kept.map(([id, entry]) => [id, { amount: entry.amount, completed: entry.status === 'completed' }])),
  });
  const loaded = decodeCounter(formatOne);
  assert.deepEqual(release(loaded, 'id with spaces and % signs'), loaded, 'the released entry was not kept by format 1');
  assert.deepEqual([...counterEntries(loaded)], kept);
  assert.deepEqual(roundTrip(loaded), loaded);
  // Its reservations still release and complete as before the upgrade.
  const released = release(loaded, 'a3d1c0de-0000-4000-8000-000000000002');
  assert.equal(released.reservedCount, 3);
  assert.equal(release(released, 'a3d1c0de-0000-4000-8000-000000000001'), released, 'a completed entry keeps its reservation');
});

test('a snapshot whose totals disagree with its entries, or whose entry sits in another bucket, is refused, not loaded', () => {
  const snapshot = encodeCounter(sample()) as Record<string, JsonValue> & { bucketLines: string[] };
  assert.throws(() => decodeCounter({ ...snapshot, reservedCount: 4 }), /disagree/);
  assert.throws(() => decodeCounter({ ...snapshot, reservedAmount: { decimal__: '1.00' } }), /disagree/);
  assert.throws(() => decodeCounter({ ...snapshot, foldedCount: 1 }), /disagree/);
  const withLine = (index: number, text: string): JsonValue => ({ ...snapshot, bucketLines: snapshot.bucketLines.map((old, at) => (at === index ? text : old)) });
  assert.throws(() => decodeCounter(withLine(0, 'x 1.00 id')), /bad entry line/);
  const usdc = bucketIndexOf('usdc');
  assert.throws(() => decodeCounter(withLine((usdc + 1) % counterBucketCount, 'r 1.00 usdc')), /belongs to another/);
  // A negative entry next to a positive one keeps the totals right while holding more than they say.
  const evil = bucketIndexOf('evil');
  const good = bucketIndexOf('good');
  const pair = { reservedAmount: { decimal__: '0.00' }, reservedCount: 2, foldedAmount: { decimal__: '0' }, foldedCount: 0 };
  const lines = Array.from({ length: counterBucketCount }, (_, index) => [index === evil ? 'o -100.00 evil' : '', index === good ? 'o 100.00 good' : ''].filter((line) => line !== '').join('\n'));
  assert.throws(() => decodeCounter({ ...pair, bucketLines: lines }), /negative amount/);
  assert.throws(() => decodeCounter({ ...snapshot, foldedCount: -1, reservedCount: 4 }), /disagree/);
  assert.throws(() => decodeCounter({ ...snapshot, foldedAmount: { decimal__: '-1.00' } }), /disagree/);
});

test('reading a counter again after one reservation parses only the bucket that changed', () => {
  let state = emptyCounter();
  for (let index = 0; index < 500; index += 1) state = mustReserve(state, `tx-${index}`);
  const memo = counterDecodeMemo();
  const first = decodeCounter(JSON.parse(JSON.stringify(encodeCounter(state))) as JsonValue, memo);
  assert.deepEqual(first, state);
  const next = mustReserve(state, 'tx-new');
  const second = decodeCounter(JSON.parse(JSON.stringify(encodeCounter(next))) as JsonValue, memo);
  assert.deepEqual(second, next);
  const changed = bucketIndexOf('tx-new');
  second.buckets.forEach((bucket, index) => {
    if (index === changed) assert.notEqual(bucket, first.buckets[index], 'the changed bucket is parsed again');
    else assert.equal(bucket, first.buckets[index], `bucket ${index} is the one parsed before`);
  });
});

test('a refusal keeps the state object, so its snapshot is not encoded again', () => {
  const behavior = counterBehavior({ limits: () => defaultLimitsConfig });
  // Full: 25,000,000 COP reserved of the BREB method-day cap.
  let full = emptyCounter();
  for (let index = 0; index < 5; index += 1) full = mustReserve(full, `tx-${index}`, cop('5000000'));
  const encoded = behavior.encode(full);
  const command: CommandEnvelope = {
    commandId: 'c-1',
    actorType: 'counter',
    actorKey: 'limits:method-day:BREB:2026-01-01',
    kind: 'reserve',
    payload: toJsonValue({ kind: 'reserve', window: 'methodDay', transactionId: 'tx-late', amount: cop('10000'), method: 'BREB' }),
    sentAtMs: 0,
  };
  const outcome = handleCommand(behavior, full, command, { nowMs: 0, commandId: 'c-1' });
  assert.equal(outcome.state, undefined, 'a refusal changes nothing');
  assert.equal(outcome.send?.[0]?.kind, reservationResultKind);
  assert.equal(behavior.encode(full), encoded, 'the same state encodes to the same snapshot object');
});

test('the totals alone decide a grant: whatever the entries hold, a reservation granted on them is granted on the whole counter', () => {
  let state = emptyCounter();
  for (let index = 0; index < 40; index += 1) state = mustReserve(state, `tx-${index}`, cop('1000'));
  state = commit(release(state, 'tx-3'), { transactionId: 'tx-4', amount: cop('1000') });
  const json = JSON.parse(JSON.stringify(encodeCounter(state))) as JsonValue;
  const totals = decodeCounterTotals(json);
  assert.deepEqual([totals.reservedAmount, totals.reservedCount], [state.reservedAmount, state.reservedCount]);
  assert.equal([...counterEntries(totals)].length, 0, 'no entry is parsed');
  for (const cap of ['38000', '39000', '39999.99', '40000']) {
    for (const transactionId of ['tx-new', 'tx-7', 'tx-3']) {
      const reservation = { transactionId, amount: cop('1000'), cap: cop(cap), countCap: null };
      const onTotals = reserve(totals, reservation).ok;
      const onWhole = reserve(state, reservation).ok;
      if (onTotals) assert.equal(onWhole, true, `${transactionId} under a cap of ${cap}`);
    }
  }
  // A counted transaction at a spent cap: refused on the totals, granted on the whole (which is why a refusal reads the entries).
  const spent = { transactionId: 'tx-7', amount: cop('1000'), cap: state.reservedAmount, countCap: null };
  assert.deepEqual([reserve(totals, spent).ok, reserve(state, spent).ok], [false, true]);
});

test('a reservation re-encodes its bucket by appending a line: the snapshot is the one a full encoding gives', () => {
  const behavior = counterBehavior({ limits: () => defaultLimitsConfig });
  let state: CounterState | null = null;
  const ids = [...Array.from({ length: 300 }, (_, index) => `tx-${index}`), '42', '7', 'line\nbreak', '__proto__', 'tx-after-numbers'];
  for (const [index, transactionId] of ids.entries()) {
    const command: CommandEnvelope = {
      commandId: `c-${index}`,
      actorType: 'counter',
      actorKey: 'limits:method-day:PIX:2026-01-01',
      kind: 'reserve',
      payload: toJsonValue({ kind: 'reserve', window: 'methodDay', transactionId, amount: cop('1.50'), method: 'PIX' }),
      sentAtMs: 0,
    };
    const next: CounterState | undefined = handleCommand(behavior, state, command, { nowMs: 0, commandId: command.commandId }).state;
    if (next !== undefined) state = next;
    assert.ok(state !== null);
    behavior.encode(state); // as the runtime does after every write: the next append builds on it
    if (index === 150) state = release(state, 'tx-3');
  }
  assert.ok(state !== null);
  const written = behavior.encode(state) as { bucketLines: string[] };
  // The same entries in fresh bucket objects: nothing cached, every line formatted again.
  const fresh = encodeCounter({ ...state, buckets: state.buckets.map((bucket) => ({ ...bucket })) }) as { bucketLines: string[] };
  assert.deepEqual(written.bucketLines, fresh.bucketLines);
  assert.deepEqual(decodeCounter(JSON.parse(JSON.stringify(written)) as JsonValue), state);
});
