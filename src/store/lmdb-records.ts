// The sub-databases of the embedded store (lmdb-store.ts) and how records live in them: the record
// types, opening them, outbox rows in their two homes (`outbox` and `outboxDeferred`, see the
// store's header), blobs and their streamed parts, and read-model documents with their index
// entries. Every function here runs inside one of the store's write transactions (or reads one
// snapshot); none opens a transaction itself.
import type { Database, Key, RootDatabase } from 'lmdb';
import { indexValuesOf, type IndexCatalog } from './store-checks.ts';
import type { CommitWrite, IndexValue, JsonObject, JsonValue, OutboxRow, ReadModelIndex } from './store.ts';

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

/** A streamed blob: its parts are `blobChunks` [stagingId, 0 … parts-1]. */
export interface BlobManifest {
  stagingId: string;
  parts: number;
  bytes: number;
}

/** A blob stream being written (removed when it is committed or abandoned). */
export interface BlobStaging {
  startedAtMs: number;
}

export interface ActorRecord {
  version: number;
  state: JsonValue;
  /** Sequence of the last applied command of this actor (dedupe log position). */
  appliedSeq: number;
}

export interface AppliedRecord {
  seq: number;
  reply: JsonValue;
}

export type OutboxRecord = OutboxRow;
export type OutboxKey = [string, number];

/** Where a row is: `outbox` (never deferred) or `outboxDeferred`, both keyed [topic, seq]. */
export interface LocatedRow {
  readonly deferred: boolean;
  readonly key: OutboxKey;
  readonly row: OutboxRecord;
}

// Sorts after every primitive that ordered-binary produces: the exclusive end of a key prefix.
export const prefixEnd = Buffer.from([0xff]);
export const outboxSeqKey = 'outboxSeq';
export const indexDefinitionKey = 'indexDefinition';

