// Our Lua scripts through ioredis' defineCommand, against a real Redis: a client shared by several
// adapters gets each script once; a script still runs after the server forgot it (SCRIPT FLUSH, a
// restart); and an adapter built on a shared client whose auto-pipeline is already being filled in
// this same tick can run its scripts at once (a pipeline only knows the scripts defined when it opened).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { RedisTokenBuckets } from '../../src/bus/redis-token-buckets.ts';
import { createRedisClient, type RedisClient } from '../../src/bus/redis-connection.ts';
import { RedisScript, defineScripts } from '../../src/bus/redis-scripts.ts';
import { RedisOffers } from '../../src/bus/redis-offers.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { quoteOfferCodec } from '../../src/ports/quote-offers.ts';
import { brebPayoutQuote } from '../support/quotes.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

let redis: PrivateRedis;
const clients: RedisClient[] = [];

before(async () => {
  redis = await startRedis();
});

after(() => teardown(
  ...clients.map((client) => () => client.quit().catch(() => client.disconnect())),
  () => redis?.stop(),
));

function sharedClient(): RedisClient {
  const client = createRedisClient(redis.url, 'scripts-test');
  clients.push(client);
  return client;
}

test('an adapter built while the shared client fills a pipeline runs its script in that same tick', async () => {
  const client = sharedClient();
  await client.ping();
  const keyPrefix = randomKeyPrefix('tick');
  // Opens this tick's auto-pipeline before the adapters define their scripts.
  const earlier = client.set(`${keyPrefix}x`, '1');
  const leases = new RedisLeases({ redis: client, keyPrefix });
  const buckets = new RedisTokenBuckets({ redis: client, keyPrefix });
  const [grant, taken] = await Promise.all([
    leases.acquire('shard-1', 'w', 1_000),
    buckets.take('p', 1, { ratePerSecond: 1, burst: 2 }),
    earlier,
  ]);
  assert.equal(grant?.owner, 'w');
  assert.equal(taken.granted, 1);
});

test('a client shared by the bus and the leases defines each script once; scripts survive SCRIPT FLUSH', async () => {
  const client = sharedClient();
  const keyPrefix = randomKeyPrefix('flush');
  const bus = new RedisBus({ redis: client });
  const leases = new RedisLeases({ redis: client, keyPrefix });
  const again = new RedisLeases({ redis: client, keyPrefix });
  const stream = `${keyPrefix}stream`;
  await bus.ensureGroup(stream, 'g');
  await bus.append(stream, 'one');
  assert.equal((await bus.read('g', 'c', [stream], { count: 10, blockMs: 0 })).length, 1);
  const grant = await leases.acquire('shard-2', 'w', 5_000);
  assert.ok(grant);
  await client.script('FLUSH');
  assert.deepEqual((await bus.readPending(stream, 'g', 'c', { count: 10 })).entries.map((entry) => entry.payload), ['one']);
  assert.equal(await again.renew(grant.name, grant.owner, grant.token, 5_000), true);
  await bus.close();
});

test('two different scripts under one name are a bug; a script not defined on the client is a bug', async () => {
  const client = sharedClient();
  defineScripts(client, [new RedisScript('testEcho', 'return ARGV[1]', 0)]);
  assert.throws(() => defineScripts(client, [new RedisScript('testEcho', 'return 1', 0)]), /two different scripts named testEcho/);
  assert.equal(await new RedisScript('testEcho', 'return ARGV[1]', 0).run(client, [], ['hi']), 'hi');
  await assert.rejects(new RedisScript('testOther', 'return 2', 0).run(client, [], []), /was not defined on this client/);
});

test("the offers script: a partner's index expires with its latest valid offer, never before it; a retried offer is answered without a second entry", async () => {
  const client = sharedClient();
  const keyPrefix = randomKeyPrefix('offers');
  const offers = new RedisOffers({ redis: client, keyPrefix, perPartnerMax: 10, graceMs: 60_000, codec: quoteOfferCodec });
  const index = `${keyPrefix}offers:{acme}`;
  const quoteValidFor = (id: string, validMs: number): Quote => {
    const nowMs = Date.now();
    return { ...brebPayoutQuote(nowMs), id, partnerId: 'acme', createdAtMs: nowMs, expiresAtMs: nowMs + validMs };
  };
  await offers.offer(quoteValidFor('first', 20_000));
  const first = await client.pttl(index);
  assert.ok(first > 15_000 && first <= 20_000, `a new index expires with its offer (${first} ms)`);
  await offers.offer(quoteValidFor('longer', 40_000));
  const longer = await client.pttl(index);
  assert.ok(longer > 35_000 && longer <= 40_000, `a later offer valid longer pushes it back (${longer} ms)`);
  await offers.offer(quoteValidFor('shorter', 5_000));
  assert.ok((await client.pttl(index)) > 35_000, 'an offer valid for less never brings it forward');
  await offers.offer(quoteValidFor('first', 90_000));
  assert.equal(await client.zcard(index), 3, 'the retry of a stored offer added no entry');
  assert.ok((await client.pttl(index)) <= 40_000, 'nor moved the expiry');
});
