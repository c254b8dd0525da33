// GET /metrics (X-OPS-API-KEY): the edge's Prometheus text exposition. Request counts by route,
// method and status; a latency histogram by route; requests in flight; actor requests waiting for
// a reply. Labels are bounded: routes are the declared patterns (`unmatched` otherwise), methods
// the known ones (`OTHER` otherwise), statuses three digits (`aborted` when the client left).
// Also the shard workers as the cluster sees them (src/actors/cluster-stats.ts, cached): owner,
// fencing token, stream length, pending and lag per shard (labels: shard numbers < SHARDS), and
// owned shards, actors in memory, RSS and heap per live shard worker (labels: live worker ids).
// Every edge reports the same cluster numbers: aggregate them with max(), not sum().
import type { AccessLogEntry } from '../access-log.ts';
import type { Guard, HttpResponse, Route } from '../http-types.ts';
import { outboxBacklogShownMax, type ClusterStatsReading, type OutboxTopicStats, type ShardStats, type WorkerStatsView } from '../../actors/cluster-stats.ts';

/** Upper bounds of the latency buckets, in seconds. */
export const latencyBucketsSeconds = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

const knownMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** The method label's index in `methodLabels`: a known method, or OTHER. */
const methodIndexes: ReadonlyMap<string, number> = new Map(knownMethods.map((method, index) => [method, index]));
const methodLabels: readonly string[] = [...knownMethods, 'OTHER'];

interface Histogram {
  /** Observations per bucket: `[index]` counts values above the previous bound up to this one. */
  readonly buckets: number[];
  count: number;
  sumSeconds: number;
}

/** The edge's numbers of right now, read at each scrape. */
export interface EdgeGauges {
  readonly inFlightRequests: number;
  readonly actorRequestsPending: number;
  /** Buffered body bytes held by requests in flight (the fair shares' JSON budget in use). */
  readonly bodyBytesInFlight: number;
  /** Uploads being received (the fair shares' upload slots in use). */
  readonly uploadsInFlight: number;
}

