// Quarantine, not stall: an actor whose snapshot cannot be decoded, or whose handling of a command
// throws, is set aside with its commands dead-lettered, and the shard goes on with every other
// actor. Before, its commands "stayed pending and would be retried" forever, and the shard's
// recovery re-read them in a loop while no new command of ANY actor on the worker was read.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { Requester } from '../../src/bus/request-reply.ts';
import { replyStreamKey, shardOf } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { listQuarantined, quarantineDetail, requestReplay } from '../../src/actors/quarantine.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { renderFamilies } from '../../src/lifecycle/metrics.ts';
import { shardMetrics } from '../../src/service/role-metrics.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';

interface Jar {
  readonly items: readonly string[];
}

/** The "bug" the tests switch on and off: a command kind that throws, and snapshots that do not decode. */
const faults = { throwOn: new Set<string>(), undecodable: new Set<string>() };

function jarBehavior(): ActorBehavior<Jar> {
  return {
    type: 'jar',
    encode: (state) => ({ items: [...state.items] }),
    decode(json) {
      const jar = json as unknown as Jar;
      if (jar.items.some((item) => faults.undecodable.has(item))) throw new TypeError(`cannot decode a jar holding ${jar.items.join(',')}`);
      return jar;
    },
    handle(state, command) {
      const item = (command.payload as { item: string }).item;
      if (faults.throwOn.has(item)) throw new Error(`handling ${item} failed`);
      const items = [...(state?.items ?? []), item];
      return { state: { items }, reply: { items } };
    },
  };
}

const shardCount = 4;
const keyPrefix = 'quarantine:';
let dir: string;
let store: LmdbStore;
let bus: MemoryBus;
let role: ShardRole;
let client: ActorClient;
let requester: Requester;
const logged: Array<{ level: string; message: string; fields: Record<string, unknown> | undefined }> = [];

/** Two actor keys on one shard: the poisoned one and a neighbour that must not notice. */
function keysOnOneShard(): [string, string] {
  const first = `jar-${randomUUID()}`;
  for (;;) {
    const other = `jar-${randomUUID()}`;
    if (shardOf(`jar/${other}`, shardCount) === shardOf(`jar/${first}`, shardCount)) return [first, other];
  }
}

function put(key: string, item: string, timeoutMs = 10_000): Promise<Jar> {
  return client.ask<Jar>('jar', key, 'put', { item }, { timeoutMs });
}

async function stored(key: string): Promise<readonly string[]> {
  const snapshot = await store.load(`jar/${key}`);
  return (snapshot?.state as unknown as Jar | undefined)?.items ?? [];
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'quarantine-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new MemoryBus();
  role = await startShardRole({
    bus,
    leases: new MemoryLeases(),
    store,
    behaviors: [jarBehavior()] as unknown as Array<ActorBehavior<unknown>>,
    workerId: 'w1',
    keyPrefix,
    shardCount,
    clock: { nowMs: () => Date.now() },
    readBlockMs: 100,
    log: (level, message, fields) => logged.push({ level, message, fields }),
  });
  requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, 'client'), blockMs: 100 });
  client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: () => Date.now() });
});

