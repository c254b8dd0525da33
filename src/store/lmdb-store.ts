// Embedded SnapshotStore on LMDB (the `lmdb` package): one environment directory under DATA_DIR,
// one sub-database per kind of record. Every write is one LMDB child transaction (abortable: a
// thrown error rolls back everything the callback wrote), committed with fsync before the promise
// resolves and before any reader can see it (overlappingSync off, noSync off): durable before
// visible. LMDB has one writer at a time, so reads inside a write callback see the latest state and
// the compare-and-set, fence check and outbox sequence need no further locking.
//
// Outbox rows live in `outbox` ([topic, seq]) from their commit; a row a worker defers (a retry's
// backoff, a parked refund) moves to `outboxDeferred` ([topic, seq]) with an entry in `outboxDue`
// ([topic, notBeforeMs, seq]). So a claim reads fresh rows in commit order and then only the
// deferred rows that are due, whatever the number of rows waiting for a later time; and a process
// of an earlier release, which knows `outbox` only, still writes rows every claimer finds.
//
// The sub-databases, their records and the functions that keep them consistent are in lmdb-records.ts.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ABORT, open } from 'lmdb';
import type { Key, RootDatabase } from 'lmdb';
import { appliedRepliesPerActorDefault, defaultReadModelIndexes, outboxBacklogCountMax, outboxBatchMax, blobStagingStaleMsDefault } from './store.ts';
import {
  IndexCatalog, assertBlob, assertCollection, assertCount, assertDeferral, assertFence, assertIdentifier, assertLimit,
  assertNonNegativeInteger, assertReadModelDoc, blobParts, deferredRow, partitionValidWrites, planList,
} from './store-checks.ts';
import {
  prefixEnd, removeBlob, removeStaging, locate, putLocated, moveToDeferred, removeLocated, removeRow, mergeBySeq, orderedRange, openSubDatabases, upsertDoc, removeDoc, raiseFenceIn, reconcileIndexes,
  appendApplied, appendOutbox, outboxSequence, type OutboxSequence,
  type BlobManifest, type BlobStaging, type OutboxRecord, type OutboxKey, type LocatedRow, type SubDatabases,
} from './lmdb-records.ts';
import type {
  ActorSnapshot, AppliedReply, BatchCommitResult, CommitResult, CommitWrite, FenceResult, JsonObject,
  ListItem, ListPage, ListQuery, OutboxBacklog, OutboxDeferral, OutboxRow, OutboxRowAction, PutIfAbsentResult,
  SnapshotStore, StoredEvent, StoreOptions,
} from './store.ts';

export interface LmdbStoreOptions extends StoreOptions {
  /** The LMDB environment directory (created if missing). */
  dir: string;
  /** Claim scans stop after this many rows under live claims (bounds one claim's work). */
  outboxClaimScanRowsMax?: number;
  /**
   * Write values as plain msgpack maps instead of msgpack records (see `valueEncoding`). Values of
   * either kind are always read. Turn it on only once no process of an older release opens the
   * store: those read plain maps as `Map` objects. Default off.
   */
  plainMaps?: boolean;
}

/** DATA_DIR (default ./data) + /store: where the embedded store lives. */
export function lmdbDirFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.DATA_DIR ?? './data', 'store');
}

export class LmdbStore implements SnapshotStore {
  private readonly indexes: IndexCatalog;
  private readonly appliedRepliesPerActorMax: number;
  private readonly claimScanRowsMax: number;
  private readonly blobStagingStaleMs: number;
  private root: RootDatabase | null = null;
  private dbs: SubDatabases | null = null;
  private shared: SharedEnvironment | null = null;

  constructor(private readonly options: LmdbStoreOptions) {
    this.indexes = new IndexCatalog(options.readModelIndexes ?? defaultReadModelIndexes);
    this.appliedRepliesPerActorMax = options.appliedRepliesPerActorMax ?? appliedRepliesPerActorDefault;
    assertLimit('appliedRepliesPerActorMax', this.appliedRepliesPerActorMax, 1_000_000);
    this.claimScanRowsMax = options.outboxClaimScanRowsMax ?? 10_000;
    this.blobStagingStaleMs = options.blobStagingStaleMs ?? blobStagingStaleMsDefault;
    assertNonNegativeInteger('blobStagingStaleMs', this.blobStagingStaleMs);
  }

