// Token buckets in Redis, shared by every process that names the same bucket: the per-partner rate
// limit of all edges together (src/edge/shared-rate-limit.ts). Each bucket is a hash
// `<prefix>rate:{<name>}` (tokens, updatedAtMs) refilled by the Redis server's clock (TIME), so
// the edges' clocks never matter, and expiring once it would be full again anyway (an absent
// bucket is a full one). One Lua script takes tokens (`takeScript` in redis-scripts.ts); the key carries its own hash tag, so the
// script runs on one Redis Cluster slot. Redis errors map as the bus's do (`toBusError`).
import { createRedisClient, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
import { defineScripts, takeScript } from './redis-scripts.ts';
import { assertNoBraces } from './shards.ts';

export interface BucketConfig {
  readonly ratePerSecond: number;
  readonly burst: number;
}

export interface BucketGrant {
  /** Tokens taken (0..wanted). */
  readonly granted: number;
  /** When fewer than wanted: ms until one whole token is back; else 0. */
  readonly retryAfterMs: number;
}

/** The port: a bucket per name, shared by whoever uses the same store. */
export interface TokenBuckets {
  /** Takes up to `wanted` tokens from bucket `name` (created full). */
  take(name: string, wanted: number, config: BucketConfig): Promise<BucketGrant>;
  close(): Promise<void>;
}

/** Longest wanted count in one take (a batch of a few dozen is what the edge asks). */
export const bucketTakeMax = 100_000;
const bucketNamePattern = /^[A-Za-z0-9_.:-]{1,128}$/;

function toCount(value: unknown): number {
  const parsed = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new Error(`unexpected token bucket reply value: ${JSON.stringify(value)}`);
  return parsed;
}

export interface RedisTokenBucketsOptions {
  /** A Redis URL (owned and closed here) or a client to share, made by `createRedisClient` (not closed). */
  readonly redis: string | RedisClient;
  /** Prefix of every key (isolates deployments and tests); no braces. */
  readonly keyPrefix?: string;
  /** Where connection outages are logged (a client of our own: under the name `rate-limit`). */
  readonly connectionLog?: RedisConnectionLog;
}

export class RedisTokenBuckets implements TokenBuckets {
  private readonly client: RedisClient;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;

  constructor(options: RedisTokenBucketsOptions) {
    this.keyPrefix = options.keyPrefix ?? '';
    assertNoBraces('key prefix', this.keyPrefix);
    if (typeof options.redis === 'string') {
      this.client = createRedisClient(options.redis, 'rate-limit', options.connectionLog ?? {});
      this.ownsClient = true;
    } else {
      this.client = options.redis;
      this.ownsClient = false;
    }
    defineScripts(this.client);
  }

  async take(name: string, wanted: number, config: BucketConfig): Promise<BucketGrant> {
    if (!bucketNamePattern.test(name)) throw new RangeError(`bucket name must be 1-128 of A-Z a-z 0-9 _ . : -, got ${JSON.stringify(name.slice(0, 140))}`);
    if (!Number.isSafeInteger(wanted) || wanted < 1 || wanted > bucketTakeMax) throw new RangeError(`wanted must be an integer in [1, ${bucketTakeMax}], got ${wanted}`);
    if (!Number.isFinite(config.ratePerSecond) || config.ratePerSecond <= 0) throw new RangeError(`ratePerSecond must be positive, got ${config.ratePerSecond}`);
    if (!Number.isSafeInteger(config.burst) || config.burst < 1) throw new RangeError(`burst must be an integer ≥ 1, got ${config.burst}`);
    const reply = await takeScript
      .run(this.client, [`${this.keyPrefix}rate:{${name}}`], [String(config.ratePerSecond), config.burst, wanted])
      .catch(throwBusError);
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error(`unexpected token bucket reply: ${JSON.stringify(reply)}`);
    const granted = toCount(reply[0]);
    if (granted > wanted) throw new Error(`token bucket granted ${granted} of ${wanted}`);
    return { granted, retryAfterMs: toCount(reply[1]) };
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    await this.client.quit().catch(() => {
      this.client.disconnect();
    });
  }
}
