// Small "actors" of the webhooks role that are written directly with the store's versioned commit
// rather than through the shard runtime: the per-partner event log (its sequence counter) and the
// per-partner destination. Each is one actor key; a change loads the snapshot, decides, and commits
// with compare-and-set on the version, together with its read models and outbox rows (one atomic
// write, like any actor). A concurrent writer makes the commit a `version_conflict`; we reload and
// decide again. That is what makes the sequence exactly-once with several dispatchers running.
//
// The store also fences commits per shard. These actors are not on a shard of the runtime, so they
// use one reserved fence slot far above any shard number (SHARDS ≤ 16,384) with a constant token;
// nobody else raises it, so it never fences us out. Only the version guards these writes.
import { outboxRowId, type JsonValue, type OutboxInput, type ReadModelUpsert, type ShardFence, type SnapshotStore } from '../store/store.ts';

export const webhookFence: ShardFence = { shard: 1_000_000_007, token: 1 };

/** Retries of one change under contention before giving up (the caller retries later). */
export const casRetriesMax = 32;

export interface CasChange {
  readonly state: JsonValue;
  readonly readModels?: readonly ReadModelUpsert[];
  readonly outbox?: ReadonlyArray<Omit<OutboxInput, 'id'>>;
}

export interface CasDecision<Result> {
  /** null: nothing to write (the result stands as is). */
  readonly change: CasChange | null;
  readonly result: Result;
}

export class CasContentionError extends Error {
  override readonly name = 'CasContentionError';
}

/**
 * Applies `decide` to the actor's current state and commits the change with compare-and-set.
 * `decide` may read other documents; whatever it read is consistent with the state it is given
 * as long as every writer of those documents goes through this actor (CAS rejects interleavings).
 */
export async function casUpdate<Result>(
  store: SnapshotStore,
  actorKey: string,
  decide: (state: JsonValue | null, version: number) => Promise<CasDecision<Result>>,
): Promise<Result> {
  for (let attempt = 0; attempt < casRetriesMax; attempt += 1) {
    const snapshot = await store.load(actorKey);
    const version = snapshot?.version ?? 0;
    const decision = await decide(snapshot?.state ?? null, version);
    if (decision.change === null) return decision.result;
    const newVersion = version + 1;
    const result = await store.commit({
      actorKey,
      expectedVersion: version,
      newVersion,
      state: decision.change.state,
      fence: webhookFence,
      appliedCommands: [],
      outbox: (decision.change.outbox ?? []).map((row, index) => ({ ...row, id: outboxRowId(actorKey, newVersion, index) })),
      readModels: [...(decision.change.readModels ?? [])],
    });
    if (result === 'ok') return decision.result;
    if (result === 'fenced') throw new Error(`the webhooks fence slot ${webhookFence.shard} was raised by someone else`);
    // version_conflict: another writer got there first; decide again on its state.
  }
  throw new CasContentionError(`${actorKey}: gave up after ${casRetriesMax} conflicting writes`);
}