  async init(): Promise<void> {
    if (this.root !== null) return;
    mkdirSync(this.options.dir, { recursive: true });
    const shared = openShared(this.options.dir, this.options.plainMaps === true);
    this.shared = shared;
    this.root = shared.root;
    this.dbs = shared.dbs;
    await this.write((dbs) => reconcileIndexes(dbs, this.indexes));
    await this.sweepStaleBlobStreams(Date.now() - this.blobStagingStaleMs);
  }

  async close(): Promise<void> {
    const shared = this.shared;
    this.shared = null;
    this.root = null;
    this.dbs = null;
    if (shared !== null) await closeShared(shared);
  }

  // ---- actors ----

  async load(actorKey: string): Promise<ActorSnapshot | null> {
    assertIdentifier('actorKey', actorKey);
    const record = this.open().actors.get(actorKey);
    return record === undefined ? null : { version: record.version, state: record.state };
  }

  async commit(write: CommitWrite): Promise<CommitResult> {
    const [result] = await this.commitBatch([write]);
    if (result === undefined) throw new Error('commitBatch returned no result');
    if (typeof result !== 'string') throw result.error;
    return result;
  }

  /**
   * One write transaction for the whole batch, committed and synced before the promise resolves:
   * a batch of actor writes costs one sync. It runs on lmdb-js's write thread, like every other
   * write of this store, so the event loop prepares the next batch while this one syncs. (Small
   * batches used to commit synchronously on the event loop, for latency when quiet; a synchronous
   * write transaction waits for the write lock, which lmdb-js's write thread may hold while it
   * waits for this same event loop to run a transaction callback: both waited forever — seen as
   * a hung test process, test/integration/chains-grpc.test.ts.)
   * Each write is checked before it writes anything, so a refusal leaves no trace. An exception
   * (a bug, e.g. a duplicate outbox id) aborts the transaction; then each write is committed in a
   * transaction of its own, so the others still land and only the broken one fails.
   */
  async commitBatch(writes: readonly CommitWrite[]): Promise<BatchCommitResult[]> {
    const { valid, results } = partitionValidWrites(writes, this.indexes);
    if (valid.length === 0) return results;
    const dbs = this.open();
    const root = this.openRoot();
    const transact = <T>(action: () => T): Promise<T> => root.childTransaction(action);
    try {
      const outcomes = await transact(() => this.commitAllInTxn(dbs, valid.map(({ write }) => write)));
      valid.forEach(({ index }, position) => { results[index] = outcomes[position] ?? 'version_conflict'; });
    } catch (error) {
      if (valid.length === 1) {
        results[valid[0]?.index ?? 0] = { error };
        return results;
      }
      for (const { index, write } of valid) {
        try {
          results[index] = (await transact(() => this.commitAllInTxn(dbs, [write])))[0] ?? 'version_conflict';
        } catch (alone) {
          results[index] = { error: alone };
        }
      }
    }
    return results;
  }

  /** One child transaction, aborted (nothing written) when any write would be refused. */
  async commitAllOrNothing(writes: readonly CommitWrite[]): Promise<boolean> {
    if (partitionValidWrites(writes, this.indexes).valid.length !== writes.length) return false;
    if (writes.length === 0) return true;
    const dbs = this.open();
    const outcome = await this.openRoot().childTransaction(() => {
      const committed = this.commitAllInTxn(dbs, writes);
      return committed.every((result) => result === 'ok') ? true : ABORT;
    });
    return outcome === true;
  }

  async raiseFence(shard: number, token: number): Promise<FenceResult> {
    assertFence(shard, token);
    return this.write((dbs) => (raiseFenceIn(dbs, shard, token) ? 'ok' : 'fenced'));
  }

