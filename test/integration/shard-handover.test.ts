// A worker that joins takes the shards its elder gives back for it within a lease-changes poll,
// not at a full lease round (a third of the TTL: 3.3 s on the production default of 10 s).
//
// Each worker compares the `lease-changes` counter with its previous reading. The first reading
// used to be taken at the worker's first poll, after its start-up round had listed the leases, so
// it already counted what changed in between and hid it, on both sides of a hand-over:
// - the elder, just started, first read the counter after the joiner's member lease had moved it,
//   and gave shards back only at its next round (before the fix: balanced after 4.2 s);
// - the joiner, whose start-up round found every shard held, first read it after the elder had
//   given shards back for it, and took them only at its next round (3.4 s).
// The scaling test saw it under load on the 10 s TTL; here the elder is started just before the
// joiner, and the joiner polls slower than the elder, which makes both orders likely on any machine.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { startTallyShardRole, type TallyShardRoleOptions } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

const shardCount = 8;
/** The production default: rounds every 3.3 s. */
const leaseTtlMs = 10_000;
const roundMs = Math.floor(leaseTtlMs / 3);
/** The joiner's lease-changes poll: long enough that the old owner has given shards back before it. */
const joinerPollMs = 800;
let redis: PrivateRedis;
let dir: string;
let store: LmdbStore;
let bus: RedisBus;
let leases: RedisLeases;
const roles: ShardRole[] = [];
const keyPrefix = randomKeyPrefix('handover');

before(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'handover-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new RedisBus({ redis: redis.url });
  leases = new RedisLeases({ redis: redis.url, keyPrefix });
});

after(() => teardown(
  ...roles.map((role) => () => role.stop()),
  () => leases?.close(),
  () => bus?.close(),
  () => store?.close(),
  () => redis?.stop(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

async function startWorker(workerId: string, leaseChangesPollMs: number): Promise<ShardRole> {
  const options: TallyShardRoleOptions = {
    bus,
    leases,
    store,
    workerId,
    keyPrefix,
    shardCount,
    leaseTtlMs,
    leaseChangesPollMs,
  };
  const role = await startTallyShardRole(options);
  roles.push(role);
  return role;
}

async function ownerCount(): Promise<number> {
  return (await leases.listAll('shard:')).length;
}

test('a joining worker takes the shards given back for it within its first poll, not a lease round later', async () => {
  const first = await startWorker('w-first', 50);
  assert.equal(first.worker.ownedShards().length, shardCount);

  const joinedAtMs = Date.now();
  const joiner = await startWorker('w-joiner', joinerPollMs);
  // How long some shard had no owner (what `admin shards` and `shard_owned` show an operator).
  let ownerlessSinceMs: number | null = null;
  let ownerlessMsMax = 0;
  await eventually(async () => {
    const owned = await ownerCount();
    const nowMs = Date.now();
    if (owned < shardCount) ownerlessSinceMs ??= nowMs;
    else if (ownerlessSinceMs !== null) {
      ownerlessMsMax = Math.max(ownerlessMsMax, nowMs - ownerlessSinceMs);
      ownerlessSinceMs = null;
    }
    assert.equal(first.worker.ownedShards().length, shardCount / 2, 'the first worker gave back half');
    assert.equal(joiner.worker.ownedShards().length, shardCount / 2, 'the joiner took its half');
    assert.equal(owned, shardCount, 'every shard has an owner');
  }, 3 * roundMs, 20);
  const balancedMs = Date.now() - joinedAtMs;
  console.log(`hand-over to a joining worker: balanced after ${balancedMs} ms, shards ownerless for up to ${ownerlessMsMax} ms (lease round ${roundMs} ms, joiner's poll ${joinerPollMs} ms)`);
  // Within the joiner's poll and a round trip or two; a missed change costs a whole round.
  assert.ok(ownerlessMsMax < joinerPollMs + 800, `shards were ownerless for ${ownerlessMsMax} ms: the joiner waited for its lease round (${roundMs} ms), not its ${joinerPollMs} ms poll`);
  assert.ok(balancedMs < joinerPollMs + 1_200, `balanced only after ${balancedMs} ms (lease round ${roundMs} ms, poll ${joinerPollMs} ms)`);
});
