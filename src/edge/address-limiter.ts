// A token bucket per client address, in bounded memory: the edge's limit on failed
// authentications and on the unauthenticated routes, the admin service's limit on failed ops keys,
// and (later) a partner portal's login. Nothing here is HTTP-specific: callers pass the address
// (src/edge/client-address.ts says which one) and get a verdict.
//
//   const failures = createAddressLimiter({ config: { ratePerSecond: 1, burst: 20 } });
//   if (!failures.check(address).allowed) → 429 before even looking at the password
//   if (password wrong) { const verdict = failures.take(address); → 401, or 429 once !verdict.allowed }
//
// Addresses are keyed as src/domain/ip-address.ts says (IPv4 as is, IPv6 by /64). The buckets sit in
// an LRU map of at most `addressesMax` entries: a bucket idle for `burst / ratePerSecond` seconds is
// full again, so dropping the least recently used one forgets nothing unless more than
// `addressesMax` addresses were active within that window — an attacker with that many addresses
// can reset their own buckets, which a per-address limit cannot prevent anyway.
import { addressBucketKey } from '../domain/ip-address.ts';
import { assertValidConfig, createRateLimiter, type TokenBucketConfig } from './rate-limit.ts';

export interface AddressVerdict {
  readonly allowed: boolean;
  /** Whole seconds until the address has a token again (≥ 1) when refused; 0 when allowed. */
  readonly retryAfterSeconds: number;
}

export interface AddressLimiterOptions {
  /** Per address: tokens per second and the bucket size. */
  readonly config: TokenBucketConfig;
  /** Most addresses held; 100,000 by default (≈ 10 MiB). */
  readonly addressesMax?: number;
  /** Monotonic milliseconds; `performance.now()` by default. */
  readonly nowMs?: () => number;
}

export interface AddressLimiter {
  /** Charges one attempt to `address`: allowed while its bucket had a token. */
  take(address: string): AddressVerdict;
  /** Whether an attempt from `address` would be allowed now; charges nothing. */
  check(address: string): AddressVerdict;
  /** Replaces the configuration; buckets keep their tokens (capped at the new burst). */
  setConfig(config: TokenBucketConfig): void;
  /** Addresses currently held (≤ addressesMax). */
  size(): number;
}

export const addressesMaxDefault = 100_000;

export function createAddressLimiter(options: AddressLimiterOptions): AddressLimiter {
  assertValidConfig(options.config);
  const buckets = createRateLimiter({
    config: options.config,
    keysMax: options.addressesMax ?? addressesMaxDefault,
    ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs }),
  });
  return {
    take(address) {
      const { allowed, retryAfterSeconds } = buckets.take(addressBucketKey(address));
      return { allowed, retryAfterSeconds };
    },
    check: (address) => buckets.peek(addressBucketKey(address)),
    setConfig: (config) => buckets.setConfig(config),
    size: () => buckets.size(),
  };
}
