// Token buckets in Redis, shared by every process that names the same bucket: the per-partner rate
// limit of all edges together (src/edge/shared-rate-limit.ts). Each bucket is a hash
// `<prefix>rate:{<name>}` (tokens, updatedAtMs) refilled by the Redis server's clock (TIME), so
// the edges' clocks never matter, and expiring once it would be full again anyway (an absent
// bucket is a full one). One Lua script takes tokens; the key carries its own hash tag, so the
// script runs on one Redis Cluster slot. Redis errors map as the bus's do (`toBusError`).
import { LuaScript, createRedisClient, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-bus.ts';
import { assertNoBraces } from './shards.ts';

/**
 * take
 *   KEYS[1]  bucket hash   <prefix>rate:{<name>}   fields: tokens (may be fractional), updatedAtMs
 *   ARGV[1]  ratePerSecond  tokens added per second (decimal text, > 0)
 *   ARGV[2]  burst          bucket size (integer ≥ 1)
 *   ARGV[3]  wanted         tokens asked for (integer ≥ 1)
 * The bucket is first refilled for the time since updatedAtMs (by the server's TIME; a clock step
 * backwards refills nothing), then min(wanted, whole tokens held) are taken.
 * Returns {granted, retryAfterMs}
 *   granted       0..wanted tokens taken now
 *   retryAfterMs  when granted < wanted: ms until the bucket holds one whole token again; else 0
 * The key expires when a bucket untouched since would be full again.
 */
const takeScript = new LuaScript('tokenBucketTake', `
local time = redis.call('TIME')
local nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'updatedAtMs')
local tokens = tonumber(held[1]) or burst
local updatedAtMs = tonumber(held[2]) or nowMs
tokens = math.min(burst, tokens + math.max(0, nowMs - updatedAtMs) * rate / 1000)
if nowMs > updatedAtMs then updatedAtMs = nowMs end
local granted = math.min(wanted, math.floor(tokens))
if granted < 0 then granted = 0 end
tokens = tokens - granted
local retryAfterMs = 0
if granted < wanted then retryAfterMs = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'updatedAtMs', tostring(updatedAtMs))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {granted, retryAfterMs}
`, 1);

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
  /** A Redis URL (owned and closed here) or a client to share (not closed). */
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
