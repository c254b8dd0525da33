// The checks and plans both SnapshotStore adapters share (lmdb-store.ts, mongo-store.ts), so they
// accept and refuse exactly the same inputs: identifiers, JSON values, blobs, deferrals, fences
// and commits; and the declared read-model indexes, which say what a list may ask and how it is
// read. A refused input is a StoreUsageError (a bug in the caller), never a result code.
import {
  blobBytesMax, blobPartBytes, commitItemsMax, identifierBytesMax, jsonDepthMax, listOffsetMax, listPageSizeMax, outboxReasonCharsMax, outboxRowId, StoreUsageError,
} from './store.ts';
import type {
  BatchCommitResult, CommitWrite, IndexValue, JsonObject, ListQuery, OutboxDeferral, OutboxRow, ReadModelIndex,
} from './store.ts';

// ---- validation shared by both adapters, so they accept and refuse exactly the same inputs ----

function fail(message: string): never {
  throw new StoreUsageError(message);
}

/** Keys end up inside LMDB keys (≤ 1978 bytes, no NUL) and MongoDB _ids. */
export function assertIdentifier(what: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0) fail(`${what} must be a non-empty string`);
  if (value.includes('\0')) fail(`${what} must not contain NUL`);
  if (Buffer.byteLength(value, 'utf8') > identifierBytesMax) fail(`${what} is longer than ${identifierBytesMax} bytes`);
}

const collectionNamePattern = /^[A-Za-z][A-Za-z0-9_]{0,62}$/;
export function assertCollection(collection: string): void {
  if (!collectionNamePattern.test(collection)) fail(`collection name ${JSON.stringify(collection)} is not [A-Za-z][A-Za-z0-9_]{0,62}`);
}

export function assertCount(what: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) fail(`${what} must be an integer in [${min}, ${max}]`);
}

export function assertNonNegativeInteger(what: string, value: number): void {
  assertCount(what, value, 0, Number.MAX_SAFE_INTEGER);
}

export function assertLimit(what: string, value: number, max: number): void {
  assertCount(what, value, 1, max);
}

/** JSON only: no undefined, bigint, NaN/Infinity, Date, Map, class instances or cycles. */
export function assertJson(what: string, value: unknown, depth = 0): void {
  if (depth > jsonDepthMax) fail(`${what} is nested deeper than ${jsonDepthMax}`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail(`${what} is not a finite number`);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) assertJson(what, item, depth + 1);
    return;
  }
  if (typeof value === 'object') {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) fail(`${what} contains a non-plain object`);
    for (const [key, item] of Object.entries(value)) {
      if (key.startsWith('$')) fail(`${what} has a key starting with $ (${key})`); // MongoDB operator syntax
      assertJson(what, item, depth + 1);
    }
    return;
  }
  fail(`${what} contains a ${typeof value}, which is not JSON`);
}

export function assertJsonObject(what: string, value: unknown): asserts value is JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(`${what} must be a JSON object`);
  assertJson(what, value);
}

export function assertBlob(key: string, bytes: Uint8Array): void {
  assertIdentifier('blob key', key);
  if (!(bytes instanceof Uint8Array)) fail('blob bytes must be a Uint8Array');
  if (bytes.byteLength > blobBytesMax) fail(`blob is larger than ${blobBytesMax} bytes`);
}

/** One chunk of a blob stream, copied (the source may reuse its buffer once the next is asked for). */
export function blobStreamChunk(chunk: unknown): Buffer {
  if (!(chunk instanceof Uint8Array)) fail('blob stream chunks must be Uint8Arrays');
  return Buffer.from(chunk);
}

/**
 * Reads a blob stream in parts of at least `blobPartBytes` (the last one may be smaller, and
 * there is none for an empty stream), counting bytes against `blobBytesMax`: the part logic both
 * adapters share, so they split and refuse streams exactly alike.
 */