  async getAppliedReply(actorKey: string, commandId: string): Promise<AppliedReply | null> {
    assertIdentifier('actorKey', actorKey);
    assertIdentifier('commandId', commandId);
    const record = this.open().applied.get([actorKey, commandId]);
    return record === undefined ? null : { reply: record.reply };
  }

  async deleteActor(actorKey: string, expectedVersion: number): Promise<'ok' | 'version_conflict' | 'not_found'> {
    assertIdentifier('actorKey', actorKey);
    assertNonNegativeInteger('expectedVersion', expectedVersion);
    return this.write((dbs) => {
      const current = dbs.actors.get(actorKey);
      if (current === undefined || current.version !== expectedVersion) return current === undefined ? 'not_found' : 'version_conflict';
      for (const { key, value: commandId } of dbs.appliedOrder.getRange({ start: [actorKey], end: [actorKey, prefixEnd] })) {
        dbs.applied.removeSync([actorKey, commandId]);
        dbs.appliedOrder.removeSync(key);
      }
      for (const { key } of dbs.events.getRange({ start: [actorKey], end: [actorKey, prefixEnd] })) dbs.events.removeSync(key);
      dbs.actors.removeSync(actorKey);
      return 'ok';
    });
  }

  async loadEvents(actorKey: string, afterVersion: number, limit: number): Promise<StoredEvent[]> {
    assertIdentifier('actorKey', actorKey);
    assertNonNegativeInteger('afterVersion', afterVersion);
    assertLimit('limit', limit, outboxBatchMax);
    const range = this.open().events.getRange({ start: [actorKey, afterVersion + 1], end: [actorKey, prefixEnd], limit });
    const events: StoredEvent[] = [];
    for (const { key, value } of range) {
      const [, version, index] = key as [string, number, number];
      events.push({ version, index, event: value });
    }
    return events;
  }

  // Every write inside a transaction callback is `putSync` / `removeSync`, never `put` / `remove`:
  // lmdb-js queues a plain `put` for its write thread as a write of its own, so it would not be in
  // this transaction, nor durable when the commit returns (checked: a process killed right after
  // such a commit loses it).
  /** `writes` in one write transaction: one read and one write of the outbox sequence for all of them, not per commit. */
  private commitAllInTxn(dbs: SubDatabases, writes: readonly CommitWrite[]): CommitResult[] {
    const sequence = outboxSequence(dbs);
    const results = writes.map((write) => this.commitInTxn(dbs, write, sequence));
    sequence.save();
    return results;
  }

  private commitInTxn(dbs: SubDatabases, write: CommitWrite, sequence: OutboxSequence): CommitResult {
    // Both checks come before the first write, so a refusal writes nothing (not even the fence).
    const fenceToken = dbs.fences.get(write.fence.shard);
    if (fenceToken !== undefined && write.fence.token < fenceToken) return 'fenced';
    const current = dbs.actors.get(write.actorKey);
    if ((current?.version ?? 0) !== write.expectedVersion) return 'version_conflict';

    if (fenceToken === undefined || write.fence.token > fenceToken) dbs.fences.putSync(write.fence.shard, write.fence.token);
    const appliedSeq = appendApplied(dbs, write, current === undefined ? null : current.appliedSeq, this.appliedRepliesPerActorMax);
    dbs.actors.putSync(write.actorKey, { version: write.newVersion, state: write.state, appliedSeq });
    (write.events ?? []).forEach((event, index) => dbs.events.putSync([write.actorKey, write.newVersion, index], event));
    appendOutbox(dbs, write, sequence);
    for (const model of write.readModels) {
      if (model.doc === null) removeDoc(dbs, this.indexes, model.collection, model.id);
      else upsertDoc(dbs, this.indexes, model.collection, model.id, model.doc);
    }
    return 'ok';
  }

  // ---- outbox ----

