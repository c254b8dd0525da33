// SnapshotStore on MongoDB (official driver, thin). A commit is one multi-document transaction
// (snapshot read concern, majority + journaled write concern), so MongoDB must run as a replica set
// (a one-node replica set is enough); init() refuses a standalone server. Reads outside
// transactions use majority read concern, so a dispatcher never sees an outbox row that could still
// be rolled back: durable before visible. See docs/store.md for the collections and indexes.
//
// Outbox rows a worker deferred carry `notBeforeMs` (with attempts, reason, parked); rows never
// deferred, and rows written by releases before deferral existed, have none and are due. Claims
// walk `by_topic_due` (topic, notBeforeMs, seq): a missing notBeforeMs sorts before every number,
// so fresh rows come first in commit order, then the due deferred rows, and rows deferred into the
// future are outside the index bounds: never read by a claim, however many there are.
import { randomUUID } from 'node:crypto';
import { MongoClient, MongoServerError, ReadConcern, WriteConcern } from 'mongodb';
import type { ClientSession, Collection, Db, Document, Filter, TransactionOptions } from 'mongodb';
import { StoreUsageError, appliedRepliesPerActorDefault, defaultReadModelIndexes, outboxBacklogCountMax, outboxBatchMax, blobStagingStaleMsDefault } from './store.ts';
import {
  IndexCatalog, assertCollection, assertCommitWrite, assertDeferral, assertFence, assertIdentifier, assertLimit,
  assertNonNegativeInteger, assertReadModelDoc, planList,
} from './store-checks.ts';
import type {
  ActorSnapshot, AppliedReply, BatchCommitResult, CommitResult, CommitWrite, FenceResult, JsonObject, JsonValue, ListPage,
  ListQuery, OutboxBacklog, OutboxDeferral, OutboxRow, OutboxRowAction, PutIfAbsentResult, SnapshotStore, StoredEvent, StoreOptions,
} from './store.ts';
import { MongoBlobs } from './mongo-blobs.ts';
import { toOutboxRow, type ActorDoc, type AppliedDoc, type CounterDoc, type EventDoc, type FenceDoc, type OutboxDoc, type ReadModelDoc } from './mongo-docs.ts';

export interface MongoStoreOptions extends StoreOptions {
  /** e.g. mongodb://host1,host2/?replicaSet=rs0 */
  url: string;
  /** Database name; default `payments`. Tests use a random one each. */
  dbName?: string;
}

const duplicateKeyCode = 11000;
const namespaceExistsCode = 48;
const commitAttemptsMax = 3;
const claimRoundsMax = 3;
const readModelPrefix = 'rm_';

const transactionOptions: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: new WriteConcern('majority', undefined, true),
  readPreference: 'primary',
};

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === duplicateKeyCode;
}

export class MongoStore implements SnapshotStore {
  private readonly indexes: IndexCatalog;
  private readonly appliedRepliesPerActorMax: number;
  private readonly client: MongoClient;
  private readonly db: Db;
  private readonly actors: Collection<ActorDoc>;
  private readonly fences: Collection<FenceDoc>;
  private readonly applied: Collection<AppliedDoc>;
  private readonly events: Collection<EventDoc>;
  private readonly outbox: Collection<OutboxDoc>;
  private readonly counters: Collection<CounterDoc>;
  private readonly blobStore: MongoBlobs;
  private readonly blobStagingStaleMs: number;

  constructor(options: MongoStoreOptions) {
    this.indexes = new IndexCatalog(options.readModelIndexes ?? defaultReadModelIndexes);
    this.appliedRepliesPerActorMax = options.appliedRepliesPerActorMax ?? appliedRepliesPerActorDefault;
    assertLimit('appliedRepliesPerActorMax', this.appliedRepliesPerActorMax, 1_000_000);
    this.client = new MongoClient(options.url);
    this.db = this.client.db(options.dbName ?? 'payments', {
      readConcern: new ReadConcern('majority'),
      writeConcern: { w: 'majority', journal: true },
    });
    this.actors = this.db.collection<ActorDoc>('actors');
    this.fences = this.db.collection<FenceDoc>('fences');
    this.applied = this.db.collection<AppliedDoc>('applied');
    this.events = this.db.collection<EventDoc>('events');
    this.outbox = this.db.collection<OutboxDoc>('outbox');
    this.counters = this.db.collection<CounterDoc>('counters');
    this.blobStore = new MongoBlobs(this.db, async (work) => this.inTransaction(work));
    this.blobStagingStaleMs = options.blobStagingStaleMs ?? blobStagingStaleMsDefault;
    assertNonNegativeInteger('blobStagingStaleMs', this.blobStagingStaleMs);
  }

