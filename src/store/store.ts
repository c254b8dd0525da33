// SnapshotStore port: actor snapshots, the outbox, read models and private blobs (KYC documents).
// Two adapters implement it (lmdb-store.ts: embedded, mongo-store.ts: MongoDB) and both pass
// test/integration/store-contract.test.ts. See docs/store.md for layout and guarantees.
//
// The one write that matters is `commit`: an actor's new state, its dedupe replies, events, outbox
// rows and read-model upserts land together or not at all (DESIGN principle 3), guarded by a
// compare-and-set on the actor's version and by the shard's fencing token. Refusals are result
// codes; exceptions mean a bug in the caller (StoreUsageError) or broken infrastructure.
// The input checks and list plans both adapters share are in store-checks.ts.

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export interface ActorSnapshot {
  version: number;
  state: JsonValue;
}

/** The shard that owns the actor and the lease's fencing token of the owner that writes. */
export interface ShardFence {
  shard: number;
  token: number;
}

/** A command applied by this commit and the reply to replay when it is delivered again. */
export interface AppliedCommand {
  commandId: string;
  reply: JsonValue;
}

export interface OutboxInput {
  /** Must be `outboxRowId(actorKey, newVersion, index)`: the effect's idempotency key. */
  id: string;
  topic: string;
  payload: JsonValue;
  partitionKey?: string;
}

export interface ReadModelUpsert {
  collection: string;
  id: string;
  /** The whole new document (replaces the old one); null deletes it. */
  doc: JsonObject | null;
}

export interface CommitWrite {
  actorKey: string;
  /** The version the writer loaded; 0 for an actor that has never been written. */
  expectedVersion: number;
  newVersion: number;
  /** Any JSON (callers encode decimals as strings; bigint is refused). */
  state: JsonValue;
  fence: ShardFence;
  appliedCommands: readonly AppliedCommand[];
  outbox: readonly OutboxInput[];
  readModels: readonly ReadModelUpsert[];
  events?: readonly JsonValue[];
}

/**
 * ok: everything was written and is durable.
 * version_conflict: the stored version is not expectedVersion (another owner wrote): reload.
 * fenced: a higher fencing token was seen for the shard: this owner lost the shard; stop.
 * Refused writes leave no trace (not even a raised fence).
 */
export type CommitResult = 'ok' | 'version_conflict' | 'fenced';
/** A write of a batch that threw (a bug or broken infrastructure): nothing of it was written. */
export interface CommitFailure {
  readonly error: unknown;
}
export type BatchCommitResult = CommitResult | CommitFailure;
export type FenceResult = 'ok' | 'fenced';

export interface AppliedReply {
  reply: JsonValue;
}

export interface StoredEvent {
  version: number;
  index: number;
  event: JsonValue;
}

export interface OutboxRow {
  id: string;
  topic: string;
  /** Commit order within the topic: larger means committed later. */
  seq: number;
  actorKey: string;
  version: number;
  payload: JsonValue;
  partitionKey?: string;
  /** The dispatcher holding the claim, null when unclaimed (or released). */
  claimOwner: string | null;
  /** The claim is live while claimExpiresAtMs > nowMs; 0 when never claimed. */
  claimExpiresAtMs: number;
  /**
   * When the row was committed, by the store's wall clock (ms): how long work has waited is real
   * time. Absent on rows written before this was recorded.
   */
  createdAtMs?: number;
  // What the last `outboxDefer` recorded. A row never deferred has none of these: it is due since
  // its commit (rows written before deferral existed read the same way).
  /** Not claimable before this time (the claimers' clock, ms); 0 after an operator's retry. */
  notBeforeMs?: number;
  /** Failed attempts so far. */
  attempts?: number;
  /** Why it waits: the last failure (≤ `outboxReasonCharsMax` characters). */
  reason?: string;
  /** The last attempt parked it: the work waits on operations and is retried slowly. */
  parked?: boolean;
}

/** A claimed row handed back until a later time, with what its holder learnt (`outboxDefer`). */
export interface OutboxDeferral {
  readonly id: string;
  /** Not claimable before this time (ms, the clock the claimers pass as `nowMs`). */
  readonly notBeforeMs: number;
  /** Failed attempts so far (kept with the row: backoff and operations continue from it). */
  readonly attempts: number;
  /** The last failure, ≤ `outboxReasonCharsMax` characters; null when there is none. */
  readonly reason: string | null;
  /** True when the work waits on operations (the chain refuses it), not on a passing failure. */
  readonly parked: boolean;
}

