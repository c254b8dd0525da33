// What /metrics shows about the shard workers (the admin service's ListShards and ListWorkers, as
// numbers): who owns each shard, each shard stream's length, pending and lag, and per live shard
// worker its owned shards, actors in memory and memory use (the `worker_stats` documents the
// workers refresh every lease round), and the outbox backlog per topic (rows waiting or being
// worked on: payouts, refunds, webhooks, deliveries, relayed commands). Read from Redis (leases, stream summaries) and the store,
// cached for `cacheMs` with one read at a time, so scrapes (from every edge, as often as a
// scraper likes) cost Redis one round of reads per `cacheMs` at most.
import type { Bus } from '../bus/bus.ts';
import type { Leases } from '../bus/leases.ts';
import { commandGroup, commandStreamKey, shardLeaseName, shardLeasePrefix } from '../bus/shards.ts';
import { workerStatsCollection } from './store-adapter.ts';
import { outboxTopicCommandBatches, outboxTopicCommands } from './runtime.ts';
import { chainSweepTopic } from './deposit-actor.ts';
import {
  outboxTopicDeliveries, outboxTopicPayouts, outboxTopicRefundsChain, outboxTopicRefundsPix, outboxTopicWebhooks,
} from './transaction-actor.ts';
import type { SnapshotStore } from '../store/store.ts';
import { settlesWithin } from '../lifecycle/shutdown.ts';

export interface ShardStats {
  readonly shard: number;
  /** The lease holder, or null when no worker owns the shard right now. */
  readonly owner: string | null;
  /** The lease's fencing token: rising fast means the shard changes hands often. */
  readonly token: number;
  readonly streamLength: number;
  /** Delivered to the workers' group, not yet acknowledged. */
  readonly pending: number;
  /** Not yet delivered to the group; null when Redis cannot tell (or the group does not exist yet). */
  readonly lag: number | null;
}

export interface WorkerStatsView {
  readonly workerId: string;
  readonly ownedShards: number;
  readonly actorsInMemory: number;
  readonly actorBytesInMemory: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly reportedAtMs: number;
}

export interface OutboxTopicStats {
  readonly topic: string;
  /** Rows not done, up to `outboxBacklogShownMax`. */
  readonly rows: number;
  /** Of those, rows under a live claim (a worker is on them). */
  readonly claimed: number;
  /** Of those, rows waiting for a later retry (backoff or parked): nobody holds them meanwhile. */
  readonly deferred: number;
  /** Of those, rows whose last attempt parked them: they wait on operations (the admin's `parked`). */
  readonly parked: number;
  /** More rows than counted. */
  readonly capped: boolean;
  /** How long the oldest row has waited (wall clock), or null when none or unknown. */
  readonly oldestAgeMs: number | null;
}

export interface ClusterStats {
  readonly collectedAtMs: number;
  readonly shards: readonly ShardStats[];
  /** Live shard workers (member leases held) only: a stopped worker's last report is not shown. */
  readonly workers: readonly WorkerStatsView[];
  readonly outbox: readonly OutboxTopicStats[];
}

/** Every outbox topic the service writes (each one has a worker that empties it). */
export const serviceOutboxTopics: readonly string[] = [
  outboxTopicCommandBatches, outboxTopicCommands, outboxTopicWebhooks, outboxTopicPayouts, outboxTopicRefundsPix, outboxTopicRefundsChain, outboxTopicDeliveries, chainSweepTopic,
];

/** Rows counted per topic and reading: a backlog this deep is an incident whatever its size. */
export const outboxBacklogShownMax = 10_000;

export interface ClusterStatsReading {
  /** The latest successful reading, or null if none succeeded yet. */
  readonly stats: ClusterStats | null;
  /** Whether the latest attempt to read succeeded. */
  readonly ok: boolean;
  readonly readFailuresTotal: number;
}

export interface ClusterStatsSource {
  read(): Promise<ClusterStatsReading>;
}

export interface ClusterStatsOptions {
  readonly bus: Bus;
  readonly leases: Leases;
  readonly store: SnapshotStore;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly clock: { nowMs(): number };
  /** How long a reading is served before the next scrape reads again. Default 5,000. */
  readonly cacheMs?: number;
  /** How long a scrape waits for a reading in progress before it gets the previous one. Default 2,000. */
  readonly readWaitMs?: number;
  /** Outbox topics whose backlog is shown. Default `serviceOutboxTopics`. */
  readonly outboxTopics?: readonly string[];
}

