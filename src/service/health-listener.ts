// The health listener every role can serve on HEALTH_PORT (unset: none). The edge has /healthz and
// /readyz on its own port; the shard, payout, watcher, webhooks and admin roles serve no HTTP, so
// without this an orchestrator could only restart them when they exit (deploy/README.md).
//   GET /healthz — liveness: 200 while every loop makes rounds, 503 `stalled` when one is stuck.
//   GET /readyz  — readiness: 200 when every loop's rounds succeed, 503 `not_ready` or `stopping`.
// Both answer the whole report (src/service/health.ts): per check, live/ready and ages, never
// error texts. Requests carry no body we read; anything but GET of these two paths is refused.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { healthReport, type HealthCheck, type HealthReport } from './health.ts';

export interface HealthListenerOptions {
  readonly host: string;
  /** 0 picks a free port (see `port`). */
  readonly port: number;
  readonly role: string;
  /** HEALTH_UNREADY_AFTER_MS. */
  readonly unreadyAfterMs: number;
  /** The checks of the roles this process runs; read on every request (roles add theirs as they start). */
  checks(): readonly HealthCheck[];
  now?: () => number;
}

export interface HealthListener {
  readonly port: number;
  /** From now on /readyz answers 503 `stopping` (a graceful stop has begun). */
  markStopping(): void;
  report(): HealthReport;
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
    if (path !== '/healthz' && path !== '/readyz') return answer(response, 404, { reason: 'not_found' });
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(response, 405, { reason: 'method_not_allowed' });
    let current: HealthReport;
    try {
      current = report();
    } catch (error) {
      // A check that throws is a bug in it; the probe says so rather than hang.
      return answer(response, 500, { reason: 'health_check_failed', detail: error instanceof Error ? error.name : 'error' });
    }
    const ok = path === '/healthz' ? current.status === 'ok' : current.ready === 'ready';
    answer(response, ok ? 200 : 503, current, request.method === 'HEAD');
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
    report,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(response: ServerResponse, status: number, body: unknown, headOnly = false): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(headOnly ? undefined : text);
}
