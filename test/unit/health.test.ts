// What an orchestrator reads from a role's health listener: when a loop counts as failing (not
// ready) and when as stuck (not live), and how the process report adds the checks up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { healthReport, LoopHealth, loopCheck, loopThresholds, stalledAfterMsFloor, watchersCheck, type WatcherState } from '../../src/lifecycle/health.ts';

function clock(startMs = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let nowMs = startMs;
  return { now: () => nowMs, advance: (ms) => { nowMs += ms; } };
}

test('a loop is ready from its start until it has gone without a successful round for the unready bound', () => {
  const time = clock();
  const loop = new LoopHealth(250, time.now);
  assert.equal(loop.report(time.now(), 1_000).ready, true, 'ready before its first round');
  time.advance(600);
  loop.failed();
  time.advance(300);
  loop.failed();
  const failing = loop.report(time.now(), 1_000);
  assert.deepEqual([failing.ready, failing.live, failing.detail['consecutiveFailures']], [true, true, 2], 'failures within the bound');
  time.advance(200);
  loop.failed();
  const unready = loop.report(time.now(), 1_000);
  assert.deepEqual([unready.ready, unready.live], [false, true], 'failing quickly is not stuck');
  assert.equal(unready.detail['lastSuccessAgoMs'], 1_100);
  loop.succeeded();
  const recovered = loop.report(time.now(), 1_000);
  assert.deepEqual([recovered.ready, recovered.detail['consecutiveFailures'], recovered.detail['rounds']], [true, 0, 4]);
});

test('a loop whose round never finishes becomes unready, then not live', () => {
  const time = clock();
  const loop = new LoopHealth(3_000, time.now);
  const { unreadyAfterMs, stalledAfterMs } = loopThresholds(3_000, 1_000);
  assert.equal(unreadyAfterMs, 9_000, 'three missed rounds of a slow loop, never less');
  assert.equal(stalledAfterMs, stalledAfterMsFloor);
  time.advance(unreadyAfterMs + 1);
  assert.deepEqual(Object.values(pick(loop.report(time.now(), 1_000))), [true, false]);
  time.advance(stalledAfterMs - unreadyAfterMs);
  assert.deepEqual(Object.values(pick(loop.report(time.now(), 1_000))), [false, false]);
  loop.failed();
  assert.deepEqual(Object.values(pick(loop.report(time.now(), 1_000))), [true, false], 'a finished round, even a failed one, is a live loop');
});

test('the process report: stalled if one check is, not ready if one is, stopping once a stop began', () => {
  const time = clock();
  const healthy = new LoopHealth(250, time.now);
  const stuck = new LoopHealth(250, time.now);
  time.advance(stalledAfterMsFloor + 1);
  healthy.succeeded();
  const checks = [loopCheck('a-rounds', healthy, () => ({ jobsHeld: 3 })), loopCheck('b-rounds', stuck)];
  const report = healthReport('payout', checks, { nowMs: time.now(), unreadyAfterMs: 15_000, stopping: false });
  assert.deepEqual([report.status, report.ready, report.role], ['stalled', 'not_ready', 'payout']);
  assert.equal(report.checks['a-rounds']?.detail['jobsHeld'], 3);
  assert.equal(report.checks['b-rounds']?.live, false);
  stuck.succeeded();
  assert.deepEqual(pickProcess(healthReport('payout', checks, { nowMs: time.now(), unreadyAfterMs: 15_000, stopping: false })), ['ok', 'ready']);
  assert.deepEqual(pickProcess(healthReport('payout', checks, { nowMs: time.now(), unreadyAfterMs: 15_000, stopping: true })), ['ok', 'stopping']);
  assert.deepEqual(pickProcess(healthReport('admin', [], { nowMs: time.now(), unreadyAfterMs: 15_000, stopping: false })), ['ok', 'ready'], 'no loops: nothing to fail');
});

test('watchers: a standby process (no watcher lease) is ready with its watchers stopped', () => {
  let active = false;
  const check = watchersCheck(() => [{ network: 'STELLAR', state: 'stopped' }], () => active);
  assert.deepEqual([check.report(0, 15_000).ready, check.report(0, 15_000).detail['active']], [true, false]);
  active = true;
  assert.equal(check.report(0, 15_000).ready, false, 'the holder must run them');
});

test('watchers: a stale or stopped watcher makes the process unready; reconnecting does not', () => {
  let states: WatcherState[] = [{ network: 'STELLAR', state: 'reconnecting' }];
  const check = watchersCheck(() => states);
  assert.deepEqual([check.report(0, 15_000).ready, check.report(0, 15_000).detail['states']], [true, { STELLAR: 'reconnecting' }]);
  for (const state of ['stale', 'stopped'] as const) {
    states = [{ network: 'STELLAR', state }];
    assert.deepEqual(pick(check.report(0, 15_000)), { live: true, ready: false }, state);
  }
});

test('reports carry no error text, only ages and counts', () => {
  const time = clock();
  const loop = new LoopHealth(250, time.now);
  loop.failed();
  const detail = loop.report(time.now(), 15_000).detail;
  assert.deepEqual(Object.keys(detail).sort(), ['consecutiveFailures', 'lastRoundAgoMs', 'lastSuccessAgoMs', 'rounds', 'stalledAfterMs', 'unreadyAfterMs']);
});

function pick(report: { live: boolean; ready: boolean }): { live: boolean; ready: boolean } {
  return { live: report.live, ready: report.ready };
}

function pickProcess(report: { status: string; ready: string }): [string, string] {
  return [report.status, report.ready];
}