/** Stream summaries read at once (each is a few Redis commands). */
const summariesInFlightMax = 64;

export function createClusterStats(options: ClusterStatsOptions): ClusterStatsSource {
  const cacheMs = options.cacheMs ?? 5_000;
  const readWaitMs = options.readWaitMs ?? 2_000;
  let latest: ClusterStats | null = null;
  let latestOk = true;
  let readFailuresTotal = 0;
  let reading: Promise<void> | null = null;
  let lastAttemptAtMs = Number.NEGATIVE_INFINITY;

  return {
    async read() {
      // At most one read per `cacheMs`, successful or not: a scrape never adds load on Redis.
      const nowMs = options.clock.nowMs();
      if (reading === null && nowMs - lastAttemptAtMs >= cacheMs) {
        lastAttemptAtMs = nowMs;
        reading = collect(options)
          .then(
            (stats) => {
              latest = stats;
              latestOk = true;
            },
            () => {
              latestOk = false;
              readFailuresTotal += 1;
            },
          )
          .finally(() => {
            reading = null;
          });
      }
      if (reading !== null) await settlesWithin(reading, readWaitMs);
      return { stats: latest, ok: latestOk, readFailuresTotal };
    },
  };
}

async function collect(options: ClusterStatsOptions): Promise<ClusterStats> {
  const collectedAtMs = options.clock.nowMs();
  const [shardHolders, members] = await Promise.all([options.leases.listAll(shardLeasePrefix), options.leases.listAll('member:')]);
  const owners = new Map(shardHolders.map((holder) => [holder.name, holder]));
  const shards: ShardStats[] = [];
  for (let first = 0; first < options.shardCount; first += summariesInFlightMax) {
    const batch = Array.from({ length: Math.min(summariesInFlightMax, options.shardCount - first) }, (_, index) => first + index);
    shards.push(
      ...(await Promise.all(
        batch.map(async (shard): Promise<ShardStats> => {
          const summary = await options.bus.summary(commandStreamKey(options.keyPrefix, shard));
          const group = summary.groups.find((candidate) => candidate.group === commandGroup);
          const holder = owners.get(shardLeaseName(shard));
          return {
            shard,
            owner: holder?.owner ?? null,
            token: holder?.token ?? 0,
            streamLength: summary.length,
            pending: group?.pending ?? 0,
            lag: group === undefined ? null : group.lag,
          };
        }),
      )),
    );
  }
  // One document per live member (bounded by the members), never the whole collection: reports
  // of stopped workers stay behind in the store and must not become labels.
  const liveIds = [...new Set(members.map((holder) => holder.owner))].sort();
  const docs = await Promise.all(liveIds.map(async (workerId) => ({ workerId, doc: await options.store.get(workerStatsCollection, workerId) })));
  const workers: WorkerStatsView[] = docs.map(({ workerId, doc }) => ({
    workerId,
    ownedShards: Array.isArray(doc?.ownedShards) ? doc.ownedShards.length : 0,
    actorsInMemory: numberOr0(doc?.actorsInMemory),
    actorBytesInMemory: numberOr0(doc?.actorBytesInMemory),
    rssBytes: numberOr0(doc?.rssBytes),
    heapUsedBytes: numberOr0(doc?.heapUsedBytes),
    reportedAtMs: numberOr0(doc?.reportedAtMs),
  }));
  const outbox = await Promise.all(
    (options.outboxTopics ?? serviceOutboxTopics).map(async (topic): Promise<OutboxTopicStats> => {
      const backlog = await options.store.outboxBacklog(topic, collectedAtMs, outboxBacklogShownMax);
      // Rows are stamped by the store's wall clock: waiting is real time, whatever the service clock says.
      const oldestAgeMs = backlog.oldestCreatedAtMs === null ? null : Math.max(0, Date.now() - backlog.oldestCreatedAtMs);
      return { topic, rows: backlog.rows, claimed: backlog.claimed, deferred: backlog.deferred, parked: backlog.parked, capped: backlog.capped, oldestAgeMs };
    }),
  );
  return { collectedAtMs, shards, workers, outbox };
}

function numberOr0(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}
