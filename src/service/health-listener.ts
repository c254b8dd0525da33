// The health listener every role can serve on HEALTH_PORT (unset: none). The edge has /healthz and
// /readyz on its own port; the shard, payout, watcher, webhooks and admin roles serve no HTTP, so
// without this an orchestrator could only restart them when they exit (deploy/README.md).
//   GET /healthz — liveness: 200 while every loop makes rounds, 503 `stalled` when one is stuck.
//   GET /readyz  — readiness: 200 when every loop's rounds succeed, 503 `not_ready` or `stopping`.
//   GET /metrics — with X-OPS-API-KEY: the roles' numbers in the Prometheus text format
//                  (src/lifecycle/metrics.ts), and every check's readiness and rounds.
// The probes answer the whole report (src/lifecycle/health.ts): per check, live/ready and ages, never
// error texts. Requests carry no body we read; anything else is refused with the edge's error bodies.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorBody, errorStatus, type ErrorCode } from '../edge/errors.ts';
import { healthReport, type HealthCheck, type HealthReport } from '../lifecycle/health.ts';
import { healthMetrics, renderFamilies, type MetricFamily } from '../lifecycle/metrics.ts';

export interface HealthListenerOptions {
  readonly host: string;
  /** 0 picks a free port (see `port`). */
  readonly port: number;
  readonly role: string;
  /** HEALTH_UNREADY_AFTER_MS. */
  readonly unreadyAfterMs: number;
  /** The checks of the roles this process runs; read on every request (roles add theirs as they start). */
  checks(): readonly HealthCheck[];
  /** The roles' metric families (GET /metrics). */
  metrics(): readonly MetricFamily[];
  /** The ops key check (constant time: src/edge/auth.ts). */
  isOpsKey(presented: string): boolean;
  /**
   * A wrong or missing ops key on /metrics from this peer (the process's AuthThrottle): throttled
   * answers 429 with Retry-After instead of 401. Absent: always 401.
   */
  authFailed?(address: string): { readonly throttled: boolean; readonly retryAfterSeconds: number };
  now?: () => number;
}

export interface HealthListener {
  readonly port: number;
  /** From now on /readyz answers 503 `stopping` (a graceful stop has begun). */
  markStopping(): void;
  close(): Promise<void>;
}

/** A probe that takes longer than this is answered by a timeout anyway; nothing here is slow. */
const requestTimeoutMs = 5_000;

export async function startHealthListener(options: HealthListenerOptions): Promise<HealthListener> {
  const now = options.now ?? Date.now;
  let stopping = false;
  const report = (): HealthReport =>
    healthReport(options.role, options.checks(), { nowMs: now(), unreadyAfterMs: options.unreadyAfterMs, stopping });

  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') return refuse(response, 'not_found');
    if (request.method !== 'GET' && request.method !== 'HEAD') return refuse(response, 'method_not_allowed', { allow: 'GET, HEAD' });
    const headOnly = request.method === 'HEAD';
    if (path === '/metrics') {
      const presented = request.headers['x-ops-api-key'];
      if (typeof presented !== 'string' || !options.isOpsKey(presented.trim())) {
        const outcome = options.authFailed?.(request.socket.remoteAddress ?? '');
        if (outcome?.throttled === true) {
          return refuse(response, 'rate_limited', { 'retry-after': String(outcome.retryAfterSeconds) }, 'Too many failed authentication attempts from this address; retry after the Retry-After delay');
        }
        return refuse(response, 'authentication_failed', {}, 'Missing or invalid ops API key');
      }
    }
    let current: HealthReport;
    let text: string;
    try {
      current = report();
      text = path === '/metrics' ? renderFamilies([...healthMetrics(current), ...options.metrics()]) : JSON.stringify(current);
    } catch {
      // A check that throws is a bug in it; the probe says so rather than hang.
      return refuse(response, 'server_error', {}, 'A health check failed; see the logs');
    }
    if (path === '/metrics') return send(response, 200, 'text/plain; version=0.0.4; charset=utf-8', text, headOnly);
    const ok = path === '/healthz' ? current.status === 'ok' : current.ready === 'ready';
    send(response, ok ? 200 : 503, 'application/json', text, headOnly);
  });
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = requestTimeoutMs;
  server.keepAliveTimeout = requestTimeoutMs;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    markStopping() {
      stopping = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, status: number, contentType: string, text: string, headOnly: boolean, headers: Record<string, string> = {}): void {
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(headOnly ? undefined : text);
}

function refuse(response: ServerResponse, code: ErrorCode, headers: Record<string, string> = {}, reason?: string): void {
  send(response, errorStatus(code), 'application/json; charset=utf-8', JSON.stringify(errorBody(code, reason)), false, headers);
}
