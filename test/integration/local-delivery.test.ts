// Local delivery (docs/actors.md): a command one actor sends to another whose shard the same worker
// owns is applied in the worker's own next batch, with no stream entry in between, and its outbox
// row is marked done once it is durable; one the receiver could not apply so (its write refused)
// still arrives, through its stream, exactly once. In-process bus (stream lengths are exact) and
// the embedded store.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import type { TestRuntime } from '../support/test-runtime.ts';
import { commandStreamKeys, shardOf } from '../../src/bus/shards.ts';
import type { ActorClient } from '../../src/actors/client.ts';
import { outboxTopicCommandBatches } from '../../src/actors/runtime.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { tallyBehavior, type TallyState } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { commandStreamEntries, forwarderBehavior, startOneWorker } from '../support/one-worker.ts';

const keyPrefix = 'ld:';
const shardCount = 4;
let dir: string;
let store: LmdbStore;
let bus: MemoryBus;
let role: ShardRole;
let client: ActorClient;
let worker: TestRuntime;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'local-delivery-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new MemoryBus();
  // Linked steps would apply these commands in the sender's own commit (linked-steps.test.ts):
  // here they travel as rows, the path taken when a receiver cannot be linked.
  worker = await startOneWorker({ bus, store, behaviors: [tallyBehavior(), forwarderBehavior()], keyPrefix, shardCount, linkedSteps: false });
  ({ role, client } = worker);
});

after(() => teardown(
  () => worker?.stop(),
  () => bus?.close(),
  () => store?.close(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

const commandEntries = (): Promise<number> => commandStreamEntries(bus, keyPrefix, shardCount);

/** Every entry of every command stream read and acknowledged by the worker. */
async function assertStreamsDrained(): Promise<void> {
  for (const stream of commandStreamKeys(keyPrefix, shardCount)) {
    for (const group of (await bus.summary(stream)).groups) {
      assert.deepEqual([group.pending, group.lag], [0, 0], `${stream}: every entry read and acknowledged`);
    }
  }
}

async function tallyCount(key: string): Promise<number | undefined> {
  return ((await store.load(`tally/${key}`))?.state as unknown as TallyState | undefined)?.count;
}

async function assertNoCommandRowLeft(): Promise<void> {
  assert.deepEqual(await store.outboxPending(outboxTopicCommandBatches, 10), [], 'every command row is marked done');
}

test("a command for an actor of the worker's own shards is applied with no stream entry, and its outbox row is marked done", async () => {
  assert.equal(role.worker.ownedShards().length, shardCount, 'the one worker owns every shard');
  const before = await commandEntries();
  for (let round = 1; round <= 3; round += 1) {
    assert.equal(await client.ask('forwarder', 'f1', 'forward', { target: 'near' }), 'forwarded');
    await eventually(async () => assert.equal(await tallyCount('near'), round));
  }
  // Only the client's three asks went through a stream; the forwarder's three commands did not.
  assert.equal(await commandEntries(), before + 3);
  await eventually(assertNoCommandRowLeft);
});

test('a command whose local write is refused arrives through its stream instead, applied exactly once', async () => {
  assert.equal(await client.ask('forwarder', 'f2', 'forward', { target: 'stale' }), 'forwarded');
  await eventually(async () => assert.equal(await tallyCount('stale'), 1));
  // Another writer moves the tally on behind the runtime's back: its copy in memory is stale, so
  // the next local write is refused for its version.
  const stored = await store.load('tally/stale');
  assert.ok(stored);
  const shard = shardOf('tally/stale', shardCount);
  const external = { count: 10, commandIds: Array.from({ length: 10 }, (_, index) => `external-${index}`) };
  assert.equal(await store.commit({
    actorKey: 'tally/stale',
    expectedVersion: stored.version,
    newVersion: stored.version + 1,
    state: external,
    fence: { shard, token: role.worker.fenceToken(shard) ?? 0 },
    appliedCommands: [],
    outbox: [],
    readModels: [],
  }), 'ok');
  const before = await commandEntries();
  assert.equal(await client.ask('forwarder', 'f2', 'forward', { target: 'stale' }), 'forwarded');
  await eventually(async () => assert.equal(await tallyCount('stale'), 11), 10_000);
  // The client's ask, and the refused command sent through its stream after all (no sweep runs).
  assert.equal(await commandEntries(), before + 2);
  await eventually(assertNoCommandRowLeft);
  await eventually(assertStreamsDrained);
  const state = (await store.load('tally/stale'))?.state as unknown as TallyState;
  assert.equal(state.count, 11, 'applied once, once every copy was read');
  assert.equal(new Set(state.commandIds).size, state.commandIds.length, 'no command applied twice');
});