export interface EdgeMetrics {
  /** Records one finished request (the HTTP app's `onRequestFinished`). Never throws. */
  observe(entry: AccessLogEntry): void;
  render(gauges: EdgeGauges): string;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** One route's counters, created on its first request: labels are escaped once, not per request. */
interface RouteStats {
  readonly labels: string;
  readonly histogram: Histogram;
  /** `cellKey(method, status)` → requests with those labels (a number key: nothing built per request). */
  readonly counts: Map<number, { readonly labels: string; count: number }>;
}

/** Status 0 stands for `aborted`; statuses are below 1,000, methods below 8. */
function cellKey(methodIndex: number, status: number | null): number {
  return (status ?? 0) * 8 + methodIndex;
}

/** The bucket an observation falls in: the first bound at or above it; the length when none is (or NaN). */
function bucketIndex(seconds: number): number {
  let index = 0;
  while (index < latencyBucketsSeconds.length && !(seconds <= (latencyBucketsSeconds[index] ?? 0))) index += 1;
  return index;
}

export function createEdgeMetrics(): EdgeMetrics {
  const routes = new Map<string, RouteStats>();
  return {
    observe(entry) {
      const route = entry.route ?? 'unmatched';
      let stats = routes.get(route);
      if (stats === undefined) {
        stats = {
          labels: `route="${escapeLabel(route)}"`,
          histogram: { buckets: latencyBucketsSeconds.map(() => 0), count: 0, sumSeconds: 0 },
          counts: new Map(),
        };
        routes.set(route, stats);
      }
      const methodIndex = methodIndexes.get(entry.method) ?? knownMethods.length;
      const key = cellKey(methodIndex, entry.status);
      const cell = stats.counts.get(key);
      if (cell === undefined) {
        const status = entry.status === null ? 'aborted' : String(entry.status);
        stats.counts.set(key, { labels: `${stats.labels},method="${methodLabels[methodIndex] ?? 'OTHER'}",status="${status}"`, count: 1 });
      } else {
        cell.count += 1;
      }
      const { histogram } = stats;
      const seconds = Math.max(0, entry.durationMs) / 1000;
      // One bucket per observation; `render` sums them into Prometheus' cumulative `le` buckets.
      const index = bucketIndex(seconds);
      if (index < histogram.buckets.length) histogram.buckets[index] = (histogram.buckets[index] ?? 0) + 1;
      histogram.count += 1;
      histogram.sumSeconds += seconds;
    },
    render(gauges) {
      const lines: string[] = [
        '# HELP edge_http_requests_total HTTP requests answered by the edge, by route pattern, method and status.',
        '# TYPE edge_http_requests_total counter',
      ];
      const requests = [...routes.values()].flatMap((stats) => [...stats.counts.values()].map((cell) => [cell.labels, cell.count] as const));
      for (const [labels, count] of requests.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) lines.push(`edge_http_requests_total{${labels}} ${count}`);
      lines.push(
        '# HELP edge_http_request_duration_seconds Time from the request head to the response, by route pattern.',
        '# TYPE edge_http_request_duration_seconds histogram',
      );
      const latency = [...routes.values()].map((stats) => [stats.labels, stats.histogram] as const);
      for (const [labels, histogram] of latency.sort(([a], [b]) => a.localeCompare(b))) {
        let cumulative = 0;
        latencyBucketsSeconds.forEach((bound, index) => {
          cumulative += histogram.buckets[index] ?? 0;
          lines.push(`edge_http_request_duration_seconds_bucket{${labels},le="${bound}"} ${cumulative}`);
        });
        lines.push(`edge_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${histogram.count}`);
        lines.push(`edge_http_request_duration_seconds_sum{${labels}} ${histogram.sumSeconds}`);
        lines.push(`edge_http_request_duration_seconds_count{${labels}} ${histogram.count}`);
      }
      lines.push(
        '# HELP edge_http_requests_in_flight Requests being read or handled right now.',
        '# TYPE edge_http_requests_in_flight gauge',
        `edge_http_requests_in_flight ${gauges.inFlightRequests}`,
        '# HELP edge_http_body_bytes_in_flight Bytes of buffered request bodies held right now (every partner; docs/edge-http.md "Fair shares").',
        '# TYPE edge_http_body_bytes_in_flight gauge',
        `edge_http_body_bytes_in_flight ${gauges.bodyBytesInFlight}`,
        '# HELP edge_http_uploads_in_flight Streamed request bodies (KYC uploads) being received right now.',
        '# TYPE edge_http_uploads_in_flight gauge',
        `edge_http_uploads_in_flight ${gauges.uploadsInFlight}`,
        '# HELP edge_actor_requests_pending Commands sent to actors that are waiting for a reply.',
        '# TYPE edge_actor_requests_pending gauge',
        `edge_actor_requests_pending ${gauges.actorRequestsPending}`,
      );
      return `${lines.join('\n')}\n`;
    },
  };
}

/** The cluster part of the exposition (shards and shard workers), from one cached reading. */
export function renderClusterMetrics(reading: ClusterStatsReading, nowMs: number): string {
  const lines: string[] = [];
  const family = (name: string, type: 'gauge' | 'counter', help: string): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  };
  family('cluster_stats_up', 'gauge', 'Whether the latest read of the shard and worker numbers below succeeded (they are cached for a few seconds).');
  lines.push(`cluster_stats_up ${reading.ok ? 1 : 0}`);
  family('cluster_stats_read_failures_total', 'counter', 'Reads of the shard and worker numbers that failed (Redis or the store did not answer).');
  lines.push(`cluster_stats_read_failures_total ${reading.readFailuresTotal}`);
  const stats = reading.stats;
  if (stats === null) return `${lines.join('\n')}\n`;
  family('cluster_stats_age_seconds', 'gauge', 'Age of the shard and worker numbers below.');
  lines.push(`cluster_stats_age_seconds ${Math.max(0, nowMs - stats.collectedAtMs) / 1000}`);

  const perShard = (name: string, help: string, value: (shard: ShardStats) => number | null): void => {
    family(name, 'gauge', help);
    for (const shard of stats.shards) {
      const current = value(shard);
      if (current !== null) lines.push(`${name}{shard="${shard.shard}"} ${current}`);
    }
  };
  family('shard_lease_owner', 'gauge', 'The worker holding the shard lease (1 per owned shard; a shard without an owner has no series).');
  for (const shard of stats.shards) {
    if (shard.owner !== null) lines.push(`shard_lease_owner{shard="${shard.shard}",worker="${escapeLabel(shard.owner)}"} 1`);
  }
  perShard('shard_owned', 'Whether a worker holds the shard lease (0: nobody applies its commands).', (shard) => (shard.owner === null ? 0 : 1));
  perShard('shard_lease_token', 'Fencing token of the shard lease; it rises each time the shard changes hands.', (shard) => shard.token);
  perShard('shard_stream_length', 'Entries in the shard command stream (trimmed at about 100,000).', (shard) => shard.streamLength);
  perShard('shard_stream_pending', 'Commands delivered to the shard worker and not yet acknowledged.', (shard) => shard.pending);
  perShard('shard_stream_lag', 'Commands not yet delivered to the shard worker (absent when Redis cannot tell).', (shard) => shard.lag);

