// Encryption at rest against the real embedded store: a KYC document streamed through the service's
// store (src/store/encrypted-blobs.ts) is held by LMDB as ciphertext only, reads back whole, and a
// stored blob changed underneath is refused; a role holding personal data does not start outside
// sandbox mode without DATA_ENCRYPTION_KEY.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { readEnv } from '../../src/config/env.ts';
import { createContext } from '../../src/service/context.ts';
import { createDataKeyring, DataDecryptionError } from '../../src/store/data-encryption.ts';
import { withEncryptedBlobs } from '../../src/store/encrypted-blobs.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';

describe('encrypted blobs on the embedded store', () => {
  let dir: string;
  let inner: LmdbStore;
  const keyring = createDataKeyring({ id: 'k1', key: randomBytes(32) });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'encrypted-blobs-'));
    inner = new LmdbStore({ dir });
    await inner.init();
  });

  after(async () => {
    await inner.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the store holds ciphertext only; the service reads the document back', async () => {
    const store = withEncryptedBlobs(inner, keyring);
    const marker = Buffer.from('Maria da Silva AB123456 ');
    const plaintext = Buffer.concat(Array.from({ length: 20_000 }, () => marker)); // ~480 KB: several store parts
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let offset = 0; offset < plaintext.length; offset += 10_000) yield plaintext.subarray(offset, offset + 10_000);
    }
    assert.equal(await store.putBlobStream('kyc-document:a', chunks()), plaintext.length);
    const raw = Buffer.from((await inner.getBlob('kyc-document:a')) ?? new Uint8Array());
    assert.ok(raw.length > plaintext.length);
    assert.equal(raw.indexOf(marker), -1);
    assert.equal(raw.indexOf(Buffer.from('Maria')), -1);
    assert.deepEqual(Buffer.from((await store.getBlob('kyc-document:a')) ?? new Uint8Array()), plaintext);
    await store.putBlob('kyc-document:b', marker);
    assert.equal(Buffer.from((await inner.getBlob('kyc-document:b')) ?? new Uint8Array()).indexOf(marker), -1);
    assert.deepEqual(Buffer.from((await store.getBlob('kyc-document:b')) ?? new Uint8Array()), marker);
    assert.equal(await store.getBlob('kyc-document:none'), null);
  });

  test('a blob changed in the store, or copied under another key, is refused', async () => {
    const store = withEncryptedBlobs(inner, keyring);
    await store.putBlob('kyc-document:c', Buffer.from('document'));
    const raw = Buffer.from((await inner.getBlob('kyc-document:c')) ?? new Uint8Array());
    raw.writeUInt8(raw.readUInt8(raw.length - 20) ^ 1, raw.length - 20);
    await inner.putBlob('kyc-document:c', raw);
    await assert.rejects(store.getBlob('kyc-document:c'), DataDecryptionError);
    await store.putBlob('kyc-document:d', Buffer.from('document'));
    await inner.putBlob('kyc-document:e', (await inner.getBlob('kyc-document:d')) ?? new Uint8Array());
    await assert.rejects(store.getBlob('kyc-document:e'), DataDecryptionError);
    await inner.putBlob('kyc-document:f', Buffer.from('plain bytes'));
    await assert.rejects(store.getBlob('kyc-document:f'), /not in the encrypted format/);
  });

  test('a process without a data key refuses blobs instead of storing them in the clear', async () => {
    const store = withEncryptedBlobs(inner, null);
    await assert.rejects(store.putBlob('kyc-document:g', Buffer.from('x')), /holds no data encryption key/);
    assert.equal(await inner.getBlob('kyc-document:g'), null);
  });
});

describe('start-up without the key', () => {
  test('SANDBOX=0: a role that holds personal data refuses to start, naming DATA_ENCRYPTION_KEY, before it opens anything; with the key it starts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'no-data-key-'));
    try {
      // A production role run on its own also needs its production pieces (a Redis bus, the chains
      // file); the key check comes first in createContext, before any connection is opened.
      for (const env of [{ ROLE: 'all' }, { ROLE: 'shard', REDIS_URL: 'redis://127.0.0.1:1' }]) {
        const config = readEnv({ SANDBOX: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });
        await assert.rejects(createContext(config), /DATA_ENCRYPTION_KEY is required outside sandbox mode \(SANDBOX=0\)/);
      }
      const keyed = await createContext(readEnv({ SANDBOX: '0', ROLE: 'all', DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATA_ENCRYPTION_KEY: randomBytes(32).toString('base64'), DATA_ENCRYPTION_KEY_ID: 'prod-1' }));
      assert.equal(keyed.dataKeys?.current.id, 'prod-1');
      await keyed.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
