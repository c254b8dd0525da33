// SIGTERM as an operator (systemd, Kubernetes) sends it to `src/main.ts`: a graceful stop releases
// the shard worker's leases at once and exits 0; when the stop cannot finish (Redis frozen) the
// process still exits when SHUTDOWN_GRACE_MS runs out, with a log line saying so; a second signal
// ends it at once. One shard-role process per case, on a private redis-server.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { eventually } from '../support/eventually.ts';
import { stopChild } from '../support/processes.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

let redis: PrivateRedis;
let dataDir: string;
const children = new Set<ChildProcess>();

before(async () => {
  redis = await startRedis();
  dataDir = mkdtempSync(join(tmpdir(), 'shutdown-'));
});

after(() => teardown(
  () => { process.kill(redis.pid, 'SIGCONT'); },
  ...[...children].map((child) => () => stopChild(child, 2_000)),
  () => redis?.stop(),
  () => { rmSync(dataDir, { recursive: true, force: true }); },
));

interface Started {
  readonly child: ChildProcess;
  readonly keyPrefix: string;
  output(): string;
}

/** A shard worker process of src/main.ts, ready once it printed its start-up summary. */
async function startShard(graceMs: number): Promise<Started> {
  const keyPrefix = randomKeyPrefix('shutdown');
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../../src/main.ts'), 'shard'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      KEY_PREFIX: keyPrefix,
      DATA_DIR: dataDir,
      SHARDS: '4',
      SANDBOX: '1',
      OPS_API_KEY: 'ops-key-for-the-shutdown-test-0123456789',
      LOG_LEVEL: 'info',
      SHUTDOWN_GRACE_MS: String(graceMs),
    },
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  await eventually(() => assert.match(output, /role shard;/), 60_000, 50);
  return { child, keyPrefix, output: () => output };
}

async function exitOf(child: ChildProcess, boundMs: number): Promise<{ code: number | null; afterMs: number }> {
  const startedAtMs = Date.now();
  const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit').then(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), boundMs);
  });
  const outcome = await Promise.race([exited, late]);
  clearTimeout(timer);
  assert.notEqual(outcome, 'late', `the process exits within ${boundMs} ms`);
  return { code: child.exitCode, afterMs: Date.now() - startedAtMs };
}

test('SIGTERM: the shard worker hands its shards back at once and exits 0', async () => {
  const shard = await startShard(10_000);
  const leases = new RedisLeases({ redis: redis.url, keyPrefix: shard.keyPrefix });
  try {
    await eventually(async () => assert.equal((await leases.listAll('shard:')).length, 4, 'the worker owns every shard'), 20_000, 50);
    shard.child.kill('SIGTERM');
    const { code } = await exitOf(shard.child, 10_000);
    assert.equal(code, 0, shard.output());
    // Released, not left to lapse (the lease TTL is 10 s): another worker can take them now.
    assert.deepEqual(await leases.listAll('shard:'), []);
    assert.deepEqual(await leases.listAll('member:'), []);
    assert.match(shard.output(), /"msg":"stopped"/);
  } finally {
    await leases.close();
  }
});

test('Redis frozen: the stop cannot finish, and the process still exits when SHUTDOWN_GRACE_MS runs out', async () => {
  const graceMs = 2_000;
  const shard = await startShard(graceMs);
  process.kill(redis.pid, 'SIGSTOP');
  try {
    shard.child.kill('SIGTERM');
    const { code, afterMs } = await exitOf(shard.child, graceMs + 3_000);
    assert.equal(code, 1, shard.output());
    assert.ok(afterMs >= graceMs - 200, `it used the grace period (${afterMs} ms)`);
    assert.match(shard.output(), /did not finish within SHUTDOWN_GRACE_MS/);
  } finally {
    process.kill(redis.pid, 'SIGCONT');
  }
});

test('a second SIGTERM while stopping exits at once', async () => {
  const shard = await startShard(60_000);
  process.kill(redis.pid, 'SIGSTOP');
  try {
    shard.child.kill('SIGTERM');
    await eventually(() => assert.match(shard.output(), /shutting down/), 5_000, 20);
    shard.child.kill('SIGTERM');
    const { code } = await exitOf(shard.child, 3_000);
    assert.equal(code, 1, shard.output());
    assert.match(shard.output(), /second signal while shutting down/);
  } finally {
    process.kill(redis.pid, 'SIGCONT');
  }
});