/**
 * An operator's action on a waiting row (`outboxRetryNow`, `outboxResolve`). Only rows that were
 * deferred at least once are acted on; a row a worker holds a live claim on right now is left
 * alone (`claimed`): its attempt is running and decides.
 */
export type OutboxRowAction =
  | { readonly result: 'ok'; readonly row: OutboxRow }
  | { readonly result: 'claimed'; readonly row: OutboxRow }
  | { readonly result: 'not_found' };

export type IndexValue = string | number | boolean;

/**
 * A secondary index over a read-model collection: equality on `equal` fields, ordered by
 * `orderBy`, ties broken by document id. Fields are top-level fields of the doc; every doc written
 * to the collection must carry them as strings, finite numbers or booleans (one type per field).
 */
export interface ReadModelIndex {
  collection: string;
  name: string;
  equal: readonly string[];
  orderBy: string;
}

export interface ListQuery {
  /** Equality on exactly the `equal` fields of a declared index (or empty: order by id). */
  where?: Readonly<Record<string, IndexValue>>;
  /** The index's orderBy field; omitted means order by document id (only without `where`). */
  orderBy?: string;
  direction?: 'asc' | 'desc';
  offset?: number;
  limit: number;
}

export interface ListItem {
  id: string;
  doc: JsonObject;
}

export interface ListPage {
  total: number;
  items: ListItem[];
}

export type PutIfAbsentResult = { status: 'inserted' } | { status: 'exists'; doc: JsonObject };

export interface SnapshotStore {
  /** Opens sub-databases / creates indexes. Call once before anything else. */
  init(): Promise<void>;
  close(): Promise<void>;

  load(actorKey: string): Promise<ActorSnapshot | null>;
  commit(write: CommitWrite): Promise<CommitResult>;
  /**
   * Several commits, each checked and applied exactly as `commit` would in this order (a later
   * write sees an earlier one's effects; a refused write leaves no trace and does not affect the
   * others), made durable together: one sync for the whole batch where the adapter allows it.
   * Results are in the order of `writes`; a write `commit` would reject (it breaks the usage
   * rules, or writing it threw) is a `CommitFailure` with that error, writes nothing, and does not
   * keep the others from landing.
   */
  commitBatch(writes: readonly CommitWrite[]): Promise<BatchCommitResult[]>;
  /**
   * Linked writes, all or none: each checked and applied as `commit` would, in this order (a later
   * write sees an earlier one's effects), and made durable together — `true` — or, when any of
   * them would be refused (or breaks the usage rules), none is written — `false`. For writes
   * whose effects must not be seen apart: the runtime applies commands one actor sends to
   * another on the same worker in the sender's own commit (docs/actors.md, "Linked steps"), with
   * no outbox row between them, which is only safe if the receiver's write cannot land without
   * the sender's or the sender's without the receiver's. Rejects (writing nothing) when the
   * storage itself fails.
   */
  commitAllOrNothing(writes: readonly CommitWrite[]): Promise<boolean>;
  /** Raises the shard's token without writing an actor (a new owner fences out the old one). */
  raiseFence(shard: number, token: number): Promise<FenceResult>;
  /** The stored reply of an applied command, while it is inside the retention window. */
  getAppliedReply(actorKey: string, commandId: string): Promise<AppliedReply | null>;
  /**
   * Retention: removes an actor's snapshot, its dedupe log and its events, only if the stored
   * version is still `expectedVersion` (compare-and-set: an actor written since is left alone,
   * 'version_conflict'; none stored: 'not_found'). A live owner's next write of that actor is then
   * refused as a version conflict and the owner reloads it (absent). Outbox rows, read models and
   * fences are not touched.
   */
  deleteActor(actorKey: string, expectedVersion: number): Promise<'ok' | 'version_conflict' | 'not_found'>;
  /** Events committed with versions > afterVersion, in (version, index) order. */
  loadEvents(actorKey: string, afterVersion: number, limit: number): Promise<StoredEvent[]>;

