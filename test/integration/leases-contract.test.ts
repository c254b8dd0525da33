// One contract suite for the Leases port, run unchanged against the in-process adapter (manual
// clock) and Redis (a private redis-server; expiry on Redis' own clock, so time passes for real).
// Every test uses a fresh random key prefix.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../../src/bus/bus.ts';
import type { Leases } from '../../src/bus/leases.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { shardLeaseName } from '../../src/bus/shards.ts';
import { memoryContractAdapter, redisContractAdapter, withHarness, type ContractHarness } from '../support/contract-adapters.ts';
import { randomKeyPrefix } from '../support/redis-server.ts';

interface Harness extends ContractHarness {
  readonly leases: Leases;
  /** Lets `ms` pass for lease expiry: a manual clock moves, Redis needs a real wait. */
  passTime(ms: number): Promise<void>;
  close(): Promise<void>;
}

const adapters = [
  memoryContractAdapter((): Harness => {
    const clock = new ManualClock();
    const leases = new MemoryLeases({ clock });
    return { leases, passTime: async (ms) => clock.advance(ms), close: () => leases.close() };
  }),
  redisContractAdapter((url): Harness => {
    const leases = new RedisLeases({ redis: url, keyPrefix: randomKeyPrefix('leases') });
    // Kept: Redis expires keys by its own millisecond clock, which no test can move; a little extra
    // covers the granularity. (The memory adapter above passes the same contract on a moved clock.)
    return { leases, passTime: async (ms) => sleep(ms + 10), close: () => leases.close() };
  }),
];

const ttlMs = 150;

