// The onramp inventory's pure core: a hold takes its amount once, a release gives it back once, a
// consumption keeps it taken, keys are idempotent from the state alone, open holds are bounded, closed
// keys are remembered for a bounded time and number, and the snapshot round-trips exactly. A seeded
// random sequence is checked against a small reference model.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeInventory, encodeInventory } from '../../src/actors/inventory-actor.ts';
import { decimalFromExactString, toPlainString, type Decimal } from '../../src/domain/money.ts';
import {
  assertInventory,
  closedKeyRetentionMs,
  closedKeysMax,
  decideInventory,
  initialInventory,
  type InventoryCommand,
  type InventoryState,
} from '../../src/domain/onramp-inventory.ts';

const d = (text: string): Decimal => decimalFromExactString(text);
const limits = { openHoldsMax: 3 };

function run(state: InventoryState, commands: readonly InventoryCommand[], nowMs = 1_000): { state: InventoryState; outcomes: string[] } {
  const outcomes: string[] = [];
  let current = state;
  for (const command of commands) {
    const decision = decideInventory(current, command, limits, nowMs);
    assertInventory(decision.state, limits);
    outcomes.push(decision.outcome);
    current = decision.state;
  }
  return { state: current, outcomes };
}

describe('onramp inventory decisions', () => {
  test('hold, release, consume: each key moves the figure once', () => {
    const { state, outcomes } = run(initialInventory(d('10')), [
      { kind: 'hold', key: 'a', amount: d('4') },
      { kind: 'hold', key: 'a', amount: d('4') },
      { kind: 'hold', key: 'b', amount: d('3') },
      { kind: 'release', key: 'a' },
      { kind: 'release', key: 'a' },
      { kind: 'consume', key: 'b' },
      { kind: 'release', key: 'b' },
      { kind: 'hold', key: 'a', amount: d('4') },
      { kind: 'hold', key: 'b', amount: d('3') },
    ]);
    assert.deepEqual(outcomes, ['held', 'already_held', 'held', 'released', 'not_open', 'consumed', 'not_open', 'already_closed', 'already_closed']);
    assert.equal(toPlainString(state.available), '7', 'a released, b delivered');
  });

  test('a hold the figure cannot cover, or beyond the bound of open holds, changes nothing', () => {
    const start = run(initialInventory(d('5')), [
      { kind: 'hold', key: 'a', amount: d('1') },
      { kind: 'hold', key: 'b', amount: d('1') },
      { kind: 'hold', key: 'c', amount: d('1') },
    ]).state;
    const beyond = decideInventory(start, { kind: 'hold', key: 'd', amount: d('1') }, limits, 1_000);
    assert.equal(beyond.outcome, 'too_many_holds');
    assert.equal(beyond.state, start);
    const short = decideInventory(start, { kind: 'hold', key: 'd', amount: d('2.0000001') }, { openHoldsMax: 10 }, 1_000);
    assert.equal(short.outcome, 'insufficient');
    assert.equal(short.state, start);
  });

  test('a key named like an object property is an ordinary key', () => {
    const { outcomes } = run(initialInventory(d('5')), [
      { kind: 'release', key: 'toString' },
      { kind: 'hold', key: '__proto__', amount: d('1') },
      { kind: 'hold', key: 'constructor', amount: d('1') },
      { kind: 'consume', key: '__proto__' },
    ]);
    assert.deepEqual(outcomes, ['not_open', 'held', 'held', 'consumed']);
  });

  test('closed keys are remembered for the retention time, and at most closedKeysMax of them', () => {
    let state = initialInventory(d('1000000'));
    const many = { openHoldsMax: closedKeysMax + 10 };
    for (let index = 0; index <= closedKeysMax; index += 1) {
      state = decideInventory(state, { kind: 'hold', key: `k${index}`, amount: d('1') }, many, 0).state;
      state = decideInventory(state, { kind: 'consume', key: `k${index}` }, many, 0).state;
    }
    assert.equal(state.closed.length, closedKeysMax);
    assert.equal(decideInventory(state, { kind: 'hold', key: 'k0', amount: d('1') }, many, 0).outcome, 'held', 'the oldest key was forgotten');
    assert.equal(decideInventory(state, { kind: 'hold', key: 'k1', amount: d('1') }, many, 0).outcome, 'already_closed');
    const later = decideInventory(state, { kind: 'hold', key: 'x', amount: d('1') }, many, closedKeyRetentionMs).state;
    const pruned = decideInventory(later, { kind: 'release', key: 'x' }, many, closedKeyRetentionMs).state;
    assert.deepEqual(pruned.closed.map(([key]) => key), ['x'], 'keys past their retention are forgotten at the next close');
  });

  test('the snapshot round-trips exactly, odd keys included', () => {
    const { state } = run(initialInventory(d('10.1234567')), [
      { kind: 'hold', key: 'delivery:a b\nc', amount: d('0.0000001') },
      { kind: 'hold', key: 'delivery:%20', amount: d('2') },
      { kind: 'consume', key: 'delivery:%20' },
    ]);
    assert.deepEqual(decodeInventory(encodeInventory(state)), state);
  });

  test('a seeded random sequence agrees with a reference model; the figure never goes negative', () => {
    let seed = 0x2545f491;
    const next = (bound: number): number => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed % bound;
    };
    const bound = { openHoldsMax: 8 };
    let state = initialInventory(d('50'));
    const model = { available: 50_0000000n, open: new Map<string, bigint>(), closed: new Set<string>() };
    for (let step = 0; step < 5_000; step += 1) {
      const key = `k${next(20)}`;
      const units = BigInt(1 + next(100_000_000));
      const kind = (['hold', 'hold', 'release', 'consume'] as const)[next(4)] ?? 'hold';
      const command: InventoryCommand = kind === 'hold' ? { kind, key, amount: { units, scale: 7 } } : { kind, key };
      const decision = decideInventory(state, command, bound, step);
      assertInventory(decision.state, bound);
      let expected: string;
      if (kind === 'hold') {
        if (model.open.has(key)) expected = 'already_held';
        else if (model.closed.has(key)) expected = 'already_closed';
        else if (model.available < units) expected = 'insufficient';
        else if (model.open.size >= bound.openHoldsMax) expected = 'too_many_holds';
        else {
          expected = 'held';
          model.available -= units;
          model.open.set(key, units);
        }
      } else {
        const held = model.open.get(key);
        if (held === undefined) expected = 'not_open';
        else {
          expected = kind === 'release' ? 'released' : 'consumed';
          if (kind === 'release') model.available += held;
          model.open.delete(key);
          model.closed.add(key);
        }
      }
      assert.equal(decision.outcome, expected, `step ${step}: ${kind} ${key}`);
      assert.equal(decision.state.available.units, model.available, `step ${step}: available`);
      state = decision.state;
    }
  });
});
