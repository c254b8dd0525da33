// Celo per-transaction deposit addresses are a promise kept for the life of every transaction: the
// derivation (src/chains/celo-forwarders.ts) and the forwarder's creation code must never change
// under a deployed factory. These vectors are frozen on purpose; if one fails, do not update it
// without reading docs/solana-celo.md ("Celo: per-transaction deposit addresses", "Not done").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { depositSalt, forwarderAddress, forwarderInitCodeHash } from '../../src/chains/celo-forwarders.ts';

const transactionId = '0b9c3c1e-5d0f-4a8e-9f3b-2c6d7e8f9a01';
const factory = '0x2222222222222222222222222222222222222222';

test("the forwarder's creation code is frozen (a new solc, OpenZeppelin or source would move every address)", () => {
  assert.equal(forwarderInitCodeHash, '0x07643d42423c1febdd250ba385c350b91115309ade6ce720236c813ce380debe');
});

test('a transaction id gives the same salt and address forever', () => {
  const salt = depositSalt(transactionId);
  assert.equal(salt, '0x91096e5109c5dbcbbaaf31d66a1bd7a330b3249106dbd4b5f5a3336ebdc31732');
  assert.equal(forwarderAddress(factory, salt), '0xd55c14d25b4eE52Bc78a9C1B56FEd095E240cde8');
});

test('only canonical ids have an address: another spelling of the same id is refused, not hashed', () => {
  for (const text of [transactionId.toUpperCase(), `{${transactionId}}`, transactionId.replaceAll('-', ''), '']) {
    assert.throws(() => depositSalt(text), /not a canonical transaction id/);
  }
});
