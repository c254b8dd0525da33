// GET /metrics (X-OPS-API-KEY): the edge's Prometheus text exposition. Request counts by route,
// method and status; a latency histogram by route; requests in flight; actor requests waiting for
// a reply. Labels are bounded: routes are the declared patterns (`unmatched` otherwise), methods
// the known ones (`OTHER` otherwise), statuses three digits (`aborted` when the client left).
import type { AccessLogEntry } from '../access-log.ts';
import type { Guard, HttpResponse, Route } from '../http.ts';

/** Upper bounds of the latency buckets, in seconds. */
export const latencyBucketsSeconds = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

const knownMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

interface Histogram {
  readonly buckets: number[];
  count: number;
  sumSeconds: number;
}

export interface EdgeMetrics {
  /** Records one finished request (the HTTP app's `onRequestFinished`). Never throws. */
  observe(entry: AccessLogEntry): void;
  render(gauges: { readonly inFlightRequests: number; readonly actorRequestsPending: number }): string;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function createEdgeMetrics(): EdgeMetrics {
  const requests = new Map<string, number>();
  const latency = new Map<string, Histogram>();
  return {
    observe(entry) {
      const route = entry.route ?? 'unmatched';
      const method = knownMethods.has(entry.method) ? entry.method : 'OTHER';
      const status = entry.status === null ? 'aborted' : String(entry.status);
      const key = `route="${escapeLabel(route)}",method="${method}",status="${status}"`;
      requests.set(key, (requests.get(key) ?? 0) + 1);
      const routeKey = `route="${escapeLabel(route)}"`;
      let histogram = latency.get(routeKey);
      if (histogram === undefined) {
        histogram = { buckets: latencyBucketsSeconds.map(() => 0), count: 0, sumSeconds: 0 };
        latency.set(routeKey, histogram);
      }
      const seconds = Math.max(0, entry.durationMs) / 1000;
      latencyBucketsSeconds.forEach((bound, index) => {
        if (seconds <= bound) histogram.buckets[index] = (histogram.buckets[index] ?? 0) + 1;
      });
      histogram.count += 1;
      histogram.sumSeconds += seconds;
    },
    render(gauges) {
      const lines: string[] = [
        '# HELP edge_http_requests_total HTTP requests answered by the edge, by route pattern, method and status.',
        '# TYPE edge_http_requests_total counter',
      ];
      for (const [labels, count] of [...requests].sort()) lines.push(`edge_http_requests_total{${labels}} ${count}`);
      lines.push(
        '# HELP edge_http_request_duration_seconds Time from the request head to the response, by route pattern.',
        '# TYPE edge_http_request_duration_seconds histogram',
      );
      for (const [labels, histogram] of [...latency].sort(([a], [b]) => a.localeCompare(b))) {
        latencyBucketsSeconds.forEach((bound, index) => {
          lines.push(`edge_http_request_duration_seconds_bucket{${labels},le="${bound}"} ${histogram.buckets[index] ?? 0}`);
        });
        lines.push(`edge_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${histogram.count}`);
        lines.push(`edge_http_request_duration_seconds_sum{${labels}} ${histogram.sumSeconds}`);
        lines.push(`edge_http_request_duration_seconds_count{${labels}} ${histogram.count}`);
      }
      lines.push(
        '# HELP edge_http_requests_in_flight Requests being read or handled right now.',
        '# TYPE edge_http_requests_in_flight gauge',
        `edge_http_requests_in_flight ${gauges.inFlightRequests}`,
        '# HELP edge_actor_requests_pending Commands sent to actors that are waiting for a reply.',
        '# TYPE edge_actor_requests_pending gauge',
        `edge_actor_requests_pending ${gauges.actorRequestsPending}`,
      );
      return `${lines.join('\n')}\n`;
    },
  };
}

export function metricsRoutes(options: { readonly guard: Guard; readonly metrics: EdgeMetrics; readonly gauges: () => { inFlightRequests: number; actorRequestsPending: number } }): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/metrics',
      guard: options.guard,
      handler: (): Promise<HttpResponse> =>
        Promise.resolve({
          status: 200,
          headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' },
          body: options.metrics.render(options.gauges()),
        }),
    },
  ];
}
