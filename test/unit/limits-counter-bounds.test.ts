// A counter that does not grow with the day: seeded random reserve / release / commit sequences
// over thousands of transactions, each step checked against a reference model that remembers every
// transaction for ever. The counter forgets old closed entries (src/domain/counter.ts), so it may
// differ from the model, but only in the safe direction: it never holds less than the model, never
// passes a cap, and holds exactly the model's totals as long as no forgotten transaction comes back.
// Each change copies one bucket, and the snapshot round trip (with and without the edge's memo)
// gives the same counter back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { counterDecodeMemo } from '../../src/actors/counter-actor.ts';
import { loadCounter, storedCounter } from '../support/counter-snapshots.ts';
import { bucketIndexOf, closedEntriesPerBucketMax, counterBucketCount } from '../../src/domain/counter.ts';
import { commit, counterEntries, counterEntry, emptyCounter, release, reserve, type CounterState } from '../../src/domain/limits.ts';
import { add, compare, decimal, zero } from '../../src/domain/money.ts';

type ModelStatus = 'open' | 'completed' | 'released';

function seeded(seed: number): (bound: number) => number {
  let value = seed >>> 0;
  return (bound) => {
    value = (Math.imul(value, 1664525) + 1013904223) >>> 0;
    return value % bound;
  };
}

function assertBoundedAndConsistent(state: CounterState): void {
  let listedAmount = zero(0);
  let listedCount = 0;
  const closed = new Map<string, number>();
  state.buckets.forEach((bucket, index) => {
    for (const [id, entry] of Object.entries(bucket)) {
      assert.equal(bucketIndexOf(id), index, `${id} sits in its own bucket`);
      if (entry.status !== 'open') closed.set(`${index}:${entry.status}`, (closed.get(`${index}:${entry.status}`) ?? 0) + 1);
      if (entry.status === 'released') continue;
      listedAmount = add(listedAmount, entry.amount);
      listedCount += 1;
    }
  });
  for (const [where, count] of closed) assert.ok(count <= closedEntriesPerBucketMax, `${count} closed entries in ${where}`);
  assert.equal(compare(state.reservedAmount, add(state.foldedAmount, listedAmount)), 0);
  assert.equal(state.reservedCount, state.foldedCount + listedCount);
}

for (const seed of [1, 7, 2026]) {
  test(`seed ${seed}: over 6,000 transactions the counter never holds less than the model, never passes its caps, and copies one bucket per change`, () => {
    const next = seeded(seed);
    const capMinor = 40_000_000n; // 400,000.00
    const cap = decimal(capMinor, 2);
    const model = new Map<string, { amountMinor: bigint; status: ModelStatus }>();
    let modelAmountMinor = 0n;
    let modelCount = 0;
    let forgottenCameBack = false;
    let state = emptyCounter();
    const memo = counterDecodeMemo();
    let ids = 0;
    for (let step = 0; step < 12_000; step += 1) {
      const before = state;
      const op = next(10);
      if (op < 5 || model.size === 0) {
        // Mostly new transactions; now and then a late duplicate of any earlier one.
        const duplicate = model.size > 0 && next(8) === 0;
        const id = duplicate ? `t${next(ids)}` : `t${ids++}`;
        const known = model.get(id);
        const amountMinor = known?.amountMinor ?? BigInt(1 + next(9_999));
        const listed = counterEntry(state, id) !== undefined;
        if (known !== undefined && known.status !== 'open' && !listed) forgottenCameBack = true;
        const result = reserve(state, { transactionId: id, amount: decimal(amountMinor, 2), cap, countCap: null });
        if (result.ok) state = result.state;
        if (result.ok && known === undefined) {
          model.set(id, { amountMinor, status: 'open' });
          modelAmountMinor += amountMinor;
          modelCount += 1;
        }
        if (!result.ok) assert.ok(state.reservedAmount.units + amountMinor > capMinor, 'refused only over the cap');
      } else {
        const id = `t${next(ids)}`;
        const known = model.get(id);
        if (known === undefined) continue;
        if (op < 8) {
          state = release(state, id);
          if (known.status === 'open') {
            known.status = 'released';
            modelAmountMinor -= known.amountMinor;
            modelCount -= 1;
          }
        } else if (known.status !== 'released') {
          // A transaction completes or is released, never both (the state machine).
          state = commit(state, { transactionId: id, amount: decimal(known.amountMinor, 2) });
          if (known.status === 'open') known.status = 'completed';
        }
      }
      assert.ok(compare(state.reservedAmount, cap) <= 0, `over the cap at step ${step}`);
      assert.ok(state.reservedAmount.units >= modelAmountMinor && state.reservedCount >= modelCount, `holds less than the model at step ${step}`);
      if (!forgottenCameBack) {
        assert.equal(state.reservedAmount.units, modelAmountMinor, `amount at step ${step}`);
        assert.equal(state.reservedCount, modelCount, `count at step ${step}`);
      }
      if (state !== before) {
        const copied = state.buckets.filter((bucket, index) => bucket !== before.buckets[index]).length;
        assert.equal(copied, 1, `step ${step} copied ${copied} buckets`);
      }
      if (step % 1_000 === 999) {
        assertBoundedAndConsistent(state);
        const stored = storedCounter(state);
        assert.deepEqual(loadCounter(stored), state);
        assert.deepEqual(loadCounter(stored, memo), state, 'decoded with the memo of the earlier reads');
      }
    }
    // The run got where the bounds matter: more closed transactions than the counter lists.
    const listed = [...counterEntries(state)].length;
    assert.ok(model.size > listed + counterBucketCount, `${model.size} transactions, ${listed} listed`);
    assert.ok(state.foldedCount > 0, 'completions were folded');
  });
}