  async outboxPending(topic: string, limit: number, afterSeq = 0): Promise<OutboxRow[]> {
    assertIdentifier('topic', topic);
    assertLimit('limit', limit, outboxBatchMax);
    assertNonNegativeInteger('afterSeq', afterSeq);
    const dbs = this.open();
    const range = { start: [topic, afterSeq + 1], end: [topic, prefixEnd], limit };
    const fresh = [...dbs.outbox.getRange(range)].map(({ value }) => value);
    const deferred = [...dbs.outboxDeferred.getRange(range)].map(({ value }) => value);
    return mergeBySeq(fresh, deferred, limit);
  }

  async outboxClaim(topic: string, owner: string, limit: number, leaseMs: number, nowMs: number): Promise<OutboxRow[]> {
    assertIdentifier('topic', topic);
    assertIdentifier('owner', owner);
    assertLimit('limit', limit, outboxBatchMax);
    assertLimit('leaseMs', leaseMs, Number.MAX_SAFE_INTEGER);
    assertNonNegativeInteger('nowMs', nowMs);
    return this.write((dbs) => {
      const claimed: LocatedRow[] = [];
      let scanned = 0;
      const full = (): boolean => claimed.length >= limit || scanned >= this.claimScanRowsMax + limit;
      const consider = (deferred: boolean, key: OutboxKey, row: OutboxRecord): void => {
        scanned += 1;
        if (row.claimExpiresAtMs > nowMs) return; // under a live claim
        claimed.push({ deferred, key, row: { ...row, claimOwner: owner, claimExpiresAtMs: nowMs + leaseMs } });
      };
      // Collect first, write after: no puts while a cursor is open on the same database.
      for (const { key, value } of dbs.outbox.getRange({ start: [topic], end: [topic, prefixEnd] })) {
        if (full()) break;
        consider(false, key as OutboxKey, value);
      }
      for (const dueKey of dbs.outboxDue.getKeys({ start: [topic], end: [topic, nowMs, prefixEnd] })) {
        if (full()) break;
        const key: OutboxKey = [topic, (dueKey as [string, number, number])[2]];
        const row = dbs.outboxDeferred.get(key);
        if (row !== undefined) consider(true, key, row);
      }
      for (const located of claimed) putLocated(dbs, located);
      return claimed.map((located) => located.row);
    });
  }

  async outboxRenew(ids: readonly string[], owner: string, leaseMs: number, nowMs: number): Promise<string[]> {
    assertIdentifier('owner', owner);
    this.assertIds(ids);
    assertLimit('leaseMs', leaseMs, Number.MAX_SAFE_INTEGER);
    assertNonNegativeInteger('nowMs', nowMs);
    return this.write((dbs) => {
      const renewed: string[] = [];
      for (const id of ids) {
        const located = locate(dbs, id);
        if (located === null || located.row.claimOwner !== owner) continue;
        putLocated(dbs, { ...located, row: { ...located.row, claimExpiresAtMs: nowMs + leaseMs } });
        renewed.push(id);
      }
      return renewed;
    });
  }

  async outboxRelease(ids: readonly string[], owner: string): Promise<void> {
    assertIdentifier('owner', owner);
    this.assertIds(ids);
    return this.write((dbs) => {
      for (const id of ids) {
        const located = locate(dbs, id);
        if (located === null || located.row.claimOwner !== owner) continue;
        putLocated(dbs, { ...located, row: { ...located.row, claimOwner: null, claimExpiresAtMs: 0 } });
      }
    });
  }

  async outboxDefer(deferrals: readonly OutboxDeferral[], owner: string): Promise<string[]> {
    assertIdentifier('owner', owner);
    if (deferrals.length > outboxBatchMax) throw new RangeError(`at most ${outboxBatchMax} rows at once`);
    for (const deferral of deferrals) assertDeferral(deferral);
    return this.write((dbs) => {
      const deferred: string[] = [];
      for (const deferral of deferrals) {
        const located = locate(dbs, deferral.id);
        if (located === null || located.row.claimOwner !== owner) continue;
        moveToDeferred(dbs, located, deferredRow(located.row, deferral));
        deferred.push(deferral.id);
      }
      return deferred;
    });
  }