after(() => teardown(
  () => requester?.close(),
  () => role?.stop(),
  () => bus?.close(),
  () => store?.close(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

describe('a command whose handling throws', () => {
  test('quarantines its actor; the neighbour on the same shard is served; a replay after the fix applies the dead letters in order', async () => {
    const [poisoned, neighbour] = keysOnOneShard();
    const bad = `bad-${randomUUID()}`;
    await put(poisoned, 'first');
    faults.throwOn.add(bad);
    await assert.rejects(put(poisoned, bad, 1_500), 'the poisoned command gets no answer');
    // The poisoned actor's next command waits behind it (order is kept), in the dead letters.
    await client.tell('jar', poisoned, 'put', { item: 'after' }, randomUUID());
    assert.deepEqual(await put(neighbour, 'hello'), { items: ['hello'] }, 'the shard goes on');

    const id = `jar/${poisoned}`;
    await eventually(async () => {
      const detail = await quarantineDetail(store, id, 10);
      assert.ok(detail);
      assert.deepEqual(detail.deadLetters.map((letter) => letter.kind), ['put', 'put']);
    });
    const detail = await quarantineDetail(store, id, 10);
    assert.match(detail?.error ?? '', new RegExp(`handling ${bad} failed`));
    assert.ok((await listQuarantined(store, 100)).some((item) => item.actorId === id));
    assert.match(renderFamilies(shardMetrics(role.runtime)), /^shard_actors_quarantined 1$/m, 'the metric');
    const lines = logged.filter((entry) => entry.level === 'error' && entry.fields?.['actorId'] === id);
    assert.equal(lines.length, 1, 'one error line names the actor');
    assert.deepEqual(await stored(poisoned), ['first']);

    faults.throwOn.delete(bad); // the fix is deployed
    await requestReplay({ bus, keyPrefix, shardCount, nowMs: Date.now() }, id);
    await eventually(async () => assert.deepEqual(await stored(poisoned), ['first', bad, 'after']));
    await eventually(async () => assert.equal(await quarantineDetail(store, id, 10), null, 'released'));
    // The worker's own count follows once its release is committed, a moment after the store shows it.
    await eventually(() => assert.equal(role.runtime.quarantinedCount(), 0));
    assert.deepEqual(await put(poisoned, 'last'), { items: ['first', bad, 'after', 'last'] });
  });
});

describe('a snapshot that cannot be decoded', () => {
  test('quarantines its actor on its next command, also after a restart of its activation; the others go on', async () => {
    const [poisoned, neighbour] = keysOnOneShard();
    const marker = `undecodable-${randomUUID()}`;
    await put(poisoned, marker);
    faults.undecodable.add(marker);
    role.runtime.passivateIdle(-1); // reloaded from its snapshot on the next command
    await client.tell('jar', poisoned, 'put', { item: 'lost?' }, randomUUID());
    assert.deepEqual(await put(neighbour, 'still served'), { items: ['still served'] });
    const id = `jar/${poisoned}`;
    await eventually(async () => assert.equal((await quarantineDetail(store, id, 10))?.deadLetters.length, 1));
    assert.match((await quarantineDetail(store, id, 10))?.error ?? '', /cannot decode/);

    faults.undecodable.delete(marker);
    await requestReplay({ bus, keyPrefix, shardCount, nowMs: Date.now() }, id);
    await eventually(async () => assert.deepEqual(await stored(poisoned), [marker, 'lost?']));
  });
});

describe('a quarantine outlives the worker', () => {
  test('after a restart, a quarantined actor’s later commands still go to its dead letters, in order', async () => {
    const [poisoned] = keysOnOneShard();
    const bad = `bad-${randomUUID()}`;
    faults.throwOn.add(bad);
    await client.tell('jar', poisoned, 'put', { item: bad }, randomUUID());
    const id = `jar/${poisoned}`;
    await eventually(async () => assert.ok(await quarantineDetail(store, id, 10)));

    await role.stop();
    role = await startShardRole({
      bus,
      leases: new MemoryLeases(),
      store,
      behaviors: [jarBehavior()] as unknown as Array<ActorBehavior<unknown>>,
      workerId: 'w2',
      keyPrefix,
      shardCount,
      clock: { nowMs: () => Date.now() },
      readBlockMs: 100,
      log: (level, message, fields) => logged.push({ level, message, fields }),
    });
    await client.tell('jar', poisoned, 'put', { item: 'later' }, randomUUID());
    await eventually(async () => assert.equal((await quarantineDetail(store, id, 10))?.deadLetters.length, 2));
    assert.deepEqual(await stored(poisoned), [], 'nothing was applied out of order');

    faults.throwOn.delete(bad);
    await requestReplay({ bus, keyPrefix, shardCount, nowMs: Date.now() }, id);
    await eventually(async () => assert.deepEqual(await stored(poisoned), [bad, 'later']));
  });
});
