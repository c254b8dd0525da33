// Builds the actor system for integration tests: a bus (in-process or a private Redis), leases,
// an embedded store in a temp directory, one or more shard workers, and an ActorClient with its
// own reply stream. Everything is torn down by `stop()`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../src/bus/bus.ts';
import type { Leases } from '../../src/bus/leases.ts';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { Requester } from '../../src/bus/request-reply.ts';
import { replyStreamKey } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import { runtimeReadModelIndexes } from '../../src/actors/store-adapter.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import type { LogLevel } from '../../src/actors/envelope.ts';
import type { LimitsConfig } from '../../src/domain/limits.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { onrampReadModelIndexes } from '../../src/onramp/pix-inbox.ts';
import { defaultReadModelIndexes, type SnapshotStore } from '../../src/store/store.ts';
import { serviceBehaviors } from '../../src/service/behaviors.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from './redis-server.ts';
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';

export type BusKind = 'memory' | 'redis';

export interface ActorHarness {
  readonly bus: Bus;
  readonly leases: Leases;
  readonly store: SnapshotStore;
  readonly client: ActorClient;
  readonly workers: ShardRole[];
  readonly keyPrefix: string;
  readonly shardCount: number;
  /**
   * A restart of the shard role: every worker stops (finishing its batches, releasing its leases)
   * and a new one starts in its place on the same bus and store, so every actor is loaded again
   * from its snapshot and every pending entry is recovered. `workers` holds the new ones.
   */
  restartWorkers(): Promise<void>;
  stop(): Promise<void>;
}

export interface HarnessOptions {
  readonly busKind: BusKind;
  readonly shardCount?: number;
  readonly workers?: number;
  readonly limits?: LimitsConfig;
  /** The clock of the workers and the client (default: Date.now). */
  readonly clock?: { nowMs(): number };
  /** How long a quote is valid (default: the corridors file's). */
  readonly quoteTtlMs?: number;
  /** Receives the shard workers' log lines (besides HARNESS_LOG). */
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /** Bound on open onramp inventory holds per network × asset. */
  readonly onrampOpenHoldsMax?: number;
  /** See ShardRoleOptions.timerRetryDelayMsMin / Max. */
  readonly timerRetryDelayMsMin?: number;
  readonly timerRetryDelayMsMax?: number;
}

export async function startActorHarness(options: HarnessOptions): Promise<ActorHarness> {
  const shardCount = options.shardCount ?? 8;
  const keyPrefix = randomKeyPrefix();
  let redis: PrivateRedis | null = null;
  let bus: Bus;
  let leases: Leases;
  if (options.busKind === 'redis') {
    redis = await startRedis();
    bus = new RedisBus({ redis: redis.url });
    leases = new RedisLeases({ redis: redis.url, keyPrefix });
  } else {
    bus = new MemoryBus();
    leases = new MemoryLeases();
  }
  const dir = mkdtempSync(join(tmpdir(), 'actors-'));
  const store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...runtimeReadModelIndexes, ...onrampReadModelIndexes] });
  await store.init();
  const corridors = options.quoteTtlMs === undefined ? loadDefaultCorridors() : { ...loadDefaultCorridors(), quoteTtlMs: options.quoteTtlMs };
  const limits = options.limits ?? defaultLimitsConfig;
  const behaviors = serviceBehaviors({
    dataKeys: sandboxDataKeyring(),
    corridors: () => corridors,
    rates: () => corridors.rates,
    partnerFee: () => undefined,
    limits: () => limits,
    ...(options.onrampOpenHoldsMax !== undefined ? { onrampOpenHoldsMax: () => options.onrampOpenHoldsMax ?? 0 } : {}),
  });
  const clock = options.clock ?? { nowMs: () => Date.now() };
  const log = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    options.log?.(level, message, fields);
    if (process.env.HARNESS_LOG) console.error(level, message, fields);
  };
  const startWorker = (index: number): Promise<ShardRole> =>
    startShardRole({
      bus,
      leases,
      store,
      behaviors,
      workerId: `w${index}-${randomUUID()}`,
      keyPrefix,
      shardCount,
      clock,
      readBlockMs: 200,
      log,
      ...(options.timerRetryDelayMsMin !== undefined ? { timerRetryDelayMsMin: options.timerRetryDelayMsMin } : {}),
      ...(options.timerRetryDelayMsMax !== undefined ? { timerRetryDelayMsMax: options.timerRetryDelayMsMax } : {}),
    });
  const workers: ShardRole[] = [];
  for (let index = 0; index < (options.workers ?? 1); index += 1) workers.push(await startWorker(index));
  const requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, `test-${randomUUID()}`), blockMs: 200 });
  const client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: clock.nowMs });
  return {
    bus,
    leases,
    store,
    client,
    workers,
    keyPrefix,
    shardCount,
    async restartWorkers() {
      const stopped = workers.splice(0, workers.length);
      for (const worker of stopped) await worker.stop();
      for (let index = 0; index < stopped.length; index += 1) workers.push(await startWorker(index));
    },
    async stop() {
      await requester.close();
      for (const worker of workers) await worker.stop();
      await bus.close();
      await leases.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      await redis?.stop();
    },
  };
}
