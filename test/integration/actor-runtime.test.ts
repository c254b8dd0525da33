// The runtime's guarantees, one by one, with the in-process bus and the embedded store: a command
// applied once however often it is delivered, idle actors passivated and reactivated from their
// snapshot, timers fired through the stream, and a stale writer refused.
import { after, before, test } from 'node:test';
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
import type { ActorBehavior, JsonValue } from '../../src/actors/envelope.ts';
import { commandsPerRowMax, outboxTopicCommandBatches, outboxTopicCommands } from '../../src/actors/runtime.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { tallyBehavior, type TallyState } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';

interface AlarmState {
  readonly dueAtMs: number;
  readonly fired: number;
}

/** A timed actor: `arm` sets a due time; the runtime's timer command increments `fired`. */
function alarmBehavior(): ActorBehavior<AlarmState> {
  return {
    type: 'alarm',
    encode: (state) => ({ ...state }),
    decode: (json) => json as unknown as AlarmState,
    timerAtMs: (state) => (state.fired === 0 ? state.dueAtMs : null),
    handle(state, command) {
      if (command.kind === 'arm') return { state: { dueAtMs: (command.payload as { dueAtMs: number }).dueAtMs, fired: 0 }, reply: 'armed' };
      if (command.kind === 'timer' && state !== null) return { state: { ...state, fired: state.fired + 1 } };
      if (command.kind === 'refuse') return { reply: { ok: false, code: 'refused_for_the_test' } };
      return { reply: 'ignored' };
    },
  };
}

/** Created once, then answered from its state (like a quote): `dedupeByState`. */
function onceBehavior(): ActorBehavior<{ readonly createdBy: string }> {
  return {
    type: 'once',
    dedupeByState: true,
    encode: (state) => ({ ...state }),
    decode: (json) => json as unknown as { createdBy: string },
    handle(state, command) {
      if (state !== null) return { reply: { createdBy: state.createdBy } };
      return { state: { createdBy: command.commandId }, reply: { createdBy: command.commandId } };
    },
  };
}

/**
 * An actor that may act before it has a state: `forward` tells a tally actor and keeps no state of
 * its own (a counter's refusal is such a command: it answers the asking transaction and counts
 * nothing); `keep` counts. Its `decode` reads only states its `encode` wrote, as every real one does.
 */
/** More than one command-batch row holds (`commandsPerRowMax`): the write's commands take two rows. */
const fanOutCount = commandsPerRowMax + 6;

function forwarderBehavior(): ActorBehavior<{ readonly kept: number }> {
  return {
    type: 'forwarder',
    encode: (state) => ({ kept: state.kept }),
    decode(json) {
      if (json === null || typeof json !== 'object' || Array.isArray(json) || typeof json['kept'] !== 'number') {
        throw new Error(`forwarder: not a state this actor wrote: ${JSON.stringify(json)}`);
      }
      return { kept: json['kept'] };
    },
    handle(state, command) {
      if (command.kind === 'forward') {
        return { send: [{ actorType: 'tally', actorKey: `from-${command.actorKey}`, kind: 'add', payload: null }], reply: 'forwarded' };
      }
      if (command.kind === 'fan-out') {
        const send = Array.from({ length: fanOutCount }, (_, index) => ({ actorType: 'tally', actorKey: `fan-${command.actorKey}-${index}`, kind: 'add', payload: null }));
        return { send, reply: 'sent' };
      }
      const kept = (state?.kept ?? 0) + 1;
      return { state: { kept }, reply: { kept } };
    },
  };
}

let dir: string;
let store: LmdbStore;
let bus: MemoryBus;
let role: ShardRole;
let client: ActorClient;
let requester: Requester;
const logged: Array<{ level: string; message: string; fields: Record<string, unknown> | undefined }> = [];
const keyPrefix = 'rt:';

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runtime-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new MemoryBus();
  role = await startShardRole({
    bus,
    leases: new MemoryLeases(),
    store,
    behaviors: [tallyBehavior(), alarmBehavior(), onceBehavior(), forwarderBehavior()] as unknown as Array<ActorBehavior<unknown>>,
    workerId: 'w1',
    keyPrefix,
    shardCount: 4,
    clock: { nowMs: () => Date.now() },
    readBlockMs: 100,
    log: (level, message, fields) => logged.push({ level, message, fields }),
  });
  requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, 'client'), blockMs: 100 });
  client = new ActorClient({ bus, requester, keyPrefix, shardCount: 4, nowMs: () => Date.now() });
});

