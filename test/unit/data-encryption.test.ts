// Encryption at rest (src/store/data-encryption.ts, src/store/data-keys.ts): envelope encryption
// with AES-256-GCM, a blob in authenticated segments, sealed values, the keyring from the
// environment, and the KYC record's personal fields sealed in its snapshot.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodeKycState, encodeKycState } from '../../src/actors/kyc-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { dataKeyringFromEnv, parseDataKey, sandboxDataKeyring } from '../../src/store/data-keys.ts';
import type { KycState } from '../../src/domain/kyc.ts';
import {
  createDataKeyring,
  DataDecryptionError,
  decryptBlob,
  encryptBlob,
  encryptBlobStream,
  openText,
  sealText,
  segmentBytes,
} from '../../src/store/data-encryption.ts';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const keyring = createDataKeyring(k1);
const marker = Buffer.from('PASSPORT-AB123456-Maria-da-Silva');

/** A document larger than three segments, the marker repeated through it. */
function document(): Buffer {
  const parts: Buffer[] = [];
  while (parts.length * marker.length < segmentBytes * 3 + 1_000) parts.push(marker);
  return Buffer.concat(parts);
}

async function* chunked(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

async function encryptStream(bytes: Buffer, blobKey = 'kyc-document:1', size = 7_777): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const part of encryptBlobStream(keyring, blobKey, chunked(bytes, size))) out.push(part);
  return Buffer.concat(out);
}

/** The offsets of the segments (their 4-byte length prefixes) in an encrypted blob of `keyring`. */
function segmentOffsets(stored: Buffer): number[] {
  const offsets: number[] = [];
  let offset = 4 + 1 + (stored[4] ?? 0) + 60;
  while (offset < stored.length) {
    offsets.push(offset);
    offset += 4 + stored.readUInt32BE(offset) + 16;
  }
  return offsets;
}

describe('blobs', () => {
  test('a streamed blob round-trips, in any chunking, and its stored bytes never hold the plaintext', async () => {
    const plaintext = document();
    for (const size of [1, 1_000, segmentBytes, segmentBytes + 1, plaintext.length]) {
      const stored = size === 1 ? await encryptStream(plaintext.subarray(0, 5_000), 'kyc-document:1', 1) : await encryptStream(plaintext, 'kyc-document:1', size);
      const expected = size === 1 ? plaintext.subarray(0, 5_000) : plaintext;
      assert.deepEqual(decryptBlob(keyring, 'kyc-document:1', stored), expected);
      assert.equal(stored.indexOf(marker), -1);
      assert.equal(stored.indexOf(marker.subarray(0, 12)), -1);
    }
    assert.deepEqual(decryptBlob(keyring, 'k', await encryptBlob(keyring, 'k', new Uint8Array(0))), Buffer.alloc(0));
    assert.deepEqual(decryptBlob(keyring, 'k', await encryptBlob(keyring, 'k', plaintext)), plaintext);
    assert.equal(segmentOffsets(await encryptStream(plaintext)).length, 4);
  });

  test('tampering is detected: a flipped bit, a cut, a dropped or reordered segment, another blob key', async () => {
    const stored = await encryptStream(document());
    const offsets = segmentOffsets(stored);
    const flipped = Buffer.from(stored);
    const at = (offsets[1] ?? 0) + 100;
    flipped.writeUInt8(flipped.readUInt8(at) ^ 1, at);
    const cutAtSegment = stored.subarray(0, offsets[2]);
    const cutInside = stored.subarray(0, stored.length - 5);
    const dropped = Buffer.concat([stored.subarray(0, offsets[1]), stored.subarray(offsets[2])]);
    const swapped = Buffer.concat([stored.subarray(0, offsets[1]), stored.subarray(offsets[2], offsets[3]), stored.subarray(offsets[1], offsets[2]), stored.subarray(offsets[3])]);
    const extended = Buffer.concat([stored, stored.subarray(offsets[1], offsets[2])]);
    for (const [what, bytes] of Object.entries({ flipped, cutAtSegment, cutInside, dropped, swapped, extended })) {
      assert.throws(() => decryptBlob(keyring, 'kyc-document:1', bytes), DataDecryptionError, what);
    }
    assert.throws(() => decryptBlob(keyring, 'kyc-document:2', stored), DataDecryptionError, 'moved to another key');
    assert.throws(() => decryptBlob(keyring, 'kyc-document:1', document()), /not in the encrypted format/);
  });

  test('a key id that is not configured is refused clearly; a retired key still reads after rotation', async () => {
    const stored = await encryptStream(Buffer.from('old document'));
    assert.throws(() => decryptBlob(createDataKeyring(k2), 'kyc-document:1', stored), (error: unknown) =>
      error instanceof DataDecryptionError && /data key "k1", which is not configured/.test(error.message));
    const rotated = createDataKeyring(k2, [k1]);
    assert.deepEqual(decryptBlob(rotated, 'kyc-document:1', stored), Buffer.from('old document'));
    const fresh = await encryptBlob(rotated, 'kyc-document:9', Buffer.from('new'));
    assert.equal(fresh.subarray(5, 7).toString('ascii'), 'k2', 'new data uses the current key');
    // Another key under the same id (the wrong secret): authentication fails, nothing is returned.
    assert.throws(() => decryptBlob(createDataKeyring({ id: 'k1', key: randomBytes(32) }), 'kyc-document:1', stored), DataDecryptionError);
  });
});

