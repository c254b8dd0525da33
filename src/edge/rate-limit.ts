// Token-bucket rate limiting per partner. `takeToken` is pure (state and `nowMs` in, decision and
// new state out); `createRateLimiter` keeps one bucket per key in a bounded LRU map and reads an
// injected clock, so tests drive time by hand.
//
// Why an LRU bound loses nothing in practice: a bucket untouched for `burst / ratePerSecond`
// seconds is full again, i.e. indistinguishable from a fresh one. Evicting the least recently used
// key therefore only forgets state that matters if more than `keysMax` keys were active within that
// window — and keys are authenticated partner ids, far fewer than the default `keysMax`.

export interface TokenBucketConfig {
  /** Sustained rate: tokens added per second. */
  readonly ratePerSecond: number;
  /** Bucket capacity: the largest burst allowed after an idle period. */
  readonly burst: number;
}

export interface TokenBucketState {
  readonly tokens: number;
  readonly updatedAtMs: number;
}

export interface TakeTokenResult {
  readonly allowed: boolean;
  /** Whole seconds until a token is available (≥ 1) when refused; 0 when allowed. */
  readonly retryAfterSeconds: number;
  readonly state: TokenBucketState;
}

/** 200 requests per second sustained, bursts of 400, per partner. */
export const defaultRateLimitConfig: TokenBucketConfig = { ratePerSecond: 200, burst: 400 };

export function assertValidConfig(config: TokenBucketConfig): void {
  if (!Number.isFinite(config.ratePerSecond) || config.ratePerSecond <= 0) {
    throw new RangeError(`ratePerSecond must be a positive finite number, got ${config.ratePerSecond}`);
  }
  if (!Number.isFinite(config.burst) || config.burst < 1) {
    throw new RangeError(`burst must be a finite number ≥ 1, got ${config.burst}`);
  }
}

/** A full bucket, as a key that has never been seen. */
export function fullBucket(nowMs: number, config: TokenBucketConfig): TokenBucketState {
  return { tokens: config.burst, updatedAtMs: nowMs };
}

/**
 * Refills the bucket for the time elapsed since its last update, then takes one token if there is
 * one. A clock that goes backwards refills nothing (elapsed time is clamped at zero) and the
 * bucket keeps its later timestamp, so a clock step can never mint tokens.
 */
export function takeToken(
  state: TokenBucketState | undefined,
  nowMs: number,
  config: TokenBucketConfig,
): TakeTokenResult {
  const current = state ?? fullBucket(nowMs, config);
  const elapsedMs = Math.max(0, nowMs - current.updatedAtMs);
  const refilled = Math.min(config.burst, current.tokens + (elapsedMs * config.ratePerSecond) / 1000);
  const updatedAtMs = Math.max(nowMs, current.updatedAtMs);
  if (refilled >= 1) {
    return { allowed: true, retryAfterSeconds: 0, state: { tokens: refilled - 1, updatedAtMs } };
  }
  const secondsToNextToken = (1 - refilled) / config.ratePerSecond;
  return {
    allowed: false,
    retryAfterSeconds: Math.max(1, Math.ceil(secondsToNextToken)),
    state: { tokens: refilled, updatedAtMs },
  };
}

/** What `takeToken` would answer, without taking anything (the state is unchanged). */
export function peekToken(state: TokenBucketState | undefined, nowMs: number, config: TokenBucketConfig): Omit<TakeTokenResult, 'state'> {
  const { allowed, retryAfterSeconds } = takeToken(state, nowMs, config);
  return { allowed, retryAfterSeconds };
}

/**
 * Puts back a token taken for work that turned out free (the notify budget charges only some
 * outcomes): refilled to `nowMs` first, then one more, never above the burst.
 */
export function returnToken(state: TokenBucketState | undefined, nowMs: number, config: TokenBucketConfig): TokenBucketState {
  const current = state ?? fullBucket(nowMs, config);
  const elapsedMs = Math.max(0, nowMs - current.updatedAtMs);
  const refilled = current.tokens + (elapsedMs * config.ratePerSecond) / 1000;
  return { tokens: Math.min(config.burst, refilled + 1), updatedAtMs: Math.max(nowMs, current.updatedAtMs) };
}

