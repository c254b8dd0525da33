// The bus, the leases, request/reply and the actor system on a real Redis Cluster: three private
// redis-server nodes joined with `redis-cli --cluster create` (test/support/redis-cluster.ts).
// What an operator relies on when REDIS_URL is `redis+cluster://…`: shard streams spread over the
// masters; a shard worker's one read over streams of many slots works (no CROSSSLOT) and loses no
// entry; leases keep their guarantees and are listed from every master; the caps stay exact.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BusError, type Bus, type BusEntry } from '../../src/bus/bus.ts';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { clusterKeySlot, createRedisClient, parseRedisTarget } from '../../src/bus/redis-connection.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { RedisOffers } from '../../src/bus/redis-offers.ts';
import { Requester, reply } from '../../src/bus/request-reply.ts';
import { commandStreamKey, commandStreamKeys, replyStreamKey, shardLeaseName } from '../../src/bus/shards.ts';
import { shardsPerGroup } from '../../src/bus/shard-groups.ts';
import { ActorClient } from '../../src/actors/client.ts';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { runtimeReadModelIndexes } from '../../src/actors/store-adapter.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { methodDayKey, userDayCounterKey } from '../../src/domain/limits.ts';
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { quoteOfferCodec } from '../../src/ports/quote-offers.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { eventually } from '../support/eventually.ts';
import { startRedisCluster, type PrivateRedisCluster } from '../support/redis-cluster.ts';
import { randomKeyPrefix } from '../support/redis-server.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { brebPayoutQuote } from '../support/quotes.ts';
import { teardown } from '../support/teardown.ts';
import { defaultServiceBehaviors } from '../support/default-behaviors.ts';

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

/**
 * One shard stream per shard group (shards 0, 8, 16, …): `count` streams on `count` different slots,
 * for the reads over many slots (the streams of one group share a slot: src/bus/shard-groups.ts).
 */
function streamsOnSlots(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, group) => commandStreamKey(prefix, group * shardsPerGroup));
}

/** The master port that serves `key`'s slot, from the cluster's own CLUSTER SLOTS answer. */
async function masterPortOf(cluster: PrivateRedisCluster, key: string): Promise<number> {
  const probe = cluster.nodeClient(cluster.nodes[0]?.port ?? 0);
  const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', key));
  const ranges = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]]]>;
  const range = ranges.find(([start, end]) => slot >= start && slot <= end);
  assert.ok(range, `slot ${slot} is served`);
  return range[2][1];
}

/** XREADGROUP calls served by every master so far (INFO commandstats). */
async function xreadgroupCalls(cluster: PrivateRedisCluster): Promise<number> {
  let total = 0;
  for (const { port } of cluster.nodes) {
    const node = cluster.nodeClient(port);
    const role = (await node.call('ROLE')) as unknown[];
    if (role[0] !== 'master') continue;
    total += Number(/^cmdstat_xreadgroup:calls=(\d+)/m.exec(await node.info('commandstats'))?.[1] ?? 0);
  }
  return total;
}

/** Blocked clients (flag `b`) on every node: a finished read must leave none behind. */
async function blockedClients(cluster: PrivateRedisCluster): Promise<number> {
  let blocked = 0;
  for (const node of cluster.nodes) {
    const list = String(await cluster.nodeClient(node.port).call('CLIENT', 'LIST', 'TYPE', 'normal'));
    blocked += list.split('\n').filter((line) => /\bflags=\S*b/.test(line)).length;
  }
  return blocked;
}

/** Connections the nodes have accepted so far (INFO stats), summed over the cluster. */
async function connectionsReceived(cluster: PrivateRedisCluster): Promise<number> {
  let total = 0;
  for (const node of cluster.nodes) {
    const info = String(await cluster.nodeClient(node.port).call('INFO', 'stats'));
    total += Number(/total_connections_received:(\d+)/.exec(info)?.[1] ?? Number.NaN);
  }
  return total;
}

