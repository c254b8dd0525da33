// The onramp crypto inventory (what acceptance promises and the delivery worker holds) through the
// real actor runtime, in-process bus and a private Redis, with the embedded store: every hold is
// given back exactly by its key however many holds came after it, two processes holding at the
// same instant lose no decrement, open holds are bounded (refused with a reason beyond the bound),
// and a figure written by the previous, store-document inventory is carried over.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { decimalFromExactString, subtract, toPlainString, type Decimal } from '../../src/domain/money.ts';
import { onrampInventoryCollection, ActorOnrampInventory, type OnrampInventory } from '../../src/onramp/inventory.ts';
import { startActorHarness, type ActorHarness, type BusKind } from '../support/actor-harness.ts';

const d = (text: string): Decimal => decimalFromExactString(text);

/** One process's inventory client (each gets its own, as each process builds one). */
function inventoryOf(harness: ActorHarness): OnrampInventory {
  return new ActorOnrampInventory({ store: harness.store, actors: harness.client });
}

for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
  describe(`onramp inventory (${busKind} bus)`, () => {
    let harness: ActorHarness;

    before(async () => {
      harness = await startActorHarness({ busKind, onrampOpenHoldsMax: 1_100 });
    });

    after(async () => {
      await harness.stop();
    });

    test('a hold released after more than 1,000 later holds gives its amount back: no false liquidity_insufficient', async () => {
      const inventory = inventoryOf(harness);
      await inventory.set('STELLAR', 'USDC', d('100'));
      const first = `delivery:${randomUUID()}`;
      assert.equal(await inventory.hold(first, 'STELLAR', 'USDC', d('60')), 'held');
      const later = Array.from({ length: 1_001 }, (_, index) => `delivery:later-${index}-${randomUUID()}`);
      for (let start = 0; start < later.length; start += 50) {
        const chunk = later.slice(start, start + 50);
        const results = await Promise.all(chunk.map((key) => inventory.hold(key, 'STELLAR', 'USDC', d('0.01'))));
        assert.ok(results.every((result) => result === 'held'), JSON.stringify(results));
      }
      assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '29.99');
      await inventory.release(first, 'STELLAR', 'USDC');
      assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '89.99', 'the first hold came back');
      // A repeated release (a retried failure report) gives nothing back twice.
      await inventory.release(first, 'STELLAR', 'USDC');
      assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '89.99');
      for (let start = 0; start < later.length; start += 50) {
        await Promise.all(later.slice(start, start + 50).map((key) => inventory.release(key, 'STELLAR', 'USDC')));
      }
      assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '100');
    });

    test('two processes holding different keys at the same instant: every decrement counts', async () => {
      const [one, two] = [inventoryOf(harness), inventoryOf(harness)];
      await one.set('CELO', 'USDT', d('1000'));
      const keys = Array.from({ length: 40 }, () => `delivery:${randomUUID()}`);
      const results = await Promise.all(keys.map((key, index) => (index % 2 === 0 ? one : two).hold(key, 'CELO', 'USDT', d('2.5'))));
      assert.ok(results.every((result) => result === 'held'));
      assert.equal(toPlainString(await two.available('CELO', 'USDT')), '900', '40 holds of 2.5 each');
      // Held twice by two processes (a retried delivery): taken once.
      const [again, twice] = await Promise.all([one.hold(keys[0] ?? '', 'CELO', 'USDT', d('2.5')), two.hold(keys[0] ?? '', 'CELO', 'USDT', d('2.5'))]);
      assert.deepEqual([again, twice], ['already_held', 'already_held']);
      assert.equal(toPlainString(await one.available('CELO', 'USDT')), '900');
    });

    test('a hold the figure cannot cover changes nothing', async () => {
      const inventory = inventoryOf(harness);
      await inventory.set('SOLANA', 'USDC', d('5'));
      assert.equal(await inventory.hold(`delivery:${randomUUID()}`, 'SOLANA', 'USDC', d('5.000001')), 'insufficient');
      assert.equal(toPlainString(await inventory.available('SOLANA', 'USDC')), '5');
    });
  });
}

describe('onramp inventory: bounds and the stored figure of the previous inventory', () => {
  let harness: ActorHarness;

  before(async () => {
    harness = await startActorHarness({ busKind: 'memory', onrampOpenHoldsMax: 3 });
  });

  after(async () => {
    await harness.stop();
  });

  test('open holds are bounded: beyond the bound a hold is refused (too_many_holds) and changes nothing; a consumed or released hold makes room', async () => {
    const inventory = inventoryOf(harness);
    await inventory.set('STELLAR', 'USDC', d('100'));
    const keys = [1, 2, 3].map(() => `delivery:${randomUUID()}`);
    for (const key of keys) assert.equal(await inventory.hold(key, 'STELLAR', 'USDC', d('1')), 'held');
    const fourth = `delivery:${randomUUID()}`;
    assert.equal(await inventory.hold(fourth, 'STELLAR', 'USDC', d('1')), 'too_many_holds');
    assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '97');
    await inventory.consume(keys[0] ?? '', 'STELLAR', 'USDC');
    assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '97', 'a delivered hold stays taken');
    assert.equal(await inventory.hold(fourth, 'STELLAR', 'USDC', d('1')), 'held');
    // A consumed key held again (a stale attempt of a finished delivery) takes nothing more.
    assert.equal(await inventory.hold(keys[0] ?? '', 'STELLAR', 'USDC', d('1')), 'already_closed');
    await inventory.release(keys[0] ?? '', 'STELLAR', 'USDC');
    assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '96', 'a consumed hold is never released');
  });

  test('the figure stored by the previous inventory (a document with hold-key lists) is read, then carried into the actor', async () => {
    await harness.store.put(onrampInventoryCollection, 'CELO:USDC', { amount: '1234.5000000', held: ['delivery:old-1', 'delivery:old-2'], released: ['delivery:old-1'] });
    const inventory = inventoryOf(harness);
    assert.equal(toPlainString(await inventory.available('CELO', 'USDC')), '1234.5');
    const before = await inventory.available('CELO', 'USDC');
    assert.equal(await inventory.hold(`delivery:${randomUUID()}`, 'CELO', 'USDC', d('0.5')), 'held');
    assert.equal(toPlainString(subtract(before, await inventory.available('CELO', 'USDC'))), '0.5');
    const doc = await harness.store.get(onrampInventoryCollection, 'CELO:USDC');
    assert.equal(doc?.['available'], '1234.0000000');
    assert.equal(doc?.['openHolds'], 1);
  });
});
