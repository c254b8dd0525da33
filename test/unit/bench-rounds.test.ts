// A concurrency measured in rounds (`--connections=64,64,64`): each service point is compared with
// the baselines of its own round, and a target counts the median round, so one noisy moment on a
// shared machine neither makes nor breaks a target.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpPoint } from '../../bench/lib/results.ts';
import { medianOf, targetLines, targets, withRatios } from '../../bench/lib/runner.ts';

const topology = 'edge + 1 shard process';

function point(scenario: string, system: string, connections: number, throughput: number, p99Ms = 10, p50Ms = 1, cpu: Record<string, number | null> = {}): HttpPoint {
  return {
    scenario, system, topology: system === 'service' ? topology : system, connections, durationS: 5,
    responses: throughput * 5, throughput,
    latency: { p50Ms, p90Ms: 2, p99Ms, p999Ms: p99Ms, maxMs: p99Ms },
    errors: { non2xx: 0, unexpected: 0, timeouts: 0, connectionErrors: 0 },
    statusCodes: {}, perTag: {}, ratios: {}, cpuUsPerResponse: cpu, loadAverage1m: 1, notes: [],
  } as unknown as HttpPoint;
}

test('each round of service points is compared with the baselines measured just before it', () => {
  const measured = withRatios([
    point('baseline-transport', 'transport', 64, 10_000),
    point('quote', 'service', 64, 5_000),
    point('baseline-transport', 'transport', 64, 4_000), // a noisy moment: both sides slow down
    point('quote', 'service', 64, 2_000),
  ]);
  assert.deepEqual(measured.filter((item) => item.system === 'service').map((item) => item.ratios['transport']), [0.5, 0.5]);
});

test('targets take the median round', () => {
  const rounds = withRatios([
    point('baseline-transport', 'transport', 64, 10_000), point('quote', 'service', 64, 9_000, 12),
    point('baseline-transport', 'transport', 64, 10_000), point('quote', 'service', 64, 2_000, 80),
    point('baseline-transport', 'transport', 64, 10_000), point('quote', 'service', 64, 8_500, 14),
  ]);
  const byName = new Map(targets(rounds, [], topology).map((check) => [check.name, check]));
  const transport = byName.get('POST /quote throughput ÷ transport-only, 64 connections');
  assert.equal(transport?.measured, 0.85);
  assert.equal(transport?.met, true);
  assert.equal(byName.get('POST /quote p99 at 64 connections (ms)')?.measured, 14);
  assert.equal(medianOf([]), null);
  assert.equal(medianOf([3, null, 1]), 2);
});

test('a target over an even number of rounds reports the mean of the middle two, rounded like every ratio', () => {
  const rounds = withRatios([
    point('baseline-transport', 'transport', 64, 10_000), point('quote', 'service', 64, 1_600),
    point('baseline-transport', 'transport', 64, 10_000), point('quote', 'service', 64, 1_780),
  ]);
  const transport = targets(rounds, [], topology).find((check) => check.name === 'POST /quote throughput ÷ transport-only, 64 connections');
  assert.equal(transport?.measured, 0.169);
  assert.equal(transport?.met, false);
});

// A perf engineer reading a run must see which targets this machine cannot meet whatever the
// service does. Since quotes are offers, the quote path is bare uWS plus pricing and one Redis
// command (no stream round trip, no durable write): bare uWS, measured in the same run, bounds it.
test('targets carry the best value the same-run baselines allow, and say when it already misses', () => {
  const rounds = withRatios([
    point('baseline-uws', 'bare-uws', 1, 8_000, 0.2, 0.7),
    point('baseline-transport', 'transport', 1, 1_600, 1.9, 0.5),
    point('quote', 'service', 1, 320, 8, 2.6),
    point('baseline-uws', 'bare-uws', 64, 10_000, 18),
    point('baseline-transport', 'transport', 64, 5_600, 32, 10, { worker: 55, edge: 97, redis: 34, 'load-generator': 107 }),
    point('quote', 'service', 64, 2_000, 60, 30, { 'shard-1': 320, edge: 270, redis: 75, 'load-generator': 150 }),
  ]);
  const byName = new Map(targets(rounds, [], topology).map((check) => [check.name, check]));

  const latencyAt1 = byName.get('POST /quote p50 at 1 connection (ms)');
  assert.equal(latencyAt1?.met, false);
  assert.deepEqual([latencyAt1?.bound?.value, latencyAt1?.bound?.reachable], [0.7, false]);
  assert.match(targetLines(latencyAt1!).join('\n'), /best possible here: 0\.7, misses the target/);

  const p99 = byName.get('POST /quote p99 at 64 connections (ms)');
  assert.deepEqual([p99?.bound?.value, p99?.bound?.reachable], [18, false]);

  const overBare = byName.get('POST /quote throughput ÷ bare uWS, 64 connections');
  assert.equal(overBare?.measured, 0.2);
  assert.deepEqual([overBare?.bound?.value, overBare?.bound?.reachable], [1, true]);

  const overTransport = byName.get('POST /quote throughput ÷ transport-only, 64 connections');
  assert.equal(overTransport?.bound, undefined);
  assert.equal(
    overTransport?.explanation,
    'CPU per response, all processes (median round): transport 293 µs, quote 815 µs, ratio 0.36; 0.6 needs the quote path at ≤ 488 µs',
  );

  // The latency targets, relative to the transport baseline of the same round.
  const p99Ratio = byName.get('POST /quote p99 ÷ the transport-only p99, 64 connections');
  assert.deepEqual([p99Ratio?.measured, p99Ratio?.met], [1.875, true]);
  const p50Gap = byName.get('POST /quote p50 at 1 connection minus the transport-only p50 (ms)');
  assert.deepEqual([p50Gap?.measured, p50Gap?.met], [2.1, false]);
});

test('a bound whose inputs were not measured is reported as such, not as reachable', () => {
  const rounds = withRatios([point('quote', 'service', 1, 320, 8, 2.6), point('quote', 'service', 64, 2_000, 60, 30, { edge: null })]);
  const checks = targets(rounds, [], topology);
  const latencyAt1 = checks.find((check) => check.name === 'POST /quote p50 at 1 connection (ms)');
  assert.deepEqual(latencyAt1?.bound, { value: null, reachable: null, basis: latencyAt1?.bound?.basis });
  assert.deepEqual(targetLines(latencyAt1!), ['target POST /quote p50 at 1 connection (ms): 2.6 (≤ 0.6) NOT MET']);
  assert.equal(checks.find((check) => check.name.startsWith('POST /quote throughput ÷ transport'))?.explanation, undefined);
});

// hot-accept's target is in successful acceptances: the PostgreSQL baseline answers 500 to a
// transaction it gave up on after 20 serialization failures, and those are no acceptances.
test('hot-accept is compared in successful acceptances per second, not in answers', () => {
  const withStatuses = (item: HttpPoint, statusCodes: Record<string, number>): HttpPoint => ({ ...item, statusCodes });
  const rounds = withRatios([
    withStatuses(point('baseline-postgres-accept', 'postgres-accept', 64, 240), { '200': 1_000, '500': 200 }),
    withStatuses(point('hot-accept', 'service', 64, 420), { '200': 2_100 }),
  ]);
  const service = rounds.find((item) => item.system === 'service');
  assert.equal(service?.ratios['postgres-accept'], 2.1, '420 acceptances/s against 200, not against 240 answers/s');
  const check = targets(rounds, [], topology).find((item) => item.name.startsWith('POST /transaction hot-accept successful acceptances/s'));
  assert.equal(check?.measured, 2.1);
  assert.equal(check?.met, true);
});