  /** Connects, checks for a replica set, creates the collections and indexes (idempotent). */
  async init(): Promise<void> {
    await this.client.connect();
    const hello = await this.db.admin().command({ hello: 1 });
    if (typeof hello.setName !== 'string' && hello.msg !== 'isdbgrid') {
      throw new Error('MongoStore needs a replica set or sharded cluster (multi-document transactions); got a standalone server');
    }
    const readModelCollections = new Set(this.indexes.all().map((index) => readModelPrefix + index.collection));
    for (const name of ['actors', 'fences', 'applied', 'events', 'outbox', 'counters', 'blobs', 'blobChunks', 'blobStaging', ...readModelCollections]) {
      await this.createCollection(name);
    }
    await this.applied.createIndex({ actorKey: 1, seq: 1 }, { name: 'by_actor_seq' });
    await this.events.createIndex({ actorKey: 1, version: 1, index: 1 }, { name: 'by_actor_version' });
    await this.outbox.createIndex({ topic: 1, seq: 1 }, { name: 'by_topic_seq' });
    await this.outbox.createIndex({ claimId: 1 }, { name: 'by_claim' });
    await this.outbox.createIndex({ topic: 1, notBeforeMs: 1, seq: 1 }, { name: 'by_topic_due' });
    // Partial: only deferred rows (the operators' listing) and parked rows (the backlog's count).
    // Key patterns differ from every other index's, as MongoDB requires of two indexes.
    await this.outbox.createIndex({ topic: 1, seq: 1, notBeforeMs: 1 }, { name: 'by_topic_seq_deferred', partialFilterExpression: { notBeforeMs: { $exists: true } } });
    await this.outbox.createIndex({ topic: 1, parked: 1 }, { name: 'by_topic_parked', partialFilterExpression: { parked: true } });
    await this.blobStore.createIndexes();
    for (const index of this.indexes.all()) {
      const keys: Record<string, 1> = {};
      for (const field of [...index.equal, index.orderBy]) keys[`doc.${field}`] = 1;
      keys._id = 1;
      await this.readModels(index.collection).createIndex(keys, { name: index.name });
    }
    await this.blobStore.sweepStaleStreams(Date.now() - this.blobStagingStaleMs);
  }

  private async createCollection(name: string): Promise<void> {
    try {
      await this.db.createCollection(name);
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === namespaceExistsCode)) throw error;
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  // ---- actors ----

  async load(actorKey: string): Promise<ActorSnapshot | null> {
    assertIdentifier('actorKey', actorKey);
    const doc = await this.actors.findOne({ _id: actorKey });
    return doc === null ? null : { version: doc.version, state: doc.state };
  }

