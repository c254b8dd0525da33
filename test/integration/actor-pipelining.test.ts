// Batches in flight together (the shard worker reads and applies the next batch while the previous
// one's durable write is under way) must not change what a sender sees: the commands of one actor
// are applied in stream order, each exactly once, each against the state the previous one made
// durable, and a refused write holds back that actor's later commands instead of letting them
// apply ahead of it. The non-idempotent tally actor records every applied command id, so a double
// or out-of-order application shows in its state.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { BusEntry } from '../../src/bus/bus.ts';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { Requester } from '../../src/bus/request-reply.ts';
import { commandStreamKey, replyStreamKey, shardOf } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import { decodeEntryEnvelopes, encodeEnvelope } from '../../src/actors/codec.ts';
import { actorId, type ActorBehavior, type CommandEnvelope } from '../../src/actors/envelope.ts';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import { runtimeStore } from '../../src/actors/store-adapter.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import type { CommitWrite, SnapshotStore } from '../../src/store/store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { commandGroup } from '../../src/bus/shards.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { tallyActorType, tallyBehavior, type TallyState } from '../support/tally-actor.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

const behaviors = [tallyBehavior()] as unknown as Array<ActorBehavior<unknown>>;

async function tallyOf(store: SnapshotStore, key: string): Promise<TallyState | null> {
  const snapshot = await store.load(actorId(tallyActorType, key));
  return snapshot === null ? null : (snapshot.state as unknown as TallyState);
}

