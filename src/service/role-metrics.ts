// The families of each role's workers (payout, deliveries, refunds, watchers, shard actors), from
// the numbers each worker already reports (pure). The composition root adds them to the health
// listener's /metrics; the primitives they are made of are in src/lifecycle/metrics.ts.
import type { WatcherStatus } from '../chains/chains.ts';
import type { RefundWorkerStatus } from '../chains/refunds.ts';
import { countersBy, gauge, counter, type MetricFamily } from '../lifecycle/metrics.ts';
import type { DeliveryWorkerStats } from '../onramp/delivery-worker.ts';
import type { PayoutWorkerStats } from '../rails/payout-worker.ts';

export function shardMetrics(runtime: { actorCount(): number; actorBytes(): { estimated: number; max: number }; quarantinedCount(): number }): MetricFamily[] {
  const bytes = runtime.actorBytes();
  return [
    gauge('shard_actors_in_memory', 'Actors this shard worker holds in memory.', runtime.actorCount()),
    gauge('shard_actor_bytes_in_memory', 'Estimated bytes of the actors this shard worker holds in memory.', bytes.estimated),
    gauge('shard_actor_bytes_in_memory_max', 'The cap on those bytes (SHARD_ACTOR_MEMORY_MAX_BYTES, or a share of the heap limit): past it the least recently used actors leave memory.', bytes.max),
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
    gauge('payout_rows_held', 'Payout and refund outbox rows this worker holds, or deferred until their next attempt.', stats.inFlight),
    gauge('payout_rows_stuck', 'Of those, rows that have waited longer than the stuck bound (an alert).', stats.stuck),
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
