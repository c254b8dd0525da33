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
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import type { Database, Key, RootDatabase } from 'lmdb';
import {
  IndexCatalog, appliedRepliesPerActorDefault, assertBlob, assertCollection, assertFence,
  assertCount, assertIdentifier, assertLimit, partitionValidWrites, assertNonNegativeInteger, assertReadModelDoc, defaultReadModelIndexes,
  indexValuesOf, outboxBacklogCountMax, outboxBatchMax, planList, assertDeferral, deferredRow,
  blobParts, blobStagingStaleMsDefault,
} from './store.ts';
import type {
  ActorSnapshot, AppliedReply, BatchCommitResult, CommitResult, CommitWrite, FenceResult, IndexValue, JsonObject, JsonValue,
  ListItem, ListPage, ListQuery, OutboxBacklog, OutboxDeferral, OutboxRow, OutboxRowAction, PutIfAbsentResult, ReadModelIndex,
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

/**
 * How values are encoded (msgpack, lmdb-js's default). By default objects are written as msgpack
 * records: their key lists are shared structures saved in the database, at most 32 per database;
 * past that (the actors' many state shapes use them up) every value carries its own key lists,
 * which makes encoding and decoding about twice as slow as plain maps. Plain maps cost ≈ 7 % more
 * bytes. Reading always turns maps into plain objects (`mapsAsObjects`): every value we store is
 * JSON, so no value was ever a `Map`, and a reader of this release reads both kinds — which is
 * what makes switching writers to plain maps safe once every reader is of this release or later.
 */
function valueEncoding(plainMaps: boolean): { mapsAsObjects: true; useRecords?: false } {
  return plainMaps ? { mapsAsObjects: true, useRecords: false } : { mapsAsObjects: true };
}

/** DATA_DIR (default ./data) + /store: where the embedded store lives. */
export function lmdbDirFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.DATA_DIR ?? './data', 'store');
}

/** A streamed blob: its parts are `blobChunks` [stagingId, 0 … parts-1]. */
interface BlobManifest {
  stagingId: string;
  parts: number;
  bytes: number;
}

/** A blob stream being written (removed when it is committed or abandoned). */
interface BlobStaging {
  startedAtMs: number;
}

interface ActorRecord {
  version: number;
  state: JsonValue;
  /** Sequence of the last applied command of this actor (dedupe log position). */
  appliedSeq: number;
}

interface AppliedRecord {
  seq: number;
  reply: JsonValue;
}

type OutboxRecord = OutboxRow;
type OutboxKey = [string, number];

/** Where a row is: `outbox` (never deferred) or `outboxDeferred`, both keyed [topic, seq]. */
interface LocatedRow {
  readonly deferred: boolean;
  readonly key: OutboxKey;
  readonly row: OutboxRecord;
}

// Sorts after every primitive that ordered-binary produces: the exclusive end of a key prefix.
const prefixEnd = Buffer.from([0xff]);
const outboxSeqKey = 'outboxSeq';
const indexDefinitionKey = 'indexDefinition';