  /** Rows not yet marked done, claimed or not, with seq > afterSeq, in commit order. */
  outboxPending(topic: string, limit: number, afterSeq?: number): Promise<OutboxRow[]>;
  /**
   * Claims up to `limit` rows that are not done, not under a live claim and due (never deferred, or
   * deferred until `nowMs` or earlier). Order: rows never deferred first, in commit order (new work
   * is never queued behind retries), then deferred rows by due time, oldest first (commit order
   * between equal times). Rows deferred into the future are not read at all, however many there are.
   */
  outboxClaim(topic: string, owner: string, limit: number, leaseMs: number, nowMs: number): Promise<OutboxRow[]>;
  /**
   * Extends to `nowMs + leaseMs` the claims `owner` still holds on these rows (live, or lapsed with
   * nobody having claimed the row since), and answers their ids. A row another owner claimed, a
   * released row and a row marked done are left alone and not answered: the caller has lost it.
   */
  outboxRenew(ids: readonly string[], owner: string, leaseMs: number, nowMs: number): Promise<string[]>;
  /** Drops the claims that `owner` holds on these rows (others' claims are left alone). */
  outboxRelease(ids: readonly string[], owner: string): Promise<void>;
  /**
   * Drops `owner`'s claims on these rows (as `outboxRelease`) and keeps each from being claimed
   * before its `notBeforeMs`, recording its attempts, reason and whether it is parked; answers
   * the ids deferred. A row `owner` no longer holds (another claimed it, released, done) is left
   * alone and not answered. The retry wait of a row is then the store's, not a worker's: nobody
   * holds or renews a row while it waits.
   */
  outboxDefer(deferrals: readonly OutboxDeferral[], owner: string): Promise<string[]>;
  /**
   * Rows of the topic deferred at least once and not done (waiting, or due and maybe claimed
   * again), with what their last deferral recorded, in commit order, seq > afterSeq.
   */
  outboxWaiting(topic: string, limit: number, afterSeq?: number): Promise<OutboxRow[]>;
  /** Operations: a waiting row of the topic becomes due at once, first among deferred rows. */
  outboxRetryNow(topic: string, id: string, nowMs: number): Promise<OutboxRowAction>;
  /** Operations: a waiting row of the topic is deleted as done by hand (the caller logs why). */
  outboxResolve(topic: string, id: string, nowMs: number): Promise<OutboxRowAction>;
  /** Deletes the rows: they are never returned again. Unknown ids are ignored. */
  outboxMarkDone(ids: readonly string[]): Promise<void>;
  /**
   * How many rows of the topic are not done, how many of those are under a live claim at `nowMs`,
   * deferred past `nowMs` and parked; each counted up to `countMax` (then `capped`), so a huge
   * backlog costs a bounded read.
   */
  outboxBacklog(topic: string, nowMs: number, countMax: number): Promise<OutboxBacklog>;

  get(collection: string, id: string): Promise<JsonObject | null>;
  put(collection: string, id: string, doc: JsonObject): Promise<void>;
  /** Atomic insert-if-missing; on a race exactly one caller gets 'inserted'. */
  putIfAbsent(collection: string, id: string, doc: JsonObject): Promise<PutIfAbsentResult>;
  remove(collection: string, id: string): Promise<boolean>;
  list(collection: string, query: ListQuery): Promise<ListPage>;

  /**
   * Private bytes (KYC documents). There is no listing; keys are never logged. A put replaces
   * whatever blob was under the key (whole or streamed); `getBlob` reads either kind whole.
   */
  putBlob(key: string, bytes: Uint8Array): Promise<void>;
  /**
   * Stores a blob from its bytes as they arrive, so the whole blob is never held in memory: they
   * are written in parts of about `blobPartBytes` while `chunks` is read. The blob becomes
   * readable under `key` (replacing what was there) only once every part is durable; until then
   * `getBlob(key)` answers what was there before. If `chunks` throws, or brings more than
   * `blobBytesMax` bytes (StoreUsageError), nothing is stored, the parts written so far are
   * removed, the previous blob stays, and the error propagates. Resolves with the byte count.
   * Parts of a stream cut short by a crash are removed when a store opens after
   * `blobStagingStaleMs` (StoreOptions).
   */
  putBlobStream(key: string, chunks: AsyncIterable<Uint8Array>): Promise<number>;
  getBlob(key: string): Promise<Uint8Array | null>;
  /** Removes the blob under the key (whole or streamed); false when there was none. */
  deleteBlob(key: string): Promise<boolean>;
}

