// One contract suite for the Bus port, run unchanged against the in-process adapter and against
// Redis Streams (a private redis-server from test/support). Every test uses a fresh random key
// prefix. Idle time passes on a manual clock for the memory bus and on the real clock for Redis.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { BusError, ManualClock, compareEntryIds, type Bus, type BusEntry } from '../../src/bus/bus.ts';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { commandStreamKey, replyStreamKey } from '../../src/bus/shards.ts';
import {
  Requester,
  RequestError,
  RequestTimeoutError,
  RequesterClosedError,
  RequesterOverloadedError,
  batchRequestsMax,
  headerBatchCount,
  reply,
  replyAddressOf,
  replyBatches,
  type AddressedReply,
} from '../../src/bus/request-reply.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { ActorClient } from '../../src/actors/client.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { startTallyShardRole, tallyActorType, type TallyState } from '../support/tally-actor.ts';
import { teardown } from '../support/teardown.ts';
import { memoryContractAdapter, type ContractHarness, redisContractAdapter, withHarness } from '../support/contract-adapters.ts';
import { randomKeyPrefix } from '../support/redis-server.ts';

interface Harness extends ContractHarness {
  readonly bus: Bus;
  readonly prefix: string;
  /** Lets `ms` of idle time pass for claims: a manual clock moves, Redis needs a real wait. */
  passTime(ms: number): Promise<void>;
  /** Another handle on the same streams, as a restarted process would have (memory: same bus). */
  reopen(): Bus;
  close(): Promise<void>;
}

const adapters = [
  memoryContractAdapter((): Harness => {
    const clock = new ManualClock();
    const bus = new MemoryBus({ clock });
    return {
      bus,
      prefix: randomKeyPrefix('bus'),
      passTime: async (ms) => clock.advance(ms),
      reopen: () => bus,
      close: () => bus.close(),
    };
  }),
  redisContractAdapter((url): Harness => {
    const buses: Bus[] = [new RedisBus({ redis: url })];
    const [bus] = buses as [Bus];
    return {
      bus,
      prefix: randomKeyPrefix('bus'),
      // Kept: Redis measures idle time by its own clock, which no test can move; a little extra
      // covers the millisecond granularity. (The memory bus passes the same contract on a moved clock.)
      passTime: async (ms) => sleep(ms + 5),
      reopen: () => {
        const again = new RedisBus({ redis: url });
        buses.push(again);
        return again;
      },
      close: async () => {
        await Promise.all(buses.map(async (each) => each.close()));
      },
    };
  }),
];

async function appendMany(bus: Bus, stream: string, count: number, label = 'm'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) ids.push(await bus.append(stream, `${label}${i}`));
  return ids;
}

const noWait = { count: 1_000, blockMs: 0 } as const;

