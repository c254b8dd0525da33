// Which transfers may fund a Solana/Celo transaction (src/domain/deposit-binding.ts): its own
// address always; the legacy shared address only with transfers not older than the transaction,
// compared in whole seconds because block times have no finer resolution.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bindingRefusal, depositBinding } from '../../src/domain/deposit-binding.ts';

const exact = (a: string, b: string): boolean => a === b;
const createdAtMs = 1_790_000_000_500; // half a second into its second

describe('deposit binding', () => {
  test('the frozen address is the one derived for the transaction: its own, no time rule', () => {
    const binding = depositBinding('own-address', 'own-address', createdAtMs, exact);
    assert.deepEqual(binding, { kind: 'own', address: 'own-address' });
    assert.equal(bindingRefusal(binding, createdAtMs - 86_400_000), null);
  });

  test('a shared frozen address, an unknown one, or a network without own addresses: the legacy rule', () => {
    assert.deepEqual(depositBinding('shared', 'own-address', createdAtMs, exact), { kind: 'shared', address: 'shared', createdAtMs });
    assert.deepEqual(depositBinding(null, 'own-address', createdAtMs, exact), { kind: 'shared', address: null, createdAtMs });
    assert.deepEqual(depositBinding('shared', null, createdAtMs, exact), { kind: 'shared', address: 'shared', createdAtMs });
  });

  test('addresses are compared in the network\'s form (EVM case does not matter)', () => {
    const caseless = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
    assert.equal(depositBinding('0xABCdef', '0xabcDEF', createdAtMs, caseless).kind, 'own');
  });

  test('legacy: a transfer of an earlier second is refused; the same second or later counts', () => {
    const binding = depositBinding('shared', 'own-address', createdAtMs, exact);
    assert.equal(bindingRefusal(binding, createdAtMs - 501), 'predates_transaction', 'the previous second');
    assert.equal(bindingRefusal(binding, createdAtMs - 500), null, 'the start of the same second');
    assert.equal(bindingRefusal(binding, createdAtMs + 10_000), null);
  });
});