export interface RateLimiterOptions {
  readonly config?: TokenBucketConfig;
  /** Most buckets kept; the least recently used one is dropped beyond it. */
  readonly keysMax?: number;
  /** Monotonic milliseconds; `performance.now()` by default. */
  readonly nowMs?: () => number;
}

export interface RateLimiter {
  take(key: string): TakeTokenResult;
  /** Whether `take` would be allowed now, without taking a token (nor touching the LRU order). */
  peek(key: string): Omit<TakeTokenResult, 'state'>;
  /** Returns one token taken by `take` (a key not held is full already: nothing to do). */
  giveBack(key: string): void;
  /** Replaces the configuration; existing buckets keep their tokens (capped at the new burst). */
  setConfig(config: TokenBucketConfig): void;
  readonly size: () => number;
}

export const defaultRateLimiterKeysMax = 10_000;

export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  let config = options.config ?? defaultRateLimitConfig;
  assertValidConfig(config);
  const keysMax = options.keysMax ?? defaultRateLimiterKeysMax;
  if (!Number.isInteger(keysMax) || keysMax < 1) throw new RangeError(`keysMax must be an integer ≥ 1, got ${keysMax}`);
  const nowMs = options.nowMs ?? (() => performance.now());
  // Map iteration order is insertion order: deleting and re-inserting on use keeps it an LRU list.
  const buckets = new Map<string, TokenBucketState>();

  return {
    take(key) {
      const previous = buckets.get(key);
      const result = takeToken(previous, nowMs(), config);
      if (previous !== undefined) buckets.delete(key);
      buckets.set(key, result.state);
      if (buckets.size > keysMax) {
        const oldest = buckets.keys().next();
        if (oldest.done !== true) buckets.delete(oldest.value);
      }
      return result;
    },
    peek(key) {
      return peekToken(buckets.get(key), nowMs(), config);
    },
    giveBack(key) {
      const previous = buckets.get(key);
      if (previous === undefined) return; // evicted: indistinguishable from a full bucket
      buckets.set(key, returnToken(previous, nowMs(), config));
    },
    setConfig(next) {
      assertValidConfig(next);
      config = next;
    },
    size: () => buckets.size,
  };
}

// ---------------------------------------------------------------------------------------------
// The per-partner limit as the partner guard sees it: in this process (the RateLimiter above), or
// shared by every edge through Redis (src/edge/shared-rate-limit.ts), whose answer may have to
// wait for a Redis round trip.

export interface AdmissionDecision {
  readonly allowed: boolean;
  /** Whole seconds (≥ 1) when refused; 0 when allowed. */
  readonly retryAfterSeconds: number;
}

export type Admission =
  | { readonly kind: 'allowed' }
  | { readonly kind: 'refused'; readonly retryAfterSeconds: number }
  /** Decided once the shared bucket answers; `decided` never rejects. */
  | { readonly kind: 'waiting'; readonly decided: Promise<AdmissionDecision> };

export interface PartnerRateLimit {
  /** One request of `partnerId`. */
  admit(partnerId: string): Admission;
  /** Replaces the configuration (the next token taken uses it). */
  setConfig(config: TokenBucketConfig): void;
  /** Releases what it holds (a Redis connection); nothing after this. */
  close(): Promise<void>;
}

/** The one 'allowed' answer (shared: admissions are only read). */
export const admitted: Admission = Object.freeze({ kind: 'allowed' });

/** The per-partner limit of one process: a bucket per partner in this process's memory. */
export function inProcessRateLimit(limiter: RateLimiter): PartnerRateLimit {
  return {
    admit(partnerId) {
      const result = limiter.take(partnerId);
      return result.allowed ? admitted : { kind: 'refused', retryAfterSeconds: result.retryAfterSeconds };
    },
    setConfig: (config) => limiter.setConfig(config),
    close: () => Promise.resolve(),
  };
}