describe('the runtime with batches applied concurrently', () => {
  const shardCount = 4;
  const keyPrefix = 'pipe:';
  const group = 'workers';
  const consumer = 'c1';
  const replyStream = replyStreamKey(keyPrefix, 'test');
  let dir: string;
  let store: LmdbStore;
  let bus: MemoryBus;
  let runtime: ActorRuntime;
  const fenceToken = 1;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipelining-'));
    store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
    await store.init();
    bus = new MemoryBus();
    for (let shard = 0; shard < shardCount; shard += 1) await bus.ensureGroup(commandStreamKey(keyPrefix, shard), group);
    await bus.ensureGroup(replyStream, 'test');
    runtime = new ActorRuntime({
      bus,
      store: runtimeStore(store),
      behaviors,
      keyPrefix,
      shardCount,
      group,
      consumer,
      clock: { nowMs: () => Date.now() },
      fenceToken: () => fenceToken,
    });
  });

  after(() => teardown(
    () => bus?.close(),
    () => store?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  function command(key: string, commandId: string): CommandEnvelope {
    return {
      commandId,
      actorType: tallyActorType,
      actorKey: key,
      kind: 'add',
      payload: null,
      replyTo: { stream: replyStream, requestId: commandId },
      sentAtMs: Date.now(),
    };
  }

  /** Appends the commands (in order) and reads them back as one batch, as the worker would. */
  async function batchOf(commands: readonly CommandEnvelope[]): Promise<BusEntry[]> {
    const streams = new Set<string>();
    for (const item of commands) {
      const stream = runtime.streamFor(item.actorType, item.actorKey);
      streams.add(stream);
      await bus.append(stream, encodeEnvelope(item));
    }
    const entries = await bus.read(group, consumer, [...streams], { count: 1_000, blockMs: 0 });
    assert.equal(entries.length, commands.length);
    return entries;
  }

  /** Every reply sent so far, by request id (a request answered twice keeps both). */
  async function replies(): Promise<Map<string, unknown[]>> {
    const byRequest = new Map<string, unknown[]>();
    for (const entry of await bus.read('test', 'reader', [replyStream], { count: 10_000, blockMs: 0 })) {
      // A batched reply entry: `[[requestId, reply], …]` (docs/bus.md).
      for (const [requestId, reply] of JSON.parse(entry.payload) as Array<[string, unknown]>) {
        byRequest.set(requestId, [...(byRequest.get(requestId) ?? []), reply]);
      }
    }
    return byRequest;
  }

  async function pendingOf(key: string): Promise<number> {
    const summary = await bus.summary(runtime.streamFor(tallyActorType, key));
    return summary.groups.find((item) => item.group === group)?.pending ?? -1;
  }

  test('one actor across eight overlapping batches: every command applied once, in stream order', async () => {
    const key = `hot-${randomUUID()}`;
    const other = `cold-${randomUUID()}`;
    const sent: string[] = [];
    const batches: BusEntry[][] = [];
    for (let batch = 0; batch < 8; batch += 1) {
      const commands: CommandEnvelope[] = [];
      for (let index = 0; index < 5; index += 1) {
        const commandId = `${batch}-${index}-${randomUUID()}`;
        sent.push(commandId);
        commands.push(command(key, commandId));
      }
      commands.push(command(other, `${batch}-other-${randomUUID()}`));
      // A redelivery of a command of the previous batch, which is still in flight when this one starts.
      const previous = sent[sent.length - 6];
      if (previous !== undefined && batch > 0) commands.push(command(key, previous));
      batches.push(await batchOf(commands));
    }

    // All eight are started before any has finished: each one's writes overlap the others'.
    const results = await Promise.all(batches.map((entries) => runtime.applyBatch(entries)));

    assert.deepEqual(results.map((result) => result.pending.length), batches.map(() => 0));
    const state = await tallyOf(store, key);
    assert.deepEqual(state?.commandIds, sent, 'applied once each, in the order they were sent');
    assert.equal(state?.count, sent.length);
    assert.equal((await tallyOf(store, other))?.count, 8);
    const answered = await replies();
    sent.forEach((commandId, index) => {
      const got = answered.get(commandId) ?? [];
      assert.ok(got.length >= 1, `command ${index} was answered`);
      // A redelivered command is answered again with its first reply: it saw the state it made.
      for (const reply of got) assert.deepEqual(reply, { count: index + 1 });
    });
    assert.equal(await pendingOf(key), 0, 'every entry acknowledged');
  });

  test('a refused write holds back the same actor in a later batch already in flight: nothing applies on stale state', async () => {
    const key = `stale-${randomUUID()}`;
    const id = actorId(tallyActorType, key);
    const first = randomUUID();
    await runtime.applyBatch(await batchOf([command(key, first)]));
    // Another writer moves the actor on behind the runtime's back: the in-memory copy is stale.
    const stored = await store.load(id);
    assert.ok(stored);
    const external = Array.from({ length: 3 }, (_, index) => `external-${index}`);
    const written = await store.commit({
      actorKey: id,
      expectedVersion: stored.version,
      newVersion: stored.version + 1,
      state: { count: 4, commandIds: [first, ...external] },
      fence: { shard: shardOf(id, shardCount), token: fenceToken },
      appliedCommands: [],
      outbox: [],
      readModels: [],
    });
    assert.equal(written, 'ok');

    const second = randomUUID();
    const third = randomUUID();
    const refusedBatch = await batchOf([command(key, second)]);
    const laterBatch = await batchOf([command(key, third)]);
    const [refused, later] = await Promise.all([runtime.applyBatch(refusedBatch), runtime.applyBatch(laterBatch)]);

    assert.equal(refused.retried, 1, 'the stale write is refused');
    assert.equal(later.retried, 1, 'the later command waits for the refused one instead of applying first');
    assert.deepEqual((await tallyOf(store, key))?.commandIds, [first, ...external], 'nothing was applied');
    assert.equal(await pendingOf(key), 2, 'both entries stay pending');

    // Recovery: the worker unblocks the shard and re-reads its pending entries in stream order.
    runtime.unblockShard(shardOf(id, shardCount));
    const stream = runtime.streamFor(tallyActorType, key);
    const pending = await bus.readPending(stream, group, consumer, { count: 100 });
    const recovered = await runtime.applyBatch(pending.entries);
    assert.equal(recovered.applied, 2);
    assert.deepEqual((await tallyOf(store, key))?.commandIds, [first, ...external, second, third]);
    const answered = await replies();
    assert.deepEqual(answered.get(second), [{ count: 5 }]);
    assert.deepEqual(answered.get(third), [{ count: 6 }]);
  });

  test('a command that throws holds back only its own actor; the rest of the batch is applied and answered', async () => {
    const key = `fine-${randomUUID()}`;
    const broken = `broken-${randomUUID()}`;
    // A state the store refuses (not JSON: a non-finite number) makes the commit throw.
    const failing: CommandEnvelope = { ...command(broken, randomUUID()), kind: 'add' };
    const fine = command(key, randomUUID());
    const throwingRuntime = new ActorRuntime({
      bus,
      store: runtimeStore(store),
      behaviors: [
        {
          ...tallyBehavior(),
          handle: (state: TallyState | null, item: CommandEnvelope) =>
            item.actorKey === broken ? { state: { count: Number.NaN, commandIds: [] }, reply: null } : tallyBehavior().handle(state, item, { nowMs: 0, commandId: item.commandId }),
        },
      ] as unknown as Array<ActorBehavior<unknown>>,
      keyPrefix,
      shardCount,
      group,
      consumer,
      clock: { nowMs: () => Date.now() },
      fenceToken: () => fenceToken,
    });
    const result = await throwingRuntime.applyBatch(await batchOf([failing, fine]));
    assert.equal(result.failed, 1);
    assert.equal(result.applied, 1);
    assert.equal((await tallyOf(store, key))?.count, 1);
    assert.equal(await tallyOf(store, broken), null);
    assert.equal(await pendingOf(broken), 1, 'the failed command stays pending, to be retried');
    assert.deepEqual((await replies()).get(fine.commandId), [{ count: 1 }]);
  });
});

