// The limit counter's snapshot and parts: what a counter writes on every command must load back to
// the same state, snapshots written by the previous formats must still load (a running service is
// upgraded in place), a change touches one part, and a refusal does not re-encode the counter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  counterBehavior,
  counterDecodeMemo,
  counterPartNames,
  counterPartToRead,
  counterParts,
  decodeCounter,
  decodeCounterForTransaction,
  decodeCounterTotals,
  encodeCounter,
  reservationResultKind,
} from '../../src/actors/counter-actor.ts';
import type { CommandEnvelope, JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { commit, counterEntries, counterEntry, emptyCounter, release, reserve, type CounterState } from '../../src/domain/limits.ts';
import { bucketIndexOf, counterBucketCount, fnv1a } from '../../src/domain/counter.ts';
import { decimal, decimalFromString, toFixedString } from '../../src/domain/money.ts';
import { handleCommand } from '../support/handle-command.ts';
import { formatThree, loadCounter, storedCounter } from '../support/counter-snapshots.ts';

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
  return loadCounter(storedCounter(state));
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

test('the snapshot keeps the totals and each bucket\'s size; each non-empty bucket is a part of its own, one string', () => {
  const state = sample();
  const snapshot = encodeCounter(state) as { reservedCount: number; reservedAmount: { decimal__: string }; foldedCount: number; bucketSizes: unknown };
  assert.equal(snapshot.reservedCount, 5);
  assert.equal(snapshot.reservedAmount.decimal__, '4900029.0000000'); // 50,000 + 4,850,000.50 + 1 + 2 + 25.5
  assert.equal(snapshot.foldedCount, 0);
  assert.ok(Array.isArray(snapshot.bucketSizes) && snapshot.bucketSizes.length === counterBucketCount);
  assert.equal((snapshot.bucketSizes as number[]).reduce((sum, size) => sum + size, 0), 6, 'six entries listed (the released one too)');
  const { parts } = storedCounter(state);
  assert.deepEqual([...parts.keys()], counterPartNames(snapshot as unknown as JsonValue));
  assert.ok([...parts.values()].includes('o 4850000.50 a3d1c0de-0000-4000-8000-000000000002'));
  assert.ok(JSON.stringify(snapshot).length < 1_000, 'the snapshot holds no entry');
});

test('a reservation changes one part; every other part is the same string as before (nothing to compare, nothing to write)', () => {
  let state = emptyCounter();
  for (let index = 0; index < 500; index += 1) state = mustReserve(state, `tx-${index}`);
  const before = counterParts(state);
  const next = mustReserve(state, 'tx-new');
  const after = counterParts(next);
  const changed = after.map((text, index) => (text === before[index] ? null : index)).filter((index) => index !== null);
  assert.deepEqual(changed, [bucketIndexOf('tx-new')]);
  assert.equal(after[bucketIndexOf('tx-new')], `${before[bucketIndexOf('tx-new')]}\no 50000.00 tx-new`);
  assert.equal(counterParts(next), after, 'kept per state');
});

test('a format-3 snapshot (every bucket\'s lines in it) loads with no parts, and names none', () => {
  const state = sample();
  const json = formatThree(state);
  assert.deepEqual(counterPartNames(json), []);
  assert.deepEqual(decodeCounter(json), state);
  assert.deepEqual(decodeCounterTotals(json).foldedCount, state.foldedCount);
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
  const stored = storedCounter(sample());
  const head = stored.head as Record<string, JsonValue> & { bucketSizes: number[]; bucketDigests: number[] };
  const load = (snapshot: JsonValue, parts = stored.parts): CounterState => decodeCounter(snapshot, parts);
  assert.throws(() => load({ ...head, reservedCount: 4 }), /disagree/);
  assert.throws(() => load({ ...head, reservedAmount: { decimal__: '1.00' } }), /disagree/);
  assert.throws(() => load({ ...head, foldedCount: 1 }), /disagree/);
  // A part changed by hand, with the snapshot's digest made to match: the entries are checked too.
  const tampered = (index: number, text: string): [JsonValue, Map<number, string>] => {
    const parts = new Map([...stored.parts, [index, text]]);
    const sizes = head.bucketSizes.map((size, at) => (at === index ? text.split('\n').length : size));
    return [{ ...head, bucketSizes: sizes, bucketDigests: head.bucketDigests.map((digest, at) => (at === index ? fnv1a(text) : digest)) }, parts];
  };
  const named = counterPartNames(head)[0] ?? 0;
  assert.throws(() => load(...tampered(named, 'x 1.00 id')), /bad entry line/);
  const usdc = bucketIndexOf('usdc');
  const other = counterPartNames(head).find((index) => index !== usdc && (head.bucketSizes[index] ?? 0) === 1) ?? 0;
  assert.throws(() => load(...tampered(other, 'r 1.00 usdc')), /belongs to another/);
  // A part that lists more (or fewer) entries than the snapshot says is not the one written with it.
  const longer = new Map([...stored.parts, [usdc, `${stored.parts.get(usdc) ?? ''}\nr 1.00 usdc-2`.replace(/^\n/, '')]]);
  assert.throws(() => load({ ...head, bucketDigests: head.bucketDigests.map((digest, at) => (at === usdc ? fnv1a(longer.get(usdc) ?? '') : digest)) }, longer), /lists|belongs/);
  const missing = new Map(stored.parts);
  missing.delete(named);
  assert.throws(() => load(head, missing), /has no part/);
  assert.throws(() => load({ ...head, bucketSizes: head.bucketSizes.slice(1) }), /bad bucket sizes/);
  assert.throws(() => load({ ...head, bucketSizes: head.bucketSizes.map((size) => -size) }), /bad bucket sizes/);
  assert.throws(() => load({ ...head, bucketDigests: head.bucketDigests.slice(1) }), /bad bucket digests/);
  // A negative entry next to a positive one keeps the totals right while holding more than they say.
  const evil = bucketIndexOf('evil');
  const good = bucketIndexOf('good');
  const pair = { reservedAmount: { decimal__: '0.00' }, reservedCount: 2, foldedAmount: { decimal__: '0' }, foldedCount: 0 };
  const texts = new Map([[evil, 'o -100.00 evil'], [good, 'o 100.00 good']]);
  const sizes = Array.from({ length: counterBucketCount }, (_, index) => (texts.has(index) ? 1 : 0));
  const digests = Array.from({ length: counterBucketCount }, (_, index) => fnv1a(texts.get(index) ?? ''));
  assert.throws(() => load({ ...pair, bucketSizes: sizes, bucketDigests: digests }, texts), /negative amount/);
  assert.throws(() => load({ ...head, foldedCount: -1, reservedCount: 4 }), /disagree/);
  assert.throws(() => load({ ...head, foldedAmount: { decimal__: '-1.00' } }), /disagree/);
});

test('a part from another moment than its snapshot is refused, even listing as many entries with the same totals', () => {
  // The same transactions, one open in the part and completed in the snapshot's moment (or the
  // reverse): sizes and totals agree, and loading it would let a release give back a completed
  // reservation. A restore from a copy not taken at one point in time can pair them so.
  const open = mustReserve(emptyCounter(), 'tx-1');
  const completed = commit(open, { transactionId: 'tx-1', amount: cop('50000') });
  const now = storedCounter(completed);
  const before = storedCounter(open);
  assert.deepEqual((now.head as { bucketSizes: number[] }).bucketSizes, (before.head as { bucketSizes: number[] }).bucketSizes);
  assert.throws(() => decodeCounter(now.head, before.parts), /not the one written with the snapshot/);
  assert.deepEqual(decodeCounter(now.head, now.parts), completed);
});

test('a check of one transaction reads its bucket only: the totals, and that bucket as its part says', () => {
  let state = emptyCounter();
  for (let index = 0; index < 200; index += 1) state = mustReserve(state, `tx-${index}`);
  const stored = storedCounter(state);
  const index = counterPartToRead(stored.head, 'tx-7');
  assert.equal(index, bucketIndexOf('tx-7'));
  const checked = decodeCounterForTransaction(stored.head, 'tx-7', stored.parts.get(bucketIndexOf('tx-7')) ?? null);
  assert.deepEqual(counterEntry(checked, 'tx-7'), counterEntry(state, 'tx-7'));
  assert.equal(checked.reservedCount, 200);
  assert.equal(checked.buckets.filter((bucket) => Object.keys(bucket).length > 0).length, 1, 'no other bucket read');
  // An empty bucket has no part to read; an earlier format is decoded whole.
  const lone = mustReserve(emptyCounter(), 'tx-alone');
  const unread = [...Array(1_000).keys()].map((n) => `probe-${n}`).find((id) => bucketIndexOf(id) !== bucketIndexOf('tx-alone')) ?? '';
  assert.equal(counterPartToRead(storedCounter(lone).head, unread), null);
  assert.equal(counterPartToRead(formatThree(lone), 'tx-alone'), null);
  assert.deepEqual(decodeCounterForTransaction(formatThree(state), 'tx-7', null), state);
});

test('reading a counter again after one reservation parses only the bucket that changed', () => {
  let state = emptyCounter();
  for (let index = 0; index < 500; index += 1) state = mustReserve(state, `tx-${index}`);
  const memo = counterDecodeMemo();
  const first = loadCounter(storedCounter(state), memo);
  assert.deepEqual(first, state);
  const next = mustReserve(state, 'tx-new');
  const second = loadCounter(storedCounter(next), memo);
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

test('a reservation re-encodes its bucket by appending a line: the parts are the ones a full encoding gives', () => {
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
    // As the runtime does after every write: the next append builds on it.
    behavior.encode(state);
    behavior.parts?.of(state);
    if (index === 150) state = release(state, 'tx-3');
  }
  assert.ok(state !== null);
  const written = behavior.parts?.of(state);
  // The same entries in fresh bucket objects: nothing cached, every line formatted again.
  const fresh = { ...state, buckets: state.buckets.map((bucket) => ({ ...bucket })) };
  assert.deepEqual(written, counterParts(fresh));
  assert.deepEqual(behavior.encode(state), encodeCounter(fresh));
  assert.deepEqual(loadCounter(storedCounter(state)), state);
});