  async outboxWaiting(topic: string, limit: number, afterSeq = 0): Promise<OutboxRow[]> {
    assertIdentifier('topic', topic);
    assertLimit('limit', limit, outboxBatchMax);
    assertNonNegativeInteger('afterSeq', afterSeq);
    const range = this.open().outboxDeferred.getRange({ start: [topic, afterSeq + 1], end: [topic, prefixEnd], limit });
    return [...range].map(({ value }) => value);
  }

  async outboxRetryNow(topic: string, id: string, nowMs: number): Promise<OutboxRowAction> {
    return this.actOnWaiting(topic, id, nowMs, (dbs, located) => {
      const row: OutboxRecord = { ...located.row, notBeforeMs: 0 };
      moveToDeferred(dbs, located, row);
      return row;
    });
  }

  async outboxResolve(topic: string, id: string, nowMs: number): Promise<OutboxRowAction> {
    return this.actOnWaiting(topic, id, nowMs, (dbs, located) => {
      removeLocated(dbs, located);
      return located.row;
    });
  }

  /** An operator's action on a deferred row of the topic that no worker holds a live claim on. */
  private actOnWaiting(topic: string, id: string, nowMs: number, action: (dbs: SubDatabases, located: LocatedRow) => OutboxRecord): Promise<OutboxRowAction> {
    assertIdentifier('topic', topic);
    assertIdentifier('outbox id', id);
    assertNonNegativeInteger('nowMs', nowMs);
    return this.write((dbs): OutboxRowAction => {
      const located = locate(dbs, id);
      if (located === null || !located.deferred || located.row.topic !== topic) return { result: 'not_found' };
      if (located.row.claimExpiresAtMs > nowMs) return { result: 'claimed', row: located.row };
      return { result: 'ok', row: action(dbs, located) };
    });
  }

  async outboxMarkDone(ids: readonly string[]): Promise<void> {
    this.assertIds(ids);
    return this.write((dbs) => {
      for (const id of ids) removeRow(dbs, id);
    });
  }

  async outboxBacklog(topic: string, nowMs: number, countMax: number): Promise<OutboxBacklog> {
    assertIdentifier('topic', topic);
    assertNonNegativeInteger('nowMs', nowMs);
    assertLimit('countMax', countMax, outboxBacklogCountMax);
    const dbs = this.open();
    const range = { start: [topic], end: [topic, prefixEnd], limit: countMax + 1 };
    let rows = 0;
    let claimed = 0;
    let deferred = 0;
    let parked = 0;
    let oldest: OutboxRecord | null = null;
    // Each kind is counted up to the cap; both come in commit order, so each one's first row is its oldest.
    for (const [index, { value }] of [...dbs.outbox.getRange(range)].entries()) {
      if (index === 0) oldest = value;
      rows += 1;
      if (value.claimExpiresAtMs > nowMs) claimed += 1;
    }
    for (const [index, { value }] of [...dbs.outboxDeferred.getRange(range)].entries()) {
      if (index === 0 && (oldest === null || value.seq < oldest.seq)) oldest = value;
      rows += 1;
      if (value.claimExpiresAtMs > nowMs) claimed += 1;
      if ((value.notBeforeMs ?? 0) > nowMs) deferred += 1;
      if (value.parked === true) parked += 1;
    }
    const cap = (count: number): number => Math.min(count, countMax);
    return { rows: cap(rows), claimed: cap(claimed), deferred: cap(deferred), parked: cap(parked), capped: rows > countMax, oldestCreatedAtMs: oldest?.createdAtMs ?? null };
  }

  private assertIds(ids: readonly string[]): void {
    if (ids.length > outboxBatchMax) throw new RangeError(`at most ${outboxBatchMax} ids at once`);
    for (const id of ids) assertIdentifier('outbox id', id);
  }

  // ---- read models ----

  async get(collection: string, id: string): Promise<JsonObject | null> {
    assertCollection(collection);
    assertIdentifier('read model id', id);
    return this.open().docs.get([collection, id]) ?? null;
  }

  async put(collection: string, id: string, doc: JsonObject): Promise<void> {
    assertReadModelDoc(this.indexes, collection, id, doc);
    return this.write((dbs) => upsertDoc(dbs, this.indexes, collection, id, doc));
  }