  family('shard_workers_live', 'gauge', 'Shard workers holding a member lease.');
  lines.push(`shard_workers_live ${stats.workers.length}`);
  const perWorker = (name: string, help: string, value: (worker: WorkerStatsView) => number): void => {
    family(name, 'gauge', help);
    for (const worker of stats.workers) lines.push(`${name}{worker="${escapeLabel(worker.workerId)}"} ${value(worker)}`);
  };
  perWorker('shard_worker_owned_shards', 'Shards the worker owned at its last report.', (worker) => worker.ownedShards);
  perWorker('shard_worker_actors_in_memory', 'Actors held in memory by the worker at its last report.', (worker) => worker.actorsInMemory);
  perWorker('shard_worker_actor_bytes_in_memory', 'Estimated bytes of the actors the worker held in memory at its last report (capped by SHARD_ACTOR_MEMORY_MAX_BYTES).', (worker) => worker.actorBytesInMemory);
  perWorker('shard_worker_resident_memory_bytes', 'Resident set size of the worker process at its last report.', (worker) => worker.rssBytes);
  perWorker('shard_worker_heap_used_bytes', 'V8 heap in use in the worker process at its last report.', (worker) => worker.heapUsedBytes);
  perWorker('shard_worker_report_age_seconds', 'Time since the worker last reported (every lease round, about 3 s).', (worker) =>
    worker.reportedAtMs === 0 ? -1 : Math.max(0, nowMs - worker.reportedAtMs) / 1000,
  );

  const perTopic = (name: string, help: string, value: (topic: OutboxTopicStats) => number): void => {
    family(name, 'gauge', help);
    for (const topic of stats.outbox) lines.push(`${name}{topic="${escapeLabel(topic.topic)}"} ${value(topic)}`);
  };
  perTopic('outbox_rows', `Outbox rows of the topic not done yet: work waiting or in progress (counted up to ${outboxBacklogShownMax}).`, (topic) => topic.rows);
  perTopic('outbox_rows_claimed', 'Of those, rows under a live claim: a worker is on them.', (topic) => topic.claimed);
  perTopic('outbox_rows_deferred', 'Of those, rows waiting for a later retry (a backoff, or parked); nobody holds them until then.', (topic) => topic.deferred);
  perTopic('outbox_rows_parked', 'Of those, rows whose last attempt parked them: the work waits on operations (npm run admin -- parked).', (topic) => topic.parked);
  perTopic('outbox_rows_capped', 'Whether the topic has more rows than counted (1: outbox_rows is a lower bound).', (topic) => (topic.capped ? 1 : 0));
  family('outbox_oldest_row_age_seconds', 'gauge', 'How long the oldest row of the topic not done has waited since its commit (absent when the topic is empty).');
  for (const topic of stats.outbox) {
    if (topic.oldestAgeMs !== null) lines.push(`outbox_oldest_row_age_seconds{topic="${escapeLabel(topic.topic)}"} ${topic.oldestAgeMs / 1000}`);
  }
  return `${lines.join('\n')}\n`;
}

export interface MetricsRouteOptions {
  readonly guard: Guard;
  readonly metrics: EdgeMetrics;
  readonly gauges: () => EdgeGauges;
  /** The shard and worker numbers (cached by the source); omitted: the edge's own numbers only. */
  readonly cluster?: { read(): Promise<ClusterStatsReading> };
  readonly nowMs?: () => number;
  /** More families in the text format, appended (authentication failures and throttling). */
  readonly extra?: () => string;
  /** Families read at each scrape (the per-partner storage numbers: one stored document). */
  readonly stored?: () => Promise<string>;
}

export function metricsRoutes(options: MetricsRouteOptions): Route[] {
  const nowMs = options.nowMs ?? Date.now;
  return [
    {
      method: 'GET',
      pattern: '/metrics',
      guard: options.guard,
      handler: async (): Promise<HttpResponse> => {
        const edge = options.metrics.render(options.gauges());
        const cluster = options.cluster === undefined ? '' : renderClusterMetrics(await options.cluster.read(), nowMs());
        return {
          status: 200,
          headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' },
          body: edge + cluster + (options.extra?.() ?? '') + ((await options.stored?.()) ?? ''),
        };
      },
    },
  ];
}
