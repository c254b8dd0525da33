// Linked steps (docs/actors.md): a command one actor sends to another of the same worker is applied
// in the sender's own batch and written in the sender's own all-or-nothing commit, with no outbox
// row between them; a command that comes back (a saga's return hop) is a second step of the sender
// in the same commit, merged into the sender's one write. When that commit is refused, nothing of it lands, the sender's own write is
// made with its rows, and the command still arrives exactly once. In-process bus, embedded store.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import type { TestRuntime } from '../support/test-runtime.ts';
import { shardOf } from '../../src/bus/shards.ts';
import type { ActorClient } from '../../src/actors/client.ts';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { outboxTopicCommandBatches } from '../../src/actors/runtime.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import type { CommitWrite, SnapshotStore } from '../../src/store/store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { tallyBehavior, type TallyState } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { commandStreamEntries, forwarderBehavior, startOneWorker } from '../support/one-worker.ts';

interface PingerState { readonly pings: number; readonly pongs: number }

/** `start` counts a ping and sends it to `echo/<key>`; the `pong` that comes back is counted too. */
function pingerBehavior(): ActorBehavior<PingerState> {
  return {
    type: 'pinger',
    encode: (state) => ({ ...state }),
    decode: (json) => json as unknown as PingerState,
    handle(state, command, context) {
      const current = state ?? { pings: 0, pongs: 0 };
      if (command.kind === 'pong') return { state: { ...current, pongs: current.pongs + 1 } };
      return {
        state: { ...current, pings: current.pings + 1 },
        send: [{ actorType: 'echo', actorKey: 'e', kind: 'ping', payload: { from: context.commandId } }],
        reply: 'started',
      };
    },
  };
}

/** Answers every `ping` with a `pong` to `pinger/p`, counting them. */
function echoBehavior(): ActorBehavior<{ readonly echoed: number }> {
  return {
    type: 'echo',
    encode: (state) => ({ ...state }),
    decode: (json) => json as unknown as { echoed: number },
    handle(state) {
      return { state: { echoed: (state?.echoed ?? 0) + 1 }, send: [{ actorType: 'pinger', actorKey: 'p', kind: 'pong', payload: null }] };
    },
  };
}

/** What the runtime handed the store: each call, all-or-nothing or not, with its writes. */
interface StoreCall { readonly kind: 'batch' | 'linked'; readonly writes: readonly CommitWrite[]; result?: unknown }

const keyPrefix = 'ls:';
const shardCount = 4;
let dir: string;
let store: LmdbStore;
const calls: StoreCall[] = [];
let bus: MemoryBus;
let role: ShardRole;
let client: ActorClient;
let worker: TestRuntime;

/** The store as the worker sees it, every commit recorded (the embedded store does the work). */
function recorded(inner: LmdbStore): SnapshotStore {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'commitBatch' || property === 'commitAllOrNothing') {
        return async (writes: readonly CommitWrite[]) => {
          const call: StoreCall = { kind: property === 'commitBatch' ? 'batch' : 'linked', writes };
          calls.push(call);
          call.result = property === 'commitBatch' ? await target.commitBatch(writes) : await target.commitAllOrNothing(writes);
          return call.result;
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'linked-steps-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new MemoryBus();
  worker = await startOneWorker({ bus, store: recorded(store), behaviors: [tallyBehavior(), forwarderBehavior(), pingerBehavior(), echoBehavior()], keyPrefix, shardCount });
  ({ role, client } = worker);
});