  async putIfAbsent(collection: string, id: string, doc: JsonObject): Promise<PutIfAbsentResult> {
    assertReadModelDoc(this.indexes, collection, id, doc);
    return this.write((dbs): PutIfAbsentResult => {
      const existing = dbs.docs.get([collection, id]);
      if (existing !== undefined) return { status: 'exists', doc: existing };
      upsertDoc(dbs, this.indexes, collection, id, doc);
      return { status: 'inserted' };
    });
  }

  async remove(collection: string, id: string): Promise<boolean> {
    assertCollection(collection);
    assertIdentifier('read model id', id);
    return this.write((dbs) => removeDoc(dbs, this.indexes, collection, id));
  }

  /**
   * Answers from one read snapshot (all synchronous): the index range gives both the total
   * (a key count, no values decoded) and the page (offset/limit on the cursor).
   */
  async list(collection: string, query: ListQuery): Promise<ListPage> {
    const plan = planList(this.indexes, collection, query);
    const dbs = this.open();
    if (plan.kind === 'primary') {
      // Fresh option objects per call: getCount marks its options object as count-only.
      const total = dbs.docs.getCount(orderedRange([collection], plan.descending));
      const items: ListItem[] = [];
      const page = { ...orderedRange([collection], plan.descending), offset: plan.offset, limit: plan.limit };
      for (const { key, value } of dbs.docs.getRange(page)) {
        items.push({ id: String((key as [string, string])[1]), doc: value });
      }
      return { total, items };
    }
    const prefix = [collection, plan.index.name, ...plan.equalValues];
    const total = dbs.docIndex.getCount(orderedRange(prefix, plan.descending));
    const items: ListItem[] = [];
    const page = { ...orderedRange(prefix, plan.descending), offset: plan.offset, limit: plan.limit };
    for (const key of dbs.docIndex.getKeys(page)) {
      const id = String((key as Key[])[(key as Key[]).length - 1]);
      const doc = dbs.docs.get([collection, id]);
      if (doc === undefined) throw new Error(`index ${plan.index.name} points at missing ${collection}/${id}`);
      items.push({ id, doc });
    }
    return { total, items };
  }

  // ---- blobs ----

  // A whole blob is one value in `blobs`. A streamed one is parts in `blobChunks` under a random
  // staging id, written one per transaction as they arrive, with `blobMeta` ['staging', id] (its
  // start time) while it is written; committing it is one transaction that writes its manifest
  // (`blobMeta` ['manifest', key]), drops the staging entry and removes what the key held before.
  // Readers find a key's blob in `blobs` or through its manifest, never half a stream.

  async putBlob(key: string, bytes: Uint8Array): Promise<void> {
    assertBlob(key, bytes);
    const copy = Buffer.from(bytes); // the caller may reuse its buffer after we return
    return this.write((dbs) => {
      removeBlob(dbs, key);
      dbs.blobs.putSync(key, copy);
    });
  }

  async putBlobStream(key: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    assertIdentifier('blob key', key);
    const stagingId = randomUUID();
    const staging: BlobStaging = { startedAtMs: Date.now() };
    await this.write((dbs) => { dbs.blobMeta.putSync(['staging', stagingId], staging); });
    let parts = 0;
    let bytes = 0;
    try {
      for await (const part of blobParts(chunks)) {
        const index = parts;
        await this.write((dbs) => { dbs.blobChunks.putSync([stagingId, index], part); });
        parts += 1;
        bytes += part.byteLength;
      }
      const manifest: BlobManifest = { stagingId, parts, bytes };
      await this.write((dbs) => {
        removeBlob(dbs, key);
        dbs.blobMeta.putSync(['manifest', key], manifest);
        dbs.blobMeta.removeSync(['staging', stagingId]);
      });
      return bytes;
    } catch (error) {
      await this.write((dbs) => removeStaging(dbs, stagingId));
      throw error;
    }
  }

