// The back-off of a retrying loop's log (src/bus/outage-log.ts RetryLog), on a fake clock: a loop
// that fails every 100 ms for a minute writes its first failure at once, then one line per
// interval with the running count, and one line when it succeeds again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RetryLog, type OutageLogLevel } from '../../src/bus/outage-log.ts';

interface Line {
  readonly level: OutageLogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

function setUp(intervalMs = 10_000): { retries: RetryLog; lines: Line[]; clock: { nowMs: number } } {
  const clock = { nowMs: 1_000_000 };
  const lines: Line[] = [];
  const retries = new RetryLog({
    log: (level, message, fields) => void lines.push({ level, message, fields }),
    clock: { nowMs: () => clock.nowMs },
    failedMessage: 'reading failed; retrying',
    recoveredMessage: 'reading recovered',
    intervalMs,
  });
  return { retries, lines, clock };
}

test('a minute of failures every 100 ms: the first at once, then one line per 10 s with the count, then the end', () => {
  const { retries, lines, clock } = setUp();
  for (let attempt = 0; attempt < 600; attempt += 1) {
    retries.failed({ error: `refused ${attempt}` });
    clock.nowMs += 100;
  }
  retries.succeeded();
  const failed = lines.filter((line) => line.message === 'reading failed; retrying');
  assert.equal(failed.length, 6);
  assert.deepEqual(failed.map((line) => line.fields['failures']), [1, 101, 201, 301, 401, 501]);
  assert.deepEqual(failed.map((line) => line.fields['failingForMs']), [0, 10_000, 20_000, 30_000, 40_000, 50_000]);
  assert.equal(failed[1]?.fields['error'], 'refused 100', 'the line carries the latest error');
  assert.ok(failed.every((line) => line.level === 'error'));
  assert.deepEqual(lines.at(-1), { level: 'info', message: 'reading recovered', fields: { outageMs: 60_000, failures: 600 } });
  assert.equal(lines.length, 7);
});

test('success without failures logs nothing; a new run of failures starts again with a line at once', () => {
  const { retries, lines, clock } = setUp();
  retries.succeeded();
  assert.equal(lines.length, 0);
  retries.failed();
  clock.nowMs += 100;
  retries.succeeded();
  clock.nowMs += 100;
  retries.failed();
  assert.deepEqual(lines.map((line) => [line.message, line.fields['failures']]), [
    ['reading failed; retrying', 1],
    ['reading recovered', 1],
    ['reading failed; retrying', 1],
  ]);
});

test('the interval must be a positive whole number of milliseconds', () => {
  assert.throws(() => setUp(0), RangeError);
  assert.throws(() => setUp(1.5), RangeError);
});
