// A command whose read was served by Redis but whose reply never reached the shard worker (the
// connection dropped, a cluster read ended by disconnecting) sits in the worker's own pending list,
// where its `>` reads never look. The worker finds such entries itself and applies them, once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { commandStreamKey, shardOf } from '../../src/bus/shards.ts';
import { actorId } from '../../src/actors/envelope.ts';
import { encodeEnvelope } from '../../src/actors/codec.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { commandGroup } from '../../src/bus/shards.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { startTallyShardRole, type TallyState } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

const shardCount = 4;
const workerId = 'w-stuck';
let redis: PrivateRedis;
let raw: Redis;
let dir: string;
let store: LmdbStore;
let bus: RedisBus;
let role: ShardRole;
const keyPrefix = randomKeyPrefix('stuck');

before(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url);
  dir = mkdtempSync(join(tmpdir(), 'stuck-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new RedisBus({ redis: redis.url });
  role = await startTallyShardRole({
    bus,
    leases: new MemoryLeases(),
    store,
    workerId,
    keyPrefix,
    shardCount,
    leaseTtlMs: 900,
    stuckPendingMs: 500,
  });
  assert.equal(role.worker.ownedShards().length, shardCount);
  // Let the start-up recovery of the newly owned shards finish (it would find the entry by itself):
  // recovery rounds come first (one clears every shard with nothing pending), then blocked reads of
  // new entries; a few rounds of the read loop means it is past recovery.
  await eventually(() => assert.ok(loopRounds('shard-commands') >= 3, 'the read loop is past recovery'), 10_000);
});

/** Rounds made so far by one of the worker's loops (`shard-leases`: renewals and sweeps; `shard-commands`: reads). */
function loopRounds(check: 'shard-leases' | 'shard-commands'): number {
  const report = role.worker.health().find((item) => item.name === check)?.report(Date.now(), 60_000);
  return Number(report?.detail['rounds'] ?? 0);
}

after(() => teardown(
  () => role?.stop(),
  () => bus?.close(),
  () => { raw.disconnect(); },
  () => store?.close(),
  () => redis?.stop(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

test('an entry delivered to the worker whose read reply was lost is still applied, exactly once', async () => {
  const key = `lost-${randomUUID()}`;
  const stream = commandStreamKey(keyPrefix, shardOf(actorId('tally', key), shardCount));
  const commandId = randomUUID();
  const payload = encodeEnvelope({ commandId, actorType: 'tally', actorKey: key, kind: 'add', payload: null, sentAtMs: Date.now() });
  // Appended and delivered to the worker's consumer in one MULTI, so the worker's own blocked read
  // cannot take it first: exactly what Redis holds after serving a read whose reply was lost.
  const results = await raw.multi().xadd(stream, '*', 'payload', payload).xreadgroup('GROUP', commandGroup, workerId, 'COUNT', 10, 'STREAMS', stream, '>').exec();
  assert.ok(results?.every(([error]) => error === null));
  const pending = (await raw.xpending(stream, commandGroup)) as [number, ...unknown[]];
  assert.equal(pending[0], 1, 'the entry is pending on the worker');
  await eventually(async () => {
    const snapshot = await store.load(`tally/${key}`);
    assert.deepEqual((snapshot?.state as unknown as TallyState | undefined)?.commandIds, [commandId]);
  }, 10_000);
  await eventually(async () => {
    const after = (await raw.xpending(stream, commandGroup)) as [number, ...unknown[]];
    assert.equal(after[0], 0, 'and acknowledged');
  }, 5_000);
  // Later sweeps find nothing more: the command is not applied a second time. Each lease round
  // sweeps; three rounds (900 ms) outlast stuckPendingMs (500 ms) plus a round.
  const roundsAcked = loopRounds('shard-leases');
  await eventually(() => assert.ok(loopRounds('shard-leases') >= roundsAcked + 3, 'three more sweeps'), 10_000);
  assert.deepEqual(((await store.load(`tally/${key}`))?.state as unknown as TallyState).commandIds, [commandId]);
});