  async getBlob(key: string): Promise<Uint8Array | null> {
    assertIdentifier('blob key', key);
    const dbs = this.open();
    // One synchronous read: the manifest and its parts come from the same read snapshot.
    const bytes = dbs.blobs.get(key);
    if (bytes !== undefined) return new Uint8Array(bytes);
    const manifest = dbs.blobMeta.get(['manifest', key]) as BlobManifest | undefined;
    if (manifest === undefined) return null;
    const whole = new Uint8Array(manifest.bytes);
    let offset = 0;
    for (let index = 0; index < manifest.parts; index += 1) {
      const part = dbs.blobChunks.get([manifest.stagingId, index]);
      if (part === undefined || offset + part.byteLength > whole.byteLength) throw new Error('a streamed blob lacks a part or has extra bytes');
      whole.set(part, offset);
      offset += part.byteLength;
    }
    if (offset !== whole.byteLength) throw new Error('a streamed blob is shorter than its manifest says');
    return whole;
  }

  async deleteBlob(key: string): Promise<boolean> {
    assertIdentifier('blob key', key);
    return this.write((dbs) => removeBlob(dbs, key));
  }

  /** Removes the parts of blob streams begun before `startedBeforeMs` and never committed (a crash). */
  private async sweepStaleBlobStreams(startedBeforeMs: number): Promise<void> {
    const dbs = this.open();
    const stale: string[] = [];
    for (const { key, value } of dbs.blobMeta.getRange({ start: ['staging'], end: ['staging', prefixEnd] })) {
      if ((value as BlobStaging).startedAtMs < startedBeforeMs) stale.push(String((key as [string, string])[1]));
    }
    for (const stagingId of stale) {
      await this.write((writeDbs) => removeStaging(writeDbs, stagingId));
    }
  }

  // ---- plumbing ----

  private openRoot(): RootDatabase {
    if (this.root === null) throw new Error('LmdbStore is not open: call init() first (or it was closed)');
    return this.root;
  }

  private open(): SubDatabases {
    if (this.dbs === null) throw new Error('LmdbStore is not open: call init() first (or it was closed)');
    return this.dbs;
  }

  /**
   * One abortable child transaction inside lmdb-js's batched write transaction; the promise resolves
   * after the batch is committed and fsynced. The callback must be synchronous.
   */
  private write<T>(action: (dbs: SubDatabases) => T): Promise<T> {
    const dbs = this.open();
    return this.openRoot().childTransaction(() => action(dbs));
  }
}

/**
 * One opened environment and its sub-databases per directory (and value encoding) in a process,
 * shared by every store on it. lmdb-js opens a sub-database in a synchronous write transaction on
 * the event loop; in a process whose own store is writing, that transaction waits for the write
 * lock, which lmdb-js's write thread may hold while it waits for this same event loop to run a
 * transaction callback: both wait forever. Opening once per process means a second store (tests
 * run several roles, each with its own store, in one process) opens nothing while writes run.
 */
interface SharedEnvironment {
  readonly key: string;
  readonly root: RootDatabase;
  readonly dbs: SubDatabases;
  users: number;
}

const sharedEnvironments = new Map<string, SharedEnvironment>();

function openShared(dir: string, plainMaps: boolean): SharedEnvironment {
  const key = `${resolve(dir)}\u0000${String(plainMaps)}`;
  let shared = sharedEnvironments.get(key);
  if (shared === undefined) {
    const root = open({ path: dir, compression: false, overlappingSync: false, noSync: false, maxDbs: 32 });
    shared = { key, root, dbs: openSubDatabases(root, plainMaps), users: 0 };
    sharedEnvironments.set(key, shared);
  }
  shared.users += 1;
  return shared;
}

async function closeShared(shared: SharedEnvironment): Promise<void> {
  shared.users -= 1;
  if (shared.users > 0) return;
  sharedEnvironments.delete(shared.key);
  await shared.root.close();
}

export async function openLmdbStore(options: LmdbStoreOptions): Promise<LmdbStore> {
  const store = new LmdbStore(options);
  await store.init();
  return store;
}