describe('a shard worker with several batches in flight, over Redis', () => {
  const shardCount = 2;
  const batchSizeMax = 4;
  const keyPrefix = randomKeyPrefix('pipe');
  let redis: PrivateRedis;
  let dir: string;
  let lmdb: LmdbStore;
  let bus: RedisBus;
  let role: ShardRole;
  let requester: Requester;
  let client: ActorClient;
  let pendingPeak = 0;

  before(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'pipelining-worker-'));
    lmdb = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
    await lmdb.init();
    bus = new RedisBus({ redis: redis.url });
    // A slow disk: each durable write takes 20 ms more. While one batch waits for it, the worker
    // should already have read the next ones: the shard's pending count then exceeds one batch.
    const slow = slowCommits(lmdb, 20, async (write) => {
      const stream = commandStreamKey(keyPrefix, write.fence.shard);
      const summary = await bus.summary(stream);
      pendingPeak = Math.max(pendingPeak, summary.groups.find((item) => item.group === commandGroup)?.pending ?? 0);
    });
    role = await startShardRole({
      bus,
      leases: new MemoryLeases(),
      store: slow,
      behaviors,
      workerId: 'w-pipe',
      keyPrefix,
      shardCount,
      clock: { nowMs: () => Date.now() },
      readBlockMs: 100,
      batchSizeMax,
      batchesInFlightMax: 4,
    });
    requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, 'client'), blockMs: 100 });
    client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: () => Date.now() });
  });

  after(() => teardown(
    () => requester?.close(),
    () => role?.stop(),
    () => bus?.close(),
    () => lmdb?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
    () => redis?.stop(),
  ));

  test('a hundred commands to one actor sent at once, some twice: each applied once, in order, each answered with its own count', async () => {
    const key = `burst-${randomUUID()}`;
    const ids = Array.from({ length: 100 }, () => randomUUID());
    // Sent without waiting for answers (in order on one connection, so in this order on the
    // stream), five per event-loop turn, so they go out in 20 batched entries: more than one read
    // of `batchSizeMax` entries. Every tenth is sent a second time right after, as a client
    // retrying would (in the same entry, or the next).
    const asked: Array<Promise<{ count: number }>> = [];
    const expected: number[] = [];
    for (const [index, commandId] of ids.entries()) {
      if (index % 5 === 0) await new Promise((resolve) => setImmediate(resolve));
      asked.push(client.ask<{ count: number }>(tallyActorType, key, 'add', null, { commandId, timeoutMs: 30_000 }));
      expected.push(index + 1);
      if (index % 10 === 0) {
        asked.push(client.ask<{ count: number }>(tallyActorType, key, 'add', null, { commandId, timeoutMs: 30_000 }));
        expected.push(index + 1);
      }
    }
    const answers = await Promise.all(asked);
    assert.deepEqual(answers.map((answer) => answer.count), expected);
    const state = await tallyOf(lmdb, key);
    assert.deepEqual(state?.commandIds, ids, 'each command applied exactly once, in the order sent');
    assert.ok(pendingPeak > batchSizeMax, `batches overlapped (peak pending ${pendingPeak} > one batch of ${batchSizeMax})`);
  });

  test('graceful stop waits for the batches in flight: everything read is answered and acknowledged', async () => {
    const key = `stop-${randomUUID()}`;
    const ids: string[] = Array.from({ length: 24 }, () => randomUUID());
    // Two per event-loop turn: twelve batched entries, more than one read holds.
    const asked: Array<Promise<{ count: number }>> = [];
    for (const [index, commandId] of ids.entries()) {
      if (index % 2 === 0) await new Promise((resolve) => setImmediate(resolve));
      asked.push(client.ask<{ count: number }>(tallyActorType, key, 'add', null, { commandId, timeoutMs: 30_000 }));
    }
    // Stop as soon as the first answer arrives: later batches are in flight or unread.
    await asked[0];
    await role.stop();
    const state = await tallyOf(lmdb, key);
    const applied = state?.commandIds ?? [];
    assert.ok(applied.length > 0);
    assert.deepEqual(applied, ids.slice(0, applied.length), 'a prefix of the commands, in order');
    // Nothing applied is left unacknowledged. (An entry may be pending unapplied: a read that
    // stop interrupted can have been served already; the next owner takes it over.)
    const stream = client.streamFor(tallyActorType, key);
    const leftover = await bus.readPending(stream, commandGroup, 'w-pipe', { count: 100 });
    const leftoverIds = leftover.entries.flatMap((entry) => (decodeEntryEnvelopes(entry.payload) ?? []).map((command) => command?.commandId ?? ''));
    assert.deepEqual(leftoverIds.filter((commandId) => applied.includes(commandId)), [], 'nothing left half-done');
    // A new worker picks up the rest: every command is answered, each applied once.
    role = await startShardRole({
      bus,
      leases: new MemoryLeases(),
      store: lmdb,
      behaviors,
      workerId: 'w-pipe-2',
      keyPrefix,
      shardCount,
      clock: { nowMs: () => Date.now() },
      readBlockMs: 100,
      batchSizeMax,
      batchesInFlightMax: 4,
    });
    const answers = await Promise.all(asked);
    assert.deepEqual(answers.map((answer) => answer.count), ids.map((_, index) => index + 1));
    assert.deepEqual((await tallyOf(lmdb, key))?.commandIds, ids);
  });
});

/** The real store with `delayMs` added after each durable commit (and a probe run meanwhile). */
function slowCommits(store: SnapshotStore, delayMs: number, probe: (write: CommitWrite) => Promise<void>): SnapshotStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      // The runtime writes each batch with one commitBatch.
      if (property === 'commitBatch') {
        return async (writes: readonly CommitWrite[]) => {
          const results = await target.commitBatch(writes);
          // Kept: a slow durable commit is the condition under test.
          await Promise.all([...writes.map(probe), new Promise((resolve) => setTimeout(resolve, delayMs))]);
          return results;
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
