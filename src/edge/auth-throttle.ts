// Failed authentication and requests without credentials, per client address: counted, limited
// and logged by sample. Used by the edge's partner and ops guards, the health listener's /metrics,
// the admin gRPC service and the partner portal's sign-in (src/portal/login.ts) (one `AuthThrottle` per process, so an address's failures count
// against one bucket whichever door it knocks on).
//
// A failed authentication (missing, malformed or wrong key) takes a token from the address's
// bucket (AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_BURST); once the bucket is empty the answer is
// 429 `rate_limited` with Retry-After (gRPC: RESOURCE_EXHAUSTED) instead of 401. A request with a
// correct key is never charged nor refused here, even from a throttled address: a partner whose old
// deployment still sends a revoked key must not lock out its new one behind the same NAT, and with
// keys of ≥ 128 bits guessing is hopeless at any rate — the throttle bounds the work and the log
// volume an attacker can cause, not the odds of a guess.
//
// Every failure is counted (auth_failures_total{credential}), and the log gets one line per address
// per minute (src/edge/address-log.ts) instead of an access-log line per request.
import { credentialKinds, type AuthFailureOutcome, type AuthThrottle, type AuthThrottleStats, type CredentialKind } from '../ports/access.ts';
import { createAddressLimiter, type AddressVerdict } from './address-limiter.ts';
import { createSampledAddressLog } from './address-log.ts';
import type { TokenBucketConfig } from './rate-limit.ts';

export type LogLine = (fields: Readonly<Record<string, unknown>>, message: string) => void;

export interface ThrottleOptions {
  readonly config: TokenBucketConfig;
  /** Where the sampled lines go (warn level is the caller's choice). */
  readonly log: LogLine;
  readonly addressesMax?: number;
  /** Monotonic milliseconds; `performance.now()` by default. */
  readonly nowMs?: () => number;
  /** One log line per address per this long; 60 s by default. */
  readonly logIntervalMs?: number;
}

function zeroCounts(): Record<CredentialKind, number> {
  return { partner: 0, ops: 0, admin: 0, portal: 0 };
}

function monotonicNow(): number {
  return performance.now();
}

export function createAuthThrottle(options: ThrottleOptions): AuthThrottle {
  const nowMs = options.nowMs ?? monotonicNow;
  const limiter = createAddressLimiter({ config: options.config, nowMs, ...(options.addressesMax === undefined ? {} : { addressesMax: options.addressesMax }) });
  const log = createSampledAddressLog({
    nowMs,
    write: (fields) => options.log(fields, 'authentication failed'),
    ...(options.logIntervalMs === undefined ? {} : { intervalMs: options.logIntervalMs }),
  });
  const failures = zeroCounts();
  const throttled = zeroCounts();
  return {
    failed(kind, address, fields) {
      failures[kind] += 1;
      const verdict = limiter.take(address);
      if (!verdict.allowed) throttled[kind] += 1;
      log.note(address, { ...fields, credential: kind, throttled: !verdict.allowed });
      return { throttled: !verdict.allowed, retryAfterSeconds: verdict.retryAfterSeconds };
    },
    blocked(address) {
      const verdict = limiter.check(address);
      return { throttled: !verdict.allowed, retryAfterSeconds: verdict.retryAfterSeconds };
    },
    stats: () => ({ failures: { ...failures }, throttled: { ...throttled }, addresses: limiter.size() }),
  };
}

export interface PublicThrottleStats {
  readonly throttled: number;
  readonly addresses: number;
}

export interface PublicThrottle {
  /** One request without credentials from `address`: allowed, or refused (logged by sample). */
  admit(address: string, fields: Readonly<Record<string, unknown>>): AddressVerdict;
  stats(): PublicThrottleStats;
}

export function createPublicThrottle(options: ThrottleOptions): PublicThrottle {
  const nowMs = options.nowMs ?? monotonicNow;
  const limiter = createAddressLimiter({ config: options.config, nowMs, ...(options.addressesMax === undefined ? {} : { addressesMax: options.addressesMax }) });
  const log = createSampledAddressLog({
    nowMs,
    write: (fields) => options.log(fields, 'requests without credentials throttled'),
    ...(options.logIntervalMs === undefined ? {} : { intervalMs: options.logIntervalMs }),
  });
  let throttled = 0;
  return {
    admit(address, fields) {
      const verdict = limiter.take(address);
      if (!verdict.allowed) {
        throttled += 1;
        log.note(address, fields);
      }
      return verdict;
    },
    stats: () => ({ throttled, addresses: limiter.size() }),
  };
}

/** A Prometheus family, shaped as src/lifecycle/metrics.ts renders them. */
export interface ThrottleMetricFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly samples: ReadonlyArray<{ readonly labels?: Readonly<Record<string, string>>; readonly value: number }>;
}

export function authThrottleMetrics(stats: AuthThrottleStats): ThrottleMetricFamily[] {
  const byKind = (counts: Readonly<Record<CredentialKind, number>>) => credentialKinds.map((kind) => ({ labels: { credential: kind }, value: counts[kind] }));
  return [
    { name: 'auth_failures_total', type: 'counter', help: 'Failed authentications (missing, malformed or wrong key), every one, by credential.', samples: byKind(stats.failures) },
    {
      name: 'auth_failures_throttled_total',
      type: 'counter',
      help: 'Of those, answered 429 (gRPC RESOURCE_EXHAUSTED) because the client address had failed too often.',
      samples: byKind(stats.throttled),
    },
    { name: 'auth_failure_addresses', type: 'gauge', help: 'Client addresses with a failed-authentication bucket held in memory.', samples: [{ value: stats.addresses }] },
  ];
}

export function publicThrottleMetrics(stats: PublicThrottleStats): ThrottleMetricFamily[] {
  return [
    { name: 'public_requests_throttled_total', type: 'counter', help: 'Requests without credentials answered 429 because their client address sent too many.', samples: [{ value: stats.throttled }] },
    { name: 'public_request_addresses', type: 'gauge', help: 'Client addresses with a bucket for requests without credentials held in memory.', samples: [{ value: stats.addresses }] },
  ];
}
