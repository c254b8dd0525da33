// Numbers of the roles that serve no partner HTTP (payout, watcher, webhooks, and every role's
// loops), in the Prometheus text format, served on the health listener's GET /metrics with the ops
// key. The edge's own /metrics (src/edge/routes/metrics.ts) covers HTTP and the shard cluster.
//
// A role hands over plain families; this module only renders them. Labels are bounded by
// construction: check names, networks, watcher states and outcome words are fixed sets.
import type { WatcherStatus } from '../chains/chains.ts';
import type { RefundWorkerStatus } from '../chains/refunds.ts';
import type { DeliveryWorkerStats } from '../onramp/delivery-worker.ts';
import type { PayoutWorkerStats } from '../rails/payout-worker.ts';
import type { HealthReport } from '../lifecycle/health.ts';

export interface MetricSample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly samples: readonly MetricSample[];
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/**
 * The text exposition of `families`. Families with the same name (two workers of one kind in a
 * process) are merged under one HELP/TYPE, as the format requires.
 */
export function renderFamilies(families: readonly MetricFamily[]): string {
  const merged = new Map<string, { family: MetricFamily; samples: MetricSample[] }>();
  for (const family of families) {
    const seen = merged.get(family.name);
    if (seen === undefined) merged.set(family.name, { family, samples: [...family.samples] });
    else seen.samples.push(...family.samples);
  }
  const lines: string[] = [];
  for (const { family, samples } of merged.values()) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of samples) {
      const labels = Object.entries(sample.labels ?? {});
      const text = labels.length === 0 ? '' : `{${labels.map(([key, value]) => `${key}="${escapeLabel(value)}"`).join(',')}}`;
      lines.push(`${family.name}${text} ${formatValue(sample.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** Shorthands for a family of one unlabelled sample. */
export function gauge(name: string, help: string, value: number): MetricFamily {
  return { name, type: 'gauge', help, samples: [{ value }] };
}

export function counter(name: string, help: string, value: number): MetricFamily {
  return { name, type: 'counter', help, samples: [{ value }] };
}

/** A counter family with one label: a sample per value of it, in the order given. */
export function countersBy(name: string, help: string, label: string, values: Readonly<Record<string, number>>): MetricFamily {
  return { name, type: 'counter', help, samples: Object.entries(values).map(([value, count]) => ({ labels: { [label]: value }, value: count })) };
}

// ---- the roles' families (pure: from the numbers each worker already reports) ----

/** Every check of the health report: ready and live, and for loops their rounds. */
export function healthMetrics(report: HealthReport): MetricFamily[] {
  const checks = Object.entries(report.checks);
  const loops = checks.filter(([, check]) => typeof check.detail['rounds'] === 'number');
  const detail = (name: string, key: string, type: MetricFamily['type'], help: string, scale = 1): MetricFamily => ({
    name,
    type,
    help,
    samples: loops.map(([check, value]) => ({ labels: { check }, value: Number(value.detail[key] ?? 0) * scale })),
  });
  return [
    { name: 'role_check_ready', type: 'gauge', help: 'Whether the check is ready (1) or not (0): the /readyz of this process, per check.', samples: checks.map(([check, value]) => ({ labels: { check }, value: value.ready ? 1 : 0 })) },
    { name: 'role_check_live', type: 'gauge', help: 'Whether the check is live (1) or stuck (0): the /healthz of this process, per check.', samples: checks.map(([check, value]) => ({ labels: { check }, value: value.live ? 1 : 0 })) },
    detail('role_loop_rounds_total', 'rounds', 'counter', 'Rounds the loop finished since the process started, successful or not.'),
    detail('role_loop_consecutive_failures', 'consecutiveFailures', 'gauge', 'Rounds that failed in a row (0 after a success).'),
    detail('role_loop_last_success_age_seconds', 'lastSuccessAgoMs', 'gauge', 'Time since the loop last finished a round successfully (or since the process started).', 1 / 1000),
  ];
}

export function shardMetrics(runtime: { actorCount(): number; quarantinedCount(): number }): MetricFamily[] {
  return [
    gauge('shard_actors_in_memory', 'Actors this shard worker holds in memory.', runtime.actorCount()),
    gauge(
      'shard_actors_quarantined',
      'Actors of the owned shards set aside because their snapshot or a command could not be applied; their commands are dead-lettered (an alert: npm run admin -- quarantined).',
      runtime.quarantinedCount(),
    ),
  ];
}

export function payoutMetrics(stats: PayoutWorkerStats): MetricFamily[] {
  return [
    counter('payout_attempts_total', 'Rail calls by this payout worker since it started.', stats.attempts),
    countersBy(
      'payout_outcomes_total',
      'What the attempts ended with: payout succeeded or failed, refund settled, not yet (pending or retry), rail error, report error, report refused by the transaction.',
      'outcome',
      {
        payout_succeeded: stats.payoutsSucceeded,
        payout_failed: stats.payoutsFailed,
        refund_settled: stats.refundsSettled,
        not_yet: stats.notYet,
        rail_error: stats.railErrors,
        report_error: stats.reportErrors,
        report_refused: stats.reportsRefused,
      },
    ),
    gauge('payout_rows_held', 'Payout and refund outbox rows this worker holds.', stats.inFlight),
    gauge('payout_rows_stuck', 'Rows held that have waited longer than the stuck bound (an alert).', stats.stuck),
    gauge('payout_oldest_waiting_seconds', 'How long the oldest row held has waited.', stats.oldestWaitingMs / 1000),
    gauge('payout_malformed_rows', 'Rows this worker could not read (left in the outbox for operations).', stats.malformedRows),
  ];
}

export function deliveryMetrics(stats: DeliveryWorkerStats): MetricFamily[] {
  return [
    counter('onramp_delivery_attempts_total', 'Crypto sends attempted by this worker since it started.', stats.attempts),
    countersBy('onramp_deliveries_finished_total', 'Onramp crypto deliveries this worker finished, by result.', 'result', { delivered: stats.delivered, failed: stats.failed }),
    gauge('onramp_delivery_rows_held', 'Delivery rows this worker holds: attempts in progress.', stats.inFlight),
    gauge('onramp_delivery_rows_retrying', 'Delivery rows that failed at least once: held, or deferred by this worker until their next try.', stats.retrying.length),
    gauge('onramp_delivery_rows_stuck', 'Delivery rows held or deferred by this worker, waiting longer than the stuck bound (an alert).', stats.stuck),
    gauge('onramp_delivery_malformed_rows', 'Delivery rows this worker could not read.', stats.malformedRows),
  ];
}

export function refundMetrics(status: RefundWorkerStatus): MetricFamily[] {
  return [
    gauge('chain_refund_rows_held', 'Chain refund rows this worker holds: sends in progress.', status.inFlight),
    gauge('chain_refund_rows_retrying', 'Chain refund rows that failed at least once: held, or deferred by this worker until their next try.', status.retrying.length),
    gauge('chain_refund_rows_parked', 'Of those, refunds the chain refused: parked for operations, retried slowly.', status.retrying.filter((refund) => refund.parked).length),
  ];
}

const watcherStates: readonly WatcherStatus['state'][] = ['starting', 'streaming', 'reconnecting', 'stale', 'stopped'];

export function watcherMetrics(statuses: readonly WatcherStatus[], active: boolean): MetricFamily[] {
  return [
    gauge('watcher_active', 'Whether this process holds the watcher lease and runs the watchers (1), or stands by (0). Sum over processes: exactly 1.', active ? 1 : 0),
    {
      name: 'watcher_state',
      type: 'gauge',
      help: 'The watcher of each network: 1 for its current state, 0 for the others (stale: no contact with the chain and its probe failed).',
      samples: statuses.flatMap((status) => watcherStates.map((state) => ({ labels: { network: status.network, state }, value: status.state === state ? 1 : 0 }))),
    },
    {
      name: 'watcher_reconnects_total',
      type: 'counter',
      help: 'Reconnections of the watcher since it started.',
      samples: statuses.map((status) => ({ labels: { network: status.network }, value: status.reconnects })),
    },
    {
      name: 'watcher_last_event_timestamp_seconds',
      type: 'gauge',
      help: 'When the watcher last saw an event from its chain (Unix time; absent before the first).',
      samples: statuses.filter((status) => status.lastEventAtMs !== null).map((status) => ({ labels: { network: status.network }, value: (status.lastEventAtMs ?? 0) / 1000 })),
    },
  ];
}
