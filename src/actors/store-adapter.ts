// The actor runtime's and shard worker's view of the SnapshotStore (a thin mapping; the store's
// contract suite is what holds the semantics).
import type { CommitWrite, JsonObject, ReadModelIndex, SnapshotStore } from '../store/store.ts';
import type { ActorCommit, ActorStore, BatchCommitResult, CommitResult, OutboxRowWrite } from './actor-store.ts';
import type { JsonValue } from './envelope.ts';
import { outboxTopicCommandBatches, outboxTopicCommands } from './runtime.ts';
import type { WorkerStore } from './worker-store.ts';
import { quarantineReadModelIndexes } from './quarantine.ts';
import { actorPartsCollection } from './actor-parts.ts';

export const timersCollection = 'timers';
/** One document per shard worker, refreshed every lease round (admin: ListWorkers). */
export const workerStatsCollection = 'worker_stats';

/** Read-model indexes the runtime itself needs (timers per shard, quarantined actors and their dead letters). */
export const runtimeReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: timersCollection, name: 'by_shard_due', equal: ['shard'], orderBy: 'dueAtMs' },
  ...quarantineReadModelIndexes,
];

export interface RuntimeStore extends ActorStore, WorkerStore {
  raiseFence(shard: number, token: number): Promise<'ok' | 'fenced'>;
}

export function runtimeStore(store: SnapshotStore): RuntimeStore {
  return {
    load: (actorId) => store.load(actorId),
    async getAppliedReply(actorId, commandId) {
      const applied = await store.getAppliedReply(actorId, commandId);
      return applied === null ? undefined : applied.reply;
    },
    loadPart: (partId) => store.get(actorPartsCollection, partId),
    commit: (write: ActorCommit): Promise<CommitResult> => store.commit(toStoreWrite(write)),
    commitBatch: (writes: readonly ActorCommit[]): Promise<BatchCommitResult[]> => store.commitBatch(writes.map(toStoreWrite)),
    commitAllOrNothing: (writes: readonly ActorCommit[]): Promise<boolean> => store.commitAllOrNothing(writes.map(toStoreWrite)),
    raiseFence: (shard, token) => store.raiseFence(shard, token),
    async listTimers(shard) {
      const timers: Array<{ actorId: string; dueAtMs: number }> = [];
      for (let offset = 0; ; offset += 1_000) {
        const page = await store.list(timersCollection, { where: { shard }, orderBy: 'dueAtMs', direction: 'asc', offset, limit: 1_000 });
        for (const item of page.items) timers.push({ actorId: item.id, dueAtMs: Number(item.doc.dueAtMs) });
        if (page.items.length < 1_000 || offset + 1_000 >= 100_000) break;
      }
      return timers;
    },
    async pendingCommandRows(limit) {
      // Both command topics, oldest first (the outbox seq is one sequence across topics).
      const rows = [...(await store.outboxPending(outboxTopicCommandBatches, limit)), ...(await store.outboxPending(outboxTopicCommands, limit))];
      rows.sort((a, b) => a.seq - b.seq);
      return rows.slice(0, limit).map((row): OutboxRowWrite => ({ id: row.id, topic: row.topic, payload: row.payload as JsonValue }));
    },
    markOutboxDone: (ids) => store.outboxMarkDone(ids),
    reportWorkerStats: (stats) => store.put(workerStatsCollection, stats.workerId, { ...stats, ownedShards: [...stats.ownedShards] }),
  };
}

/**
 * The store's shape of an actor write. Everything the runtime built for this write is used once,
 * so it is handed over as is (no copies): the store only reads it.
 */
function toStoreWrite(write: ActorCommit): CommitWrite {
  return {
    actorKey: write.actorId,
    expectedVersion: write.expectedVersion,
    newVersion: write.newVersion,
    state: write.state as JsonObject,
    fence: write.fence,
    appliedCommands: write.appliedCommands,
    outbox: write.outbox,
    readModels: write.readModels,
  };
}