after(() => teardown(
  () => worker?.stop(),
  () => bus?.close(),
  () => store?.close(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

const commandEntries = (): Promise<number> => commandStreamEntries(bus, keyPrefix, shardCount);

async function tallyState(key: string): Promise<TallyState | undefined> {
  return (await store.load(`tally/${key}`))?.state as unknown as TallyState | undefined;
}

/** The commits made since `from` that wrote actor `actorKey`. */
function commitsOf(actorKey: string, from: number): StoreCall[] {
  return calls.slice(from).filter((call) => call.writes.some((write) => write.actorKey === actorKey));
}

const commandRows = (write: CommitWrite): number => write.outbox.filter((row) => row.topic === outboxTopicCommandBatches).length;

test("a command for an actor of the worker's own shards is applied in the sender's commit, with no outbox row", async () => {
  assert.equal(role.worker.ownedShards().length, shardCount, 'the one worker owns every shard');
  const entriesBefore = await commandEntries();
  const from = calls.length;
  for (let round = 1; round <= 3; round += 1) {
    assert.equal(await client.ask('forwarder', 'f1', 'forward', { target: 'near' }), 'forwarded');
    // Durable when the forwarder answered: its commit held the tally's step.
    assert.equal((await tallyState('near'))?.count, round);
  }
  assert.equal(await commandEntries(), entriesBefore + 3, "only the client's asks went through a stream");
  const commits = commitsOf('forwarder/f1', from);
  assert.equal(commits.length, 3);
  for (const call of commits) {
    assert.equal(call.kind, 'linked');
    assert.equal(call.result, true);
    assert.deepEqual(call.writes.map((write) => write.actorKey), ['forwarder/f1', 'tally/near']);
    assert.equal(call.writes.reduce((rows, write) => rows + commandRows(write), 0), 0, 'no command row written');
  }
  assert.deepEqual(await store.outboxPending(outboxTopicCommandBatches, 10), []);
});

test("a saga's return hop is applied in the same commit, the sender written once", async () => {
  const from = calls.length;
  const versionBefore = (await store.load('pinger/p'))?.version ?? 0;
  for (let round = 1; round <= 3; round += 1) {
    assert.equal(await client.ask('pinger', 'p', 'start', null), 'started');
    // Durable when the pinger answered: its start, the echo's ping and its own pong in one commit.
    assert.deepEqual((await store.load('pinger/p'))?.state, { pings: round, pongs: round });
    assert.deepEqual((await store.load('echo/e'))?.state, { echoed: round });
  }
  const commits = commitsOf('pinger/p', from);
  assert.equal(commits.length, 3, 'one commit per start');
  for (const [index, call] of commits.entries()) {
    assert.equal(call.kind, 'linked');
    const pinger = call.writes.filter((write) => write.actorKey === 'pinger/p');
    assert.deepEqual(pinger.map((write) => [write.expectedVersion, write.newVersion]), [[versionBefore + index, versionBefore + index + 1]], 'one write of the pinger for both its steps');
    assert.equal(pinger[0]?.appliedCommands.length, 2, 'its start and the pong');
  }
  assert.equal((await store.load('pinger/p'))?.version, versionBefore + 3);
});

test('a linked commit that is refused writes nothing of it; the command arrives through its row, exactly once', async () => {
  assert.equal(await client.ask('forwarder', 'f2', 'forward', { target: 'stale' }), 'forwarded');
  assert.equal((await tallyState('stale'))?.count, 1);
  // Another writer moves the tally on behind the runtime's back: its copy in memory is stale, so
  // the next commit that links a step of it is refused whole.
  const stored = await store.load('tally/stale');
  assert.ok(stored);
  const shard = shardOf('tally/stale', shardCount);
  const external = { count: 10, commandIds: Array.from({ length: 10 }, (_, index) => `external-${index}`) };
  assert.equal(await store.commit({
    actorKey: 'tally/stale', expectedVersion: stored.version, newVersion: stored.version + 1, state: external,
    fence: { shard, token: role.worker.fenceToken(shard) ?? 0 }, appliedCommands: [], outbox: [], readModels: [],
  }), 'ok');
  const forwarderBefore = (await store.load('forwarder/f2'))?.version ?? 0;
  const from = calls.length;
  assert.equal(await client.ask('forwarder', 'f2', 'forward', { target: 'stale' }), 'forwarded');
  await eventually(async () => assert.equal((await tallyState('stale'))?.count, 11), 10_000);
  const [refused, alone] = commitsOf('forwarder/f2', from);
  assert.equal(refused?.kind, 'linked');
  assert.equal(refused?.result, false, 'the linked commit was refused');
  assert.equal(alone?.kind, 'batch', "then the sender's own write alone");
  assert.equal(alone?.writes.reduce((rows, write) => rows + commandRows(write), 0), 1, 'with its command row');
  assert.equal((await store.load('forwarder/f2'))?.version, forwarderBefore + 1);
  await eventually(async () => assert.deepEqual(await store.outboxPending(outboxTopicCommandBatches, 10), []));
  const state = await tallyState('stale');
  assert.equal(state?.count, 11, 'applied once');
  assert.equal(new Set(state?.commandIds).size, state?.commandIds.length, 'no command applied twice');
});

test('many senders at once, and the receiver asked directly meanwhile: every command applied exactly once, none waits forever', async () => {
  const forwards = 120;
  const direct = 30;
  const asks: Array<Promise<unknown>> = [];
  for (let index = 0; index < forwards; index += 1) asks.push(client.ask('forwarder', `many-${index % 40}`, 'forward', { target: 'hot' }));
  for (let index = 0; index < direct; index += 1) asks.push(client.ask('tally', 'hot', 'add', null));
  await Promise.all(asks);
  await eventually(async () => assert.equal((await tallyState('hot'))?.count, forwards + direct), 10_000);
  const state = await tallyState('hot');
  assert.equal(new Set(state?.commandIds).size, forwards + direct, 'no command applied twice');
  await eventually(async () => assert.deepEqual(await store.outboxPending(outboxTopicCommandBatches, 10), []));
});
