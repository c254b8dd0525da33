// KYC submission quotas: how many POST /kyc one partner, and one user of a partner, may send a day.
// Every submission streams up to 10 MiB into the blob store and writes the KYC actor, so without a
// bound one partner could churn the store at the speed of its rate limit. Each quota is a token
// bucket holding a day's submissions and refilled over 24 hours (N a day, sustained; after a quiet
// day a burst of N): shared by every edge through Redis when the Redis bus is used
// (src/bus/redis-token-buckets.ts, the server's clock), this process's own buckets otherwise (the
// injected clock, so tests move time by hand).
//
// The partner's quota is taken before the body is read (a refused upload is never streamed); the
// user's once the form names the user (the upload streamed meanwhile is deleted by the route).
// Every attempt counts, refused ones too: the quota bounds the work, not the approvals. When Redis
// does not answer, submissions are allowed (and the caller is told): a limiter outage must not
// stop KYC, and the per-partner rate limit still holds.
import { createHash } from 'node:crypto';
import type { BucketConfig, TokenBuckets } from '../bus/redis-token-buckets.ts';
import { createRateLimiter, type RateLimiter } from './rate-limit.ts';

export interface KycQuotaConfig {
  readonly perUserPerDay: number;
  readonly perPartnerPerDay: number;
}

export type QuotaDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

export interface KycQuota {
  /** One submission of the partner (before its body is read). */
  takePartner(partnerId: string): Promise<QuotaDecision>;
  /** One submission for the partner's user. */
  takeUser(partnerId: string, userId: string): Promise<QuotaDecision>;
  close(): Promise<void>;
}

const daySeconds = 86_400;
const allowed: QuotaDecision = Object.freeze({ allowed: true });

/** N submissions a day: a bucket of N refilled at N per 24 hours. */
export function dailyBucket(perDay: number): BucketConfig {
  if (!Number.isSafeInteger(perDay) || perDay < 1) throw new RangeError(`a daily quota must be an integer ≥ 1, got ${perDay}`);
  return { ratePerSecond: perDay / daySeconds, burst: perDay };
}

// Bucket names are [A-Za-z0-9_.:-]; partner and user ids are not, so they are hashed (the hash
// keeps users of different partners apart: the NUL cannot occur in either id).
function bucketName(kind: 'partner' | 'user', ...ids: string[]): string {
  return `kyc-${kind}:${createHash('sha256').update(ids.join('\0')).digest('hex').slice(0, 40)}`;
}

export interface SharedKycQuotaOptions {
  readonly buckets: TokenBuckets;
  readonly config: KycQuotaConfig;
  /** Told of every take that failed (the submission was allowed). */
  readonly onFailure?: (error: unknown) => void;
}

/** The quotas of every edge together, in shared buckets (Redis). */
export function createSharedKycQuota(options: SharedKycQuotaOptions): KycQuota {
  const partner = dailyBucket(options.config.perPartnerPerDay);
  const user = dailyBucket(options.config.perUserPerDay);
  const take = async (name: string, config: BucketConfig): Promise<QuotaDecision> => {
    try {
      const grant = await options.buckets.take(name, 1, config);
      if (grant.granted >= 1) return allowed;
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(grant.retryAfterMs / 1000)) };
    } catch (error) {
      options.onFailure?.(error);
      return allowed;
    }
  };
  return {
    takePartner: (partnerId) => take(bucketName('partner', partnerId), partner),
    takeUser: (partnerId, userId) => take(bucketName('user', partnerId, userId), user),
    close: () => options.buckets.close(),
  };
}

/** Users held by the in-process quota; beyond it the least recently used is forgotten (a full bucket). */
export const inProcessQuotaUsersMax = 100_000;

/** The quotas of this process alone (no Redis: one process serves every request). */
export function createInProcessKycQuota(config: KycQuotaConfig, nowMs: () => number): KycQuota {
  const partners = createRateLimiter({ config: dailyBucket(config.perPartnerPerDay), nowMs });
  const users = createRateLimiter({ config: dailyBucket(config.perUserPerDay), nowMs, keysMax: inProcessQuotaUsersMax });
  const take = (limiter: RateLimiter, name: string): Promise<QuotaDecision> => {
    const result = limiter.take(name);
    return Promise.resolve(result.allowed ? allowed : { allowed: false, retryAfterSeconds: result.retryAfterSeconds });
  };
  return {
    takePartner: (partnerId) => take(partners, bucketName('partner', partnerId)),
    takeUser: (partnerId, userId) => take(users, bucketName('user', partnerId, userId)),
    close: () => Promise.resolve(),
  };
}
