// A client-side load balancer for tests that restart edges under load, behaving like the one in
// front of a real deployment: it health-checks every edge's /readyz (an edge that is draining
// answers 503 and leaves the rotation; one that refuses connections too), sends each request to
// an edge in rotation, and retries a request on another edge only when its connection was refused
// or reset BEFORE any response arrived (the request cannot have been answered; with an
// Idempotency-Key on POSTs even a request the edge had started is safe to repeat). Anything else —
// a response of any status, a timeout, a body cut off after the head — is the answer.
// Every wait is bounded.

export interface BalancedRequest {
  readonly key?: string;
  readonly body?: unknown;
  readonly idempotencyKey?: string;
  readonly ops?: string;
}

export interface BalancedResponse {
  readonly status: number;
  readonly json: Record<string, unknown>;
  readonly text: string;
  /** The edge that answered. */
  readonly edge: string;
}

export interface LoadBalancerStats {
  readonly requests: number;
  readonly byStatus: Readonly<Record<string, number>>;
  /** Requests sent again because the connection was refused/reset before any response. */
  readonly retriedConnectionErrors: number;
  /** Requests that failed without an answer (timeouts, retries exhausted). */
  readonly failures: number;
}

interface Backend {
  readonly name: string;
  readonly baseUrl: string;
  inRotation: boolean;
}

/** Connection failures that happen before any byte of a response (undici's error codes). */
const beforeResponseCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

function connectionErrorCode(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth += 1) {
    const code = (cause as Error & { code?: unknown }).code;
    if (typeof code === 'string' && beforeResponseCodes.has(code)) return code;
    cause = cause.cause;
  }
  return null;
}

export class LoadBalancer {
  private readonly backends = new Map<string, Backend>();
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  private requests = 0;
  private retriedConnectionErrors = 0;
  private failures = 0;
  private readonly byStatus = new Map<string, number>();

  constructor(
    private readonly options: {
      /** How often /readyz is asked. Default 100. */
      readonly healthIntervalMs?: number;
      /** One request's bound. Default 30,000. */
      readonly requestTimeoutMs?: number;
      /** How long a request waits for an edge in rotation, in total. Default 20,000. */
      readonly noBackendWaitMs?: number;
    } = {},
  ) {}

  /** Puts an edge (already ready) into rotation. */
  add(name: string, baseUrl: string): void {
    this.backends.set(name, { name, baseUrl, inRotation: true });
  }

  /** Forgets an edge (after its process exited). */
  remove(name: string): void {
    this.backends.delete(name);
  }

  startHealthChecks(): void {
    const intervalMs = this.options.healthIntervalMs ?? 100;
    const round = (): void => {
      this.checking = this.checkAll().finally(() => {
        this.checking = null;
        if (this.timer !== null) this.timer = setTimeout(round, intervalMs);
      });
    };
    this.timer = setTimeout(round, intervalMs);
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.checking;
  }

  stats(): LoadBalancerStats {
    return { requests: this.requests, byStatus: Object.fromEntries(this.byStatus), retriedConnectionErrors: this.retriedConnectionErrors, failures: this.failures };
  }

  async request(method: 'GET' | 'POST', path: string, request: BalancedRequest = {}): Promise<BalancedResponse> {
    this.requests += 1;
    const headers: Record<string, string> = {};
    if (request.key !== undefined) headers['x-api-key'] = request.key;
    if (request.ops !== undefined) headers['x-ops-api-key'] = request.ops;
    if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    const deadlineMs = Date.now() + (this.options.noBackendWaitMs ?? 20_000);
    for (;;) {
      const backend = this.pick();
      if (backend === null) {
        if (Date.now() > deadlineMs) return this.failed(`no edge in rotation for ${method} ${path}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      let response: Response;
      try {
        response = await fetch(`${backend.baseUrl}${path}`, {
          method,
          headers,
          ...(body === undefined ? {} : { body }),
          signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 30_000),
        });
      } catch (error) {
        const code = connectionErrorCode(error);
        if (code === null || Date.now() > deadlineMs) return this.failed(`${method} ${path} on ${backend.name}: ${String(error)} (${String((error as Error).cause)})`);
        // Refused or reset before any response: this edge is going away; try another.
        backend.inRotation = false;
        this.retriedConnectionErrors += 1;
        continue;
      }
      const text = await response.text();
      this.byStatus.set(String(response.status), (this.byStatus.get(String(response.status)) ?? 0) + 1);
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // not JSON
      }
      return { status: response.status, json, text, edge: backend.name };
    }
  }

  private failed(message: string): never {
    this.failures += 1;
    throw new Error(message);
  }

  private pick(): Backend | null {
    const candidates = [...this.backends.values()].filter((backend) => backend.inRotation);
    if (candidates.length === 0) return null;
    this.next = (this.next + 1) % candidates.length;
    return candidates[this.next] ?? null;
  }

  private async checkAll(): Promise<void> {
    await Promise.all(
      [...this.backends.values()].map(async (backend) => {
        try {
          const response = await fetch(`${backend.baseUrl}/readyz`, { signal: AbortSignal.timeout(1_000) });
          await response.arrayBuffer();
          backend.inRotation = response.status === 200;
        } catch {
          backend.inRotation = false;
        }
      }),
    );
  }
}