after(() => teardown(
  () => requester?.close(),
  () => role?.stop(),
  () => bus?.close(),
  () => store?.close(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

test('the same command delivered three times is applied once and answered three times alike', async () => {
  const commandId = randomUUID();
  const replies = [];
  for (let index = 0; index < 3; index += 1) replies.push(await client.ask('tally', 'dup', 'add', null, { commandId }));
  assert.deepEqual(replies, [{ count: 1 }, { count: 1 }, { count: 1 }]);
  const snapshot = await store.load('tally/dup');
  assert.deepEqual((snapshot?.state as unknown as TallyState).commandIds, [commandId]);
});

// A refusal writes nothing, so the store keeps no reply to replay; an asker that retries with the
// same command id (its first reply lost, say) must still be answered, not left to time out.
test('a command that wrote nothing, repeated with the same id, is answered again alike', async () => {
  const commandId = randomUUID();
  const replies = [];
  for (let index = 0; index < 2; index += 1) replies.push(await client.ask('alarm', `refusing-${commandId}`, 'poke', null, { commandId, timeoutMs: 3_000 }));
  assert.deepEqual(replies, ['ignored', 'ignored']);
  assert.equal(await store.load(`alarm/refusing-${commandId}`), null, 'nothing was written');
});

// Commands one actor relays to another have nobody waiting for the answer: a refusal must reach
// operations through the log rather than vanish.
test('a refused command that nobody waits for is logged as a warning with its actor and code', async () => {
  const commandId = randomUUID();
  await client.tell('alarm', `unheard-${commandId}`, 'refuse', null, commandId);
  // With a message: without one, a failing assert.ok reads and parses this file to show the
  // expression, which under tsx can take longer than the whole wait.
  await eventually(() => assert.ok(logged.some((entry) => entry.fields?.['commandId'] === commandId), 'the refusal is logged'));
  const entry = logged.find((item) => item.fields?.['commandId'] === commandId);
  assert.equal(entry?.level, 'warn');
  assert.deepEqual(entry?.fields, { actorId: `alarm/unheard-${commandId}`, kind: 'refuse', commandId, reply: { ok: false, code: 'refused_for_the_test' } });
  // Asked (someone waits): answered, not logged.
  const askedId = randomUUID();
  assert.deepEqual(await client.ask('alarm', `heard-${askedId}`, 'refuse', null, { commandId: askedId }), { ok: false, code: 'refused_for_the_test' });
  assert.equal(logged.some((item) => item.fields?.['commandId'] === askedId), false);
});

test('an actor deduplicated by its state: a repeated command gets the first reply, from the one snapshot, with no dedupe-log copy', async () => {
  const commandId = randomUUID();
  const first = await client.ask('once', 'q1', 'create', null, { commandId });
  role.runtime.passivateIdle(-1); // the repeat is answered from the snapshot, not from memory
  const again = await client.ask('once', 'q1', 'create', null, { commandId });
  const other = await client.ask('once', 'q1', 'create', null);
  assert.deepEqual([first, again, other], [{ createdBy: commandId }, { createdBy: commandId }, { createdBy: commandId }]);
  assert.equal((await store.load('once/q1'))?.version, 1, 'written once');
  assert.equal(await store.getAppliedReply('once/q1', commandId), null, 'no copy of the reply in the dedupe log');
});

// An actor with no state that did something durable (here: told another actor) has a snapshot
// holding no state. Once it leaves memory (idle passivation, a restart), that snapshot must load
// as "no state yet", never be handed to the actor's decode as if it were one of its states.
test('an actor that acted before having a state is read back after passivation and keeps working', async () => {
  assert.equal(await client.ask('forwarder', 'f1', 'forward', null), 'forwarded');
  await eventually(async () => assert.equal(((await store.load('tally/from-f1'))?.state as unknown as TallyState | undefined)?.count, 1));
  assert.notEqual(await store.load('forwarder/f1'), null, 'its outbox row was written with it');
  role.runtime.passivateIdle(-1);
  assert.deepEqual(await client.ask('forwarder', 'f1', 'keep', null, { timeoutMs: 5_000 }), { kept: 1 });
  role.runtime.passivateIdle(-1);
  assert.deepEqual(await client.ask('forwarder', 'f1', 'keep', null, { timeoutMs: 5_000 }), { kept: 2 });
});

test('an idle actor leaves memory and comes back from its snapshot with its state intact', async () => {
  await client.ask('tally', 'idle', 'add', null);
  await client.ask('tally', 'idle', 'add', null);
  assert.ok(role.runtime.actorCount() > 0);
  assert.ok(role.runtime.passivateIdle(-1) > 0, 'every actor is idle for a negative idle time');
  assert.equal(role.runtime.actorCount(), 0);
  assert.deepEqual(await client.ask('tally', 'idle', 'add', null), { count: 3 });
});

test("an actor's timer fires through the stream at its due time, once", async () => {
  assert.equal(await client.ask('alarm', 'a1', 'arm', { dueAtMs: Date.now() + 200 }), 'armed');
  await eventually(async () => {
    const snapshot = await store.load('alarm/a1');
    assert.equal((snapshot?.state as unknown as AlarmState).fired, 1);
  }, 5_000);
  const timers = await store.list('timers', { where: { shard: 0 }, orderBy: 'dueAtMs', limit: 10 });
  assert.ok(timers.items.every((item) => item.id !== 'alarm/a1'), 'a fired timer is cleared');
});

test('a write under a stale fencing token is refused and leaves the actor unchanged', async () => {
  await client.ask('tally', 'fenced', 'add', null);
  const before = await store.load('tally/fenced');
  assert.ok(before);
  // A previous owner of the shard (token 0, below the current owner's) tries to write.
  const shard = shardOf('tally/fenced', 4);
  assert.ok((role.worker.fenceToken(shard) ?? 0) > 0);
  const result = await store.commit({
    actorKey: 'tally/fenced',
    expectedVersion: before.version,
    newVersion: before.version + 1,
    state: { count: 99, commandIds: [] },
    fence: { shard, token: 0 },
    appliedCommands: [],
    outbox: [],
    readModels: [],
  });
  assert.equal(result, 'fenced');
  assert.deepEqual((await store.load('tally/fenced'))?.state, before.state);
});

test('a write refused for a stale version is retried against the reloaded state, and the command still gets its reply', async () => {
  assert.deepEqual(await client.ask('tally', 'conflict', 'add', null), { count: 1 });
  // Another writer moves the actor on behind the runtime's back (the in-memory copy is now stale).
  const stored = await store.load('tally/conflict');
  assert.ok(stored);
  const shard = shardOf('tally/conflict', 4);
  const written = await store.commit({
    actorKey: 'tally/conflict',
    expectedVersion: stored.version,
    newVersion: stored.version + 1,
    state: { count: 10, commandIds: Array.from({ length: 10 }, (_, index) => `external-${index}`) },
    fence: { shard, token: role.worker.fenceToken(shard) ?? 0 },
    appliedCommands: [],
    outbox: [],
    readModels: [],
  });
  assert.equal(written, 'ok');
  assert.deepEqual(await client.ask('tally', 'conflict', 'add', null, { timeoutMs: 5_000 }), { count: 11 });
});

// An actor write's commands travel in command-batch rows (up to 64 envelopes each) instead of a
// row per command; the relay delivers every envelope of a row, and its sweep still relays rows a
// crashed worker left, of either topic (the older one-command rows included).
test('a write that sends seventy commands: every one arrives (two batch rows), and rows left behind of either topic are swept', async () => {
  assert.equal(await client.ask('forwarder', 'fan', 'fan-out', null), 'sent');
  await eventually(async () => {
    for (let index = 0; index < fanOutCount; index += 1) {
      assert.equal(((await store.load(`tally/fan-fan-${index}`))?.state as unknown as TallyState | undefined)?.count, 1, `tally ${index}`);
    }
  }, 15_000);
  const envelope = (target: string): JsonValue => ({ commandId: `left-${target}`, actorType: 'tally', actorKey: target, kind: 'add', payload: null, sentAtMs: Date.now() });
  // As a worker that crashed between its write and the relay leaves them (fenced as a shard this role does not own).
  assert.equal(await store.commit({
    actorKey: 'leftover/w', expectedVersion: 0, newVersion: 1, state: null, fence: { shard: 999, token: 1 }, appliedCommands: [], readModels: [],
    outbox: [
      { id: 'leftover/w:1:0', topic: outboxTopicCommandBatches, payload: [envelope('left-a'), envelope('left-b'), envelope('left-c')] },
      { id: 'leftover/w:1:1', topic: outboxTopicCommands, payload: envelope('left-d') },
    ],
  }), 'ok');
  await eventually(async () => {
    for (const target of ['left-a', 'left-b', 'left-c', 'left-d']) {
      assert.equal(((await store.load(`tally/${target}`))?.state as unknown as TallyState | undefined)?.count, 1, target);
    }
    assert.deepEqual([...(await store.outboxPending(outboxTopicCommandBatches, 10)), ...(await store.outboxPending(outboxTopicCommands, 10))], [], 'swept rows are marked done');
  }, 30_000);
});
