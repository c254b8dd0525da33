// The Redis adapters while their Redis is away, against a real private redis-server that is halted
// and restarted on the same port: every Bus and Leases call fails with BusError `unavailable` (the
// one error callers map to 503, never ioredis' own), each client logs its connection's loss once
// and its return once (with the outage's length and its count of errors) through the log it was
// given, and nothing reaches stderr raw (`[ioredis] Unhandled error event`).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BusError, ManualClock } from '../../src/bus/bus.ts';
import type { OutageLogLevel } from '../../src/bus/outage-log.ts';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { teardown } from '../support/teardown.ts';

interface Line {
  readonly level: OutageLogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

const lines: Line[] = [];
const clock = new ManualClock();
const connectionLog = { log: (level: OutageLogLevel, message: string, fields: Readonly<Record<string, unknown>>) => lines.push({ level, message, fields }), clock };
const keyPrefix = randomKeyPrefix('conn');
const stream = `${keyPrefix}cmd:{0}`;
const group = 'g';

let redis: PrivateRedis;
let bus: RedisBus;
let leases: RedisLeases;
let stderrText = '';
const writeStderr = process.stderr.write.bind(process.stderr);

before(async () => {
  redis = await startRedis();
  bus = new RedisBus({ redis: redis.url, connectionLog });
  leases = new RedisLeases({ redis: redis.url, keyPrefix, connectionLog });
  // Whatever ioredis would print raw goes through here (console.error writes to process.stderr).
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    stderrText += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return (writeStderr as (chunk: string | Uint8Array, ...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
});

after(() => teardown(
  () => { process.stderr.write = writeStderr; },
  () => bus?.close(),
  () => leases?.close(),
  () => redis?.stop(),
));

function linesOf(message: string, client: string): Line[] {
  return lines.filter((line) => line.message === message && line.fields['client'] === client);
}

/** Every call of both ports, each one settled: a label and what it gave. */
async function everyCall(): Promise<Array<[string, PromiseSettledResult<unknown>]>> {
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['append', () => bus.append(stream, 'x')],
    ['ensureGroup', () => bus.ensureGroup(stream, group)],
    ['read', () => bus.read(group, 'c', [stream], { count: 1, blockMs: 0 })],
    ['blocking read', () => bus.read(group, 'c', [stream], { count: 1, blockMs: 100 })],
    ['readPending', () => bus.readPending(stream, group, 'c', { count: 1 })],
    ['ack', () => bus.ack(stream, group, ['1-0'])],
    ['claimStale', () => bus.claimStale(stream, group, 'c', { minIdleMs: 0, count: 1 })],
    ['summary', () => bus.summary(stream)],
    ['length', () => bus.length(stream)],
    ['acquire', () => leases.acquire('shard:0', 'w', 1_000)],
    ['renew', () => leases.renew('shard:0', 'w', 1, 1_000)],
    ['release', () => leases.release('shard:0', 'w', 1)],
    ['owner', () => leases.owner('shard:0')],
    ['listAll', () => leases.listAll('shard:')],
  ];
  const settled = await Promise.allSettled(calls.map(async ([, call]) => call()));
  return calls.map(([label], index) => [label, settled[index] as PromiseSettledResult<unknown>]);
}

test('Redis away: every call fails with BusError unavailable; one line per client when lost, one when back; nothing raw on stderr', async () => {
  await bus.ensureGroup(stream, group);
  await bus.append(stream, 'before');
  assert.ok(await leases.acquire('shard:0', 'w', 60_000));
  assert.deepEqual(lines, [], 'nothing to say while Redis answers');

  await redis.halt();
  for (const [label, outcome] of await everyCall()) {
    assert.equal(outcome.status, 'rejected', `${label} fails`);
    const reason: unknown = outcome.status === 'rejected' ? outcome.reason : null;
    assert.ok(reason instanceof BusError, `${label}: ${String(reason)}`);
    assert.equal(reason.code, 'unavailable', `${label}: ${reason.message}`);
  }
  // Further failures while it stays away add nothing to the log.
  await everyCall();
  for (const client of ['bus', 'leases']) {
    const lost = linesOf('Redis connection lost', client);
    assert.equal(lost.length, 1, `${client}: ${JSON.stringify(lines)}`);
    assert.equal(lost[0]?.level, 'warn');
    assert.match(String(lost[0]?.fields['error']), /ECONNREFUSED|closed/);
    assert.equal(linesOf('Redis connection restored', client).length, 0);
  }

  clock.advance(4_000);
  await redis.restart();
  await eventually(async () => {
    assert.equal(await bus.length(stream), 0, 'a fresh Redis (no AOF here): the stream is gone');
    assert.equal(await leases.owner('shard:0'), null);
  }, 10_000, 50);
  await eventually(() => {
    for (const client of ['bus', 'leases']) {
      const restored = linesOf('Redis connection restored', client);
      assert.equal(restored.length, 1, `${client}: ${JSON.stringify(lines)}`);
      assert.equal(restored[0]?.level, 'info');
      assert.equal(restored[0]?.fields['outageMs'], 4_000, 'timed by the clock given');
      assert.ok(Number(restored[0]?.fields['errors']) >= 1);
    }
  }, 10_000, 50);
  assert.equal(linesOf('Redis connection lost', 'bus').length, 1, 'still one outage line');
  assert.doesNotMatch(stderrText, /\[ioredis\]/, 'nothing printed raw by ioredis');
});
