// While Redis is away, a shard worker retries its read every 100 ms: its log must not say so every
// 100 ms (thousands of identical lines bury the cause and fill the disk). It says so at the first
// failure, then at most once per interval with how many failures there were, and once when reads
// succeed again, with the outage's length and count. Real Redis, halted and restarted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { tallyBehavior } from '../support/tally-actor.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

interface Line {
  readonly level: string;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * How many failed reads in a row the outage lasts. Each read fails once the Redis client gives up
 * on it (its reconnection attempts), then the worker pauses 100 ms: a few seconds.
 */
const failedReadsMin = 5;
let redis: PrivateRedis;
let dir: string;
let store: LmdbStore;
let bus: RedisBus;
let role: ShardRole;
const lines: Line[] = [];

before(async () => {
  // AOF written at every command: the streams and their consumer group survive the halt, as on a
  // production Redis (appendonly), so reads succeed again once it is back.
  redis = await startRedis({ extraArgs: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  dir = mkdtempSync(join(tmpdir(), 'outage-log-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new RedisBus({ redis: redis.url });
  role = await startShardRole({
    bus,
    // Leases in memory: only the command reads depend on Redis here.
    leases: new MemoryLeases(),
    store,
    behaviors: [tallyBehavior()] as unknown as Array<ActorBehavior<unknown>>,
    workerId: 'w-outage',
    keyPrefix: randomKeyPrefix('outage-log'),
    shardCount: 2,
    clock: { nowMs: () => Date.now() },
    readBlockMs: 100,
    // Leases that outlast the outage: the worker keeps its shards and keeps reading them (with a
    // short one it would drop them when its lease rounds fail, and a worker without shards reads nothing).
    leaseTtlMs: 120_000,
    log: (level, message, fields) => void lines.push({ level, message, fields: fields ?? {} }),
  });
});

after(() => teardown(
  () => role?.stop(),
  () => bus?.close(),
  () => store?.close(),
  () => redis?.stop(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

/** The read loop's failed rounds in a row, from the worker's own health check. */
function failedReadsInARow(): number {
  const check = role.worker.health().find((candidate) => candidate.name === 'shard-commands');
  return Number(check?.report(Date.now(), 60_000).detail['consecutiveFailures'] ?? 0);
}

test('a Redis outage logs the read failure once at first, then with a count, and its end once', async () => {
  await eventually(() => assert.equal(role.worker.ownedShards().length, 2));
  const before = lines.length;
  await redis.halt();
  await eventually(() => assert.ok(lines.slice(before).some((line) => /reading commands failed/.test(line.message)), 'the first failure is logged at once'));
  await eventually(() => assert.ok(failedReadsInARow() >= failedReadsMin), 60_000);
  await redis.restart();
  await eventually(() => assert.ok(lines.slice(before).some((line) => /reading commands recovered/.test(line.message)), `the end of the outage is logged:\n${lines.slice(before).slice(-5).map((line) => JSON.stringify(line)).join('\n')}`), 30_000);
  const during = lines.slice(before);
  const failureLines = during.filter((line) => /reading commands failed/.test(line.message));
  // The interval (10 s by default) is longer than the outage: the first line only, however many failures.
  assert.equal(failureLines.length, 1, failureLines.map((line) => JSON.stringify(line)).join('\n'));
  const recovered = during.find((line) => /reading commands recovered/.test(line.message));
  assert.equal(recovered?.level, 'info');
  const failures = Number(recovered?.fields['failures']);
  assert.ok(failures >= failedReadsMin, `the end line counts the failed reads (${String(recovered?.fields['failures'])})`);
  assert.ok(Number(recovered?.fields['outageMs']) >= 1_000, 'and says how long they failed');
});
