// Corridor health's pure decisions (src/domain/corridor-health.ts): nearest-rank percentiles of
// settlement times, the rail's state replayed over finished payouts with hysteresis (degraded once
// the failure share or the p95 crosses its mark, back up only under the lower mark, or once the
// window runs out of evidence), and the liquidity level from exact decimals, never the amount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  defaultHealthThresholds,
  liquidityLevel,
  percentile,
  railHealth,
  settlementTimes,
  type HealthThresholds,
  type SettlementSample,
} from '../../src/domain/corridor-health.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';

const t0 = 1_764_100_000_000;
const ok = (atMs: number, durationMs: number): SettlementSample => ({ finishedAtMs: atMs, succeeded: true, durationMs });
const failed = (atMs: number): SettlementSample => ({ finishedAtMs: atMs, succeeded: false, durationMs: null });

test('percentiles are nearest-rank over the settlement times of succeeded payouts in the period', () => {
  assert.equal(percentile([], 50), null);
  assert.equal(percentile([7], 95), 7);
  const sorted = Array.from({ length: 20 }, (_, index) => (index + 1) * 100);
  assert.equal(percentile(sorted, 50), 1000);
  assert.equal(percentile(sorted, 95), 1900);
  const samples = [ok(t0 + 1, 3000), ok(t0 + 2, 1000), failed(t0 + 3), ok(t0 + 4, 2000), ok(t0 - 10, 99_000)];
  assert.deepEqual(settlementTimes(samples, t0, t0 + 10), { count: 3, p50Ms: 2000, p95Ms: 3000 });
});

const thresholds: HealthThresholds = { ...defaultHealthThresholds, recentPayoutsMax: 4, recentPayoutsMin: 4, failureShareDegraded: 0.5, failureShareRecovered: 0.25 };

test('the rail turns degraded when the recent failure share reaches the mark, and back up under the lower one', () => {
  const samples = [ok(t0 + 1_000, 2000), ok(t0 + 2_000, 2000), failed(t0 + 3_000), ok(t0 + 4_000, 2000)];
  assert.equal(railHealth(samples, t0, t0 + 5_000, thresholds).state, 'up', 'one failure in four is under the mark');
  samples.push(failed(t0 + 5_000));
  const degraded = railHealth(samples, t0, t0 + 6_000, thresholds);
  assert.deepEqual([degraded.state, degraded.sinceMs, degraded.recent.failureShare], ['degraded', t0 + 5_000, 0.5]);
  // Hysteresis: two successes bring the share to 1/4, under the mark to degrade but not under 1/4: still degraded.
  samples.push(ok(t0 + 6_000, 2000), ok(t0 + 7_000, 2000));
  const holding = railHealth(samples, t0, t0 + 7_500, thresholds);
  assert.deepEqual([holding.state, holding.recent.failureShare], ['degraded', 0.25]);
  samples.push(ok(t0 + 8_000, 2000), ok(t0 + 9_000, 2000));
  const recovered = railHealth(samples, t0, t0 + 9_500, thresholds);
  assert.deepEqual([recovered.state, recovered.sinceMs], ['up', t0 + 9_000]);
});

test('too few recent payouts is no evidence: the state is up, and a degraded rail recovers once its failures leave the window', () => {
  assert.equal(railHealth([failed(t0 + 1), failed(t0 + 2), failed(t0 + 3)], t0, t0 + 10, thresholds).state, 'up');
  const failures = [failed(t0 + 1_000), failed(t0 + 2_000), failed(t0 + 3_000), failed(t0 + 4_000)];
  assert.equal(railHealth(failures, t0, t0 + 5_000, thresholds).state, 'degraded');
  const later = railHealth(failures, t0, t0 + thresholds.recentWindowMs + 10_000, thresholds);
  assert.deepEqual([later.state, later.sinceMs], ['up', t0 + 1_000 + thresholds.recentWindowMs], 'up from the moment the first failure left the window');
});

test('a slow rail is degraded by its p95 and recovers under the lower mark', () => {
  const slow = { ...thresholds, p95DegradedMs: 10_000, p95RecoveredMs: 5_000 };
  const samples = [ok(t0 + 1, 2000), ok(t0 + 2, 2000), ok(t0 + 3, 2000), ok(t0 + 4, 20_000)];
  assert.equal(railHealth(samples, t0, t0 + 10, slow).state, 'degraded');
  samples.push(ok(t0 + 5, 7000), ok(t0 + 6, 7000), ok(t0 + 7, 7000), ok(t0 + 8, 7000));
  assert.equal(railHealth(samples, t0, t0 + 10, slow).state, 'degraded', '7 s is under the mark to degrade but over the mark to recover');
  samples.push(ok(t0 + 9, 1000), ok(t0 + 10, 1000), ok(t0 + 11, 1000), ok(t0 + 12, 1000));
  assert.equal(railHealth(samples, t0, t0 + 20, slow).state, 'up');
});

test('liquidity level: exhausted under the smallest payout, low under the multiple of the largest, never the amount', () => {
  const bounds = { min: decimalFromExactString('10000'), max: decimalFromExactString('5000000') };
  assert.equal(liquidityLevel(null, bounds, 10), 'unknown');
  assert.equal(liquidityLevel(decimalFromExactString('0'), bounds, 10), 'exhausted');
  assert.equal(liquidityLevel(decimalFromExactString('9999.99'), bounds, 10), 'exhausted');
  assert.equal(liquidityLevel(decimalFromExactString('49999999.99'), bounds, 10), 'low');
  assert.equal(liquidityLevel(decimalFromExactString('50000000'), bounds, 10), 'ok');
  assert.equal(liquidityLevel(decimalFromExactString('1'), { min: null, max: null }, 10), 'ok');
});
