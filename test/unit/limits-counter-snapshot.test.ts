// The limit counter's snapshot: what a counter writes on every command must load back to the same
// state, snapshots written by the previous format must still load (a running service is upgraded
// in place), and a refusal does not re-encode the counter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { counterBehavior, decodeCounter, encodeCounter, reservationResultKind } from '../../src/actors/counter-actor.ts';
import type { CommandEnvelope, JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { commit, emptyCounter, release, reserve, type CounterState } from '../../src/domain/limits.ts';
import { decimal, decimalFromString } from '../../src/domain/money.ts';
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
  assert.equal(Object.getPrototypeOf(loaded.entries), Object.prototype, 'an id `__proto__` is an entry, not a prototype');
  assert.ok(Object.hasOwn(loaded.entries, '__proto__'));
  assert.deepEqual(roundTrip(emptyCounter()), emptyCounter());
});

test('the snapshot keeps the totals readable and the entries in one string', () => {
  const snapshot = encodeCounter(sample()) as { reservedCount: number; reservedAmount: { decimal__: string }; entryLines: unknown };
  assert.equal(snapshot.reservedCount, 5);
  assert.equal(snapshot.reservedAmount.decimal__, '4900029.0000000'); // 50,000 + 4,850,000.50 + 1 + 2 + 25.5
  assert.equal(typeof snapshot.entryLines, 'string');
});

test('a snapshot of the previous format (one object per entry) still loads, and is written anew in the current one', () => {
  // What encode wrote before: the state as plain JSON (whose writer could not keep an id `__proto__`).
  // That format deleted released entries and marked the others `completed: true | false`.
  const current = sample({ protoId: false });
  const kept = Object.entries(current.entries).filter(([, entry]) => entry.status !== 'released');
  const previousFormat = toJsonValue({
    ...current,
    entries: Object.fromEntries(kept.map(([id, entry]) => [id, { amount: entry.amount, completed: entry.status === 'completed' }])),
  });
  const state: CounterState = { ...current, entries: Object.fromEntries(kept) };
  const loaded = decodeCounter(previousFormat);
  assert.deepEqual(loaded, state);
  assert.deepEqual(roundTrip(loaded), state);
  // Its reservations still release and complete as before the upgrade.
  const released = release(loaded, 'a3d1c0de-0000-4000-8000-000000000002');
  assert.equal(released.reservedCount, 3);
  assert.equal(release(released, 'a3d1c0de-0000-4000-8000-000000000001'), released, 'a completed entry keeps its reservation');
});

test('a snapshot whose totals disagree with its entries is refused, not loaded', () => {
  const snapshot = encodeCounter(sample()) as Record<string, JsonValue>;
  assert.throws(() => decodeCounter({ ...snapshot, reservedCount: 4 }), /disagree/);
  assert.throws(() => decodeCounter({ ...snapshot, reservedAmount: { decimal__: '1.00' } }), /disagree/);
  assert.throws(() => decodeCounter({ ...snapshot, entryLines: 'x 1.00 id' }), /bad entry line/);
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
