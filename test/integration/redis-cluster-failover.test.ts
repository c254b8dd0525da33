// Cluster views after a failover, on a real Redis Cluster with replicas (3 masters, 3 replicas):
// two shard workers hold the shards' leases; an operator's long-lived connection (as the edge's
// /metrics and the admin service keep one) lists the leases and reads the cluster's stats. A master
// is killed (SIGKILL) and its replica takes over; then a second master. After each failover, within
// a lease round, the listing and the stats show every shard owned by a live worker, both workers
// live, and each worker holding its fair share — read from the slot map as it is now, never from
// a node list that went stale with the failover.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { shardLeaseName } from '../../src/bus/shards.ts';
import { createClusterStats, type ClusterStatsSource } from '../../src/actors/cluster-stats.ts';
import { runtimeReadModelIndexes } from '../../src/actors/store-adapter.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { eventually } from '../support/eventually.ts';
import { startRedisCluster, type PrivateRedisCluster } from '../support/redis-cluster.ts';
import { randomKeyPrefix } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';
import { defaultServiceBehaviors } from '../support/default-behaviors.ts';

const shardCount = 16;
const leaseTtlMs = 3_000;
const keyPrefix = randomKeyPrefix('failover');
const dir = mkdtempSync(join(tmpdir(), 'cluster-failover-'));
const store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...runtimeReadModelIndexes] });
const clock = { nowMs: () => Date.now() };
let cluster: PrivateRedisCluster;
const workers: ShardRole[] = [];
const workerIds = [`w0-${randomUUID()}`, `w1-${randomUUID()}`];
const closers: Array<() => Promise<void>> = [];
let viewLeases: RedisLeases;
let stats: ClusterStatsSource;

before(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1 });
  await store.init();
  const behaviors = defaultServiceBehaviors();
  for (let index = 0; index < 2; index += 1) {
    const bus = new RedisBus({ redis: cluster.url });
    const leases = new RedisLeases({ redis: cluster.url, keyPrefix });
    closers.push(async () => {
      await bus.close();
      await leases.close();
    });
    workers.push(await startShardRole({ bus, leases, store, behaviors, workerId: workerIds[index] ?? '', keyPrefix, shardCount, clock, readBlockMs: 200, leaseTtlMs, stuckPendingMs: 2_000 }));
  }
  // The operator's view: connections opened once, before any failover, and kept.
  const viewBus = new RedisBus({ redis: cluster.url });
  viewLeases = new RedisLeases({ redis: cluster.url, keyPrefix });
  closers.push(async () => {
    await viewBus.close();
    await viewLeases.close();
  });
  stats = createClusterStats({ bus: viewBus, leases: viewLeases, store, keyPrefix, shardCount, clock, cacheMs: 0, readWaitMs: 5_000 });
});
after(() => teardown(
  ...[...workers].map((worker) => () => worker.stop()),
  ...[...closers].map((close) => () => close()),
  () => store?.close(),
  () => cluster?.stop(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

/** What an operator sees is the truth: every shard owned by a live worker, both live, fair shares. */
async function viewsAreRight(): Promise<void> {
  const liveIds = [...workerIds].sort();
  const owned = workers.map((worker) => worker.worker.ownedShards().length);
  assert.deepEqual(owned, [shardCount / 2, shardCount / 2], 'each worker holds its fair share');
  const members = await viewLeases.listAll('member:');
  assert.deepEqual(members.map((holder) => holder.owner).sort(), liveIds, 'the member listing shows both workers');
  const shardHolders = await viewLeases.listAll('shard:');
  assert.equal(shardHolders.length, shardCount, 'the lease listing shows every shard owned');
  assert.ok(shardHolders.every((holder) => liveIds.includes(holder.owner)));
  const reading = await stats.read();
  assert.equal(reading.ok, true, 'the stats reading succeeds');
  assert.equal(reading.stats?.shards.filter((shard) => shard.owner === null).length, 0, 'no shard shown unowned');
  assert.deepEqual(reading.stats?.workers.map((worker) => worker.workerId), liveIds, 'both workers shown live');
}

test('after each of two master failovers, the lease listing, the stats and the fair shares are right again within a lease round', { timeout: 150_000 }, async () => {
  await eventually(viewsAreRight, 20_000);
  for (const shard of [0, 1]) {
    // A master that holds lease keys (a different one the second time: the first is gone).
    const port = await cluster.masterPortOf(`${keyPrefix}lease:{${shardLeaseName(shard)}}`);
    await cluster.crashMaster(port);
    await eventually(viewsAreRight, 3 * leaseTtlMs + 5_000);
  }
});
