// The store as the service uses it: blobs (KYC documents) are encrypted on the way in and decrypted
// on the way out (src/store/data-encryption.ts), everything else passes through unchanged. Both
// adapters (LMDB, MongoDB) thus only ever hold ciphertext, and a streamed upload stays streamed:
// segments are encrypted as the bytes arrive. A role that holds no data key (null) refuses blob
// reads and writes instead of storing plaintext.
import { decryptBlob, encryptBlob, encryptBlobStream, type DataKeyring } from './data-encryption.ts';
import { StoreUsageError, type SnapshotStore } from './store.ts';
import { blobStreamChunk } from './store-checks.ts';

export function withEncryptedBlobs(inner: SnapshotStore, keyring: DataKeyring | null): SnapshotStore {
  const keys = (): DataKeyring => {
    if (keyring === null) throw new StoreUsageError('this process holds no data encryption key: it cannot read or write private blobs');
    return keyring;
  };
  return {
    init: () => inner.init(),
    close: () => inner.close(),
    load: (actorKey) => inner.load(actorKey),
    commit: (write) => inner.commit(write),
    commitBatch: (writes) => inner.commitBatch(writes),
    commitAllOrNothing: (writes) => inner.commitAllOrNothing(writes),
    raiseFence: (shard, token) => inner.raiseFence(shard, token),
    getAppliedReply: (actorKey, commandId) => inner.getAppliedReply(actorKey, commandId),
    deleteActor: (actorKey, expectedVersion) => inner.deleteActor(actorKey, expectedVersion),
    loadEvents: (actorKey, afterVersion, limit) => inner.loadEvents(actorKey, afterVersion, limit),
    outboxPending: (topic, limit, afterSeq) => inner.outboxPending(topic, limit, afterSeq),
    outboxClaim: (topic, owner, limit, leaseMs, nowMs) => inner.outboxClaim(topic, owner, limit, leaseMs, nowMs),
    outboxRenew: (ids, owner, leaseMs, nowMs) => inner.outboxRenew(ids, owner, leaseMs, nowMs),
    outboxRelease: (ids, owner) => inner.outboxRelease(ids, owner),
    outboxDefer: (deferrals, owner) => inner.outboxDefer(deferrals, owner),
    outboxWaiting: (topic, limit, afterSeq) => inner.outboxWaiting(topic, limit, afterSeq),
    outboxRetryNow: (topic, id, nowMs) => inner.outboxRetryNow(topic, id, nowMs),
    outboxResolve: (topic, id, nowMs) => inner.outboxResolve(topic, id, nowMs),
    outboxMarkDone: (ids) => inner.outboxMarkDone(ids),
    outboxBacklog: (topic, nowMs, countMax) => inner.outboxBacklog(topic, nowMs, countMax),
    get: (collection, id) => inner.get(collection, id),
    put: (collection, id, doc) => inner.put(collection, id, doc),
    putIfAbsent: (collection, id, doc) => inner.putIfAbsent(collection, id, doc),
    remove: (collection, id) => inner.remove(collection, id),
    list: (collection, query) => inner.list(collection, query),
    async putBlob(key, bytes) {
      await inner.putBlob(key, await encryptBlob(keys(), key, bytes));
    },
    async putBlobStream(key, chunks) {
      let plaintextBytes = 0;
      async function* counted(): AsyncGenerator<Uint8Array> {
        for await (const chunk of chunks) {
          const copy = blobStreamChunk(chunk);
          plaintextBytes += copy.byteLength;
          yield copy;
        }
      }
      await inner.putBlobStream(key, encryptBlobStream(keys(), key, counted()));
      return plaintextBytes;
    },
    async getBlob(key) {
      const stored = await inner.getBlob(key);
      return stored === null ? null : new Uint8Array(decryptBlob(keys(), key, stored));
    },
    deleteBlob: (key) => inner.deleteBlob(key),
  };
}
