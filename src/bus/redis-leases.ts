// Leases in Redis. Each lease is a hash `<prefix>lease:{<name>}` (owner, token) with a PEXPIRE TTL,
// so expiry follows the Redis server's clock and not the workers' clocks. Its fencing token counter
// `<prefix>lease-token:{<name>}` is a plain INCR counter that never expires, so a token is never
// issued twice for one name (unless the counter key itself is deleted: do not FLUSHDB a live system).
// Both keys share the hash tag `{<name>}`, so each script's keys sit on one Redis Cluster slot.
// On a Redis Cluster (`redis+cluster://…`, see redis-connection.ts) every command goes to its key's slot;
// only `listAll` spans the cluster: it SCANs every master (replicas hold copies, not more keys).
// Every check-and-change is one Lua script (in redis-scripts.ts, with its KEYS/ARGV/returns header);
// the return codes map to results in `leaseOutcome` only.
// Redis errors map as the bus's do (`toBusError`): an unreachable Redis is BusError `unavailable`.
import type { Redis } from 'ioredis';
import { createRedisClient, isCluster, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
import { acquireScript, defineScripts, inspectScript, releaseScript, renewScript } from './redis-scripts.ts';
import { assertNoBraces } from './shards.ts';
import {
  assertLeaseName,
  assertLeaseOwner,
  assertLeaseToken,
  assertLeaseTtl,
  leasesListMax,
  type LeaseGrant,
  type LeaseHolder,
  type Leases,
} from './leases.ts';

type LeaseCode = 1 | 0 | -1;

/** The one place script codes become results. */
function leaseOutcome(code: LeaseCode): boolean {
  switch (code) {
    case 1:
      return true;
    case 0: // lapsed or released
    case -1: // taken over or never ours
      return false;
  }
}

function toLeaseCode(value: unknown): LeaseCode {
  if (value === 1 || value === 0 || value === -1) return value;
  throw new Error(`unexpected lease script reply: ${JSON.stringify(value)}`);
}

function toInteger(value: unknown): number {
  const parsed = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(parsed)) throw new Error(`unexpected lease reply value: ${JSON.stringify(value)}`);
  return parsed;
}

/** Escapes glob metacharacters for SCAN MATCH. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}

export interface RedisLeasesOptions {
  /** A Redis URL (owned and closed here) or a client to share, made by `createRedisClient` (not closed). */
  readonly redis: string | RedisClient;
  /** Prefix of every key (isolates deployments and tests); no braces. */
  readonly keyPrefix?: string;
  /** Where connection outages are logged (a client of our own: under the name `leases`). */
  readonly connectionLog?: RedisConnectionLog;
}

const scanCount = 500;
const scanRoundsMax = 10_000;

/** Adds the lease names of one server's keys matching `pattern` to `names` (up to the list bound). */
async function scanNames(server: Redis, pattern: string, keyStart: string, names: Set<string>): Promise<void> {
  let cursor = '0';
  for (let round = 0; round < scanRoundsMax && names.size < leasesListMax; round += 1) {
    const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', scanCount);
    for (const key of keys) {
      if (key.endsWith('}') && names.size < leasesListMax) names.add(key.slice(keyStart.length, -1));
    }
    cursor = next;
    if (cursor === '0') break;
  }
}

export class RedisLeases implements Leases {
  private readonly client: RedisClient;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;

  constructor(options: RedisLeasesOptions) {
    this.keyPrefix = options.keyPrefix ?? '';
    assertNoBraces('key prefix', this.keyPrefix);
    if (typeof options.redis === 'string') {
      this.client = createRedisClient(options.redis, 'leases', options.connectionLog ?? {});
      this.ownsClient = true;
    } else {
      this.client = options.redis;
      this.ownsClient = false;
    }
    defineScripts(this.client);
  }

  private leaseKey(name: string): string {
    return `${this.keyPrefix}lease:{${name}}`;
  }

  private tokenKey(name: string): string {
    return `${this.keyPrefix}lease-token:{${name}}`;
  }

  async acquire(name: string, owner: string, ttlMs: number): Promise<LeaseGrant | null> {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseTtl(ttlMs);
    const reply = await acquireScript.run(this.client, [this.leaseKey(name), this.tokenKey(name)], [owner, ttlMs]).catch(throwBusError);
    if (!Array.isArray(reply)) throw new Error(`unexpected acquire reply: ${JSON.stringify(reply)}`);
    if (toInteger(reply[0]) !== 1) return null;
    return { name, owner, token: toInteger(reply[1]), ttlMs };
  }

  async renew(name: string, owner: string, token: number, ttlMs: number): Promise<boolean> {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseToken(token);
    assertLeaseTtl(ttlMs);
    const code = await renewScript.run(this.client, [this.leaseKey(name)], [owner, String(token), ttlMs]).catch(throwBusError);
    return leaseOutcome(toLeaseCode(code));
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseToken(token);
    const code = await releaseScript.run(this.client, [this.leaseKey(name)], [owner, String(token)]).catch(throwBusError);
    return leaseOutcome(toLeaseCode(code));
  }

  async owner(name: string): Promise<LeaseHolder | null> {
    assertLeaseName(name);
    const reply = await inspectScript.run(this.client, [this.leaseKey(name)], []).catch(throwBusError);
    if (!Array.isArray(reply)) throw new Error(`unexpected inspect reply: ${JSON.stringify(reply)}`);
    if (reply.length === 0) return null;
    const remainingMs = toInteger(reply[2]);
    // PTTL -2: expired between HMGET and PTTL cannot happen inside one script; -1 would be a bug.
    if (remainingMs < 0) return null;
    return { name, owner: String(reply[0]), token: toInteger(reply[1]), remainingMs };
  }

  /**
   * SCANs for lease keys (an admin operation, bounded by `leasesListMax`); on a cluster, every
   * master in turn.
   */
  async listAll(prefix: string): Promise<LeaseHolder[]> {
    const keyStart = this.leaseKey('').slice(0, -1); // `<prefix>lease:{`
    const pattern = `${globEscape(keyStart)}${globEscape(prefix)}*`;
    const names = new Set<string>();
    const servers = isCluster(this.client) ? this.client.nodes('master') : [this.client];
    for (const server of servers) await scanNames(server, pattern, keyStart, names).catch(throwBusError);
    const holders = await Promise.all([...names].sort().map(async (name) => this.owner(name)));
    return holders.filter((holder): holder is LeaseHolder => holder !== null);
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    await this.client.quit().catch(() => {
      this.client.disconnect();
    });
  }
}