describe('Redis Cluster', { timeout: 180_000 }, () => {
  let cluster: PrivateRedisCluster;
  const buses: Bus[] = [];
  const openBus = (): Bus => {
    const bus = new RedisBus({ redis: cluster.url });
    buses.push(bus);
    return bus;
  };

  before(async () => {
    cluster = await startRedisCluster();
  });
  after(() => teardown(
    () => Promise.all(buses.map(async (bus) => bus.close())),
    () => cluster?.stop(),
  ));

  describe('configuration and slots', () => {
    test('REDIS_URL names the cluster by its seed nodes; bad URLs are refused without repeating them', () => {
      assert.deepEqual(parseRedisTarget('redis+cluster://ops:s%40cret@10.0.0.1:7000,redis-1.internal:7001,[::1]:7002/'), {
        kind: 'cluster',
        seeds: [
          { host: '10.0.0.1', port: 7000 },
          { host: 'redis-1.internal', port: 7001 },
          { host: '::1', port: 7002 },
        ],
        username: 'ops',
        password: 's@cret',
        tls: false,
      });
      assert.equal(parseRedisTarget('rediss+cluster://:pw@h:6380').kind, 'cluster');
      assert.deepEqual(parseRedisTarget('redis://127.0.0.1:6379/2'), { kind: 'single', url: 'redis://127.0.0.1:6379/2' });
      for (const bad of ['redis+cluster://:hunter2@h:7000/3', 'redis+cluster://:hunter2@h:99999', 'redis+cluster://:hunter2@h:1?x=1', 'redis+cluster://:hunter2%zz@h:1', 'http://:hunter2@h']) {
        assert.throws(() => parseRedisTarget(bad), (error: unknown) => error instanceof RangeError && !error.message.includes('hunter2'));
      }
    });

    test('our key slots are the cluster’s: every shard stream, reply stream and lease key', async () => {
      const prefix = randomKeyPrefix('slots');
      const keys = [
        ...commandStreamKeys(prefix, 64),
        replyStreamKey(prefix, 'edge-a'),
        `${prefix}lease:{${shardLeaseName(3)}}`,
        `${prefix}lease-token:{${shardLeaseName(3)}}`,
        'no-tag',
        '{}empty-tag',
        '{unclosed',
        'señal:{ñ}',
      ];
      const probe = cluster.nodeClient(cluster.nodes[0]?.port ?? 0);
      for (const key of keys) assert.equal(clusterKeySlot(key), Number(await probe.call('CLUSTER', 'KEYSLOT', key)), key);
      // A lease and its fencing-token counter are one script's two keys: one slot.
      assert.equal(clusterKeySlot(keys[65] ?? ''), clusterKeySlot(keys[66] ?? ''));
    });

    test('the 64 shard streams spread over every master, each held whole by one node', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('spread');
      const streams = commandStreamKeys(prefix, 64);
      await Promise.all(streams.map(async (stream) => bus.append(stream, 'x')));
      const perNode = new Map<number, number>();
      for (const stream of streams) {
        const port = await masterPortOf(cluster, stream);
        perNode.set(port, (perNode.get(port) ?? 0) + 1);
        // The node the slot map names really holds the key (asked directly, not through the cluster client).
        assert.equal(await cluster.nodeClient(port).exists(stream), 1, stream);
      }
      assert.equal(perNode.size, cluster.nodes.length, `streams per node: ${JSON.stringify([...perNode])}`);
      for (const count of perNode.values()) assert.ok(count >= 10, `a node holds only ${count} of 64 shards`);
    });
  });

  describe('bus', () => {
    test('one read over streams on every node: no CROSSSLOT, count per stream, append order kept', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('read');
      const streams = streamsOnSlots(prefix, 16);
      for (const stream of streams) await bus.ensureGroup(stream, 'g');
      for (const stream of streams) for (let i = 0; i < 3; i += 1) await bus.append(stream, `${stream}#${i}`, { headers: { n: String(i) } });
      const first = await bus.read('g', 'c', streams, { count: 2, blockMs: 0 });
      assert.equal(first.length, 32, 'two entries from each of the 16 streams');
      const second = await bus.read('g', 'c', streams, { count: 2, blockMs: 1_000 });
      assert.equal(second.length, 16);
      for (const stream of streams) {
        const seen = [...first, ...second].filter((entry) => entry.stream === stream);
        assert.deepEqual(seen.map((entry) => entry.payload), [0, 1, 2].map((i) => `${stream}#${i}`));
        assert.deepEqual(seen.map((entry) => entry.headers.n), ['0', '1', '2']);
      }
      assert.deepEqual(await bus.read('g', 'c', streams, { count: 2, blockMs: 0 }), []);
    });

    test('a worker owning 4 whole shard groups (32 shards) reads them with one XREADGROUP per group, blocking or not', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('groups');
      const streams = commandStreamKeys(prefix, 32);
      for (const stream of streams) await bus.ensureGroup(stream, 'g');
      for (const stream of streams) await bus.append(stream, stream);
      const readsBefore = await xreadgroupCalls(cluster);
      const entries = await bus.read('g', 'c', streams, { count: 10, blockMs: 0 });
      assert.equal(entries.length, 32, 'an entry from each of the 32 streams');
      assert.equal((await xreadgroupCalls(cluster)) - readsBefore, 4, 'one XREADGROUP per group (it was one per shard: 32)');
      // Idle (another consumer: the first found entries and is remembered as busy), then one
      // append: one blocking read per group's slot (4), not per shard.
      const blockedBefore = await xreadgroupCalls(cluster);
      const reading = bus.read('g', 'idle', streams, { count: 10, blockMs: 10_000 });
      await eventually(async () => assert.equal(await blockedClients(cluster), 4), 5_000);
      await bus.append(streams[17] ?? '', 'wake');
      assert.deepEqual((await within(5_000, reading)).map((entry) => entry.payload), ['wake']);
      assert.equal((await xreadgroupCalls(cluster)) - blockedBefore, 4);
    });

    test('a blocking read over many slots wakes on an append to any of them, leaves no read blocked, reuses its connections', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('wake');
      const streams = streamsOnSlots(prefix, 16);
      for (const stream of streams) await bus.ensureGroup(stream, 'g');
      let connectionsAfterFirstWake = 0;
      for (const [round, target] of [streams[5], streams[12], streams[0], streams[9]].entries()) {
        assert.ok(target !== undefined);
        const startedMs = Date.now();
        const reading = bus.read('g', 'c', streams, { count: 10, blockMs: 10_000 });
        await sleep(100); // kept: let the reads block first (nothing observable says they have; the entry would be returned either way)
        await bus.append(target, `wake ${target}`);
        const entries = await within(3_000, reading);
        assert.deepEqual(entries.map((entry) => entry.payload), [`wake ${target}`]);
        assert.ok(Date.now() - startedMs < 3_000);
        await eventually(async () => assert.equal(await blockedClients(cluster), 0), 2_000);
        if (round === 0) connectionsAfterFirstWake = await connectionsReceived(cluster);
      }
      // The other slots' reads were ended with CLIENT UNBLOCK, not by disconnecting: no new connections.
      assert.equal(await connectionsReceived(cluster), connectionsAfterFirstWake);
      const timedStartMs = Date.now();
      assert.deepEqual(await within(3_000, bus.read('g', 'c', streams, { count: 10, blockMs: 150 })), []);
      assert.ok(Date.now() - timedStartMs >= 140, 'waited about blockMs');
    });

    test('no entry is lost or duplicated while appends race the parallel blocking reads', async () => {
      const bus = openBus();
      const producer = openBus();
      const prefix = randomKeyPrefix('race');
      const streams = streamsOnSlots(prefix, 16);
      for (const stream of streams) await bus.ensureGroup(stream, 'g');
      const total = 400;
      const received: BusEntry[] = [];
      let producing = true;
      const consuming = (async () => {
        const deadlineMs = Date.now() + 30_000;
        while ((producing || received.length < total) && Date.now() < deadlineMs) {
          const entries = await bus.read('g', 'worker', streams, { count: 7, blockMs: 200 });
          received.push(...entries);
          for (const stream of new Set(entries.map((entry) => entry.stream))) {
            await bus.ack(stream, 'g', entries.filter((entry) => entry.stream === stream).map((entry) => entry.id));
          }
        }
      })();
      // Bursts of concurrent appends to random streams, with pauses so reads block between them.
      for (let sent = 0; sent < total; ) {
        const burst = Math.min(total - sent, 1 + Math.floor(Math.random() * 12));
        await Promise.all(Array.from({ length: burst }, async (_, i) => bus.append(streams[Math.floor(Math.random() * streams.length)] ?? '', `m${sent + i}`)));
        sent += burst;
        await sleep(Math.floor(Math.random() * 8)); // kept: random gaps between bursts are the race under test
      }
      producing = false;
      await within(35_000, consuming);
      const payloads = received.map((entry) => entry.payload);
      assert.equal(new Set(payloads).size, payloads.length, 'no entry delivered twice');
      assert.equal(payloads.length, total, 'every entry delivered');
      for (const stream of streams) assert.equal((await producer.summary(stream)).groups[0]?.pending, 0, `nothing left pending on ${stream}`);
      assert.equal(await blockedClients(cluster), 0);
    });

    test('two slots served at the same instant: both entries are returned, none is stranded as pending', async () => {
      const bus = openBus();
      const producer = openBus();
      const prefix = randomKeyPrefix('same-instant');
      // Two shard streams on two different masters.
      const candidates = streamsOnSlots(prefix, 16);
      const ports = await Promise.all(candidates.map(async (stream) => masterPortOf(cluster, stream)));
      const first = candidates[0] ?? '';
      const second = candidates.find((_, index) => ports[index] !== ports[0]) ?? '';
      const streams = [first, second];
      for (const stream of streams) await producer.ensureGroup(stream, 'g'); // also connects the producer
      for (let round = 0; round < 10; round += 1) {
        const reading = bus.read('g', 'c', streams, { count: 10, blockMs: 10_000 });
        await sleep(50); // kept: both reads are blocked now (nothing observable says so)
        const appended = Promise.all(streams.map(async (stream) => producer.append(stream, `${stream}#${round}`)));
        await new Promise((resolve) => setImmediate(resolve)); // the appends are on the wire
        // Hold the event loop while both nodes serve their blocked reads: the two replies then
        // arrive together, and whichever is handled first must not cost the other its entries.
        const holdUntilMs = Date.now() + 30;
        while (Date.now() < holdUntilMs) {
          // busy wait on purpose
        }
        await appended;
        // An entry whose read was unblocked before its append arrived is simply read next time;
        // one that a served read returned must not be left behind in the pending list.
        const entries = [...(await within(3_000, reading)), ...(await bus.read('g', 'c', streams, { count: 10, blockMs: 0 }))];
        assert.deepEqual(entries.map((entry) => entry.payload).sort(), streams.map((stream) => `${stream}#${round}`).sort(), `round ${round}`);
        for (const entry of entries) await bus.ack(entry.stream, 'g', [entry.id]);
        for (const stream of streams) assert.equal((await bus.summary(stream)).groups[0]?.pending, 0);
      }
    });

    test('an aborted or closed blocking read over many slots resolves empty at once', async () => {
      const bus = new RedisBus({ redis: cluster.url });
      const prefix = randomKeyPrefix('abort');
      const streams = streamsOnSlots(prefix, 8);
      for (const stream of streams) await bus.ensureGroup(stream, 'g');
      const abort = new AbortController();
      const reading = bus.read('g', 'c', streams, { count: 10, blockMs: 30_000, signal: abort.signal });
      await sleep(100); // kept: let the read block first (nothing observable says it has)
      abort.abort();
      assert.deepEqual(await within(1_000, reading), []);
      await bus.append(streams[3] ?? '', 'after-abort');
      assert.deepEqual((await bus.read('g', 'c', streams, { count: 10, blockMs: 1_000 })).map((entry) => entry.payload), ['after-abort']);
      const blocked = bus.read('g', 'c', streams, { count: 10, blockMs: 30_000 });
      await sleep(100); // kept: let the read block first (nothing observable says it has)
      await within(1_000, bus.close());
      assert.deepEqual(await within(1_000, blocked), []);
      await assert.rejects(bus.append(streams[0] ?? '', 'x'), (error: unknown) => error instanceof BusError && error.code === 'closed');
      await eventually(async () => assert.equal(await blockedClients(cluster), 0), 2_000);
    });

    test('a read fails with no_group when a group is missing, blocking or not', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('nogroup');
      const streams = streamsOnSlots(prefix, 4);
      for (const stream of streams) await bus.append(stream, 'x');
      const isNoGroup = (error: unknown): boolean => error instanceof BusError && error.code === 'no_group';
      await assert.rejects(bus.read('missing', 'c', streams, { count: 1, blockMs: 0 }), isNoGroup);
      await assert.rejects(bus.read('missing', 'c', streams, { count: 1, blockMs: 100 }), isNoGroup);
      await assert.rejects(bus.read('missing', 'c', streams.slice(0, 1), { count: 1, blockMs: 100 }), isNoGroup);
    });

    test('pending entries survive a restart and pass to another worker (scripts on the stream’s slot)', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('pending');
      const streams = streamsOnSlots(prefix, 6);
      for (const stream of streams) {
        await bus.ensureGroup(stream, 'g');
        await bus.append(stream, `${stream}:a`);
        await bus.append(stream, `${stream}:b`);
      }
      assert.equal((await bus.read('g', 'dead', streams, { count: 10, blockMs: 0 })).length, 12);
      const restarted = openBus();
      for (const stream of streams) {
        const pending = await restarted.readPending(stream, 'g', 'dead', { count: 10 });
        assert.deepEqual(pending.entries.map((entry) => entry.payload), [`${stream}:a`, `${stream}:b`]);
        assert.ok(pending.entries.every((entry) => entry.deliveryCount === 2));
        const claimed = await restarted.claimStale(stream, 'g', 'alive', { minIdleMs: 0, count: 10 });
        assert.equal(claimed.entries.length, 2);
        const summary = await restarted.summary(stream);
        assert.equal(summary.length, 2);
        assert.deepEqual(summary.groups[0]?.consumers, [{ consumer: 'alive', pending: 2 }]);
        assert.equal(summary.groups[0]?.lag, 0);
      }
    });

    test('request/reply: 300 concurrent requests over shards on every node each get their own reply', async () => {
      const bus = openBus();
      const prefix = randomKeyPrefix('rr');
      const streams = streamsOnSlots(prefix, 12);
      for (const stream of streams) await bus.ensureGroup(stream, 'workers');
      const stop = new AbortController();
      const worker = (async () => {
        const workerBus = openBus();
        while (!stop.signal.aborted) {
          const entries = await workerBus.read('workers', 'w', streams, { count: 64, blockMs: 500, signal: stop.signal });
          for (const entry of entries) {
            await reply(workerBus, entry, `re:${entry.payload}`);
            await workerBus.ack(entry.stream, 'workers', [entry.id]);
          }
        }
      })();
      const requester = await Requester.start({ bus, replyStream: replyStreamKey(prefix, 'edge-1'), blockMs: 200 });
      try {
        const answers = await within(30_000, Promise.all(
          Array.from({ length: 300 }, async (_, i) => (await requester.request(streams[i % streams.length] ?? '', `n${i}`)).payload),
        ));
        assert.deepEqual(answers, Array.from({ length: 300 }, (_, i) => `re:n${i}`));
        assert.equal(requester.stats.unmatchedReplies, 0);
      } finally {
        await requester.close();
        stop.abort();
        await worker;
      }
    });
  });

  describe('quote offers', () => {
    test('offers of partners on each master: stored once, found by their partner only, capped per partner (the script\'s keys share the partner\'s slot)', async () => {
      const offers = new RedisOffers({ redis: cluster.url, keyPrefix: randomKeyPrefix('offers'), perPartnerMax: 2, graceMs: 60_000, codec: quoteOfferCodec });
      try {
        // Slots 1931, 7251 and 11304: one on each of the three masters.
        const partners = ['wayne', 'wonka', 'acme'];
        assert.deepEqual(partners.map((partner) => clusterKeySlot(`{${partner}}`)), [1931, 7251, 11304]);
        for (const partner of partners) {
          const quotes = [0, 1, 2].map(() => ({ ...brebPayoutQuote(Date.now()), id: randomUUID(), partnerId: partner }));
          assert.deepEqual(await offers.offer(quotes[0] as Quote), { ok: true, offer: quotes[0] });
          assert.deepEqual(await offers.offer({ ...(quotes[0] as Quote), rate: decimal(1n, 0) }), { ok: true, offer: quotes[0] }, 'a retry keeps the first');
          assert.equal((await offers.offer(quotes[1] as Quote)).ok, true);
          assert.equal((await offers.offer(quotes[2] as Quote)).ok, false, 'past the share');
          assert.deepEqual(await offers.find(partner, quotes[1]?.id ?? ''), quotes[1]);
          assert.equal(await offers.find('someone-else', quotes[1]?.id ?? ''), null);
        }
      } finally {
        await offers.close();
      }
    });

    test('offers of partners on every master made in one turn (two slots per master): each slot its own command, one pipeline per master, every share exact', async () => {
      const offers = new RedisOffers({ redis: cluster.url, keyPrefix: randomKeyPrefix('offers'), perPartnerMax: 2, graceMs: 60_000, codec: quoteOfferCodec });
      try {
        const partners = ['wayne', 'tyrell', 'wonka', 'stark', 'acme', 'globex'];
        assert.deepEqual(partners.map((partner) => clusterKeySlot(`{${partner}}`)), [1931, 2604, 7251, 9341, 11304, 14041]);
        const quotes = partners.flatMap((partner) => [0, 1, 2].map(() => ({ ...brebPayoutQuote(Date.now()), id: randomUUID(), partnerId: partner })));
        const outcomes = await Promise.all(quotes.map((quote) => offers.offer(quote)));
        assert.deepEqual(outcomes.map((outcome) => outcome.ok), partners.flatMap(() => [true, true, false]), 'two kept and one refused per partner');
        for (const [i, quote] of quotes.entries()) {
          assert.deepEqual(await offers.find(quote.partnerId, quote.id), i % 3 === 2 ? null : quote);
        }
      } finally {
        await offers.close();
      }
    });
  });

  describe('leases', () => {
    test('a lease is exclusive, concurrent acquires have one winner, expiry hands over with a higher token', async () => {
      const leases = new RedisLeases({ redis: cluster.url, keyPrefix: randomKeyPrefix('leases') });
      try {
        const name = shardLeaseName(7);
        const wins = await Promise.all(Array.from({ length: 20 }, async (_, i) => leases.acquire(name, `w${i}`, 300)));
        const winners = wins.filter((grant) => grant !== null);
        assert.equal(winners.length, 1);
        const [first] = winners;
        assert.ok(first);
        assert.equal((await leases.owner(name))?.owner, first.owner);
        assert.equal(await leases.renew(name, first.owner, first.token, 300), true);
        await sleep(320); // kept: the lease lapses by the cluster's own clock, which no test can move
        const next = await leases.acquire(name, 'other', 10_000);
        assert.ok(next !== null && next.token > first.token);
        assert.equal(await leases.renew(name, first.owner, first.token, 300), false);
        assert.equal(await leases.release(name, first.owner, first.token), false);
        assert.equal(await leases.release(name, 'other', next.token), true);
        assert.equal(await leases.owner(name), null);
      } finally {
        await leases.close();
      }
    });

    test('listAll finds the leases held on every master, sorted', async () => {
      const keyPrefix = randomKeyPrefix('list');
      const leases = new RedisLeases({ redis: cluster.url, keyPrefix });
      try {
        const names = Array.from({ length: 40 }, (_, shard) => shardLeaseName(shard));
        for (const name of names) assert.ok(await leases.acquire(name, 'w', 10_000));
        assert.ok(await leases.acquire('member:w', 'w', 10_000));
        const ports = new Set(await Promise.all(names.map(async (name) => masterPortOf(cluster, `${keyPrefix}lease:{${name}}`))));
        assert.equal(ports.size, cluster.nodes.length, 'the leases sit on every master');
        const listed = await leases.listAll('shard:');
        assert.deepEqual(listed.map((holder) => holder.name), [...names].sort());
        assert.ok(listed.every((holder) => holder.owner === 'w' && holder.remainingMs > 0));
        assert.deepEqual((await leases.listAll('member:')).map((holder) => holder.name), ['member:w']);
      } finally {
        await leases.close();
      }
    });

    test('one cluster client can be shared by the bus and the leases', async () => {
      const client = createRedisClient(cluster.url, 'shared');
      const bus = new RedisBus({ redis: client });
      const leases = new RedisLeases({ redis: client, keyPrefix: randomKeyPrefix('shared') });
      try {
        const streams = commandStreamKeys(randomKeyPrefix('shared'), 4);
        for (const stream of streams) await bus.ensureGroup(stream, 'g');
        await bus.append(streams[2] ?? '', 'hello');
        assert.deepEqual((await bus.read('g', 'c', streams, { count: 1, blockMs: 1_000 })).map((entry) => entry.payload), ['hello']);
        assert.ok(await leases.acquire(shardLeaseName(1), 'w', 1_000));
        assert.equal((await leases.listAll('')).length, 1);
      } finally {
        await bus.close();
        await leases.close();
        await client.quit();
      }
    });
  });

  describe('the actor system on the cluster', () => {
    // 4 shard groups: their slots lie on all 3 masters (src/bus/shard-groups.ts); 2 whole groups each.
    const shardCount = 32;
    const keyPrefix = randomKeyPrefix('actors');
    const dir = mkdtempSync(join(tmpdir(), 'cluster-actors-'));
    const store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...runtimeReadModelIndexes] });
    const workers: ShardRole[] = [];
    const closers: Array<() => Promise<void>> = [];
    let client: ActorClient;

    before(async () => {
      await store.init();
      const behaviors = defaultServiceBehaviors();
      const clock = { nowMs: () => Date.now() };
      // Two workers, each with its own connections, as two processes would have.
      for (let index = 0; index < 2; index += 1) {
        const bus = new RedisBus({ redis: cluster.url });
        const leases = new RedisLeases({ redis: cluster.url, keyPrefix });
        closers.push(async () => {
          await bus.close();
          await leases.close();
        });
        workers.push(await startShardRole({ bus, leases, store, behaviors, workerId: `w${index}-${randomUUID()}`, keyPrefix, shardCount, clock, readBlockMs: 200, leaseTtlMs: 3_000, stuckPendingMs: 2_000 }));
      }
      const bus = new RedisBus({ redis: cluster.url });
      const requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, `test-${randomUUID()}`), blockMs: 200 });
      closers.unshift(async () => {
        await requester.close();
        await bus.close();
      });
      client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: clock.nowMs });
      // Every shard is owned, and the two workers have split them, before the tests start.
      await eventually(() => {
        assert.equal(workers.reduce((sum, worker) => sum + worker.worker.ownedShards().length, 0), shardCount);
        assert.ok(workers.every((worker) => worker.worker.ownedShards().length > 0));
      }, 15_000);
    });
    after(() => teardown(
      ...[...workers].map((worker) => () => worker.stop()),
      ...[...closers].map((close) => () => close()),
      () => store?.close(),
      () => { rmSync(dir, { recursive: true, force: true }); },
    ));

    async function quoteBreb(partnerId: string, amountCop: number): Promise<Quote> {
      const quoteId = randomUUID();
      const answer = await client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
        partnerId,
        request: { kind: 'payout', amount: amountCop, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' },
      });
      assert.equal(answer.ok, true, JSON.stringify(answer));
      const quote = await loadQuote(store, quoteId);
      assert.ok(quote, 'the quote is durable before its reply');
      return quote;
    }

    function accept(quote: Quote, userId: string, transactionId = randomUUID()): Promise<AcceptReply> {
      const payload = acceptPayload(quote, { userId });
      return client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload), { timeoutMs: 20_000 });
    }

    test('the workers own shards whose streams sit on every master', async () => {
      const ports = new Set(await Promise.all(commandStreamKeys(keyPrefix, shardCount).map(async (stream) => masterPortOf(cluster, stream))));
      assert.equal(ports.size, cluster.nodes.length);
      assert.ok(workers.every((worker) => worker.worker.ownedShards().length > 0), 'both workers hold shards');
    });

    test('quote → accept: the transaction is created, durable and awaiting payment', async () => {
      const quote = await quoteBreb(`p-${randomUUID()}`, 50_000);
      const transactionId = randomUUID();
      const answer = await accept(quote, 'happy-user', transactionId);
      assert.ok(answer.ok && !answer.kycRequired, JSON.stringify(answer));
      assert.equal(answer.id, transactionId);
      assert.equal(Buffer.from(answer.transactionReference, 'base64').toString('hex'), transactionId.replaceAll('-', ''));
      const doc = await store.get('transactions', transactionId);
      assert.equal((doc as { status?: string } | null)?.status, 'AWAITING_PAYMENT');
    });

    test('50 concurrent BREB acceptances for one user: exactly 15 accepted (the per-user daily count)', async () => {
      const partnerId = `p-${randomUUID()}`;
      // A quote each: a quote is accepted at most once.
      const quotes = await Promise.all(Array.from({ length: 50 }, () => quoteBreb(partnerId, 10_000)));
      const replies = await Promise.all(quotes.map(async (quote) => accept(quote, 'user-1')));
      const accepted = replies.filter((answer) => answer.ok && !answer.kycRequired);
      const refused = replies.filter((answer) => !answer.ok);
      assert.equal(accepted.length, 15);
      assert.equal(refused.length, 35);
      for (const answer of refused) {
        assert.ok(!answer.ok);
        assert.equal(answer.code, 'user_daily_count_cap');
      }
      const key = userDayCounterKey(partnerId, 'user-1', 'BREB', methodDayKey(defaultLimitsConfig, 'BREB', Date.now()));
      const snapshot = await store.load(`counter/${key}`);
      assert.equal((snapshot?.state as { reservedCount?: number } | undefined)?.reservedCount, 15);
    });
  });
});
