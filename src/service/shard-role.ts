// The `shard` role: a shard worker running the actor runtime over the bus and the store.
import type { Bus } from '../bus/bus.ts';
import type { Leases } from '../bus/leases.ts';
import type { AnyActorBehavior, LogLevel } from '../actors/envelope.ts';
import { ActorRuntime } from '../actors/runtime.ts';
import { ShardWorker } from '../actors/shard-worker.ts';
import { quarantineOnStore } from '../actors/quarantine.ts';
import { runtimeStore } from '../actors/store-adapter.ts';
import { commandGroup } from '../bus/shards.ts';
import type { SnapshotStore } from '../store/store.ts';


export interface ShardRoleOptions {
  readonly bus: Bus;
  readonly leases: Leases;
  readonly store: SnapshotStore;
  readonly behaviors: readonly AnyActorBehavior[];
  readonly workerId: string;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly clock: { nowMs(): number };
  readonly leaseTtlMs?: number;
  /** See ShardWorkerOptions.leaseChangesPollMs. */
  readonly leaseChangesPollMs?: number;
  readonly readBlockMs?: number;
  /** See ShardWorkerOptions.stuckPendingMs. */
  readonly stuckPendingMs?: number;
  /**
   * Whether commands between actors of this worker are applied as linked steps, in the sender's
   * own commit (src/actors/linked-steps.ts; default true). Off, they travel as outbox rows and
   * local delivery (tests of that path turn it off).
   */
  readonly linkedSteps?: boolean;
  /** See ShardWorkerOptions.batchesInFlightMax. */
  readonly batchesInFlightMax?: number;
  /** Entries read per shard stream at once (see RuntimeOptions.batchSizeMax). */
  readonly batchSizeMax?: number;
  /** See RuntimeOptions.actorsInMemoryMax / actorBytesInMemoryMax. */
  readonly actorsInMemoryMax?: number;
  readonly actorBytesInMemoryMax?: number;
  /** See ShardWorkerOptions.timerRetryDelayMsMin / Max. */
  readonly timerRetryDelayMsMin?: number;
  readonly timerRetryDelayMsMax?: number;
  /** Test-only fault injection (see RuntimeOptions.afterCommit). */
  readonly afterCommit?: (actorId: string) => void;
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
}

export interface ShardRole {
  readonly worker: ShardWorker;
  readonly runtime: ActorRuntime;
  stop(): Promise<void>;
}

export async function startShardRole(options: ShardRoleOptions): Promise<ShardRole> {
  const store = runtimeStore(options.store);
  let worker: ShardWorker | null = null;
  const runtime = new ActorRuntime({
    bus: options.bus,
    store,
    behaviors: options.behaviors,
    keyPrefix: options.keyPrefix,
    shardCount: options.shardCount,
    group: commandGroup,
    consumer: options.workerId,
    clock: options.clock,
    fenceToken: (shard) => worker?.fenceToken(shard) ?? null,
    onOutbox: (rows) => {
      worker?.relayCommands(rows).catch((error: unknown) => {
        // The rows stay in the outbox; the worker's periodic sweep relays them.
        options.log?.('warn', 'command relay failed; the outbox sweep will retry', { error: String(error) });
      });
    },
    onTimer: (actorId, dueAtMs) => worker?.scheduleTimer(actorId, dueAtMs),
    ...(options.linkedSteps === false ? {} : { linksTo: (shard: number) => worker?.linksTo(shard) ?? false }),
    quarantine: quarantineOnStore(options.store),
    onTimerRefused: (actorId, dueAtMs) => worker?.retryTimer(actorId, dueAtMs),
    ...(options.batchSizeMax !== undefined ? { batchSizeMax: options.batchSizeMax } : {}),
    ...(options.actorsInMemoryMax !== undefined ? { actorsInMemoryMax: options.actorsInMemoryMax } : {}),
    ...(options.actorBytesInMemoryMax !== undefined ? { actorBytesInMemoryMax: options.actorBytesInMemoryMax } : {}),
    ...(options.afterCommit ? { afterCommit: options.afterCommit } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  worker = new ShardWorker({
    bus: options.bus,
    leases: options.leases,
    store,
    runtime,
    workerId: options.workerId,
    keyPrefix: options.keyPrefix,
    shardCount: options.shardCount,
    group: commandGroup,
    clock: options.clock,
    ...(options.leaseTtlMs !== undefined ? { leaseTtlMs: options.leaseTtlMs } : {}),
    ...(options.leaseChangesPollMs !== undefined ? { leaseChangesPollMs: options.leaseChangesPollMs } : {}),
    ...(options.readBlockMs !== undefined ? { readBlockMs: options.readBlockMs } : {}),
    ...(options.stuckPendingMs !== undefined ? { stuckPendingMs: options.stuckPendingMs } : {}),
    ...(options.batchesInFlightMax !== undefined ? { batchesInFlightMax: options.batchesInFlightMax } : {}),
    ...(options.timerRetryDelayMsMin !== undefined ? { timerRetryDelayMsMin: options.timerRetryDelayMsMin } : {}),
    ...(options.timerRetryDelayMsMax !== undefined ? { timerRetryDelayMsMax: options.timerRetryDelayMsMax } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  await worker.start();
  const started = worker;
  return { worker: started, runtime, stop: () => started.stop() };
}
