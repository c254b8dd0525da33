// The upgrade to shard groups renames every command stream (`<prefix>cmd:{<shard>}` →
// `<prefix>cmd:{<group tag>}:<shard>`, src/bus/shards.ts). What the old release left in the old
// streams — entries an old worker had read but not acknowledged when it stopped or crashed, entries
// nobody read yet, a stream an old edge wrote that no worker ever made a group on — is applied by
// the new release's shard worker, each command exactly once and before the shard's newer commands;
// then the old streams are left fully acknowledged and are not read again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { commandGroup, commandStreamKey, legacyCommandStreamKey, shardOf } from '../../src/bus/shards.ts';
import { actorId } from '../../src/actors/envelope.ts';
import { encodeEnvelope } from '../../src/actors/codec.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { startTallyShardRole, type TallyState } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

const shardCount = 16;
const keyPrefix = randomKeyPrefix('upgrade');
let redis: PrivateRedis;
let raw: Redis;
let dir: string;
let store: LmdbStore;
const buses: RedisBus[] = [];
const leaseStores: RedisLeases[] = [];
const roles: ShardRole[] = [];

before(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url);
  dir = mkdtempSync(join(tmpdir(), 'upgrade-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
});

after(() => teardown(
  ...roles.map((role) => () => role.stop()),
  ...buses.map((bus) => () => bus.close()),
  ...leaseStores.map((leases) => () => leases.close()),
  () => { raw?.disconnect(); },
  () => store?.close(),
  () => redis?.stop(),
  () => { if (dir !== undefined) rmSync(dir, { recursive: true, force: true }); },
));

async function startWorker(workerId: string): Promise<ShardRole> {
  const bus = new RedisBus({ redis: redis.url });
  buses.push(bus);
  const leases = new RedisLeases({ redis: redis.url, keyPrefix });
  leaseStores.push(leases);
  const role = await startTallyShardRole({
    bus,
    leases,
    store,
    workerId,
    keyPrefix,
    shardCount,
    leaseTtlMs: 1_500,
    stuckPendingMs: 1_000,
  });
  roles.push(role);
  return role;
}

/** A tally key on each of `count` different shards (the actor's shard decides its stream). */
function keysOnDistinctShards(count: number): string[] {
  const keys = new Map<number, string>();
  while (keys.size < count) {
    const key = `k-${randomUUID()}`;
    const shard = shardOf(actorId('tally', key), shardCount);
    if (!keys.has(shard)) keys.set(shard, key);
  }
  return [...keys.values()];
}

function command(key: string): { commandId: string; payload: string } {
  const commandId = randomUUID();
  return { commandId, payload: encodeEnvelope({ commandId, actorType: 'tally', actorKey: key, kind: 'add', payload: null, sentAtMs: Date.now() }) };
}

async function appliedIds(key: string): Promise<readonly string[]> {
  const snapshot = await store.load(`tally/${key}`);
  return (snapshot?.state as unknown as TallyState | undefined)?.commandIds ?? [];
}

test('entries left in the old per-shard streams are applied exactly once, before newer ones; the old streams end acknowledged', async () => {
  const [pendingKey, unreadKey, groupLessKey] = keysOnDistinctShards(3);
  assert.ok(pendingKey !== undefined && unreadKey !== undefined && groupLessKey !== undefined);
  const oldStream = (key: string): string => legacyCommandStreamKey(keyPrefix, shardOf(actorId('tally', key), shardCount));
  const expected = new Map<string, string[]>();
  const write = async (stream: string, key: string): Promise<void> => {
    const { commandId, payload } = command(key);
    await raw.xadd(stream, '*', 'payload', payload);
    expected.set(key, [...(expected.get(key) ?? []), commandId]);
  };

  // What the old release left behind. An old worker made the group and read two entries it never
  // acknowledged (it crashed), and two more were never read.
  await raw.xgroup('CREATE', oldStream(pendingKey), commandGroup, '0', 'MKSTREAM');
  await write(oldStream(pendingKey), pendingKey);
  await write(oldStream(pendingKey), pendingKey);
  await raw.xreadgroup('GROUP', commandGroup, 'old-worker', 'COUNT', 10, 'STREAMS', oldStream(pendingKey), '>');
  await write(oldStream(pendingKey), pendingKey);
  await raw.xgroup('CREATE', oldStream(unreadKey), commandGroup, '0', 'MKSTREAM');
  await write(oldStream(unreadKey), unreadKey);
  // An old edge wrote here after the old workers stopped; no worker ever made the group.
  await write(oldStream(groupLessKey), groupLessKey);
  // The new release's edges started before its workers: newer commands already wait in the new streams.
  for (const key of [pendingKey, unreadKey, groupLessKey]) await write(commandStreamKey(keyPrefix, shardOf(actorId('tally', key), shardCount)), key);

  const worker = await startWorker('w-new');
  assert.equal(worker.worker.ownedShards().length, shardCount);
  for (const key of [pendingKey, unreadKey, groupLessKey]) {
    await eventually(async () => assert.deepEqual(await appliedIds(key), expected.get(key), `${key}: every command once, old ones first`), 10_000);
  }
  for (const key of [pendingKey, unreadKey, groupLessKey]) {
    await eventually(async () => {
      const [summary] = (await raw.call('XINFO', 'GROUPS', oldStream(key))) as unknown[][];
      const fields = new Map<string, unknown>();
      for (let index = 0; index + 1 < (summary?.length ?? 0); index += 2) fields.set(String(summary?.[index]), summary?.[index + 1]);
      assert.equal(fields.get('pending'), 0, `${oldStream(key)}: nothing left pending`);
      assert.equal(fields.get('lag'), 0, `${oldStream(key)}: nothing left unread`);
    }, 5_000);
  }

  // A command an old edge still writes now (it should have been stopped first) waits until a
  // worker next takes the shard: the second worker joining takes the upper group (shards 8..15,
  // given back whole by the first) and with it that shard's old stream.
  let lateKey = `late-${randomUUID()}`;
  while (shardOf(actorId('tally', lateKey), shardCount) < 8) lateKey = `late-${randomUUID()}`;
  const { commandId: lateId, payload: late } = command(lateKey);
  await raw.xadd(oldStream(lateKey), '*', 'payload', late);
  const second = await startWorker('w-second');
  await eventually(() => {
    assert.deepEqual(second.worker.ownedShards(), [8, 9, 10, 11, 12, 13, 14, 15]);
    assert.deepEqual(worker.worker.ownedShards(), [0, 1, 2, 3, 4, 5, 6, 7]);
  }, 10_000);
  await eventually(async () => assert.deepEqual(await appliedIds(lateKey), [lateId]), 10_000);
  for (const key of [pendingKey, unreadKey, groupLessKey]) assert.deepEqual(await appliedIds(key), expected.get(key));
});