  async commit(write: CommitWrite): Promise<CommitResult> {
    assertCommitWrite(write, this.indexes);
    // withTransaction retries transient errors (write conflicts). A duplicate key from two first
    // writers racing on a new actor or shard is not transient; one more attempt then sees the
    // winner's document and answers version_conflict / fenced.
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.inTransaction((session) => this.commitInTransaction(session, write));
      } catch (error) {
        if (!isDuplicateKey(error) || attempt >= commitAttemptsMax) throw error;
      }
    }
  }

  /**
   * One transaction per write, in order (a MongoDB transaction spanning unrelated actors would
   * only widen write conflicts); the majority write concern makes each durable on its own.
   */
  async commitBatch(writes: readonly CommitWrite[]): Promise<BatchCommitResult[]> {
    const results: BatchCommitResult[] = [];
    for (const write of writes) {
      try {
        results.push(await this.commit(write));
      } catch (error) {
        results.push({ error });
      }
    }
    return results;
  }

  /** One MongoDB transaction for the linked writes, aborted when any would be refused. */
  async commitAllOrNothing(writes: readonly CommitWrite[]): Promise<boolean> {
    try {
      for (const write of writes) assertCommitWrite(write, this.indexes);
    } catch (error) {
      if (error instanceof StoreUsageError) return false;
      throw error;
    }
    if (writes.length === 0) return true;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.inTransaction(async (session) => {
          // A refused write has aborted the transaction already (commitInTransaction does).
          for (const write of writes) if ((await this.commitInTransaction(session, write)) !== 'ok') return false;
          return true;
        });
      } catch (error) {
        if (!isDuplicateKey(error) || attempt >= commitAttemptsMax) throw error;
      }
    }
  }

  async raiseFence(shard: number, token: number): Promise<FenceResult> {
    assertFence(shard, token);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.inTransaction(async (session) => {
          if (await this.checkAndRaiseFence(session, shard, token)) return 'ok';
          await session.abortTransaction();
          return 'fenced';
        });
      } catch (error) {
        if (!isDuplicateKey(error) || attempt >= commitAttemptsMax) throw error;
      }
    }
  }

  async getAppliedReply(actorKey: string, commandId: string): Promise<AppliedReply | null> {
    assertIdentifier('actorKey', actorKey);
    assertIdentifier('commandId', commandId);
    const doc = await this.applied.findOne({ _id: { actorKey, commandId } });
    return doc === null ? null : { reply: doc.reply };
  }

  async deleteActor(actorKey: string, expectedVersion: number): Promise<'ok' | 'version_conflict' | 'not_found'> {
    assertIdentifier('actorKey', actorKey);
    assertNonNegativeInteger('expectedVersion', expectedVersion);
    return this.inTransaction(async (session) => {
      const current = await this.actors.findOne({ _id: actorKey }, { session });
      if (current === null) return 'not_found';
      if (current.version !== expectedVersion) return 'version_conflict';
      await this.actors.deleteOne({ _id: actorKey, version: expectedVersion }, { session });
      await this.applied.deleteMany({ actorKey }, { session });
      await this.events.deleteMany({ actorKey }, { session });
      return 'ok';
    });
  }

  async loadEvents(actorKey: string, afterVersion: number, limit: number): Promise<StoredEvent[]> {
    assertIdentifier('actorKey', actorKey);
    assertNonNegativeInteger('afterVersion', afterVersion);
    assertLimit('limit', limit, outboxBatchMax);
    const docs = await this.events.find({ actorKey, version: { $gt: afterVersion } })
      .sort({ version: 1, index: 1 }).limit(limit).toArray();
    return docs.map((doc) => ({ version: doc.version, index: doc.index, event: doc.event }));
  }

  /**
   * Fence and version are checked before the first write; a refusal aborts the transaction, so it
   * leaves no trace. Under snapshot isolation the fence is read at the transaction's snapshot: a
   * commit racing a concurrent raise may still land (ordered before it); the version
   * compare-and-set keeps that safe, and every commit that starts after the raise is refused.
   */
  private async commitInTransaction(session: ClientSession, write: CommitWrite): Promise<CommitResult> {
    const fence = await this.fences.findOne({ _id: write.fence.shard }, { session });
    if (fence !== null && write.fence.token < fence.token) {
      await session.abortTransaction();
      return 'fenced';
    }
    const current = await this.actors.findOne({ _id: write.actorKey }, { session, projection: { state: 0 } });
    if ((current?.version ?? 0) !== write.expectedVersion) {
      await session.abortTransaction();
      return 'version_conflict';
    }
    if (fence === null || write.fence.token > fence.token) {
      await this.fences.updateOne({ _id: write.fence.shard }, { $max: { token: write.fence.token } }, { session, upsert: true });
    }
    const appliedSeqBefore = current?.appliedSeq ?? 0;
    const appliedSeq = appliedSeqBefore + write.appliedCommands.length;
    if (current === null) {
      await this.actors.insertOne({ _id: write.actorKey, version: write.newVersion, state: write.state, appliedSeq }, { session });
    } else {
      // Matched in the same snapshot we just read; a concurrent writer surfaces as a write conflict.
      const updated = await this.actors.updateOne(
        { _id: write.actorKey, version: write.expectedVersion },
        { $set: { version: write.newVersion, state: write.state, appliedSeq } },
        { session },
      );
      if (updated.matchedCount !== 1) throw new Error(`actor ${write.actorKey} changed inside its own transaction`);
    }
    await this.appendApplied(session, write, appliedSeqBefore);
    const events = write.events ?? [];
    if (events.length > 0) {
      await this.events.insertMany(events.map((event, index) => ({
        _id: { actorKey: write.actorKey, version: write.newVersion, index },
        actorKey: write.actorKey, version: write.newVersion, index, event,
      })), { session });
    }
    await this.appendOutbox(session, write);
    for (const model of write.readModels) {
      const models = this.readModels(model.collection);
      if (model.doc === null) await models.deleteOne({ _id: model.id }, { session });
      else await models.replaceOne({ _id: model.id }, { doc: model.doc }, { session, upsert: true });
    }
    return 'ok';
  }

  private async checkAndRaiseFence(session: ClientSession, shard: number, token: number): Promise<boolean> {
    const fence = await this.fences.findOne({ _id: shard }, { session });
    if (fence !== null && token < fence.token) return false;
    if (fence === null || token > fence.token) {
      await this.fences.updateOne({ _id: shard }, { $max: { token } }, { session, upsert: true });
    }
    return true;
  }

  /** Same window as the embedded store: a command takes the next per-actor seq; first reply wins. */
  private async appendApplied(session: ClientSession, write: CommitWrite, appliedSeqBefore: number): Promise<void> {
    if (write.appliedCommands.length === 0) return;
    await this.applied.bulkWrite(write.appliedCommands.map((command, index) => ({
      updateOne: {
        filter: { _id: { actorKey: write.actorKey, commandId: command.commandId } },
        update: { $setOnInsert: { actorKey: write.actorKey, seq: appliedSeqBefore + index + 1, reply: command.reply } },
        upsert: true,
      },
    })), { session, ordered: true });
    const cutoff = appliedSeqBefore + write.appliedCommands.length - this.appliedRepliesPerActorMax;
    if (cutoff > 0) await this.applied.deleteMany({ actorKey: write.actorKey, seq: { $lte: cutoff } }, { session });
  }

  /**
   * Outbox seq: one counter document per topic, incremented inside the commit's transaction. Two
   * commits on the same topic both write that document, so the second conflicts and retries after
   * the first commits: seq order is commit order and a reader never sees seq n+1 before n.
   */
  private async appendOutbox(session: ClientSession, write: CommitWrite): Promise<void> {
    if (write.outbox.length === 0) return;
    const countByTopic = new Map<string, number>();
    for (const row of write.outbox) countByTopic.set(row.topic, (countByTopic.get(row.topic) ?? 0) + 1);
    const nextSeqByTopic = new Map<string, number>();
    for (const [topic, count] of countByTopic) {
      const counter = await this.counters.findOneAndUpdate(
        { _id: `outbox:${topic}` }, { $inc: { seq: count } }, { session, upsert: true, returnDocument: 'after' },
      );
      if (counter === null) throw new Error(`outbox counter for ${topic} was not returned`);
      nextSeqByTopic.set(topic, counter.seq - count + 1);
    }
    const docs = write.outbox.map((row): OutboxDoc => {
      const seq = nextSeqByTopic.get(row.topic) ?? 0;
      nextSeqByTopic.set(row.topic, seq + 1);
      const doc: OutboxDoc = {
        _id: row.id, topic: row.topic, seq, actorKey: write.actorKey, version: write.newVersion,
        payload: row.payload, claimOwner: null, claimExpiresAtMs: 0, claimId: null, createdAtMs: Date.now(),
      };
      if (row.partitionKey !== undefined) doc.partitionKey = row.partitionKey;
      return doc;
    });
    await this.outbox.insertMany(docs, { session });
  }

  // ---- outbox ----

  async outboxPending(topic: string, limit: number, afterSeq = 0): Promise<OutboxRow[]> {
    assertIdentifier('topic', topic);
    assertLimit('limit', limit, outboxBatchMax);
    assertNonNegativeInteger('afterSeq', afterSeq);
    const docs = await this.outbox.find({ topic, seq: { $gt: afterSeq } }).sort({ seq: 1 }).limit(limit).toArray();
    return docs.map(toOutboxRow);
  }

  /**
   * Each step is safe under concurrent claimers: read candidates; updateMany re-checks "no live
   * claim, due" per document atomically and stamps this call's claimId; read back what this call
   * won. A row taken by another claimer in between is simply not won (so a batch may be short).
   */
  async outboxClaim(topic: string, owner: string, limit: number, leaseMs: number, nowMs: number): Promise<OutboxRow[]> {
    assertIdentifier('topic', topic);
    assertIdentifier('owner', owner);
    assertLimit('limit', limit, outboxBatchMax);
    assertLimit('leaseMs', leaseMs, Number.MAX_SAFE_INTEGER);
    assertNonNegativeInteger('nowMs', nowMs);
    // `$not: {$gt}` also matches a missing notBeforeMs (never deferred, or an earlier release's row).
    const claimable: Filter<OutboxDoc> = { topic, claimExpiresAtMs: { $lte: nowMs }, notBeforeMs: { $not: { $gt: nowMs } } };
    const dueOrder = { notBeforeMs: 1, seq: 1 } as const;
    const claimId = randomUUID();
    let wonCount = 0;
    // A round can lose candidates to a concurrent claimer; a few more rounds fill the batch.
    for (let round = 0; round < claimRoundsMax && wonCount < limit; round += 1) {
      const candidates = await this.outbox.find(claimable, { projection: { _id: 1 } })
        .sort(dueOrder).hint('by_topic_due').limit(limit - wonCount).toArray();
      if (candidates.length === 0) break;
      const result = await this.outbox.updateMany(
        { ...claimable, _id: { $in: candidates.map((doc) => doc._id) } },
        { $set: { claimOwner: owner, claimExpiresAtMs: nowMs + leaseMs, claimId } },
      );
      wonCount += result.modifiedCount;
      if (result.modifiedCount === candidates.length) break;
    }
    if (wonCount === 0) return [];
    const won = await this.outbox.find({ claimId }).sort(dueOrder).toArray();
    return won.map(toOutboxRow);
  }

  /** Each row's update is atomic on `claimOwner`: a row another claimer won is not renewed. */
  async outboxRenew(ids: readonly string[], owner: string, leaseMs: number, nowMs: number): Promise<string[]> {
    assertIdentifier('owner', owner);
    assertIds(ids);
    assertLimit('leaseMs', leaseMs, Number.MAX_SAFE_INTEGER);
    assertNonNegativeInteger('nowMs', nowMs);
    if (ids.length === 0) return [];
    const ours: Filter<OutboxDoc> = { _id: { $in: [...ids] }, claimOwner: owner };
    await this.outbox.updateMany(ours, { $set: { claimExpiresAtMs: nowMs + leaseMs } });
    // Once renewed the claims are live: nobody else can take these rows before the read below.
    const renewed = await this.outbox.find(ours, { projection: { _id: 1 } }).toArray();
    return renewed.map((doc) => String(doc._id));
  }

  async outboxRelease(ids: readonly string[], owner: string): Promise<void> {
    assertIdentifier('owner', owner);
    assertIds(ids);
    if (ids.length === 0) return;
    await this.outbox.updateMany(
      { _id: { $in: [...ids] }, claimOwner: owner },
      { $set: { claimOwner: null, claimExpiresAtMs: 0, claimId: null } },
    );
  }

  /**
   * One update per row (concurrently), each atomic on `claimOwner`: a row another claimer won is
   * left alone. Per row, so the answer says which rows were deferred.
   */
  async outboxDefer(deferrals: readonly OutboxDeferral[], owner: string): Promise<string[]> {
    assertIdentifier('owner', owner);
    if (deferrals.length > outboxBatchMax) throw new RangeError(`at most ${outboxBatchMax} rows at once`);
    for (const deferral of deferrals) assertDeferral(deferral);
    const results = await Promise.all(deferrals.map(async (deferral) => {
      const recorded = { notBeforeMs: deferral.notBeforeMs, attempts: deferral.attempts, parked: deferral.parked };
      const released = { claimOwner: null, claimExpiresAtMs: 0, claimId: null };
      const update = deferral.reason === null
        ? { $set: { ...released, ...recorded }, $unset: { reason: '' as const } }
        : { $set: { ...released, ...recorded, reason: deferral.reason } };
      const result = await this.outbox.updateOne({ _id: deferral.id, claimOwner: owner }, update);
      return result.matchedCount === 1 ? deferral.id : null;
    }));
    return results.filter((id): id is string => id !== null);
  }

  async outboxWaiting(topic: string, limit: number, afterSeq = 0): Promise<OutboxRow[]> {
    assertIdentifier('topic', topic);
    assertLimit('limit', limit, outboxBatchMax);
    assertNonNegativeInteger('afterSeq', afterSeq);
    const docs = await this.outbox.find({ topic, seq: { $gt: afterSeq }, notBeforeMs: { $exists: true } })
      .sort({ seq: 1 }).limit(limit).toArray(); // answered by the partial by_topic_seq_deferred
    return docs.map(toOutboxRow);
  }

  /** Atomic: the row changes only if it is still deferred and unclaimed at `nowMs`. */
  async outboxRetryNow(topic: string, id: string, nowMs: number): Promise<OutboxRowAction> {
    assertWaitingRef(topic, id, nowMs);
    const changed = await this.outbox.findOneAndUpdate(
      waitingUnclaimed(topic, id, nowMs), { $set: { notBeforeMs: 0 } }, { returnDocument: 'after' },
    );
    return changed !== null ? { result: 'ok', row: toOutboxRow(changed) } : this.whyNotWaiting(topic, id);
  }

  /** Atomic: the row is deleted only if it is still deferred and unclaimed at `nowMs`. */
  async outboxResolve(topic: string, id: string, nowMs: number): Promise<OutboxRowAction> {
    assertWaitingRef(topic, id, nowMs);
    const removed = await this.outbox.findOneAndDelete(waitingUnclaimed(topic, id, nowMs));
    return removed !== null ? { result: 'ok', row: toOutboxRow(removed) } : this.whyNotWaiting(topic, id);
  }

  private async whyNotWaiting(topic: string, id: string): Promise<OutboxRowAction> {
    const doc = await this.outbox.findOne({ _id: id, topic, notBeforeMs: { $exists: true } });
    return doc === null ? { result: 'not_found' } : { result: 'claimed', row: toOutboxRow(doc) };
  }

  async outboxMarkDone(ids: readonly string[]): Promise<void> {
    assertIds(ids);
    if (ids.length === 0) return;
    await this.outbox.deleteMany({ _id: { $in: [...ids] } });
  }

  async outboxBacklog(topic: string, nowMs: number, countMax: number): Promise<OutboxBacklog> {
    assertIdentifier('topic', topic);
    assertNonNegativeInteger('nowMs', nowMs);
    assertLimit('countMax', countMax, outboxBacklogCountMax);
    // Each count walks an index (claimed ones also read the rows), at most countMax + 1 entries:
    // rows and claimed by_topic_seq, deferred by_topic_due, parked the partial by_topic_parked.
    const limit = { limit: countMax + 1 };
    const [rows, claimed, deferred, parked, oldest] = await Promise.all([
      this.outbox.countDocuments({ topic }, limit),
      this.outbox.countDocuments({ topic, claimExpiresAtMs: { $gt: nowMs } }, limit),
      this.outbox.countDocuments({ topic, notBeforeMs: { $gt: nowMs } }, limit),
      this.outbox.countDocuments({ topic, parked: true }, limit),
      this.outbox.findOne({ topic }, { sort: { seq: 1 }, projection: { createdAtMs: 1 } }),
    ]);
    return {
      rows: Math.min(rows, countMax),
      claimed: Math.min(claimed, countMax),
      deferred: Math.min(deferred, countMax),
      parked: Math.min(parked, countMax),
      capped: rows > countMax,
      oldestCreatedAtMs: typeof oldest?.createdAtMs === 'number' ? oldest.createdAtMs : null,
    };
  }

  // ---- read models ----

  private readModels(collection: string): Collection<ReadModelDoc> {
    assertCollection(collection);
    return this.db.collection<ReadModelDoc>(readModelPrefix + collection);
  }

  async get(collection: string, id: string): Promise<JsonObject | null> {
    assertIdentifier('read model id', id);
    const doc = await this.readModels(collection).findOne({ _id: id });
    return doc === null ? null : doc.doc;
  }

  async put(collection: string, id: string, doc: JsonObject): Promise<void> {
    assertReadModelDoc(this.indexes, collection, id, doc);
    await this.readModels(collection).replaceOne({ _id: id }, { doc }, { upsert: true });
  }

  /**
   * insertOne is atomic on _id: one racer inserts, the others get a duplicate key and read the
   * winner's doc (local read concern: the winner's insert may not be majority-visible yet).
   */
  async putIfAbsent(collection: string, id: string, doc: JsonObject): Promise<PutIfAbsentResult> {
    assertReadModelDoc(this.indexes, collection, id, doc);
    const models = this.readModels(collection);
    try {
      await models.insertOne({ _id: id, doc });
      return { status: 'inserted' };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const existing = await this.db.collection<ReadModelDoc>(readModelPrefix + collection, { readConcern: { level: 'local' } })
      .findOne({ _id: id });
    if (existing === null) throw new Error(`${collection}/${id}: duplicate key but no document`);
    return { status: 'exists', doc: existing.doc };
  }

  async remove(collection: string, id: string): Promise<boolean> {
    assertIdentifier('read model id', id);
    const result = await this.readModels(collection).deleteOne({ _id: id });
    return result.deletedCount === 1;
  }

  /**
   * Two queries on the same compound index: a count and a page. Unlike the embedded store they are
   * not one snapshot, so under concurrent writes total and items may disagree slightly.
   */
  async list(collection: string, query: ListQuery): Promise<ListPage> {
    const plan = planList(this.indexes, collection, query);
    const direction = plan.descending ? -1 : 1;
    const filter: Document = {};
    const sort: Record<string, 1 | -1> = {};
    if (plan.kind === 'index') {
      plan.index.equal.forEach((field, position) => { filter[`doc.${field}`] = plan.equalValues[position]; });
      sort[`doc.${plan.index.orderBy}`] = direction;
    }
    sort._id = direction;
    const models = this.readModels(collection);
    const [total, docs] = await Promise.all([
      models.countDocuments(filter),
      models.find(filter).sort(sort).skip(plan.offset).limit(plan.limit).toArray(),
    ]);
    return { total, items: docs.map((doc) => ({ id: doc._id, doc: doc.doc })) };
  }

  // ---- blobs (mongo-blobs.ts) ----

  putBlob(key: string, bytes: Uint8Array): Promise<void> {
    return this.blobStore.putBlob(key, bytes);
  }

  putBlobStream(key: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    return this.blobStore.putBlobStream(key, chunks);
  }

  getBlob(key: string): Promise<Uint8Array | null> {
    return this.blobStore.getBlob(key);
  }

  deleteBlob(key: string): Promise<boolean> {
    return this.blobStore.deleteBlob(key);
  }

  // ---- plumbing ----

  private async inTransaction<T>(work: (session: ClientSession) => Promise<T>): Promise<T> {
    const session = this.client.startSession();
    try {
      return await session.withTransaction(work, transactionOptions);
    } finally {
      await session.endSession();
    }
  }
}

function assertIds(ids: readonly string[]): void {
  if (ids.length > outboxBatchMax) throw new RangeError(`at most ${outboxBatchMax} ids at once`);
  for (const id of ids) assertIdentifier('outbox id', id);
}

function assertWaitingRef(topic: string, id: string, nowMs: number): void {
  assertIdentifier('topic', topic);
  assertIdentifier('outbox id', id);
  assertNonNegativeInteger('nowMs', nowMs);
}

/** A deferred row of the topic that no worker holds a live claim on at `nowMs`. */
function waitingUnclaimed(topic: string, id: string, nowMs: number): Filter<OutboxDoc> {
  return { _id: id, topic, notBeforeMs: { $exists: true }, claimExpiresAtMs: { $lte: nowMs } };
}

export async function openMongoStore(options: MongoStoreOptions): Promise<MongoStore> {
  const store = new MongoStore(options);
  await store.init();
  return store;
}
