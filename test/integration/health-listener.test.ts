// A shard worker's health listener against a real Redis and the embedded store: ready while its
// lease rounds succeed; not ready (but still live: a restart would not bring Redis back) while
// Redis does not answer; ready again once Redis answers; `stopping` once a stop began. Its
// /metrics (ops key only), and what it answers to anything else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import type { ShardRole } from '../../src/service/shard-role.ts';
import { startHealthListener, type HealthListener } from '../../src/service/health-listener.ts';
import type { HealthReport } from '../../src/lifecycle/health.ts';
import { startTallyShardRole } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

const shardCount = 4;
/** Lease rounds every 300 ms; unready after 1 s without a successful one. */
const leaseTtlMs = 900;
const unreadyAfterMs = 1_000;
const opsKey = `ops_${randomUUID().replaceAll('-', '')}`;

let redis: PrivateRedis;
let dir: string;
let store: LmdbStore;
let bus: RedisBus;
let leases: RedisLeases;
let role: ShardRole;
let listener: HealthListener;
let base: string;

before(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'health-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  const keyPrefix = randomKeyPrefix('health');
  bus = new RedisBus({ redis: redis.url });
  leases = new RedisLeases({ redis: redis.url, keyPrefix });
  role = await startTallyShardRole({
    bus,
    leases,
    store,
    workerId: `w-health-${randomUUID().slice(0, 8)}`,
    keyPrefix,
    shardCount,
    leaseTtlMs,
  });
  listener = await startHealthListener({
    host: '127.0.0.1',
    port: 0,
    role: 'shard',
    unreadyAfterMs,
    checks: () => role.worker.health(),
    metrics: () => [{ name: 'test_marker', type: 'gauge', help: 'A role family.', samples: [{ labels: { kind: 'a"b' }, value: 1 }] }],
    isOpsKey: (presented) => presented === opsKey,
  });
  base = `http://127.0.0.1:${listener.port}`;
});

after(() => teardown(
  () => listener?.close(),
  () => role?.stop(),
  () => bus?.close(),
  () => leases?.close(),
  () => store?.close(),
  () => redis?.stop(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

async function probe(path: string, init: RequestInit = {}): Promise<{ status: number; body: HealthReport & { code?: string } }> {
  const response = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(5_000) });
  return { status: response.status, body: (await response.json()) as HealthReport & { code?: string } };
}

test('a working shard worker is live and ready, and says which shards it holds', async () => {
  await eventually(async () => {
    const ready = await probe('/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual([ready.body.status, ready.body.ready, ready.body.role], ['ok', 'ready', 'shard']);
    const leasesCheck = ready.body.checks['shard-leases'];
    assert.equal(leasesCheck?.detail['ownedShards'], shardCount);
    assert.ok(Number(leasesCheck?.detail['rounds']) > 0, 'lease rounds have run');
  }, 10_000, 100);
  assert.equal((await probe('/healthz')).status, 200);
});

test('while Redis does not answer the worker is not ready but live; it is ready again once Redis answers', async () => {
  process.kill(redis.pid, 'SIGSTOP');
  try {
    await eventually(async () => {
      const ready = await probe('/readyz');
      assert.equal(ready.status, 503);
      assert.equal(ready.body.ready, 'not_ready');
      assert.equal(ready.body.checks['shard-leases']?.ready, false);
      assert.equal(ready.body.checks['shard-commands']?.ready, false, 'its command reads do not come back either');
      assert.ok(Number(ready.body.checks['shard-leases']?.detail['lastSuccessAgoMs']) > unreadyAfterMs);
    }, 10_000, 100);
    const live = await probe('/healthz');
    assert.deepEqual([live.status, live.body.status], [200, 'ok'], 'a restart would not help: still live');
    assert.doesNotMatch(JSON.stringify(live.body), /ECONN|redis:\/\/|Error/, 'no error text in the report');
  } finally {
    process.kill(redis.pid, 'SIGCONT');
  }
  await eventually(async () => {
    const ready = await probe('/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.checks['shard-leases']?.detail['consecutiveFailures'], 0);
    assert.equal(ready.body.checks['shard-leases']?.detail['ownedShards'], shardCount);
    assert.equal(ready.body.checks['shard-commands']?.ready, true);
  }, 20_000, 100);
});

test('/metrics: the ops key only; every check\'s readiness and rounds, and the roles\' families', async () => {
  for (const headers of [{}, { 'x-ops-api-key': 'ops_wrong_key_of_the_right_length' }] as Array<Record<string, string>>) {
    const refused = await probe('/metrics', { headers });
    assert.deepEqual([refused.status, refused.body.code], [401, 'authentication_failed']);
  }
  const response = await fetch(`${base}/metrics`, { headers: { 'x-ops-api-key': opsKey } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  assert.match(text, /^role_check_ready\{check="shard-leases"\} 1$/m);
  assert.match(text, /^role_check_live\{check="shard-leases"\} 1$/m);
  assert.match(text, /^# TYPE role_loop_rounds_total counter$/m);
  const rounds = /^role_loop_rounds_total\{check="shard-leases"\} (\d+)$/m.exec(text);
  assert.ok(Number(rounds?.[1]) > 0, text);
  assert.match(text, /^test_marker\{kind="a\\"b"\} 1$/m, 'label values are escaped');
});

test('only GET (or HEAD) of /healthz, /readyz and /metrics is answered', async () => {
  const missing = await probe('/status');
  assert.deepEqual([missing.status, missing.body.code], [404, 'not_found']);
  const posted = await probe('/readyz', { method: 'POST', body: 'x'.repeat(10_000) });
  assert.deepEqual([posted.status, posted.body.code], [405, 'method_not_allowed']);
  const head = await fetch(`${base}/healthz`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(await head.text(), '');
});

test('once a stop begins, /readyz answers 503 stopping while /healthz still answers 200', async () => {
  listener.markStopping();
  const ready = await probe('/readyz');
  assert.deepEqual([ready.status, ready.body.ready], [503, 'stopping']);
  assert.equal((await probe('/healthz')).status, 200);
});