export async function* blobParts(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let totalBytes = 0;
  for await (const chunk of chunks) {
    const copy = blobStreamChunk(chunk);
    totalBytes += copy.byteLength;
    if (totalBytes > blobBytesMax) fail(`blob is larger than ${blobBytesMax} bytes`);
    if (copy.byteLength === 0) continue;
    pending.push(copy);
    pendingBytes += copy.byteLength;
    if (pendingBytes >= blobPartBytes) {
      const part = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      yield part;
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending, pendingBytes);
}

export function assertDeferral(deferral: OutboxDeferral): void {
  assertIdentifier('outbox id', deferral.id);
  assertNonNegativeInteger('notBeforeMs', deferral.notBeforeMs);
  assertNonNegativeInteger('attempts', deferral.attempts);
  if (deferral.reason !== null && (typeof deferral.reason !== 'string' || deferral.reason.length > outboxReasonCharsMax)) {
    fail(`reason must be null or a string of at most ${outboxReasonCharsMax} characters`);
  }
  if (typeof deferral.parked !== 'boolean') fail('parked must be a boolean');
}

/** The row as a deferral leaves it: unclaimed, with what was recorded (a null reason clears it). */
export function deferredRow(row: OutboxRow, deferral: OutboxDeferral): OutboxRow {
  const next: OutboxRow = {
    ...row, claimOwner: null, claimExpiresAtMs: 0, notBeforeMs: deferral.notBeforeMs, attempts: deferral.attempts, parked: deferral.parked,
  };
  if (deferral.reason === null) delete next.reason;
  else next.reason = deferral.reason;
  return next;
}

export function assertFence(shard: number, token: number): void {
  assertNonNegativeInteger('fence.shard', shard);
  assertNonNegativeInteger('fence.token', token);
}

/** Validates each write: the valid ones, and a failure per invalid one (by index). */
export function partitionValidWrites(
  writes: readonly CommitWrite[],
  indexes: IndexCatalog,
): { valid: Array<{ index: number; write: CommitWrite }>; results: BatchCommitResult[] } {
  const valid: Array<{ index: number; write: CommitWrite }> = [];
  const results: BatchCommitResult[] = [];
  writes.forEach((write, index) => {
    try {
      assertCommitWrite(write, indexes);
      valid.push({ index, write });
      results.push('ok'); // replaced by the write's outcome
    } catch (error) {
      results.push({ error });
    }
  });
  return { valid, results };
}

/** Every check a commit must pass before any byte is written. */
export function assertCommitWrite(write: CommitWrite, indexes: IndexCatalog): void {
  assertIdentifier('actorKey', write.actorKey);
  assertNonNegativeInteger('expectedVersion', write.expectedVersion);
  assertNonNegativeInteger('newVersion', write.newVersion);
  if (write.newVersion <= write.expectedVersion) fail('newVersion must be greater than expectedVersion');
  assertJson('state', write.state);
  assertFence(write.fence.shard, write.fence.token);
  const events = write.events ?? [];
  for (const [what, items] of [['appliedCommands', write.appliedCommands], ['outbox', write.outbox],
    ['readModels', write.readModels], ['events', events]] as const) {
    if (items.length > commitItemsMax) fail(`${what} has more than ${commitItemsMax} items`);
  }
  const commandIds = new Set<string>();
  for (const command of write.appliedCommands) {
    assertIdentifier('commandId', command.commandId);
    if (commandIds.has(command.commandId)) fail(`commandId ${command.commandId} appears twice in one commit`);
    commandIds.add(command.commandId);
    assertJson('reply', command.reply);
  }
  write.outbox.forEach((row, index) => {
    const expectedId = outboxRowId(write.actorKey, write.newVersion, index);
    if (row.id !== expectedId) fail(`outbox row ${index} must have id ${expectedId}`);
    assertIdentifier('outbox id', row.id);
    assertIdentifier('outbox topic', row.topic);
    if (row.partitionKey !== undefined) assertIdentifier('outbox partitionKey', row.partitionKey);
    assertJson('outbox payload', row.payload);
  });
  const upserted = new Set<string>();
  for (const model of write.readModels) {
    if (model.doc === null) {
      assertCollection(model.collection);
      assertIdentifier('read model id', model.id);
    } else {
      assertReadModelDoc(indexes, model.collection, model.id, model.doc);
    }
    const key = `${model.collection}\0${model.id}`;
    if (upserted.has(key)) fail(`read model ${model.collection}/${model.id} appears twice in one commit`);
    upserted.add(key);
  }
  for (const event of events) assertJson('event', event);
}

// ---- read-model indexes ----

/** The declared indexes, grouped by collection; built once per store. */
export class IndexCatalog {
  private readonly byCollection = new Map<string, ReadModelIndex[]>();

  constructor(indexes: readonly ReadModelIndex[]) {
    const names = new Set<string>();
    for (const index of indexes) {
      assertCollection(index.collection);
      if (!collectionNamePattern.test(index.name)) fail(`index name ${JSON.stringify(index.name)} is invalid`);
      if (names.has(`${index.collection}.${index.name}`)) fail(`index ${index.collection}.${index.name} is declared twice`);
      names.add(`${index.collection}.${index.name}`);
      const fields = [...index.equal, index.orderBy];
      if (new Set(fields).size !== fields.length) fail(`index ${index.name} repeats a field`);
      for (const field of fields) if (!collectionNamePattern.test(field)) fail(`index field ${JSON.stringify(field)} is invalid`);
      const list = this.byCollection.get(index.collection) ?? [];
      list.push(index);
      this.byCollection.set(index.collection, list);
    }
  }

  all(): ReadModelIndex[] {
    return [...this.byCollection.values()].flat();
  }

  of(collection: string): readonly ReadModelIndex[] {
    return this.byCollection.get(collection) ?? [];
  }
}

function isIndexValue(value: unknown): value is IndexValue {
  if (typeof value === 'string') return !value.includes('\0') && Buffer.byteLength(value, 'utf8') <= identifierBytesMax;
  if (typeof value === 'number') return Number.isFinite(value);
  return typeof value === 'boolean';
}

/** The index's values for a doc: equal fields in declared order, then the orderBy field. */
export function indexValuesOf(index: ReadModelIndex, doc: JsonObject): IndexValue[] | null {
  const values: IndexValue[] = [];
  for (const field of [...index.equal, index.orderBy]) {
    const value = doc[field];
    if (!isIndexValue(value)) return null;
    values.push(value);
  }
  return values;
}

export function assertReadModelDoc(indexes: IndexCatalog, collection: string, id: string, doc: JsonObject): void {
  assertCollection(collection);
  assertIdentifier('read model id', id);
  assertJsonObject(`${collection} doc`, doc);
  for (const index of indexes.of(collection)) {
    if (indexValuesOf(index, doc) === null) {
      fail(`${collection}/${id}: index ${index.name} needs ${[...index.equal, index.orderBy].join(', ')} as strings (≤ ${identifierBytesMax} bytes, no NUL), finite numbers or booleans`);
    }
  }
}

export type ListPlan =
  | { kind: 'primary'; descending: boolean; offset: number; limit: number }
  | { kind: 'index'; index: ReadModelIndex; equalValues: IndexValue[]; descending: boolean; offset: number; limit: number };

/** Chooses how to answer a list query; a query no declared index answers is a bug, not a scan. */
export function planList(indexes: IndexCatalog, collection: string, query: ListQuery): ListPlan {
  assertCollection(collection);
  assertLimit('limit', query.limit, listPageSizeMax);
  const offset = query.offset ?? 0;
  assertCount('offset', offset, 0, listOffsetMax);
  const descending = (query.direction ?? 'asc') === 'desc';
  const where = query.where ?? {};
  const whereFields = Object.keys(where);
  if (whereFields.length === 0 && query.orderBy === undefined) {
    return { kind: 'primary', descending, offset, limit: query.limit };
  }
  const index = indexes.of(collection).find((candidate) =>
    candidate.orderBy === query.orderBy &&
    candidate.equal.length === whereFields.length &&
    candidate.equal.every((field) => Object.hasOwn(where, field)));
  if (index === undefined) {
    fail(`no index on ${collection} answers where [${whereFields.join(', ')}] orderBy ${query.orderBy ?? '(id)'}`);
  }
  const equalValues = index.equal.map((field) => {
    const value = where[field];
    if (!isIndexValue(value)) fail(`where.${field} must be a string, finite number or boolean`);
    return value;
  });
  return { kind: 'index', index, equalValues, descending, offset, limit: query.limit };
}
