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
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';

let redis: PrivateRedis;
const clients: RedisClient[] = [];

before(async () => {
  redis = await startRedis();
});

after(async () => {
  for (const client of clients) await client.quit().catch(() => client.disconnect());
  await redis.stop();
});

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
