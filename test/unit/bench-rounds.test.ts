// A concurrency measured in rounds (`--connections=64,64,64`): each service point is compared with
// the baselines of its own round, and a target counts the median round, so one noisy moment on a
// shared machine neither makes nor breaks a target.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpPoint } from '../../bench/lib/results.ts';
import { medianOf, targets, withRatios } from '../../bench/lib/runner.ts';

const topology = 'edge + 1 shard process';

function point(scenario: string, system: string, connections: number, throughput: number, p99Ms = 10): HttpPoint {
  return {
    scenario, system, topology: system === 'service' ? topology : system, connections, durationS: 5,
    responses: throughput * 5, throughput,
    latency: { p50Ms: 1, p90Ms: 2, p99Ms, p999Ms: p99Ms, maxMs: p99Ms },
    errors: { non2xx: 0, unexpected: 0, timeouts: 0, connectionErrors: 0 },
    statusCodes: {}, perTag: {}, ratios: {}, cpuUsPerResponse: {}, loadAverage1m: 1, notes: [],
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
