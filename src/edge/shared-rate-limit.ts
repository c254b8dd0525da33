// The per-partner rate limit shared by every edge: one token bucket per partner in Redis
// (src/bus/redis-token-buckets.ts), so N edges allow the configured rate once, not N times.
//
// The guard is synchronous (it runs before the body is read), and a Redis round trip per request
// would double the edge's Redis traffic, so each edge holds a small allowance of tokens per
// partner, taken from the shared bucket in batches:
//   - a request takes a token from the edge's allowance: no I/O at all (the common case);
//   - when the allowance falls below half a batch, the next batch is fetched in the background;
//   - when it is empty, the request waits for the batch in flight (GuardResult.wait: its body is
//     read meanwhile), so at most one Redis round trip is ever on a request's path;
//   - when Redis answers that the bucket is short, the waiting requests beyond what it gave are
//     refused with the bucket's Retry-After, and so is every request of the partner on this edge
//     until then, without asking Redis again.
// Every request admitted was paid for with a token taken from the shared bucket, so all edges
// together never admit more than `burst + rate × t`. What an edge holds unused (at most a batch
// and a half per partner) is missing from the others: a partner exactly at its limit may see a 429
// up to that many requests early. The batch is `rate × 50 ms` (at least 1, at most a tenth of
// the burst): 10 tokens at the default 200/s, i.e. ≤ 20 Redis calls a second per partner per edge
// at full rate; at low rates a batch is one token and the limit is exact. docs/edge-http.md.
//
// When Redis does not answer (an error, or no reply within `leaseTimeoutMs`), the edge falls back
// to its own in-process bucket for `fallbackMs` (each edge then allows the full rate: the old
// behaviour) rather than refusing partners for an outage of the limiter; the next request after
// that tries Redis again.
import type { BucketGrant, TokenBuckets } from '../bus/redis-token-buckets.ts';
import {
  admitted,
  assertValidConfig,
  createRateLimiter,
  type Admission,
  type AdmissionDecision,
  type PartnerRateLimit,
  type TokenBucketConfig,
} from './rate-limit.ts';

export interface SharedRateLimitOptions {
  readonly buckets: TokenBuckets;
  readonly config: TokenBucketConfig;
  /** Monotonic milliseconds; `performance.now()` by default. */
  readonly nowMs?: () => number;
  /** How long a batch may take before this edge uses its own bucket instead; 1 s. */
  readonly leaseTimeoutMs?: number;
  /** How long this edge uses its own bucket after Redis failed; 2 s. */
  readonly fallbackMs?: number;
  /** Requests of one partner waiting for a batch; beyond it 429 (Retry-After 1). 1,000. */
  readonly waitersMax?: number;
  /** Partners held (each an allowance); the least recently used idle one is dropped beyond it. 10,000. */
  readonly partnersMax?: number;
  /** Tokens fetched per batch; `batchTokens(config)` by default (rate × 50 ms, 1 … burst / 10). */
  readonly batchTokens?: number;
  /** Told of every failed or late batch (the Redis client logs the outage itself). */
  readonly onFailure?: (error: unknown) => void;
}

/** Wanted tokens per batch: what the partner's rate adds in this long. */
const batchWindowMs = 50;

interface Allowance {
  /** Tokens taken from the shared bucket and not used yet. */
  tokens: number;
  /** Requests admitted only once a batch arrives (resolved in order). */
  readonly waiters: Array<(decision: AdmissionDecision) => void>;
  leasing: boolean;
  /** Redis said the bucket is short: refuse until then without asking again. */
  emptyUntilMs: number;
}

export interface SharedRateLimitStats {
  readonly batches: number;
  readonly failures: number;
  readonly partners: number;
}

export interface SharedRateLimit extends PartnerRateLimit {
  stats(): SharedRateLimitStats;
}

export function batchTokens(config: TokenBucketConfig): number {
  const ceiling = Math.max(1, Math.floor(config.burst / 10));
  return Math.min(ceiling, Math.max(1, Math.floor((config.ratePerSecond * batchWindowMs) / 1000)));
}

function refused(retryAfterSeconds: number): AdmissionDecision {
  return { allowed: false, retryAfterSeconds: Math.max(1, retryAfterSeconds) };
}

const allowedDecision: AdmissionDecision = Object.freeze({ allowed: true, retryAfterSeconds: 0 });

/**
 * The limiter over the shared buckets. Long because its small named helpers (allowanceOf, settle,
 * failed, lease) share one closure's mutable state: the per-partner allowances, the fallback
 * window and the counters. Apart, each would take and hand back that state, or a class would move
 * it to `this`; either way the reader follows the same steps with more indirection.
 */
