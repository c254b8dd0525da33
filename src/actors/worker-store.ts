// What a shard worker needs of the store (timers, relays, fencing, its published health), apart
// from shard-worker.ts so that the store adapter and the worker share one contract.
import type { OutboxRowWrite } from './actor-store.ts';

export interface WorkerStore {
  /** Actors of `shard` with a pending timer. */
  listTimers(shard: number): Promise<Array<{ actorId: string; dueAtMs: number }>>;
  /** Command rows not yet relayed (left by a worker that crashed between commit and append). */
  pendingCommandRows(limit: number): Promise<OutboxRowWrite[]>;
  markOutboxDone(ids: readonly string[]): Promise<void>;
  /** Refuse, from now on, store writes under a lower token for `shard` (the previous owner's). */
  raiseFence(shard: number, token: number): Promise<'ok' | 'fenced'>;
  /** Publishes this worker's health for the admin service (actors in memory, memory, shards). */
  reportWorkerStats(stats: WorkerStats): Promise<void>;
}

export interface WorkerStats {
  readonly workerId: string;
  readonly ownedShards: readonly number[];
  readonly actorsInMemory: number;
  /** Their estimated bytes (src/actors/actor-memory.ts). */
  readonly actorBytesInMemory: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly reportedAtMs: number;
}
