// Transaction reference (Stellar memo) and UUID helpers. Vectors are computed independently with
// node's Buffer, which the domain itself may not use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  transactionIdFromReference,
  transactionReference,
  transactionReferenceLength,
} from '../../src/domain/reference.ts';
import {
  isCanonicalUuid,
  parseUuid,
  uuidFromBytes,
  uuidToBytes,
  uuidV4FromRandomBytes,
} from '../../src/domain/ids.ts';

function viaBuffer(uuid: string): string {
  return Buffer.from(uuid.replaceAll('-', ''), 'hex').toString('base64');
}

test('reference: known vectors match Base64 of the 16 id bytes', () => {
  const vectors = [
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '123e4567-e89b-12d3-a456-426614174000',
    'f81d4fae-7dec-11d0-a765-00a0c91e6bf6',
  ];
  for (const uuid of vectors) assert.equal(transactionReference(uuid), viaBuffer(uuid));
  assert.equal(transactionReference('00000000-0000-0000-0000-000000000000'), 'AAAAAAAAAAAAAAAAAAAAAA==');
  assert.equal(transactionReference('ffffffff-ffff-ffff-ffff-ffffffffffff'), '/////////////////////w==');
});

test('reference: 24 characters, fits a 28-byte Stellar text memo', () => {
  const reference = transactionReference(randomUUID());
  assert.equal(reference.length, transactionReferenceLength);
  assert.ok(new TextEncoder().encode(reference).length <= 28);
  assert.ok(reference.endsWith('=='));
});

test('reference: round trip for many ids, including +, / and every last character', () => {
  const lastCharacters = new Set<string>();
  for (let index = 0; index < 5000; index += 1) {
    const uuid = index % 2 === 0 ? randomUUID() : uuidFromBytes(randomBytes(16));
    const reference = transactionReference(uuid);
    assert.equal(reference, viaBuffer(uuid));
    assert.equal(transactionIdFromReference(reference), uuid);
    lastCharacters.add(reference[21] ?? '');
  }
  assert.deepEqual([...lastCharacters].sort(), ['A', 'Q', 'g', 'w']);
});

test('reference: transactionReference asserts a canonical id (our ids are never anything else)', () => {
  assert.throws(() => transactionReference('123E4567-E89B-12D3-A456-426614174000'), /invariant/);
  assert.throws(() => transactionReference('not-a-uuid'), /invariant/);
});

test('reference: malformed memos give null', () => {
  const uuid = '123e4567-e89b-12d3-a456-426614174000';
  const good = transactionReference(uuid);
  assert.equal(good, 'Ej5FZ+ibEtOkVkJmFBdAAA==');
  const bad: unknown[] = [
    '',
    good.slice(0, 22), // padding missing
    `${good.slice(0, 22)}=`, // one pad
    `${good}=`, // too long
    `${good.slice(0, 21)}B==`, // non-canonical: unused low bits set
    `${good.slice(0, 21)}A=A`, // padding in the wrong place
    good.replace('+', '-'), // URL-safe alphabet
    good.replace('E', '*'),
    good.replace('E', ' '),
    good.replace('E', 'é'),
    '=AAAAAAAAAAAAAAAAAAAAA==',
    'AAAAAAAAAAAAAAAAAAAAAAAA', // 18 bytes, not 16
    Buffer.from(randomBytes(17)).toString('base64').slice(0, 24),
    uuid,
    null,
    undefined,
    42,
  ];
  for (const memo of bad) assert.equal(transactionIdFromReference(memo), null, `memo ${String(memo)}`);
  assert.equal(transactionIdFromReference(good), uuid);
});

test('ids: canonical form, parsing and bytes', () => {
  assert.ok(isCanonicalUuid('123e4567-e89b-12d3-a456-426614174000'));
  assert.ok(!isCanonicalUuid('123E4567-E89B-12D3-A456-426614174000'));
  assert.ok(!isCanonicalUuid('123e4567e89b12d3a456426614174000'));
  assert.ok(!isCanonicalUuid(undefined));
  assert.equal(parseUuid('123E4567-E89B-12D3-A456-426614174000'), '123e4567-e89b-12d3-a456-426614174000');
  for (const bad of ['{123e4567-e89b-12d3-a456-426614174000}', 'urn:uuid:123e4567-e89b-12d3-a456-426614174000',
    '123e4567-e89b-12d3-a456-42661417400', '123e4567-e89b-12d3-a456-4266141740000', 'g23e4567-e89b-12d3-a456-426614174000', 7]) {
    assert.equal(parseUuid(bad), null);
  }
  const bytes = randomBytes(16);
  const uuid = uuidFromBytes(bytes);
  assert.equal(uuid.replaceAll('-', ''), bytes.toString('hex'));
  assert.deepEqual(Buffer.from(uuidToBytes(uuid)), bytes);
  assert.throws(() => uuidFromBytes(new Uint8Array(15)), /invariant/);
});

test('ids: v4 from random bytes sets version and variant and leaves the input alone', () => {
  for (let index = 0; index < 200; index += 1) {
    const random = randomBytes(16);
    const copy = Buffer.from(random);
    const uuid = uuidV4FromRandomBytes(random);
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual(random, copy);
  }
  assert.equal(uuidV4FromRandomBytes(new Uint8Array(16).fill(0xff)), 'ffffffff-ffff-4fff-bfff-ffffffffffff');
});
