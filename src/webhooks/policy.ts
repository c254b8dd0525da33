// The webhook delivery policy, as pure functions: how an attempt's result is classified, whether
// and when the next attempt happens. No clock, no randomness, no I/O: `nowMs` and a random draw in
// [0, 1) come in as parameters, so the whole schedule is testable without sleeping
// (docs/webhooks.md, "Retries").

export interface DeliveryPolicy {
  /** Attempts per event and per run (a redelivery starts a fresh run). */
  readonly attemptsMax: number;
  /** Delay after the first failed attempt; doubles after each further failure. */
  readonly retryDelayMsBase: number;
  /** No wait is longer than this, Retry-After included. */
  readonly retryDelayMsMax: number;
  /** Each delay is scaled by a factor drawn uniformly from [1 - jitterRatio, 1 + jitterRatio). */
  readonly jitterRatio: number;
}

/** The spec's delivery table: up to 5 attempts, about 2 s, 4 s, 8 s, 16 s apart, capped at 60 s. */
export const defaultDeliveryPolicy: DeliveryPolicy = {
  attemptsMax: 5,
  retryDelayMsBase: 2_000,
  retryDelayMsMax: 60_000,
  jitterRatio: 0.2,
};

/**
 * Why an attempt did not deliver, as a short stable code (stored in the delivery log, never a raw
 * error message: those can carry addresses or partner data).
 */
export type AttemptErrorCode =
  | 'timeout'
  | 'connection_refused'
  | 'connection_reset'
  | 'dns_failure'
  | 'tls_error'
  | 'connection_error'
  | 'response_error'
  | 'redirect'
  | 'http_status'
  | 'blocked_address'
  | 'invalid_destination'
  | 'no_destination'
  | 'secret_unavailable'
  /** Sandbox only: the partner's "drop the first N attempts" fault kept this attempt from being sent. */
  | 'sandbox_dropped';

/** What one attempt came to, before the policy decides what follows. */
export type AttemptResult =
  | { readonly kind: 'response'; readonly httpStatus: number; readonly retryAfter: string | null }
  | { readonly kind: 'error'; readonly error: AttemptErrorCode };

export type Classification =
  | { readonly outcome: 'delivered' }
  | { readonly outcome: 'retryable'; readonly error: AttemptErrorCode }
  | { readonly outcome: 'rejected'; readonly error: AttemptErrorCode };

/** Failures of the transport that another attempt may cure (the network, the partner's server). */
const retryableErrors: ReadonlySet<AttemptErrorCode> = new Set<AttemptErrorCode>([
  'timeout',
  'connection_refused',
  'connection_reset',
  'dns_failure',
  'tls_error',
  'connection_error',
  'response_error',
  'sandbox_dropped',
]);

/**
 * 2xx delivers. 408, 429 and 5xx are retried. Everything else fails at once: a 3xx is a
 * misconfigured destination (we never follow redirects), any other 4xx is the receiver refusing
 * (a 401 will not fix itself). A rejected target (blocked address, bad URL), no destination or
 * no signing secret also fail at once.
 */
export function classify(result: AttemptResult): Classification {
  if (result.kind === 'error') {
    return retryableErrors.has(result.error) ? { outcome: 'retryable', error: result.error } : { outcome: 'rejected', error: result.error };
  }
  const status = result.httpStatus;
  if (status >= 200 && status <= 299) return { outcome: 'delivered' };
  if (status >= 300 && status <= 399) return { outcome: 'rejected', error: 'redirect' };
  if (status === 408 || status === 429 || (status >= 500 && status <= 599)) return { outcome: 'retryable', error: 'http_status' };
  return { outcome: 'rejected', error: 'http_status' };
}

/**
 * Retry-After as milliseconds from `nowMs`: delta-seconds or an HTTP date. Unparseable, negative
 * or absent → null (the backoff alone applies).
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (text.length === 0 || text.length > 64) return null;
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds * 1_000 : null;
  }
  // An HTTP-date names its day or month (e.g. "Wed, 21 Oct 2015 07:28:00 GMT"); bare numbers that
  // are not delta-seconds ("-5", "1.5") are not dates.
  if (!/^[A-Za-z]{3}/.test(text)) return null;
  const atMs = Date.parse(text);
  if (!Number.isFinite(atMs)) return null;
  return Math.max(0, atMs - nowMs);
}

/**
 * The wait after failed attempt number `attempt` (1-based): base × 2^(attempt-1), scaled by the
 * jitter factor from `random` ∈ [0, 1), at least Retry-After when the receiver sent one, and never
 * more than `retryDelayMsMax`.
 */
export function retryDelayMs(policy: DeliveryPolicy, attempt: number, random: number, retryAfterMs: number | null = null): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a positive integer, got ${attempt}`);
  if (!(random >= 0 && random < 1)) throw new RangeError(`random must be in [0, 1), got ${random}`);
  const exponent = Math.min(attempt - 1, 30); // 2^30 × base is far past any cap
  const backoff = policy.retryDelayMsBase * 2 ** exponent;
  const factor = 1 - policy.jitterRatio + 2 * policy.jitterRatio * random;
  const jittered = Math.round(backoff * factor);
  const wanted = retryAfterMs === null ? jittered : Math.max(jittered, retryAfterMs);
  return Math.min(wanted, policy.retryDelayMsMax);
}

export type NextStep =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'give_up'; readonly error: AttemptErrorCode }
  | { readonly kind: 'retry'; readonly atMs: number; readonly error: AttemptErrorCode };

/** What follows attempt number `attempt` (1-based) of a run that ended with `result` at `nowMs`. */
export function nextStep(policy: DeliveryPolicy, attempt: number, result: AttemptResult, nowMs: number, random: number): NextStep {
  const classification = classify(result);
  if (classification.outcome === 'delivered') return { kind: 'delivered' };
  if (classification.outcome === 'rejected' || attempt >= policy.attemptsMax) return { kind: 'give_up', error: classification.error };
  const retryAfterMs = result.kind === 'response' ? parseRetryAfterMs(result.retryAfter, nowMs) : null;
  return { kind: 'retry', atMs: nowMs + retryDelayMs(policy, attempt, random, retryAfterMs), error: classification.error };
}

/** The waits between the attempts of a run whose every attempt fails retryably (for docs/tests). */
export function backoffSchedule(policy: DeliveryPolicy, randoms: readonly number[]): number[] {
  const delays: number[] = [];
  for (let attempt = 1; attempt < policy.attemptsMax; attempt += 1) {
    delays.push(retryDelayMs(policy, attempt, randoms[(attempt - 1) % Math.max(1, randoms.length)] ?? 0.5));
  }
  return delays;
}
