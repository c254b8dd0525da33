// The roles' numbers as Prometheus reads them: one HELP/TYPE per family, escaped labels, one-hot
// watcher states, and the payout worker's outcomes under one bounded label.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { healthReport, LoopHealth, loopCheck, watchersCheck } from '../../src/lifecycle/health.ts';
import { healthMetrics, renderFamilies } from '../../src/lifecycle/metrics.ts';
import { payoutMetrics, watcherMetrics } from '../../src/service/role-metrics.ts';
import type { PayoutWorkerStats } from '../../src/rails/payout-worker.ts';

test('families of one name from two sources share one HELP and TYPE; label values are escaped', () => {
  const text = renderFamilies([
    { name: 'jobs_held', type: 'gauge', help: 'Jobs held.', samples: [{ labels: { worker: 'a' }, value: 1 }] },
    { name: 'jobs_held', type: 'gauge', help: 'Jobs held.', samples: [{ labels: { worker: 'b"\\\n' }, value: 2 }] },
    { name: 'ratio', type: 'gauge', help: 'Line one\nline two.', samples: [{ value: Number.NaN }, { labels: { x: 'y' }, value: Number.POSITIVE_INFINITY }] },
  ]);
  assert.equal(
    text,
    [
      '# HELP jobs_held Jobs held.',
      '# TYPE jobs_held gauge',
      'jobs_held{worker="a"} 1',
      'jobs_held{worker="b\\"\\\\\\n"} 2',
      '# HELP ratio Line one\\nline two.',
      '# TYPE ratio gauge',
      'ratio NaN',
      'ratio{x="y"} +Inf',
      '',
    ].join('\n'),
  );
  assert.equal(renderFamilies([]), '');
});

test('payout numbers: attempts, and every outcome under one label', () => {
  const stats: PayoutWorkerStats = {
    inFlight: 3, claimed: 9, attempts: 12, payoutsSucceeded: 7, payoutsFailed: 1, refundsSettled: 2, notYet: 4,
    railErrors: 1, reportErrors: 0, reportsRefused: 0, malformedRows: 0, stuck: 1, oldestWaitingMs: 90_500,
  };
  const text = renderFamilies(payoutMetrics(stats));
  assert.match(text, /^payout_attempts_total 12$/m);
  assert.match(text, /^payout_outcomes_total\{outcome="payout_succeeded"\} 7$/m);
  assert.match(text, /^payout_outcomes_total\{outcome="refund_settled"\} 2$/m);
  assert.match(text, /^payout_rows_stuck 1$/m);
  assert.match(text, /^payout_oldest_waiting_seconds 90.5$/m);
});

test('watcher states are one-hot; the last event time is absent before the first', () => {
  const text = renderFamilies(
    watcherMetrics([{ network: 'STELLAR', state: 'stale', cursor: null, lastEventAtMs: null, reconnects: 3, lastError: 'boom' }], true),
  );
  assert.match(text, /^watcher_active 1$/m);
  assert.match(text, /^watcher_state\{network="STELLAR",state="stale"\} 1$/m);
  assert.match(text, /^watcher_state\{network="STELLAR",state="streaming"\} 0$/m);
  assert.match(text, /^watcher_reconnects_total\{network="STELLAR"\} 3$/m);
  assert.doesNotMatch(text, /watcher_last_event_timestamp_seconds\{/);
  assert.doesNotMatch(text, /boom/, 'no error text');
});

test('health checks become readiness, liveness and loop numbers per check', () => {
  let nowMs = 0;
  const loop = new LoopHealth(250, () => nowMs);
  nowMs = 20_000;
  loop.failed();
  const report = healthReport('watcher', [loopCheck('refund-rounds', loop), watchersCheck(() => [{ network: 'STELLAR', state: 'streaming' }])], {
    nowMs,
    unreadyAfterMs: 15_000,
    stopping: false,
  });
  const text = renderFamilies(healthMetrics(report));
  assert.match(text, /^role_check_ready\{check="refund-rounds"\} 0$/m);
  assert.match(text, /^role_check_ready\{check="watchers"\} 1$/m);
  assert.match(text, /^role_check_live\{check="refund-rounds"\} 1$/m);
  assert.match(text, /^role_loop_rounds_total\{check="refund-rounds"\} 1$/m);
  assert.match(text, /^role_loop_consecutive_failures\{check="refund-rounds"\} 1$/m);
  assert.match(text, /^role_loop_last_success_age_seconds\{check="refund-rounds"\} 20$/m);
  assert.doesNotMatch(text, /role_loop_rounds_total\{check="watchers"\}/, 'watchers are not a loop');
});