export interface StoreOptions {
  /** Secondary indexes over read-model collections. Default: `defaultReadModelIndexes`. */
  readModelIndexes?: readonly ReadModelIndex[];
  /** Dedupe log retention: the last N applied commands per actor. Default 1,000. */
  appliedRepliesPerActorMax?: number;
  /**
   * A blob stream begun this long before a store opens is taken as cut short by a crash: its parts
   * are removed then. Default 1 hour (no upload lives that long: the edge cuts a body after 60 s).
   */
  blobStagingStaleMs?: number;
}

// Indexes the service's read models need; the composition root may pass its own list.
export const defaultReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: 'transactions', name: 'by_partner_user_created', equal: ['partnerId', 'userId'], orderBy: 'createdAtMs' },
  // Solana/Celo payouts the watcher polls by address, newest expiry first (src/chains/deposit-poller.ts).
  { collection: 'deposit_watch', name: 'by_network_expiry', equal: ['network'], orderBy: 'expiresAtMs' },
  // The deposits of one chain transaction (several when it paid several per-transaction addresses).
  { collection: 'deposits', name: 'by_chain_transaction', equal: ['network', 'onChainId'], orderBy: 'claimedAtMs' },
  // Finished payouts of one payment method, newest first: corridor health (src/edge/corridor-health.ts).
  { collection: 'settlement_samples', name: 'by_method_finished', equal: ['paymentMethod'], orderBy: 'finishedAtMs' },
  // Unmatched deposits, newest first, by any mix of the filters the partner API, the portal and the
  // admin CLI offer: owner (the partner, '' for none), state, network (src/actors/unmatched-documents.ts).
  ...unmatchedDepositIndexes(),
];

function unmatchedDepositIndexes(): ReadModelIndex[] {
  const filters = [['owner'], ['state'], ['network']] as const;
  const indexes: ReadModelIndex[] = [];
  for (let mask = 0; mask < 1 << filters.length; mask += 1) {
    const equal = filters.filter((_, bit) => (mask & (1 << bit)) !== 0).map(([field]) => field);
    indexes.push({ collection: 'unmatched_deposits', name: `by_${equal.length === 0 ? 'created' : equal.join('_')}`, equal, orderBy: 'createdAtMs' });
  }
  return indexes;
}

export const appliedRepliesPerActorDefault = 1_000;
export const identifierBytesMax = 256;
export const listPageSizeMax = 1_000;
export const listOffsetMax = 100_000;
export const commitItemsMax = 1_000;
export const outboxBatchMax = 1_000;
/** Largest `countMax` of `outboxBacklog`. */
export const outboxBacklogCountMax = 100_000;
/** Longest `reason` a deferral records (characters). */
export const outboxReasonCharsMax = 500;

export interface OutboxBacklog {
  /** Rows not done (up to countMax). */
  readonly rows: number;
  /** Of those, rows under a live claim (being worked on). */
  readonly claimed: number;
  /** Of those, rows deferred past `nowMs`: waiting for a retry (parked ones included). */
  readonly deferred: number;
  /** Of those, rows whose last attempt parked them (waiting on operations), due or not. */
  readonly parked: number;
  /** True when there were more than countMax rows: the numbers are lower bounds. */
  readonly capped: boolean;
  /** `createdAtMs` of the oldest row not done (the first in commit order); null when none or unknown. */
  readonly oldestCreatedAtMs: number | null;
}
export const blobBytesMax = 15 * 1024 * 1024; // under MongoDB's 16 MiB document limit
/** `putBlobStream` writes a part once this many bytes have arrived (the last part may be smaller). */
export const blobPartBytes = 256 * 1024;
export const blobStagingStaleMsDefault = 60 * 60 * 1000;
export const jsonDepthMax = 64;

/** A caller broke the port's contract (a bug): bad identifier, unindexed query, non-JSON value. */
export class StoreUsageError extends Error {
  override readonly name = 'StoreUsageError';
}

export function outboxRowId(actorKey: string, version: number, index: number): string {
  return `${actorKey}:${version}:${index}`;
}