export class LmdbStore implements SnapshotStore {
  private readonly indexes: IndexCatalog;
  private readonly appliedRepliesPerActorMax: number;
  private readonly claimScanRowsMax: number;
  private readonly blobStagingStaleMs: number;
  private root: RootDatabase | null = null;
  private dbs: SubDatabases | null = null;

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
    const root = open({ path: this.options.dir, compression: false, overlappingSync: false, noSync: false, maxDbs: 32 });
    const values = valueEncoding(this.options.plainMaps === true);
    this.root = root;
    this.dbs = {
      actors: root.openDB<ActorRecord, string>({ name: 'actors', ...values }),
      fences: root.openDB<number, number>({ name: 'fences', ...values }),
      applied: root.openDB<AppliedRecord, Key>({ name: 'applied', ...values }),
      appliedOrder: root.openDB<string, Key>({ name: 'appliedOrder', ...values }),
      events: root.openDB<JsonValue, Key>({ name: 'events', ...values }),
      outbox: root.openDB<OutboxRecord, Key>({ name: 'outbox', ...values }),
      outboxIds: root.openDB<OutboxKey, string>({ name: 'outboxIds', ...values }),
      outboxDeferred: root.openDB<OutboxRecord, Key>({ name: 'outboxDeferred', ...values }),
      outboxDeferredIds: root.openDB<OutboxKey, string>({ name: 'outboxDeferredIds', ...values }),
      outboxDue: root.openDB<true, Key>({ name: 'outboxDue', ...values }),
      docs: root.openDB<JsonObject, Key>({ name: 'docs', ...values }),
      docIndex: root.openDB<true, Key>({ name: 'docIndex', ...values }),
      meta: root.openDB<number | string, Key>({ name: 'meta', ...values }),
      blobs: root.openDB<Buffer, string>({ name: 'blobs', encoding: 'binary' }),
      blobChunks: root.openDB<Buffer, Key>({ name: 'blobChunks', encoding: 'binary' }),
      blobMeta: root.openDB<BlobManifest | BlobStaging, Key>({ name: 'blobMeta', ...values }),
    };
    await this.write((dbs) => this.reconcileIndexes(dbs));
    await this.sweepStaleBlobStreams(Date.now() - this.blobStagingStaleMs);
  }

  async close(): Promise<void> {
    const root = this.root;
    this.root = null;
    this.dbs = null;
    if (root !== null) await root.close();
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
      const outcomes = await transact(() => valid.map(({ write }) => this.commitInTxn(dbs, write)));
      valid.forEach(({ index }, position) => { results[index] = outcomes[position] ?? 'version_conflict'; });
    } catch (error) {
      if (valid.length === 1) {
        results[valid[0]?.index ?? 0] = { error };
        return results;
      }
      for (const { index, write } of valid) {
        try {
          results[index] = await transact(() => this.commitInTxn(dbs, write));
        } catch (alone) {
          results[index] = { error: alone };
        }
      }
    }
    return results;
  }

  async raiseFence(shard: number, token: number): Promise<FenceResult> {
    assertFence(shard, token);
    return this.write((dbs) => (this.checkAndRaiseFence(dbs, shard, token) ? 'ok' : 'fenced'));
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
      if (current === undefined) return 'not_found';
      if (current.version !== expectedVersion) return 'version_conflict';
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
  private commitInTxn(dbs: SubDatabases, write: CommitWrite): CommitResult {
    // Both checks come before the first write, so a refusal writes nothing (not even the fence).
    const fenceToken = dbs.fences.get(write.fence.shard);
    if (fenceToken !== undefined && write.fence.token < fenceToken) return 'fenced';
    const current = dbs.actors.get(write.actorKey);
    if ((current?.version ?? 0) !== write.expectedVersion) return 'version_conflict';

    if (fenceToken === undefined || write.fence.token > fenceToken) dbs.fences.putSync(write.fence.shard, write.fence.token);
    const appliedSeq = this.appendApplied(dbs, write, current === undefined ? null : current.appliedSeq);
    dbs.actors.putSync(write.actorKey, { version: write.newVersion, state: write.state, appliedSeq });
    (write.events ?? []).forEach((event, index) => dbs.events.putSync([write.actorKey, write.newVersion, index], event));
    this.appendOutbox(dbs, write);
    for (const model of write.readModels) {
      if (model.doc === null) this.removeDoc(dbs, model.collection, model.id);
      else this.upsertDoc(dbs, model.collection, model.id, model.doc);
    }
    return 'ok';
  }

  private checkAndRaiseFence(dbs: SubDatabases, shard: number, token: number): boolean {
    const stored = dbs.fences.get(shard);
    if (stored !== undefined && token < stored) return false;
    if (stored === undefined || token > stored) dbs.fences.putSync(shard, token);
    return true;
  }

  /**
   * Dedupe log: applied[actor, commandId] → reply and appliedOrder[actor, seq] → commandId. Each
   * applied command takes the next per-actor seq; entries older than the last
   * appliedRepliesPerActorMax seqs are trimmed in the same transaction. A commandId that is still
   * in the log keeps its first reply.
   */
  private appendApplied(dbs: SubDatabases, write: CommitWrite, appliedSeqBefore: number | null): number {
    let seq = appliedSeqBefore ?? 0;
    for (const command of write.appliedCommands) {
      seq += 1;
      const key = [write.actorKey, command.commandId];
      // A new actor (no record: actor records are never deleted) has no dedupe rows, so the lookup
      // is skipped on its first commit, which is most commits of short-lived actors like quotes.
      if (appliedSeqBefore !== null && dbs.applied.get(key) !== undefined) continue;
      dbs.applied.putSync(key, { seq, reply: command.reply });
      dbs.appliedOrder.putSync([write.actorKey, seq], command.commandId);
    }
    const cutoff = seq - this.appliedRepliesPerActorMax; // seqs ≤ cutoff fall out of the window
    if (cutoff > 0) {
      const expired = [...dbs.appliedOrder.getRange({ start: [write.actorKey], end: [write.actorKey, cutoff + 1] })];
      for (const { key, value: commandId } of expired) {
        const [, entrySeq] = key as [string, number];
        const applied = dbs.applied.get([write.actorKey, commandId]);
        if (applied?.seq === entrySeq) dbs.applied.removeSync([write.actorKey, commandId]);
        dbs.appliedOrder.removeSync(key);
      }
    }
    return seq;
  }

  /** Outbox seq: one global counter in `meta`, read and bumped inside the write transaction. */
  private appendOutbox(dbs: SubDatabases, write: CommitWrite): void {
    if (write.outbox.length === 0) return;
    let seq = Number(dbs.meta.get(outboxSeqKey) ?? 0);
    for (const row of write.outbox) {
      seq += 1;
      const record: OutboxRecord = {
        id: row.id, topic: row.topic, seq, actorKey: write.actorKey, version: write.newVersion,
        payload: row.payload, claimOwner: null, claimExpiresAtMs: 0, createdAtMs: Date.now(),
      };
      if (row.partitionKey !== undefined) record.partitionKey = row.partitionKey;
      if (dbs.outboxIds.get(row.id) !== undefined || dbs.outboxDeferredIds.get(row.id) !== undefined) throw new Error(`outbox id ${row.id} already exists`);
      dbs.outbox.putSync([row.topic, seq], record);
      dbs.outboxIds.putSync(row.id, [row.topic, seq]);
    }
    dbs.meta.putSync(outboxSeqKey, seq);
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
      for (const id of ids) {
        const located = locate(dbs, id);
        if (located !== null) removeLocated(dbs, located);
      }
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
    return this.write((dbs) => this.upsertDoc(dbs, collection, id, doc));
  }

  async putIfAbsent(collection: string, id: string, doc: JsonObject): Promise<PutIfAbsentResult> {
    assertReadModelDoc(this.indexes, collection, id, doc);
    return this.write((dbs): PutIfAbsentResult => {
      const existing = dbs.docs.get([collection, id]);
      if (existing !== undefined) return { status: 'exists', doc: existing };
      this.upsertDoc(dbs, collection, id, doc);
      return { status: 'inserted' };
    });
  }

  async remove(collection: string, id: string): Promise<boolean> {
    assertCollection(collection);
    assertIdentifier('read model id', id);
    return this.write((dbs) => this.removeDoc(dbs, collection, id));
  }

  private removeDoc(dbs: SubDatabases, collection: string, id: string): boolean {
    const existing = dbs.docs.get([collection, id]);
    if (existing === undefined) return false;
    this.removeIndexEntries(dbs, collection, id, existing);
    dbs.docs.removeSync([collection, id]);
    return true;
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

  /** Doc and its index entries change together: stale entries of the old doc are removed first. */
  private upsertDoc(dbs: SubDatabases, collection: string, id: string, doc: JsonObject): void {
    const indexes = this.indexes.of(collection);
    // Only an indexed collection needs the previous doc (to remove its stale index entries).
    if (indexes.length > 0) {
      const previous = dbs.docs.get([collection, id]);
      if (previous !== undefined) this.removeIndexEntries(dbs, collection, id, previous);
    }
    dbs.docs.putSync([collection, id], doc);
    for (const index of indexes) {
      const key = indexKey(index, doc, id);
      if (key === null) throw new Error(`${collection}/${id} lacks fields of index ${index.name}`); // validated before
      dbs.docIndex.putSync(key, true);
    }
  }

  private removeIndexEntries(dbs: SubDatabases, collection: string, id: string, doc: JsonObject): void {
    for (const index of this.indexes.of(collection)) {
      const key = indexKey(index, doc, id);
      if (key !== null) dbs.docIndex.removeSync(key);
    }
  }

  /**
   * Index definitions are remembered in `meta`; an index that is new or changed since the last
   * start is rebuilt from its collection, and one no longer declared is dropped. One transaction.
   */
  private reconcileIndexes(dbs: SubDatabases): void {
    const declared = new Map(this.indexes.all().map((index) => [`${index.collection}\n${index.name}`, index]));
    const storedKeys = [...dbs.meta.getKeys({ start: [indexDefinitionKey], end: [indexDefinitionKey, prefixEnd] })];
    for (const storedKey of storedKeys) {
      const [, collection, name] = storedKey as [string, string, string];
      const index = declared.get(`${collection}\n${name}`);
      if (index !== undefined && dbs.meta.get(storedKey) === JSON.stringify(index)) {
        declared.delete(`${collection}\n${name}`);
        continue;
      }
      this.dropIndexEntries(dbs, collection, name);
      dbs.meta.removeSync(storedKey);
    }
    for (const index of declared.values()) {
      this.dropIndexEntries(dbs, index.collection, index.name);
      const docs = [...dbs.docs.getRange({ start: [index.collection], end: [index.collection, prefixEnd] })];
      for (const { key, value } of docs) {
        const id = String((key as [string, string])[1]);
        const entry = indexKey(index, value, id);
        if (entry === null) throw new Error(`cannot build index ${index.name}: ${index.collection}/${id} lacks its fields`);
        dbs.docIndex.putSync(entry, true);
      }
      dbs.meta.putSync([indexDefinitionKey, index.collection, index.name], JSON.stringify(index));
    }
  }

  private dropIndexEntries(dbs: SubDatabases, collection: string, name: string): void {
    const keys = [...dbs.docIndex.getKeys({ start: [collection, name], end: [collection, name, prefixEnd] })];
    for (const key of keys) dbs.docIndex.removeSync(key);
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

interface SubDatabases {
  actors: Database<ActorRecord, string>;
  fences: Database<number, number>;
  applied: Database<AppliedRecord, Key>;
  appliedOrder: Database<string, Key>;
  events: Database<JsonValue, Key>;
  outbox: Database<OutboxRecord, Key>;
  outboxIds: Database<OutboxKey, string>;
  outboxDeferred: Database<OutboxRecord, Key>;
  outboxDeferredIds: Database<OutboxKey, string>;
  /** [topic, notBeforeMs, seq] of every deferred row: claims read the due ones in due order. */
  outboxDue: Database<true, Key>;
  docs: Database<JsonObject, Key>;
  docIndex: Database<true, Key>;
  meta: Database<number | string, Key>;
  blobs: Database<Buffer, string>;
  /** [stagingId, index] → one part of a streamed blob. */
  blobChunks: Database<Buffer, Key>;
  /** ['manifest', key] → BlobManifest; ['staging', stagingId] → BlobStaging. */
  blobMeta: Database<BlobManifest | BlobStaging, Key>;
}

/** Removes the key's blob, whole or streamed (with its parts); true when there was one. */
function removeBlob(dbs: SubDatabases, key: string): boolean {
  const whole = dbs.blobs.get(key) !== undefined;
  if (whole) dbs.blobs.removeSync(key);
  const manifest = dbs.blobMeta.get(['manifest', key]) as BlobManifest | undefined;
  if (manifest === undefined) return whole;
  removeParts(dbs, manifest.stagingId);
  dbs.blobMeta.removeSync(['manifest', key]);
  return true;
}

/** An uncommitted stream's parts and its staging entry. */
function removeStaging(dbs: SubDatabases, stagingId: string): void {
  removeParts(dbs, stagingId);
  dbs.blobMeta.removeSync(['staging', stagingId]);
}

function removeParts(dbs: SubDatabases, stagingId: string): void {
  const keys = [...dbs.blobChunks.getKeys({ start: [stagingId], end: [stagingId, prefixEnd] })];
  for (const key of keys) dbs.blobChunks.removeSync(key);
}

// ---- outbox rows in their two homes (see the header) ----

function locate(dbs: SubDatabases, id: string): LocatedRow | null {
  const freshKey = dbs.outboxIds.get(id);
  const fresh = freshKey === undefined ? undefined : dbs.outbox.get(freshKey);
  if (freshKey !== undefined && fresh !== undefined) return { deferred: false, key: freshKey, row: fresh };
  const deferredKey = dbs.outboxDeferredIds.get(id);
  const deferred = deferredKey === undefined ? undefined : dbs.outboxDeferred.get(deferredKey);
  return deferredKey !== undefined && deferred !== undefined ? { deferred: true, key: deferredKey, row: deferred } : null;
}

/** Writes the row back where it is (its due time unchanged). */
function putLocated(dbs: SubDatabases, located: LocatedRow): void {
  (located.deferred ? dbs.outboxDeferred : dbs.outbox).putSync(located.key, located.row);
}

/** Writes `row` (which carries its new notBeforeMs) as a deferred row, moving it there if fresh. */
function moveToDeferred(dbs: SubDatabases, located: LocatedRow, row: OutboxRecord): void {
  const [topic, seq] = located.key;
  if (located.deferred) {
    dbs.outboxDue.removeSync([topic, located.row.notBeforeMs ?? 0, seq]);
  } else {
    dbs.outbox.removeSync(located.key);
    dbs.outboxIds.removeSync(row.id);
    dbs.outboxDeferredIds.putSync(row.id, located.key);
  }
  dbs.outboxDeferred.putSync(located.key, row);
  dbs.outboxDue.putSync([topic, row.notBeforeMs ?? 0, seq], true);
}

function removeLocated(dbs: SubDatabases, located: LocatedRow): void {
  const [topic, seq] = located.key;
  if (located.deferred) {
    dbs.outboxDeferred.removeSync(located.key);
    dbs.outboxDue.removeSync([topic, located.row.notBeforeMs ?? 0, seq]);
    dbs.outboxDeferredIds.removeSync(located.row.id);
  } else {
    dbs.outbox.removeSync(located.key);
    dbs.outboxIds.removeSync(located.row.id);
  }
}

/** The first `limit` rows of two seq-ordered lists, in seq order. */
function mergeBySeq(a: readonly OutboxRecord[], b: readonly OutboxRecord[], limit: number): OutboxRecord[] {
  const merged: OutboxRecord[] = [];
  let i = 0;
  let j = 0;
  while (merged.length < limit) {
    const left = a[i];
    const right = b[j];
    if (left === undefined && right === undefined) break;
    if (right === undefined || (left !== undefined && left.seq < right.seq)) {
      if (left !== undefined) merged.push(left);
      i += 1;
    } else {
      merged.push(right);
      j += 1;
    }
  }
  return merged;
}

function indexKey(index: ReadModelIndex, doc: JsonObject, id: string): Key[] | null {
  const values: IndexValue[] | null = indexValuesOf(index, doc);
  return values === null ? null : [index.collection, index.name, ...values, id];
}

/** The range of keys that start with `prefix`, forwards or backwards. */
function orderedRange(prefix: Key[], descending: boolean): { start: Key; end: Key; reverse: boolean } {
  const low: Key = prefix;
  const high: Key = [...prefix, prefixEnd];
  return descending ? { start: high, end: low, reverse: true } : { start: low, end: high, reverse: false };
}

export async function openLmdbStore(options: LmdbStoreOptions): Promise<LmdbStore> {
  const store = new LmdbStore(options);
  await store.init();
  return store;
}