export interface SubDatabases {
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
export function removeBlob(dbs: SubDatabases, key: string): boolean {
  const whole = dbs.blobs.get(key) !== undefined;
  if (whole) dbs.blobs.removeSync(key);
  const manifest = dbs.blobMeta.get(['manifest', key]) as BlobManifest | undefined;
  if (manifest === undefined) return whole;
  removeParts(dbs, manifest.stagingId);
  dbs.blobMeta.removeSync(['manifest', key]);
  return true;
}

/** An uncommitted stream's parts and its staging entry. */
export function removeStaging(dbs: SubDatabases, stagingId: string): void {
  removeParts(dbs, stagingId);
  dbs.blobMeta.removeSync(['staging', stagingId]);
}

export function removeParts(dbs: SubDatabases, stagingId: string): void {
  const keys = [...dbs.blobChunks.getKeys({ start: [stagingId], end: [stagingId, prefixEnd] })];
  for (const key of keys) dbs.blobChunks.removeSync(key);
}

// ---- outbox rows in their two homes (see the header) ----

export function locate(dbs: SubDatabases, id: string): LocatedRow | null {
  const freshKey = dbs.outboxIds.get(id);
  const fresh = freshKey === undefined ? undefined : dbs.outbox.get(freshKey);
  if (freshKey !== undefined && fresh !== undefined) return { deferred: false, key: freshKey, row: fresh };
  const deferredKey = dbs.outboxDeferredIds.get(id);
  const deferred = deferredKey === undefined ? undefined : dbs.outboxDeferred.get(deferredKey);
  return deferredKey !== undefined && deferred !== undefined ? { deferred: true, key: deferredKey, row: deferred } : null;
}

/**
 * Removes row `id` wherever it is (marked done). A fresh row, the common case, goes without its
 * value being read: a relayed command row is marked done once per relay, and decoding its
 * envelopes only to delete them was the largest read of a hot acceptance's batches.
 */
export function removeRow(dbs: SubDatabases, id: string): void {
  const freshKey = dbs.outboxIds.get(id);
  if (freshKey !== undefined && dbs.outbox.doesExist(freshKey)) {
    dbs.outbox.removeSync(freshKey);
    dbs.outboxIds.removeSync(id);
    return;
  }
  const located = locate(dbs, id);
  if (located !== null) removeLocated(dbs, located);
}

/** Writes the row back where it is (its due time unchanged). */
export function putLocated(dbs: SubDatabases, located: LocatedRow): void {
  (located.deferred ? dbs.outboxDeferred : dbs.outbox).putSync(located.key, located.row);
}

/** Writes `row` (which carries its new notBeforeMs) as a deferred row, moving it there if fresh. */
export function moveToDeferred(dbs: SubDatabases, located: LocatedRow, row: OutboxRecord): void {
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

export function removeLocated(dbs: SubDatabases, located: LocatedRow): void {
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
export function mergeBySeq(a: readonly OutboxRecord[], b: readonly OutboxRecord[], limit: number): OutboxRecord[] {
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

export function indexKey(index: ReadModelIndex, doc: JsonObject, id: string): Key[] | null {
  const values: IndexValue[] | null = indexValuesOf(index, doc);
  return values === null ? null : [index.collection, index.name, ...values, id];
}

/** The range of keys that start with `prefix`, forwards or backwards. */
export function orderedRange(prefix: Key[], descending: boolean): { start: Key; end: Key; reverse: boolean } {
  const low: Key = prefix;
  const high: Key = [...prefix, prefixEnd];
  return descending ? { start: high, end: low, reverse: true } : { start: low, end: high, reverse: false };
}

/** Opens (creating if missing) every sub-database of the environment. */
export function openSubDatabases(root: RootDatabase, plainMaps: boolean): SubDatabases {
  const values = valueEncoding(plainMaps);
  return {
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
}

// ---- read-model documents and their index entries ----

/** Doc and its index entries change together: stale entries of the old doc are removed first. */
export function upsertDoc(dbs: SubDatabases, catalog: IndexCatalog, collection: string, id: string, doc: JsonObject): void {
  const indexes = catalog.of(collection);
  // Only an indexed collection needs the previous doc (to remove its stale index entries).
  if (indexes.length > 0) {
    const previous = dbs.docs.get([collection, id]);
    if (previous !== undefined) removeIndexEntries(dbs, catalog, collection, id, previous);
  }
  dbs.docs.putSync([collection, id], doc);
  for (const index of indexes) {
    const key = indexKey(index, doc, id);
    if (key === null) throw new Error(`${collection}/${id} lacks fields of index ${index.name}`); // validated before
    dbs.docIndex.putSync(key, true);
  }
}

/** Removes a document and its index entries; false when there was none. */
export function removeDoc(dbs: SubDatabases, indexes: IndexCatalog, collection: string, id: string): boolean {
  const existing = dbs.docs.get([collection, id]);
  if (existing === undefined) return false;
  removeIndexEntries(dbs, indexes, collection, id, existing);
  dbs.docs.removeSync([collection, id]);
  return true;
}

/** Raises the shard's fencing token to `token`; false (nothing written) when a higher one is stored. */
export function raiseFenceIn(dbs: SubDatabases, shard: number, token: number): boolean {
  const stored = dbs.fences.get(shard);
  if (stored !== undefined && token < stored) return false;
  if (stored === undefined || token > stored) dbs.fences.putSync(shard, token);
  return true;
}

export function removeIndexEntries(dbs: SubDatabases, indexes: IndexCatalog, collection: string, id: string, doc: JsonObject): void {
  for (const index of indexes.of(collection)) {
    const key = indexKey(index, doc, id);
    if (key !== null) dbs.docIndex.removeSync(key);
  }
}

/**
 * Index definitions are remembered in `meta`; an index that is new or changed since the last
 * start is rebuilt from its collection, and one no longer declared is dropped. One transaction.
 */
export function reconcileIndexes(dbs: SubDatabases, indexes: IndexCatalog): void {
  const declared = new Map(indexes.all().map((index) => [`${index.collection}\n${index.name}`, index]));
  const storedKeys = [...dbs.meta.getKeys({ start: [indexDefinitionKey], end: [indexDefinitionKey, prefixEnd] })];
  for (const storedKey of storedKeys) {
    const [, collection, name] = storedKey as [string, string, string];
    const index = declared.get(`${collection}\n${name}`);
    if (index !== undefined && dbs.meta.get(storedKey) === JSON.stringify(index)) {
      declared.delete(`${collection}\n${name}`);
      continue;
    }
    dropIndexEntries(dbs, collection, name);
    dbs.meta.removeSync(storedKey);
  }
  for (const index of declared.values()) {
    dropIndexEntries(dbs, index.collection, index.name);
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

function dropIndexEntries(dbs: SubDatabases, collection: string, name: string): void {
  const keys = [...dbs.docIndex.getKeys({ start: [collection, name], end: [collection, name, prefixEnd] })];
  for (const key of keys) dbs.docIndex.removeSync(key);
}

// ---- what one commit appends: its dedupe-log rows and its outbox rows (lmdb-store.ts `commitInTxn`) ----

/**
 * Dedupe log: applied[actor, commandId] → reply and appliedOrder[actor, seq] → commandId. Each
 * applied command takes the next per-actor seq; entries older than the last
 * appliedRepliesPerActorMax seqs are trimmed in the same transaction. A commandId that is still
 * in the log keeps its first reply.
 */
export function appendApplied(dbs: SubDatabases, write: CommitWrite, appliedSeqBefore: number | null, appliedRepliesPerActorMax: number): number {
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
  const cutoff = seq - appliedRepliesPerActorMax; // seqs ≤ cutoff fall out of the window
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

/** Outbox seq: one global counter in `meta`, taken from the write transaction's `sequence`. */
export function appendOutbox(dbs: SubDatabases, write: CommitWrite, sequence: OutboxSequence): void {
  for (const row of write.outbox) {
    const seq = sequence.next();
    const record: OutboxRecord = {
      id: row.id, topic: row.topic, seq, actorKey: write.actorKey, version: write.newVersion,
      payload: row.payload, claimOwner: null, claimExpiresAtMs: 0, createdAtMs: Date.now(),
    };
    if (row.partitionKey !== undefined) record.partitionKey = row.partitionKey;
    if (dbs.outboxIds.get(row.id) !== undefined || dbs.outboxDeferredIds.get(row.id) !== undefined) throw new Error(`outbox id ${row.id} already exists`);
    dbs.outbox.putSync([row.topic, seq], record);
    dbs.outboxIds.putSync(row.id, [row.topic, seq]);
  }
}

/** The outbox sequence within one write transaction: `meta` is read at the first row and written once, by `save`. */
export interface OutboxSequence {
  next(): number;
  save(): void;
}

export function outboxSequence(dbs: SubDatabases): OutboxSequence {
  let last: number | null = null;
  return {
    next() {
      last = (last ?? Number(dbs.meta.get(outboxSeqKey) ?? 0)) + 1;
      return last;
    },
    save() {
      if (last !== null) dbs.meta.putSync(outboxSeqKey, last);
    },
  };
}