describe('sealed values', () => {
  test('round trip; another context, a changed byte or a missing key do not open', () => {
    const sealed = sealText(keyring, 'kyc\0p\0u', 'Maria da Silva');
    assert.ok(!JSON.stringify(sealed).includes('Maria'));
    assert.equal(openText(keyring, 'kyc\0p\0u', sealed), 'Maria da Silva');
    assert.throws(() => openText(keyring, 'kyc\0p\0v', sealed), DataDecryptionError);
    const data = Buffer.from(sealed.data, 'base64');
    data.writeUInt8(data.readUInt8(14) ^ 1, 14);
    assert.throws(() => openText(keyring, 'kyc\0p\0u', { ...sealed, data: data.toString('base64') }), DataDecryptionError);
    assert.throws(() => openText(createDataKeyring(k2), 'kyc\0p\0u', sealed), /not configured/);
  });

  test('the KYC snapshot seals the personal fields and the document key; status and ids stay readable', () => {
    const state: KycState = {
      partnerId: 'p', userId: 'u', status: 'APPROVED', submittedAtMs: 1, decidedAtMs: 1, updatedAtMs: 1, rejectionReason: null,
      submission: {
        fullName: 'Maria da Silva', documentType: 'PASSPORT', documentNumber: 'AB123456', dateOfBirth: '1990-05-17', nationality: 'BR',
        city: 'São Paulo', address: 'Rua Augusta 100', email: 'maria@example.com', phone: '+55 11 99999-0000', documentRef: 'kyc-document:x',
      },
    };
    const keys = sandboxDataKeyring();
    const json = encodeKycState(keys, state);
    const text = JSON.stringify(json);
    // Values long enough not to turn up in base64 by chance (a two-letter nationality would, now and then).
    for (const value of Object.values(state.submission).filter((field) => field.length >= 8)) assert.ok(!text.includes(value), value);
    assert.ok(!text.includes('"nationality"') && !text.includes('"documentRef"'), 'not even the field names');
    assert.ok(text.includes('APPROVED'));
    assert.deepEqual(decodeKycState(keys, json), state);
    // Copied into another user's record, it does not open.
    assert.throws(() => decodeKycState(keys, { ...(json as Record<string, never>), userId: 'v' }), DataDecryptionError);
    // A snapshot written before encryption at rest reads as it is.
    assert.deepEqual(decodeKycState(keys, toJsonValue(state)), state);
  });
});

describe('keys from the environment', () => {
  const hex = randomBytes(32).toString('hex');
  test('32 bytes as hex or base64; anything else names the variable, not the value', () => {
    assert.equal(parseDataKey('X', hex).length, 32);
    assert.equal(parseDataKey('X', Buffer.from(hex, 'hex').toString('base64')).length, 32);
    for (const bad of ['short', hex.slice(2), randomBytes(16).toString('base64')]) {
      assert.throws(() => parseDataKey('DATA_ENCRYPTION_KEY', bad), (error: unknown) => error instanceof Error && error.message.startsWith('DATA_ENCRYPTION_KEY must be 32 bytes') && !error.message.includes(bad));
    }
  });

  test('outside sandbox mode the key is required (a clear message) and the public sandbox key is refused', () => {
    assert.throws(() => dataKeyringFromEnv({ sandbox: false }), /DATA_ENCRYPTION_KEY is required outside sandbox mode \(SANDBOX=0\)/);
    assert.throws(() => dataKeyringFromEnv({ sandbox: false, DATA_ENCRYPTION_KEY: hex, DATA_ENCRYPTION_KEY_ID: 'sandbox' }), /sandbox data key/);
    const ring = dataKeyringFromEnv({ sandbox: false, DATA_ENCRYPTION_KEY: hex, DATA_ENCRYPTION_KEY_ID: 'k2', DATA_ENCRYPTION_RETIRED_KEYS: `k1:${k1.key.toString('base64')}` });
    assert.equal(ring.current.id, 'k2');
    assert.deepEqual(ring.key('k1'), k1.key);
    assert.equal(ring.key('sandbox'), undefined);
    assert.throws(() => dataKeyringFromEnv({ sandbox: false, DATA_ENCRYPTION_KEY: hex, DATA_ENCRYPTION_RETIRED_KEYS: 'nocolon' }), /id:key/);
    assert.equal(dataKeyringFromEnv({ sandbox: true }).current.id, 'sandbox');
  });
});
