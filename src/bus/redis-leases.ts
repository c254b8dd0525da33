// Leases in Redis. Each lease is a hash `<prefix>lease:{<name>}` (owner, token) with a PEXPIRE TTL,
// so expiry follows the Redis server's clock and not the workers' clocks. Its fencing token counter
// `<prefix>lease-token:{<name>}` is a plain INCR counter that never expires, so a token is never
// issued twice for one name (unless the counter key itself is deleted: do not FLUSHDB a live system).
// Both keys share the hash tag `{<name>}`, so each script's keys sit on one Redis Cluster slot.
// On a Redis Cluster (`redis+cluster://…`, see redis-connection.ts) every command goes to its key's slot,
// `listAll` included: it reads an index of names by key rather than SCANning the masters. A SCAN
// needs the list of masters, and a long-lived client's list went stale after a failover (the edge's
// /metrics, `admin shards` and the workers' fair shares stayed wrong until a restart; the test is
// test/integration/redis-cluster-failover.test.ts). Each lease name is added to the set
// `<prefix>lease-index:{<kind>}` (kind: the name up to its first `:`, e.g. `shard:`) on acquire and
// on every renew, and each kind to `<prefix>lease-kinds`. The index is a hint, never the truth:
// listing asks each named lease for its holder and drops the names whose lease is gone. A name
// dropped just as it was taken again is added back at its holder's next renew (a third of its TTL).
// Every check-and-change is one Lua script (in redis-scripts.ts, with its KEYS/ARGV/returns header);
// the return codes map to results in `leaseOutcome` only.
// Redis errors map as the bus's do (`toBusError`): an unreachable Redis is BusError `unavailable`.
import { createRedisClient, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
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

/** The index a lease name is listed in: its name up to and including the first `:`, or the whole name. */
function kindOf(name: string): string {
  const colon = name.indexOf(':');
  return colon === -1 ? name : name.slice(0, colon + 1);
}

export interface RedisLeasesOptions {
  /** A Redis URL (owned and closed here) or a client to share, made by `createRedisClient` (not closed). */
  readonly redis: string | RedisClient;
  /** Prefix of every key (isolates deployments and tests); no braces. */
  readonly keyPrefix?: string;
  /** Where connection outages are logged (a client of our own: under the name `leases`). */
  readonly connectionLog?: RedisConnectionLog;
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

  private indexKey(kind: string): string {
    return `${this.keyPrefix}lease-index:{${kind}}`;
  }

  private kindsKey(): string {
    return `${this.keyPrefix}lease-kinds`;
  }

  private changesKey(): string {
    return `${this.keyPrefix}lease-changes`;
  }

  /** After an acquire or a release: moves `changes`. Like the index, a failure only delays a reaction. */
  private async changed(): Promise<void> {
    await this.client.incr(this.changesKey()).catch(() => undefined);
  }

  /**
   * Lists `name` in its index. A failure is not the lease's failure (the lease is held): it is
   * logged nowhere and healed at the next renew; only the listing misses the name meanwhile.
   */
  private async index(name: string, withKind: boolean): Promise<void> {
    const kind = kindOf(name);
    await Promise.all([
      this.client.sadd(this.indexKey(kind), name),
      withKind ? this.client.sadd(this.kindsKey(), kind) : undefined,
    ]).catch(() => undefined);
  }

  async acquire(name: string, owner: string, ttlMs: number): Promise<LeaseGrant | null> {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseTtl(ttlMs);
    const reply = await acquireScript.run(this.client, [this.leaseKey(name), this.tokenKey(name)], [owner, ttlMs]).catch(throwBusError);
    if (!Array.isArray(reply)) throw new Error(`unexpected acquire reply: ${JSON.stringify(reply)}`);
    if (toInteger(reply[0]) !== 1) return null;
    // Listed first, then the counter moved: a worker that sees the counter move lists the leases at
    // once (src/actors/shard-worker.ts), and on a Redis Cluster the two keys may sit on different
    // nodes, so sent together the counter could move before the name is listed.
    await this.index(name, true);
    await this.changed();
    return { name, owner, token: toInteger(reply[1]), ttlMs };
  }

  async renew(name: string, owner: string, token: number, ttlMs: number): Promise<boolean> {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseToken(token);
    assertLeaseTtl(ttlMs);
    const code = await renewScript.run(this.client, [this.leaseKey(name)], [owner, String(token), ttlMs]).catch(throwBusError);
    const renewed = leaseOutcome(toLeaseCode(code));
    if (renewed) await this.index(name, false);
    return renewed;
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseToken(token);
    const code = await releaseScript.run(this.client, [this.leaseKey(name)], [owner, String(token)]).catch(throwBusError);
    const released = leaseOutcome(toLeaseCode(code));
    if (released) await this.changed();
    return released;
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
   * Reads the index of each kind the prefix can match, then each named lease's holder (an admin
   * and metrics operation, bounded by `leasesListMax`); names whose lease is gone leave the index.
   */
  async listAll(prefix: string): Promise<LeaseHolder[]> {
    const kinds = (await this.client.smembers(this.kindsKey()).catch(throwBusError)).filter((kind) => kind.startsWith(prefix) || prefix.startsWith(kind));
    const names = new Set<string>();
    for (const kind of kinds.sort()) {
      for (const name of (await this.client.smembers(this.indexKey(kind)).catch(throwBusError)).sort()) {
        if (name.startsWith(prefix) && names.size < leasesListMax) names.add(name);
      }
    }
    const sorted = [...names].sort();
    const holders = await Promise.all(sorted.map(async (name) => this.owner(name)));
    const gone = sorted.filter((_, index) => holders[index] === null);
    await Promise.all(gone.map(async (name) => this.client.srem(this.indexKey(kindOf(name)), name))).catch(throwBusError);
    return holders.filter((holder): holder is LeaseHolder => holder !== null);
  }

  async changes(): Promise<number> {
    const value = await this.client.get(this.changesKey()).catch(throwBusError);
    return value === null ? 0 : toInteger(value);
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    await this.client.quit().catch(() => {
      this.client.disconnect();
    });
  }
}