for (const adapter of adapters) {
  describe(`Leases contract: ${adapter.name}`, { timeout: 60_000 }, () => {
    before(() => adapter.setUp());
    after(() => adapter.tearDown());

    test('a lease is exclusive while it lasts', () =>
      withHarness(adapter, async ({ leases }) => {
        const name = shardLeaseName(3);
        const grant = await leases.acquire(name, 'worker-a', 10_000);
        assert.ok(grant !== null);
        assert.equal(grant.owner, 'worker-a');
        assert.ok(grant.token >= 1);
        assert.equal(await leases.acquire(name, 'worker-b', 10_000), null);
        const holder = await leases.owner(name);
        assert.equal(holder?.owner, 'worker-a');
        assert.equal(holder?.token, grant.token);
        assert.ok(holder !== null && holder.remainingMs > 0 && holder.remainingMs <= 10_000);
        assert.equal(await leases.owner(shardLeaseName(4)), null);
      }));

    test('concurrent acquires: exactly one wins', () =>
      withHarness(adapter, async ({ leases }) => {
        const grants = await Promise.all(
          Array.from({ length: 20 }, async (_, i) => leases.acquire('shard:0', `worker-${i}`, 10_000)),
        );
        assert.equal(grants.filter((grant) => grant !== null).length, 1);
      }));

    test('after expiry another owner takes over with a higher token; the old owner can neither renew nor release', () =>
      withHarness(adapter, async ({ leases, passTime }) => {
        const name = shardLeaseName(1);
        const first = await leases.acquire(name, 'worker-a', ttlMs);
        assert.ok(first !== null);
        await passTime(ttlMs);
        assert.equal(await leases.owner(name), null, 'lapsed');
        const second = await leases.acquire(name, 'worker-b', 10_000);
        assert.ok(second !== null);
        assert.ok(second.token > first.token, 'fencing token increases');
        assert.equal(await leases.renew(name, 'worker-a', first.token, 10_000), false);
        assert.equal(await leases.release(name, 'worker-a', first.token), false);
        assert.equal((await leases.owner(name))?.owner, 'worker-b');
      }));

    test('a lapsed lease cannot be renewed even if nobody took it', () =>
      withHarness(adapter, async ({ leases, passTime }) => {
        const grant = await leases.acquire('shard:2', 'worker-a', ttlMs);
        assert.ok(grant !== null);
        await passTime(ttlMs);
        assert.equal(await leases.renew('shard:2', 'worker-a', grant.token, 10_000), false);
      }));

    test('renew keeps the lease past its first TTL', () =>
      withHarness(adapter, async ({ leases, passTime }) => {
        const name = 'shard:5';
        const grant = await leases.acquire(name, 'worker-a', 400);
        assert.ok(grant !== null);
        await passTime(250);
        assert.equal(await leases.renew(name, 'worker-a', grant.token, 400), true);
        await passTime(250);
        assert.equal(await leases.acquire(name, 'worker-b', 400), null);
        assert.equal((await leases.owner(name))?.token, grant.token);
      }));

    test('renew and release need the current token, not just the owner', () =>
      withHarness(adapter, async ({ leases }) => {
        const name = 'shard:6';
        const old = await leases.acquire(name, 'worker-a', 10_000);
        // A restarted worker with the same id re-acquires: it gets a new token that fences the old one.
        const fresh = await leases.acquire(name, 'worker-a', 10_000);
        assert.ok(old !== null && fresh !== null && fresh.token > old.token);
        assert.equal(await leases.renew(name, 'worker-a', old.token, 10_000), false);
        assert.equal(await leases.release(name, 'worker-a', old.token), false);
        assert.equal(await leases.renew(name, 'worker-b', fresh.token, 10_000), false);
        assert.equal(await leases.renew(name, 'worker-a', fresh.token, 10_000), true);
      }));

    test('release lets another owner take the lease at once', () =>
      withHarness(adapter, async ({ leases }) => {
        const name = 'shard:7';
        const first = await leases.acquire(name, 'worker-a', 60_000);
        assert.ok(first !== null);
        assert.equal(await leases.release(name, 'worker-a', first.token), true);
        assert.equal(await leases.release(name, 'worker-a', first.token), false);
        assert.equal(await leases.owner(name), null);
        const second = await leases.acquire(name, 'worker-b', 60_000);
        assert.ok(second !== null && second.token > first.token);
      }));

    test('tokens strictly increase per name across owners, releases and expiries; names are independent', () =>
      withHarness(adapter, async ({ leases, passTime }) => {
        const tokens: number[] = [];
        for (let round = 0; round < 12; round += 1) {
          const owner = `worker-${round % 3}`;
          const grant = await leases.acquire('shard:8', owner, ttlMs);
          assert.ok(grant !== null, `round ${round}`);
          tokens.push(grant.token);
          if (round % 2 === 0) assert.equal(await leases.release('shard:8', owner, grant.token), true);
          else await passTime(ttlMs);
        }
        for (let i = 1; i < tokens.length; i += 1) assert.ok((tokens[i] ?? 0) > (tokens[i - 1] ?? 0), `${tokens.join(',')}`);
        const other = await leases.acquire('shard:9', 'worker-0', ttlMs);
        assert.equal(other?.token, 1);
      }));

    test('listAll lists live leases under a name prefix, sorted', () =>
      withHarness(adapter, async ({ leases, passTime }) => {
        await leases.acquire('shard:12', 'worker-b', 60_000);
        await leases.acquire('shard:11', 'worker-a', 60_000);
        await leases.acquire('shard:13', 'worker-c', ttlMs);
        await leases.acquire('admin:1', 'worker-a', 60_000);
        await leases.acquire('shard*[x]', 'worker-d', 60_000);
        await passTime(ttlMs);
        const listed = await leases.listAll('shard:');
        assert.deepEqual(listed.map((holder) => [holder.name, holder.owner]), [
          ['shard:11', 'worker-a'],
          ['shard:12', 'worker-b'],
        ]);
        assert.ok(listed.every((holder) => holder.token >= 1 && holder.remainingMs > 0));
        assert.deepEqual((await leases.listAll('shard*')).map((holder) => holder.name), ['shard*[x]']);
        assert.equal((await leases.listAll('')).length, 4);
      }));

    test('changes moves on every acquire and release, not on a renew nor on a refused call', () =>
      withHarness(adapter, async ({ leases }) => {
        const start = await leases.changes();
        const grant = await leases.acquire(shardLeaseName(20), 'worker-a', 10_000);
        assert.ok(grant !== null);
        const afterAcquire = await leases.changes();
        assert.ok(afterAcquire > start, 'an acquire is a change');
        assert.equal(await leases.renew(grant.name, 'worker-a', grant.token, 10_000), true);
        assert.equal(await leases.acquire(grant.name, 'worker-b', 10_000), null);
        assert.equal(await leases.release(grant.name, 'worker-b', grant.token), false);
        assert.equal(await leases.changes(), afterAcquire, 'a renew and refused calls change nothing');
        assert.equal(await leases.release(grant.name, 'worker-a', grant.token), true);
        assert.ok((await leases.changes()) > afterAcquire, 'a release is a change');
      }));

    test('invalid names, owners, tokens and TTLs are refused', () =>
      withHarness(adapter, async ({ leases }) => {
        await assert.rejects(leases.acquire('shard:{1}', 'a', 1_000), RangeError);
        await assert.rejects(leases.acquire('', 'a', 1_000), RangeError);
        await assert.rejects(leases.acquire('shard:1', '', 1_000), RangeError);
        await assert.rejects(leases.acquire('shard:1', 'a', 0), RangeError);
        await assert.rejects(leases.acquire('shard:1', 'a', 1.5), RangeError);
        await assert.rejects(leases.renew('shard:1', 'a', 0, 1_000), RangeError);
      }));
  });
}