export function createSharedRateLimit(options: SharedRateLimitOptions): SharedRateLimit {
  let config = options.config;
  assertValidConfig(config);
  const nowMs = options.nowMs ?? (() => performance.now());
  const leaseTimeoutMs = options.leaseTimeoutMs ?? 1_000;
  const fallbackMs = options.fallbackMs ?? 2_000;
  const waitersMax = options.waitersMax ?? 1_000;
  const partnersMax = options.partnersMax ?? 10_000;
  const local = createRateLimiter({ config, nowMs });
  const batch = (): number => options.batchTokens ?? batchTokens(config);
  const allowances = new Map<string, Allowance>();
  let fallbackUntilMs = Number.NEGATIVE_INFINITY;
  let batches = 0;
  let failures = 0;
  let closed = false;

  const localDecision = (partnerId: string): AdmissionDecision => {
    const result = local.take(partnerId);
    return result.allowed ? allowedDecision : refused(result.retryAfterSeconds);
  };

  function allowanceOf(partnerId: string): Allowance {
    const known = allowances.get(partnerId);
    if (known !== undefined) return known;
    const created: Allowance = { tokens: 0, waiters: [], leasing: false, emptyUntilMs: Number.NEGATIVE_INFINITY };
    allowances.set(partnerId, created);
    if (allowances.size > partnersMax) dropIdle();
    return created;
  }

  /** Drops the oldest partner with nothing in flight (its unused tokens are simply not used). */
  function dropIdle(): void {
    for (const [partnerId, allowance] of allowances) {
      if (!allowance.leasing && allowance.waiters.length === 0) {
        allowances.delete(partnerId);
        return;
      }
    }
  }

  function settle(partnerId: string, allowance: Allowance, wanted: number, grant: BucketGrant): void {
    allowance.leasing = false;
    allowance.tokens += grant.granted;
    while (allowance.tokens >= 1 && allowance.waiters.length > 0) {
      allowance.tokens -= 1;
      allowance.waiters.shift()?.(allowedDecision);
    }
    if (grant.granted < wanted) {
      // The shared bucket is short: nobody on this edge gets a token before it has one again.
      allowance.emptyUntilMs = nowMs() + grant.retryAfterMs;
      const decision = refused(Math.ceil(grant.retryAfterMs / 1000));
      for (const waiter of allowance.waiters.splice(0)) waiter(decision);
      return;
    }
    if (allowance.waiters.length > 0) lease(partnerId, allowance);
  }

  /** Redis failed or is late: this edge decides alone for a while, starting with the waiters. */
  function failed(partnerId: string, allowance: Allowance, error: unknown): void {
    allowance.leasing = false;
    failures += 1;
    fallbackUntilMs = nowMs() + fallbackMs;
    options.onFailure?.(error);
    for (const waiter of allowance.waiters.splice(0)) waiter(localDecision(partnerId));
  }

  function lease(partnerId: string, allowance: Allowance): void {
    allowance.leasing = true;
    batches += 1;
    const wanted = Math.min(Math.max(batch(), allowance.waiters.length), Math.floor(config.burst));
    let timer: NodeJS.Timeout | undefined;
    let late = false;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no rate-limit batch from Redis within ${leaseTimeoutMs} ms`)), leaseTimeoutMs);
      timer.unref();
    });
    const taken = options.buckets.take(partnerId, Math.max(1, wanted), { ratePerSecond: config.ratePerSecond, burst: Math.floor(config.burst) });
    // A batch that arrives after its timeout was still taken from the bucket: keep its tokens.
    taken.then(
      (grant) => {
        if (late) allowance.tokens += grant.granted;
      },
      () => undefined,
    );
    Promise.race([taken, timeout]).then(
      (grant) => {
        clearTimeout(timer);
        settle(partnerId, allowance, Math.max(1, wanted), grant);
      },
      (error: unknown) => {
        clearTimeout(timer);
        late = true;
        failed(partnerId, allowance, error);
      },
    );
  }

  return {
    admit(partnerId): Admission {
      const now = nowMs();
      if (closed || now < fallbackUntilMs) {
        const decision = localDecision(partnerId);
        return decision.allowed ? admitted : { kind: 'refused', retryAfterSeconds: decision.retryAfterSeconds };
      }
      const allowance = allowanceOf(partnerId);
      if (allowance.tokens >= 1) {
        allowance.tokens -= 1;
        // Fetch the next batch before this one runs out, so requests rarely wait.
        if (!allowance.leasing && allowance.tokens < Math.floor(batch() / 2)) lease(partnerId, allowance);
        return admitted;
      }
      if (now < allowance.emptyUntilMs) return { kind: 'refused', retryAfterSeconds: Math.max(1, Math.ceil((allowance.emptyUntilMs - now) / 1000)) };
      if (allowance.waiters.length >= waitersMax) return { kind: 'refused', retryAfterSeconds: 1 };
      const decided = new Promise<AdmissionDecision>((resolve) => allowance.waiters.push(resolve));
      if (!allowance.leasing) lease(partnerId, allowance);
      return { kind: 'waiting', decided };
    },
    setConfig(next) {
      assertValidConfig(next);
      config = next;
      local.setConfig(next);
    },
    async close() {
      closed = true;
      // Requests still waiting are decided by this edge's own bucket (the edge is stopping).
      for (const [partnerId, allowance] of allowances) {
        for (const waiter of allowance.waiters.splice(0)) waiter(localDecision(partnerId));
      }
      await options.buckets.close();
    },
    stats: () => ({ batches, failures, partners: allowances.size }),
  };
}