/** Resolves with the value, or rejects if it takes longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A consumer that answers every command on `stream` with `answer(entry)` until stopped. */
function startEchoWorker(bus: Bus, stream: string, answer: (entry: BusEntry) => string): { stop(): Promise<void> } {
  const abort = new AbortController();
  const done = (async () => {
    await bus.ensureGroup(stream, 'workers');
    while (!abort.signal.aborted) {
      const entries = await bus.read('workers', 'w1', [stream], { count: 256, blockMs: 200, signal: abort.signal });
      await Promise.all(entries.map(async (entry) => reply(bus, entry, answer(entry))));
      if (entries.length > 0) await bus.ack(stream, 'workers', entries.map((entry) => entry.id));
    }
  })();
  return {
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

/** The requests of a batched command entry: its payload is a JSON array of the requests' texts. */
function batchItems(entry: BusEntry): Array<{ requestId: string; text: string }> {
  return (JSON.parse(entry.payload) as Array<{ requestId: string; text: string }>).map(({ requestId, text }) => ({ requestId, text }));
}

/** Answers every request of the batched entries read (one read) with `answer`, in one `replyBatches` call. */
async function answerBatches(bus: Bus, stream: string, answer: (text: string) => unknown): Promise<BusEntry[]> {
  const entries = await bus.read('workers', 'w', [stream], { count: 100, blockMs: 2_000 });
  const replies: AddressedReply[] = [];
  for (const entry of entries) {
    const replyStream = entry.headers.replyTo ?? '';
    for (const item of batchItems(entry)) replies.push({ to: { stream: replyStream, requestId: item.requestId }, payload: answer(item.text) });
  }
  await replyBatches(bus, replies);
  await bus.ack(stream, 'workers', entries.map((entry) => entry.id));
  return entries;
}

for (const adapter of adapters) {
  describe(`Bus contract: ${adapter.name}`, { timeout: 60_000 }, () => {
    before(() => adapter.setUp());
    after(() => adapter.tearDown());

    test('entries are read in append order, with payload and headers, including those appended before the group', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 7);
        const ids = await appendMany(bus, stream, 5);
        const withHeaders = await bus.append(stream, '{"json":true}', { headers: { kind: 'x', empty: '' } });
        await bus.ensureGroup(stream, 'g');
        await bus.ensureGroup(stream, 'g'); // idempotent
        const entries = await bus.read('g', 'c1', [stream], noWait);
        assert.deepEqual(entries.map((entry) => entry.id), [...ids, withHeaders]);
        assert.deepEqual(entries.map((entry) => entry.payload), ['m0', 'm1', 'm2', 'm3', 'm4', '{"json":true}']);
        for (let i = 1; i < entries.length; i += 1) {
          assert.ok(compareEntryIds(entries[i - 1]?.id ?? '0', entries[i]?.id ?? '0') < 0, 'ids strictly increase');
        }
        assert.deepEqual(entries[5]?.headers, { kind: 'x', empty: '' });
        assert.deepEqual(entries[0]?.headers, {});
        assert.ok(entries.every((entry) => entry.deliveryCount === 1 && entry.stream === stream));
        assert.deepEqual(await bus.read('g', 'c1', [stream], noWait), []);
        assert.equal(await bus.length(stream), 6);
      }));

    test('a read honours count and spans several streams', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const [a, b] = [`${prefix}a`, `${prefix}b`];
        for (const stream of [a, b]) await bus.ensureGroup(stream, 'g');
        await appendMany(bus, a, 5, 'a');
        await appendMany(bus, b, 2, 'b');
        const first = await bus.read('g', 'c', [a, b], { count: 3, blockMs: 0 });
        assert.deepEqual(first.map((entry) => entry.payload), ['a0', 'a1', 'a2', 'b0', 'b1']);
        const second = await bus.read('g', 'c', [a, b], { count: 3, blockMs: 0 });
        assert.deepEqual(second.map((entry) => `${entry.stream === a ? 'A' : 'B'}:${entry.payload}`), ['A:a3', 'A:a4']);
      }));

    test('a group delivers each entry to exactly one of its consumers; each group gets every entry', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 1);
        await bus.ensureGroup(stream, 'g');
        await bus.ensureGroup(stream, 'other');
        await appendMany(bus, stream, 50);
        const seen: Record<string, string[]> = { c1: [], c2: [] };
        for (let round = 0; round < 20; round += 1) {
          for (const consumer of ['c1', 'c2']) {
            const entries = await bus.read('g', consumer, [stream], { count: 7, blockMs: 0 });
            seen[consumer]?.push(...entries.map((entry) => entry.payload));
          }
        }
        const all = [...(seen.c1 ?? []), ...(seen.c2 ?? [])];
        assert.equal(all.length, 50);
        assert.equal(new Set(all).size, 50);
        assert.ok((seen.c1?.length ?? 0) > 0 && (seen.c2?.length ?? 0) > 0);
        const other = await bus.read('other', 'c3', [stream], noWait);
        assert.equal(other.length, 50);
      }));

    test('ack removes entries from the pending list, once', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 2);
        await bus.ensureGroup(stream, 'g');
        await appendMany(bus, stream, 5);
        const entries = await bus.read('g', 'c1', [stream], noWait);
        const before = await bus.summary(stream);
        assert.equal(before.groups[0]?.pending, 5);
        assert.equal(before.groups[0]?.oldestPendingId, entries[0]?.id);
        assert.deepEqual(before.groups[0]?.consumers, [{ consumer: 'c1', pending: 5 }]);
        const acked = entries.slice(0, 3).map((entry) => entry.id);
        assert.equal(await bus.ack(stream, 'g', acked), 3);
        assert.equal(await bus.ack(stream, 'g', acked), 0);
        assert.equal(await bus.ack(stream, 'g', []), 0);
        const afterAck = await bus.summary(stream);
        assert.equal(afterAck.groups[0]?.pending, 2);
        assert.equal(afterAck.groups[0]?.oldestPendingId, entries[3]?.id);
        const pending = await bus.readPending(stream, 'g', 'c1', { count: 10 });
        assert.deepEqual(pending.entries.map((entry) => entry.payload), ['m3', 'm4']);
      }));

    test('unacknowledged entries are re-read by the same consumer after a restart, with delivery counts', () =>
      withHarness(adapter, async ({ bus, prefix, reopen }) => {
        const stream = commandStreamKey(prefix, 3);
        await bus.ensureGroup(stream, 'g');
        await appendMany(bus, stream, 6);
        const first = await bus.read('g', 'worker-a', [stream], noWait);
        await bus.ack(stream, 'g', [first[1]?.id ?? '']);
        const restarted = reopen();
        assert.deepEqual(await restarted.read('g', 'worker-a', [stream], noWait), [], 'nothing new');
        const page1 = await restarted.readPending(stream, 'g', 'worker-a', { count: 3 });
        assert.deepEqual(page1.entries.map((entry) => entry.payload), ['m0', 'm2', 'm3']);
        assert.ok(page1.entries.every((entry) => entry.deliveryCount === 2));
        assert.deepEqual(page1.deletedIds, []);
        const page2 = await restarted.readPending(stream, 'g', 'worker-a', { count: 3, afterId: page1.entries[2]?.id ?? '' });
        assert.deepEqual(page2.entries.map((entry) => entry.payload), ['m4', 'm5']);
        const again = await restarted.readPending(stream, 'g', 'worker-a', { count: 10 });
        assert.deepEqual(again.entries.map((entry) => entry.deliveryCount), [3, 3, 3, 3, 3]);
        assert.deepEqual((await restarted.readPending(stream, 'g', 'worker-b', { count: 10 })).entries, []);
      }));

    test("claimStale hands a dead consumer's entries to another after minIdle, not before", () =>
      withHarness(adapter, async ({ bus, prefix, passTime }) => {
        const stream = commandStreamKey(prefix, 4);
        await bus.ensureGroup(stream, 'g');
        await appendMany(bus, stream, 3);
        await bus.read('g', 'dead', [stream], noWait);
        const minIdleMs = 200;
        const early = await bus.claimStale(stream, 'g', 'alive', { minIdleMs, count: 10 });
        assert.deepEqual(early.entries, []);
        assert.equal(early.cursor, '0-0');
        await passTime(minIdleMs);
        const claimed = await bus.claimStale(stream, 'g', 'alive', { minIdleMs, count: 10 });
        assert.deepEqual(claimed.entries.map((entry) => entry.payload), ['m0', 'm1', 'm2']);
        assert.ok(claimed.entries.every((entry) => entry.deliveryCount === 2));
        assert.deepEqual(claimed.deletedIds, []);
        const summary = await bus.summary(stream);
        assert.deepEqual(summary.groups[0]?.consumers, [{ consumer: 'alive', pending: 3 }]);
        assert.deepEqual((await bus.readPending(stream, 'g', 'dead', { count: 10 })).entries, []);
        // Claiming resets the idle time: a third consumer cannot take them straight away.
        assert.deepEqual((await bus.claimStale(stream, 'g', 'third', { minIdleMs, count: 10 })).entries, []);
      }));

    test('claimStale pages through the pending list with a cursor', () =>
      withHarness(adapter, async ({ bus, prefix, passTime }) => {
        const stream = commandStreamKey(prefix, 5);
        await bus.ensureGroup(stream, 'g');
        await appendMany(bus, stream, 5);
        await bus.read('g', 'dead', [stream], noWait);
        await passTime(50);
        const payloads: string[] = [];
        let cursor = '0-0';
        for (let page = 0; page < 10; page += 1) {
          const batch = await bus.claimStale(stream, 'g', 'alive', { minIdleMs: 50, count: 2, cursor });
          payloads.push(...batch.entries.map((entry) => entry.payload));
          cursor = batch.cursor;
          if (cursor === '0-0') break;
        }
        assert.deepEqual(payloads, ['m0', 'm1', 'm2', 'm3', 'm4']);
      }));

    test('a blocking read wakes on append, and returns empty after blockMs otherwise', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 6);
        await bus.ensureGroup(stream, 'g');
        const startedMs = Date.now();
        const reading = bus.read('g', 'c', [stream], { count: 10, blockMs: 10_000 });
        await sleep(50); // kept: let the read block first (nothing observable says it has; the entry would be returned either way)
        await bus.append(stream, 'wake');
        const entries = await within(2_000, reading);
        assert.deepEqual(entries.map((entry) => entry.payload), ['wake']);
        assert.ok(Date.now() - startedMs < 2_000);
        const timedStartMs = Date.now();
        assert.deepEqual(await within(2_000, bus.read('g', 'c', [stream], { count: 10, blockMs: 100 })), []);
        assert.ok(Date.now() - timedStartMs >= 90, 'waited about blockMs');
      }));

    test('an aborted or closed blocking read resolves empty at once', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 8);
        await bus.ensureGroup(stream, 'g');
        const abort = new AbortController();
        const reading = bus.read('g', 'c', [stream], { count: 10, blockMs: 30_000, signal: abort.signal });
        await sleep(20); // kept: let the read block first (nothing observable says it has)
        abort.abort();
        assert.deepEqual(await within(1_000, reading), []);
        // The bus still works after an abort (the blocked connection was replaced).
        await bus.append(stream, 'after-abort');
        assert.deepEqual((await bus.read('g', 'c', [stream], { count: 10, blockMs: 1_000 })).map((entry) => entry.payload), ['after-abort']);
        const blocked = bus.read('g', 'c', [stream], { count: 10, blockMs: 30_000 });
        await sleep(20); // kept: let the read block first (nothing observable says it has)
        await within(1_000, bus.close());
        assert.deepEqual(await within(1_000, blocked), []);
        await assert.rejects(bus.append(stream, 'x'), (error: unknown) => error instanceof BusError && error.code === 'closed');
      }));

    test('reading without a group fails with no_group', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = `${prefix}nogroup`;
        await bus.append(stream, 'x');
        const isNoGroup = (error: unknown): boolean => error instanceof BusError && error.code === 'no_group';
        await assert.rejects(bus.read('missing', 'c', [stream], noWait), isNoGroup);
        await assert.rejects(bus.read('missing', 'c', [stream], { count: 1, blockMs: 100 }), isNoGroup);
        await assert.rejects(bus.readPending(stream, 'missing', 'c', { count: 1 }), isNoGroup);
        await assert.rejects(bus.claimStale(stream, 'missing', 'c', { minIdleMs: 0, count: 1 }), isNoGroup);
      }));

    test('trimming keeps at least maxLen most recent entries and bounds the length', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 9);
        const maxLen = 100;
        for (let i = 0; i < 1_000; i += 1) await bus.append(stream, `m${i}`, { maxLenApprox: maxLen });
        const length = await bus.length(stream);
        assert.ok(length >= maxLen, `kept ${length}`);
        assert.ok(length <= 3 * maxLen, `trimmed to ${length}`);
        await bus.ensureGroup(stream, 'g');
        const kept = (await bus.read('g', 'c', [stream], { count: 1_000, blockMs: 0 })).map((entry) => entry.payload);
        assert.equal(kept.length, length);
        assert.deepEqual(kept.slice(-maxLen), Array.from({ length: maxLen }, (_, i) => `m${900 + i}`));
      }));

    test('pending entries trimmed away are reported once as deletedIds, never silently', () =>
      withHarness(adapter, async ({ bus, prefix, passTime }) => {
        const stream = commandStreamKey(prefix, 10);
        await bus.ensureGroup(stream, 'g');
        const lostIds = await appendMany(bus, stream, 4);
        await bus.read('g', 'c1', [stream], { count: 2, blockMs: 0 });
        await bus.read('g', 'c2', [stream], { count: 2, blockMs: 0 });
        for (let i = 0; i < 500; i += 1) await bus.append(stream, `n${i}`, { maxLenApprox: 10 });
        const own = await bus.readPending(stream, 'g', 'c1', { count: 10 });
        assert.deepEqual(own.entries, []);
        assert.deepEqual(own.deletedIds, lostIds.slice(0, 2));
        assert.deepEqual((await bus.readPending(stream, 'g', 'c1', { count: 10 })).deletedIds, []);
        await passTime(20);
        const claimed = await bus.claimStale(stream, 'g', 'c3', { minIdleMs: 10, count: 10 });
        assert.deepEqual(claimed.entries, []);
        assert.deepEqual(claimed.deletedIds, lostIds.slice(2));
        assert.equal((await bus.summary(stream)).groups[0]?.pending, 0);
      }));

    test('summary reports length, pending per consumer and lag; a missing stream is empty', () =>
      withHarness(adapter, async ({ bus, prefix }) => {
        const stream = commandStreamKey(prefix, 11);
        assert.deepEqual(await bus.summary(stream), { stream, length: 0, groups: [] });
        await bus.ensureGroup(stream, 'g');
        await appendMany(bus, stream, 10);
        await bus.read('g', 'c1', [stream], { count: 3, blockMs: 0 });
        await bus.read('g', 'c2', [stream], { count: 1, blockMs: 0 });
        const summary = await bus.summary(stream);
        assert.equal(summary.length, 10);
        const group = summary.groups[0];
        assert.equal(group?.group, 'g');
        assert.equal(group?.pending, 4);
        assert.equal(group?.lag, 6);
        assert.deepEqual([...(group?.consumers ?? [])].sort((a, b) => a.consumer.localeCompare(b.consumer)), [
          { consumer: 'c1', pending: 3 },
          { consumer: 'c2', pending: 1 },
        ]);
      }));

    describe('request/reply', () => {
      test('a request gets its reply', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          const worker = startEchoWorker(bus, commands, (entry) => `echo:${entry.payload}`);
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-1') });
          try {
            let embedded = '';
            const answer = await within(5_000, requester.request(commands, (address) => {
              embedded = JSON.stringify(address);
              return `hello ${address.requestId}`;
            }));
            const address = JSON.parse(embedded) as { stream: string; requestId: string };
            assert.equal(address.stream, replyStreamKey(prefix, 'edge-1'));
            assert.equal(answer.payload, `echo:hello ${address.requestId}`);
            assert.equal(answer.requestId, address.requestId);
            assert.equal(requester.stats.pending, 0);
          } finally {
            await requester.close();
            await worker.stop();
          }
        }));

      test('a request without a reply rejects with a typed timeout error', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-2') });
          try {
            const startedMs = Date.now();
            await assert.rejects(
              within(2_000, requester.request(commandStreamKey(prefix, 0), 'nobody listens', { timeoutMs: 100 })),
              (error: unknown) => error instanceof RequestTimeoutError && error.code === 'timeout' && error.timeoutMs === 100,
            );
            assert.ok(Date.now() - startedMs >= 95);
            assert.equal(requester.stats.pending, 0);
          } finally {
            await requester.close();
          }
        }));

      test('500 concurrent requests are each matched to their own caller', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          const worker = startEchoWorker(bus, commands, (entry) => `re:${entry.payload}`);
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-3') });
          try {
            const answers = await within(20_000, Promise.all(
              Array.from({ length: 500 }, async (_, i) => (await requester.request(commands, `n${i}`)).payload),
            ));
            assert.deepEqual(answers, Array.from({ length: 500 }, (_, i) => `re:n${i}`));
            assert.equal(requester.stats.pending, 0);
            assert.equal(requester.stats.unmatchedReplies, 0);
          } finally {
            await requester.close();
            await worker.stop();
          }
        }));

      test('pendingMax sheds load; close rejects waiting requests; late replies are dropped', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          await bus.ensureGroup(commands, 'workers');
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-4'), pendingMax: 2 });
          const first = requester.request(commands, 'a', { timeoutMs: 10_000 });
          const second = requester.request(commands, 'b', { timeoutMs: 10_000 });
          await assert.rejects(requester.request(commands, 'c'), (error: unknown) => error instanceof RequesterOverloadedError);
          // Answer 'a' twice: the duplicate finds no caller and is counted, not delivered.
          const [entryA] = await bus.read('workers', 'w', [commands], { count: 1, blockMs: 1_000 });
          assert.ok(entryA !== undefined && replyAddressOf(entryA) !== null);
          await reply(bus, entryA, 'A');
          await reply(bus, entryA, 'A again');
          assert.equal((await within(5_000, first)).payload, 'A');
          await eventually(() => assert.equal(requester.stats.unmatchedReplies, 1), 5_000, 10);
          const secondRejected = assert.rejects(second, (error: unknown) => error instanceof RequesterClosedError && error instanceof RequestError);
          await requester.close();
          await secondRejected;
          await assert.rejects(requester.request(commands, 'd'), (error: unknown) => error instanceof RequesterClosedError);
        }));

      test('closing the bus under a requester rejects its waiting requests', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-5') });
          const waiting = requester.request(commandStreamKey(prefix, 0), 'x', { timeoutMs: 30_000 });
          const rejected = assert.rejects(waiting, (error: unknown) => error instanceof RequesterClosedError);
          await sleep(20); // kept: let the request wait on its reply first (nothing observable says it does)
          await bus.close();
          await within(2_000, rejected);
          await within(1_000, requester.close());
        }));

      test('a command without a reply address gets no reply', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          await bus.ensureGroup(commands, 'workers');
          await bus.append(commands, 'fire and forget');
          const [entry] = await bus.read('workers', 'w', [commands], noWait);
          assert.ok(entry !== undefined);
          assert.equal(replyAddressOf(entry), null);
          assert.equal(await reply(bus, entry, 'ignored'), null);
        }));
    });

    describe('batched entries', () => {
      // Each request's JSON text names its own request id, as a command envelope does.
      const asText = (text: string) => (address: { requestId: string }) => JSON.stringify({ requestId: address.requestId, text });

      test('the requests of one turn for one stream go out as one entry; one reply entry resolves each requester', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          const other = commandStreamKey(prefix, 1);
          for (const stream of [commands, other]) await bus.ensureGroup(stream, 'workers');
          const replyStream = replyStreamKey(prefix, 'edge-b1');
          const requester = await Requester.start({ bus, replyStream });
          try {
            const asked = Promise.all(['a', 'b', 'c', 'd', 'e'].map(async (text) => requester.requestInBatch(commands, asText(text))));
            const elsewhere = requester.requestInBatch(other, asText('z'));
            const [entries] = await Promise.all([answerBatches(bus, commands, (text) => ({ echo: text })), answerBatches(bus, other, (text) => ({ echo: text }))]);
            assert.deepEqual(await within(5_000, asked), ['a', 'b', 'c', 'd', 'e'].map((text) => ({ echo: text })));
            assert.deepEqual(await within(5_000, elsewhere), { echo: 'z' });
            assert.equal(entries.length, 1, 'five requests, one command entry');
            assert.equal(entries[0]?.headers[headerBatchCount], '5');
            assert.equal(entries[0]?.headers.replyTo, replyStream);
            assert.deepEqual(batchItems(entries[0] as BusEntry).map((item) => item.text), ['a', 'b', 'c', 'd', 'e'], 'in the order asked');
            assert.equal(await bus.length(commands), 1);
            // Two reply entries in all: one per command stream answered (each read was answered alone).
            assert.equal(await bus.length(replyStream), 2);
            assert.deepEqual(requester.stats, { pending: 0, unmatchedReplies: 0 });
          } finally {
            await requester.close();
          }
        }));

      test('more requests in one turn than one entry holds go out in several entries, in order', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          await bus.ensureGroup(commands, 'workers');
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-b2') });
          try {
            const count = batchRequestsMax + 6;
            const asked = Promise.all(Array.from({ length: count }, async (_, i) => requester.requestInBatch(commands, asText(`r${i}`))));
            await eventually(async () => assert.equal(await bus.length(commands), 2), 5_000, 5);
            const entries = await answerBatches(bus, commands, (text) => text.toUpperCase());
            assert.deepEqual(entries.map((entry) => entry.headers[headerBatchCount]), [String(batchRequestsMax), '6']);
            assert.deepEqual(entries.flatMap((entry) => batchItems(entry).map((item) => item.text)), Array.from({ length: count }, (_, i) => `r${i}`));
            assert.deepEqual(await within(5_000, asked), Array.from({ length: count }, (_, i) => `R${i}`));
          } finally {
            await requester.close();
          }
        }));

      test('one batch of replies to several edges: one reply entry per edge, each request gets its own', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          await bus.ensureGroup(commands, 'workers');
          const edgeA = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-a') });
          const edgeB = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-b') });
          try {
            const fromA = Promise.all(['a1', 'a2', 'a3'].map(async (text) => edgeA.requestInBatch(commands, asText(text))));
            const fromB = Promise.all(['b1', 'b2'].map(async (text) => edgeB.requestInBatch(commands, asText(text))));
            // Both edges' entries are read together and answered in one call, as a shard worker's batch is.
            await eventually(async () => assert.equal(await bus.length(commands), 2), 5_000, 5);
            const entries = await answerBatches(bus, commands, (text) => `re:${text}`);
            assert.equal(entries.length, 2);
            assert.deepEqual(await within(5_000, fromA), ['re:a1', 're:a2', 're:a3']);
            assert.deepEqual(await within(5_000, fromB), ['re:b1', 're:b2']);
            assert.equal(await bus.length(replyStreamKey(prefix, 'edge-a')), 1);
            assert.equal(await bus.length(replyStreamKey(prefix, 'edge-b')), 1);
            assert.deepEqual([edgeA.stats.unmatchedReplies, edgeB.stats.unmatchedReplies], [0, 0]);
          } finally {
            await edgeA.close();
            await edgeB.close();
          }
        }));

      test('a duplicate or unreadable batched reply is counted as unmatched, never delivered twice', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          await bus.ensureGroup(commands, 'workers');
          const replyStream = replyStreamKey(prefix, 'edge-b3');
          const requester = await Requester.start({ bus, replyStream });
          try {
            const asked = requester.requestInBatch(commands, asText('once'));
            const [entry] = await bus.read('workers', 'w', [commands], { count: 10, blockMs: 2_000 });
            const requestId = batchItems(entry as BusEntry)[0]?.requestId ?? '';
            const answer: AddressedReply = { to: { stream: replyStream, requestId }, payload: { first: true } };
            await replyBatches(bus, [answer]);
            assert.deepEqual(await within(5_000, asked), { first: true });
            await replyBatches(bus, [{ ...answer, payload: { first: false } }]);
            await bus.append(replyStream, 'not json', { headers: { [headerBatchCount]: '1' } });
            await eventually(() => assert.equal(requester.stats.unmatchedReplies, 2), 5_000, 10);
          } finally {
            await requester.close();
          }
        }));

      test('a request whose command cannot be encoded rejects at once and leaves nothing waiting or sent', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const commands = commandStreamKey(prefix, 0);
          const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-b5') });
          try {
            const unencodable = (): string => JSON.stringify({ amount: 1n });
            await assert.rejects(requester.requestInBatch(commands, unencodable), TypeError);
            await assert.rejects(requester.request(commands, unencodable), TypeError);
            assert.equal(requester.stats.pending, 0);
            await new Promise((resolve) => setImmediate(resolve));
            assert.equal(await bus.length(commands), 0);
          } finally {
            await requester.close();
          }
        }));

      test('a worker failing after the durable write of a batched entry: the entry is re-delivered whole, nothing is applied twice', () =>
        withHarness(adapter, async ({ bus, prefix }) => {
          const dir = mkdtempSync(join(tmpdir(), 'bus-batch-'));
          const store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
          let role: ShardRole | undefined;
          let requester: Requester | undefined;
          const logged: string[] = [];
          try {
            await store.init();
            let commits = 0;
            role = await startTallyShardRole({
              bus,
              leases: new MemoryLeases(),
              store,
              workerId: 'w-batch',
              keyPrefix: prefix,
              shardCount: 1,
              log: (_level, message) => logged.push(message),
              // The first durable write is followed by a failure before any reply or acknowledgement,
              // the window in which a crash leaves a written batch pending.
              afterCommit: () => {
                commits += 1;
                if (commits === 1) throw new Error('failure injected after the durable write');
              },
            });
            requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-b4'), blockMs: 100 });
            const client = new ActorClient({ bus, requester, keyPrefix: prefix, shardCount: 1, nowMs: () => Date.now() });
            // One turn: three actors and a repeat of the first command, all in one entry.
            const keys = ['x', 'y', 'z'].map((key) => `${key}-${prefix}`);
            const ids = keys.map((key) => `cmd-${key}`);
            const asked = Promise.all([...keys, keys[0] ?? ''].map(async (key, i) =>
              client.ask<{ count: number }>(tallyActorType, key, 'add', null, { commandId: ids[i % keys.length] ?? '', timeoutMs: 20_000 })));
            assert.deepEqual(await within(25_000, asked), [{ count: 1 }, { count: 1 }, { count: 1 }, { count: 1 }]);
            assert.equal(await bus.length(client.streamFor(tallyActorType, keys[0] ?? '')), 1, 'the four commands went in one entry');
            assert.ok(logged.includes('batch failed; entries stay pending and will be retried'), 'the failure was injected');
            for (const [i, key] of keys.entries()) {
              const state = (await store.load(`${tallyActorType}/${key}`))?.state as unknown as TallyState;
              assert.deepEqual(state.commandIds, [ids[i]], `${key} applied its command exactly once`);
            }
            await eventually(async () => {
              const summary = await bus.summary(client.streamFor(tallyActorType, keys[0] ?? ''));
              assert.equal(summary.groups[0]?.pending, 0, 'the entry is acknowledged once all of it is durable');
            }, 5_000, 20);
          } finally {
            await teardown(
              () => requester?.close(),
              () => role?.stop(),
              () => store.close(),
              () => rmSync(dir, { recursive: true, force: true }),
            );
          }
        }));
    });
  });
}
