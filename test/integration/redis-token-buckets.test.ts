// The shared token buckets against a real Redis: the script takes what the bucket holds and says
// when the next token comes; two edges' allowances drawn from one bucket in batches admit exactly
// the bucket in all, whatever the interleaving, and every token an edge fetched is used before it
// refuses; a bucket left alone expires from Redis (an absent bucket is a full one).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { RedisTokenBuckets } from '../../src/bus/redis-token-buckets.ts';
import { batchTokens, createSharedRateLimit, type SharedRateLimit } from '../../src/edge/shared-rate-limit.ts';
import type { Admission } from '../../src/edge/rate-limit.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

let redis: PrivateRedis;
const opened: Array<{ close(): Promise<void> }> = [];

before(async () => {
  redis = await startRedis();
});

after(() => teardown(
  ...[...opened].map((item) => () => item.close()),
  () => redis?.stop(),
));

function buckets(keyPrefix: string): RedisTokenBuckets {
  const store = new RedisTokenBuckets({ redis: redis.url, keyPrefix });
  opened.push(store);
  return store;
}

/** Slow refill: nothing comes back during a test. */
const still = { ratePerSecond: 0.001, burst: 20 };

test('take: up to what the bucket holds, then none with the wait for the next token', async () => {
  const store = buckets(randomKeyPrefix('tb'));
  assert.deepEqual(await store.take('p', 15, still), { granted: 15, retryAfterMs: 0 });
  const short = await store.take('p', 10, still);
  assert.equal(short.granted, 5);
  assert.ok(short.retryAfterMs > 900_000 && short.retryAfterMs <= 1_000_000, `one token at 0.001/s: ${short.retryAfterMs} ms`);
  assert.equal((await store.take('p', 1, still)).granted, 0);
  assert.equal((await store.take('q', 1, still)).granted, 1, 'another name, another bucket');
  await assert.rejects(store.take('bad name', 1, still), RangeError);
  await assert.rejects(store.take('p', 0, still), RangeError);
});

test('a bucket expires once it would be full again', async () => {
  const keyPrefix = randomKeyPrefix('tb');
  const store = buckets(keyPrefix);
  await store.take('p', 1, { ratePerSecond: 1_000, burst: 2 });
  const probe = new Redis(redis.url);
  opened.push({ close: async () => void (await probe.quit()) });
  // 2 tokens at 1,000/s are back within 2 ms: the key lives about a second more, then is gone.
  const ttl = await probe.pttl(`${keyPrefix}rate:{p}`);
  assert.ok(ttl > 0 && ttl <= 1_002, `ttl ${ttl}`);
});

/** Settles an admission: true when the request is admitted. */
async function admitted(admission: Admission): Promise<boolean> {
  if (admission.kind === 'allowed') return true;
  if (admission.kind === 'refused') return false;
  return (await admission.decided).allowed;
}

test('two edges drawing batches from one bucket: exactly the bucket in all, every fetched token used', async () => {
  const keyPrefix = randomKeyPrefix('tb');
  const edges: SharedRateLimit[] = [0, 1].map(() => createSharedRateLimit({ buckets: buckets(keyPrefix), config: still, batchTokens: 4 }));
  let admittedCount = 0;
  const refusedBy = new Set<number>();
  // A fixed interleaving with runs, until both edges refuse.
  const pattern = [0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1];
  for (let index = 0; refusedBy.size < 2 && index < 200; index += 1) {
    const edge = pattern[index % pattern.length] ?? 0;
    if (await admitted(edges[edge]?.admit('acme') ?? { kind: 'refused', retryAfterSeconds: 1 })) admittedCount += 1;
    else refusedBy.add(edge);
  }
  assert.equal(admittedCount, still.burst);
  assert.ok((edges[0]?.stats().batches ?? 0) < still.burst, 'tokens come in batches, not one Redis call per request');
});

test('concurrent admissions on two edges never exceed the bucket', async () => {
  const keyPrefix = randomKeyPrefix('tb');
  const edges = [0, 1].map(() => createSharedRateLimit({ buckets: buckets(keyPrefix), config: still, batchTokens: 3 }));
  const results = await Promise.all(Array.from({ length: 60 }, (_, index) => admitted(edges[index % 2]?.admit('acme') ?? { kind: 'refused', retryAfterSeconds: 1 })));
  const count = results.filter(Boolean).length;
  assert.ok(count <= still.burst && count >= still.burst - 2 * 3, `${count} admitted`);
});

test('the batch follows the rate: 10 at the default 200/s, 1 at low rates, at most a tenth of the burst', () => {
  assert.equal(batchTokens({ ratePerSecond: 200, burst: 400 }), 10);
  assert.equal(batchTokens({ ratePerSecond: 0.5, burst: 3 }), 1);
  assert.equal(batchTokens({ ratePerSecond: 10_000, burst: 50 }), 5);
});
