// The private blobs of the MongoDB store (KYC documents), kept apart from mongo-store.ts: three
// collections of their own and the store's transactions, nothing else shared.
import { randomUUID } from 'node:crypto';
import { Binary } from 'mongodb';
import type { ClientSession, Collection, Db } from 'mongodb';
import { outboxBatchMax } from './store.ts';
import { assertBlob, assertIdentifier, blobParts } from './store-checks.ts';

/** A whole blob carries `bytes`; a streamed one `parts`, its manifest (see `putBlobStream`). */
interface BlobDoc {
  _id: string;
  bytes?: Binary;
  parts?: { stagingId: string; count: number; bytes: number };
}
/** One part of a streamed blob, `_id` = `<stagingId>:<index>`. */
interface BlobChunkDoc {
  _id: string;
  stagingId: string;
  index: number;
  bytes: Binary;
}
/** A blob stream being written (removed when it is committed or abandoned). */
interface BlobStagingDoc {
  _id: string;
  startedAtMs: number;
}

export class MongoBlobs {
  private readonly blobs: Collection<BlobDoc>;
  private readonly blobChunks: Collection<BlobChunkDoc>;
  private readonly blobStaging: Collection<BlobStagingDoc>;

  /** `inTransaction`: the store's, so a blob's writes commit as the store's do. */
  constructor(db: Db, private readonly inTransaction: <T>(work: (session: ClientSession) => Promise<T>) => Promise<T>) {
    this.blobs = db.collection<BlobDoc>('blobs');
    this.blobChunks = db.collection<BlobChunkDoc>('blobChunks');
    this.blobStaging = db.collection<BlobStagingDoc>('blobStaging');
  }

  /** The index a stream's parts are read by (the collections are created with the store's). */
  async createIndexes(): Promise<void> {
    await this.blobChunks.createIndex({ stagingId: 1, index: 1 }, { name: 'by_staging_index' });
  }

  // A whole blob is one `blobs` document with its bytes. A streamed one is parts in `blobChunks`
  // under a random staging id, one insert per part as they arrive, with a `blobStaging` document
  // while it is written; committing it is one transaction that replaces the key's `blobs` document
  // with the manifest (`parts`), drops the staging document and removes the parts of what the key
  // held before. Readers find a key's blob through its `blobs` document, never half a stream.

  async putBlob(key: string, bytes: Uint8Array): Promise<void> {
    assertBlob(key, bytes);
    const copy = new Binary(Buffer.from(bytes));
    await this.inTransaction(async (session) => {
      const previous = await this.blobs.findOneAndReplace({ _id: key }, { bytes: copy }, { upsert: true, session });
      if (previous?.parts !== undefined) await this.blobChunks.deleteMany({ stagingId: previous.parts.stagingId }, { session });
    });
  }

  async putBlobStream(key: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    assertIdentifier('blob key', key);
    const stagingId = randomUUID();
    await this.blobStaging.insertOne({ _id: stagingId, startedAtMs: Date.now() });
    let count = 0;
    let bytes = 0;
    try {
      for await (const part of blobParts(chunks)) {
        await this.blobChunks.insertOne({ _id: `${stagingId}:${count}`, stagingId, index: count, bytes: new Binary(part) });
        count += 1;
        bytes += part.byteLength;
      }
      const manifest = { parts: { stagingId, count, bytes } };
      await this.inTransaction(async (session) => {
        const previous = await this.blobs.findOneAndReplace({ _id: key }, manifest, { upsert: true, session });
        if (previous?.parts !== undefined) await this.blobChunks.deleteMany({ stagingId: previous.parts.stagingId }, { session });
        await this.blobStaging.deleteOne({ _id: stagingId }, { session });
      });
      return bytes;
    } catch (error) {
      await this.removeStaging(stagingId);
      throw error;
    }
  }

  async getBlob(key: string): Promise<Uint8Array | null> {
    assertIdentifier('blob key', key);
    // A streamed blob is read in a snapshot transaction, so a replacement committed meanwhile
    // (which removes the old parts) cannot leave this read with half of them.
    return this.inTransaction(async (session) => {
      const doc = await this.blobs.findOne({ _id: key }, { session });
      if (doc === null) return null;
      if (doc.bytes !== undefined) return new Uint8Array(doc.bytes.value());
      if (doc.parts === undefined) throw new Error('a blob document has neither bytes nor parts');
      const whole = new Uint8Array(doc.parts.bytes);
      let offset = 0;
      let expected = 0;
      const cursor = this.blobChunks.find({ stagingId: doc.parts.stagingId }, { session }).sort({ index: 1 });
      for await (const part of cursor) {
        const partBytes = part.bytes.value();
        if (part.index !== expected || offset + partBytes.byteLength > whole.byteLength) throw new Error('a streamed blob has a missing or extra part');
        whole.set(partBytes, offset);
        offset += partBytes.byteLength;
        expected += 1;
      }
      if (expected !== doc.parts.count || offset !== whole.byteLength) throw new Error('a streamed blob is shorter than its manifest says');
      return whole;
    });
  }

  async deleteBlob(key: string): Promise<boolean> {
    assertIdentifier('blob key', key);
    return this.inTransaction(async (session) => {
      const previous = await this.blobs.findOneAndDelete({ _id: key }, { session });
      if (previous === null) return false;
      if (previous.parts !== undefined) await this.blobChunks.deleteMany({ stagingId: previous.parts.stagingId }, { session });
      return true;
    });
  }

  private async removeStaging(stagingId: string): Promise<void> {
    await this.blobChunks.deleteMany({ stagingId });
    await this.blobStaging.deleteOne({ _id: stagingId });
  }

  /** Removes the parts of blob streams begun before `startedBeforeMs` and never committed (a crash). */
  async sweepStaleStreams(startedBeforeMs: number): Promise<void> {
    const stale = await this.blobStaging.find({ startedAtMs: { $lt: startedBeforeMs } }).limit(outboxBatchMax).toArray();
    for (const staging of stale) await this.removeStaging(staging._id);
  }
}
