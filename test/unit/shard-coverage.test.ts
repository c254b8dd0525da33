// When the edge counts a shard as served by a live worker (src/bus/shard-coverage.ts), and how the
// outage lines (src/bus/outage-log.ts) say it once per outage instead of once per request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardCoverage } from '../../src/bus/shard-coverage.ts';
import { OutageLog, RateLimitedLog, type OutageLogLevel } from '../../src/bus/outage-log.ts';
import { ManualClock } from '../../src/bus/bus.ts';

const graceMs = 1_000;
const startMs = 1_700_000_000_000;

test('a shard never seen held is unserved at once; a held one stays served for the grace after it was last seen', () => {
  const coverage = new ShardCoverage(4, graceMs, startMs);
  coverage.observed(startMs, [0, 1, 2]);
  assert.deepEqual([0, 1, 2, 3].map((shard) => coverage.verdict(shard, startMs)), ['served', 'served', 'served', 'no_owner']);
  assert.deepEqual(coverage.summary(startMs), { verdict: 'no_owner', unservedShards: [3], shardCount: 4, lastReadingAgoMs: 0 });

  // A hand-over: shard 1 is free for a moment, then taken again within the grace. No change seen.
  coverage.observed(startMs + 400, [0, 2, 3]);
  coverage.observed(startMs + 800, [0, 1, 2, 3]);
  assert.equal(coverage.summary(startMs + 800).verdict, 'served');

  // Every worker gone: still served until the grace after the last reading that saw them runs out.
  coverage.observed(startMs + 1_200, []);
  assert.equal(coverage.verdict(0, startMs + 1_800), 'served');
  coverage.observed(startMs + 1_900, []);
  assert.equal(coverage.verdict(0, startMs + 1_900), 'no_owner');
  assert.deepEqual(coverage.summary(startMs + 1_900).unservedShards, [0, 1, 2, 3]);
});

test('leases unread for longer than the grace: Redis is not answering, every shard is refused for that; the next reading gives the grace again', () => {
  const coverage = new ShardCoverage(2, graceMs, startMs);
  assert.equal(coverage.verdict(0, startMs + graceMs), 'no_owner', 'no reading yet, within the grace of the start: ownership as known (none)');
  assert.equal(coverage.verdict(0, startMs + graceMs + 1), 'bus_unreachable', 'no reading at all since the start');
  coverage.observed(startMs + 2_000, [0, 1]);
  assert.equal(coverage.summary(startMs + 2_500).verdict, 'served');
  // Readings fail for longer than the grace (they are simply not observed).
  const summary = coverage.summary(startMs + 3_001);
  assert.deepEqual([summary.verdict, summary.unservedShards, summary.lastReadingAgoMs], ['bus_unreachable', [], 1_001]);
  // Back, with the workers not yet having retaken their lapsed leases: not refused right away.
  coverage.observed(startMs + 9_000, [1]);
  assert.deepEqual([coverage.verdict(0, startMs + 9_000), coverage.verdict(1, startMs + 9_000)], ['served', 'served']);
  coverage.observed(startMs + 9_600, [1]);
  coverage.observed(startMs + 10_001, [1]);
  assert.equal(coverage.verdict(0, startMs + 10_001), 'no_owner', 'a shard still without an owner after that grace');

  // A shard already unserved when the leases went unread gets no grace from the outage.
  coverage.observed(startMs + 10_500, [1]);
  coverage.observed(startMs + 20_000, [1]);
  assert.deepEqual([coverage.verdict(0, startMs + 20_000), coverage.verdict(1, startMs + 20_000)], ['no_owner', 'served']);
});

test('bad inputs are refused', () => {
  assert.throws(() => new ShardCoverage(0, graceMs, startMs), RangeError);
  assert.throws(() => new ShardCoverage(2, 0, startMs), RangeError);
  const coverage = new ShardCoverage(2, graceMs, startMs);
  assert.throws(() => coverage.observed(startMs, [2]), RangeError);
  assert.throws(() => coverage.verdict(-1, startMs), RangeError);
});

interface Line {
  readonly level: OutageLogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

function recorder(): { lines: Line[]; log: (level: OutageLogLevel, message: string, fields: Readonly<Record<string, unknown>>) => void } {
  const lines: Line[] = [];
  return { lines, log: (level, message, fields) => lines.push({ level, message, fields }) };
}

test('an outage is one warning when it begins and one line when it ends, with its length and count', () => {
  const clock = new ManualClock(startMs);
  const { lines, log } = recorder();
  const outage = new OutageLog({ log, clock, beganMessage: 'lost', endedMessage: 'back', fields: { client: 'bus' }, countName: 'errors' });
  outage.recovered();
  assert.equal(lines.length, 0, 'nothing ends that did not begin');
  outage.failed({ error: 'ECONNREFUSED' });
  clock.advance(250);
  for (let attempt = 0; attempt < 99; attempt += 1) outage.failed({ error: 'ECONNREFUSED' });
  outage.counted();
  clock.advance(750);
  outage.recovered();
  assert.deepEqual(lines, [
    { level: 'warn', message: 'lost', fields: { client: 'bus', error: 'ECONNREFUSED' } },
    { level: 'info', message: 'back', fields: { client: 'bus', outageMs: 1_000, errors: 101 } },
  ]);
  outage.counted();
  outage.began();
  outage.recovered();
  assert.deepEqual(lines[3]?.fields, { client: 'bus', outageMs: 0, errors: 0 }, 'a count outside an outage is not carried into the next');
});

test('a rate-limited line: the first at once, then at most one per interval carrying how many were not logged', () => {
  const clock = new ManualClock(startMs);
  const { lines, log } = recorder();
  const limited = new RateLimitedLog({ log, clock, level: 'warn', message: 'refused', intervalMs: 60_000 });
  limited.note({ reason: 'a' });
  for (let index = 0; index < 10; index += 1) {
    clock.advance(1_000);
    limited.note({ reason: 'b' });
  }
  clock.advance(50_000);
  limited.note({ reason: 'c' });
  assert.deepEqual(lines, [
    { level: 'warn', message: 'refused', fields: { reason: 'a', notLoggedSinceLastLine: 0 } },
    { level: 'warn', message: 'refused', fields: { reason: 'c', notLoggedSinceLastLine: 10 } },
  ]);
  assert.throws(() => new RateLimitedLog({ log, clock, level: 'warn', message: 'x', intervalMs: 0 }), RangeError);
});
