// Connections to Redis (ioredis 6): where Redis is (one server or a Redis Cluster), the options
// every connection of ours uses, the watch that logs a connection's outages once, and the one
// place Redis errors become BusErrors. The bus, the leases and the token buckets all connect here.
//
// Redis Cluster (`redis+cluster://h1:p1,h2:p2`, see `parseRedisTarget` and docs/operations.md):
// the client is an ioredis `Cluster` (it routes each command by its key's slot and follows
// MOVED/ASK). Every key we use carries a hash tag, so each command and each Lua script touches one
// slot; `clusterKeySlot` names that slot (the `cluster-key-slot` package ioredis itself routes with).
// The connection speaks RESP2 (`protocol: 2`) so replies have the documented RESP2 shapes
// (parsed in redis-replies.ts).
//
// Failures: every error ioredis gives for "Redis cannot be reached or cannot serve right now" (see
// `isRedisUnavailable`) becomes BusError `unavailable` in `toBusError`, the one place; callers
// never see ioredis' own errors for that. Every client built here (`createRedisClient`, the
// bus's blocking connections) has an error listener: a connection loss is logged once through the
// logger given (`watchRedisConnection`), never printed raw by ioredis.
import { Cluster, Redis } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { OutageLog, silentLog, type OutageLogFn } from './outage-log.ts';
import { BusError, systemClock, type Clock } from './bus.ts';
import { defineScripts } from './redis-scripts.ts';

/** A connection to one Redis server, or a Redis Cluster client. */
export type RedisClient = Redis | Cluster;

/** The options every connection of ours uses (return type inferred: ioredis' own option type does
 *  not accept itself under exactOptionalPropertyTypes). */
export function redisClientOptions(connectionName: string) {
  return {
    enableAutoPipelining: true,
    maxRetriesPerRequest: 3,
    lazyConnect: false,
    protocol: 2 as const,
    connectTimeout: 5_000,
    connectionName,
    // Reconnect with a bounded backoff; commands fail after maxRetriesPerRequest reconnects.
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
  };
}

// ---------------------------------------------------------------------------------------------
// Where Redis is: `redis://…` / `rediss://…` (one server, ioredis' URL syntax) or
// `redis+cluster://[user[:password]@]host:port[,host:port…][/]` (`rediss+cluster://` for TLS):
// the seed nodes of a Redis Cluster; any reachable master or replica will do, the client discovers
// the rest with CLUSTER SLOTS. A cluster has database 0 only, so no `/db` path.

export interface ClusterSeed {
  readonly host: string;
  readonly port: number;
}

export type RedisTarget =
  | { readonly kind: 'single'; readonly url: string }
  | {
      readonly kind: 'cluster';
      readonly seeds: readonly ClusterSeed[];
      readonly username: string | null;
      readonly password: string | null;
      readonly tls: boolean;
    };

/** Seed nodes in one cluster URL at most (a handful is plenty: the client discovers the rest). */
export const clusterSeedsMax = 64;
const clusterUrlPattern = /^(rediss?)\+cluster:\/\/(?:([^@/?#]*)@)?([^/?#@]+)\/?$/;

/** Is this a cluster URL (`redis+cluster://` or `rediss+cluster://`)? */
export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:\/\//.test(url);
}

/** Parses a Redis URL. Errors never repeat the URL (it may hold a password). */
export function parseRedisTarget(url: string): RedisTarget {
  if (!isClusterUrl(url)) {
    if (!/^rediss?:\/\//.test(url)) throw new RangeError('a Redis URL starts with redis://, rediss://, redis+cluster:// or rediss+cluster://');
    return { kind: 'single', url };
  }
  const match = clusterUrlPattern.exec(url);
  if (match === null) throw new RangeError('a Redis Cluster URL is redis+cluster://[user[:password]@]host:port[,host:port…] (no path, no query)');
  const [, scheme, userInfo, hostList] = match;
  const seeds = (hostList ?? '').split(',').map(parseSeed);
  if (seeds.length === 0 || seeds.length > clusterSeedsMax) throw new RangeError(`a Redis Cluster URL names 1..${clusterSeedsMax} seed nodes`);
  let username: string | null = null;
  let password: string | null = null;
  if (userInfo !== undefined && userInfo !== '') {
    const colon = userInfo.indexOf(':');
    const user = colon < 0 ? userInfo : userInfo.slice(0, colon);
    username = user === '' ? null : decodeUserInfo(user);
    password = colon < 0 ? null : decodeUserInfo(userInfo.slice(colon + 1));
  }
  return { kind: 'cluster', seeds, username, password, tls: scheme === 'rediss' };
}

function decodeUserInfo(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new RangeError('a Redis Cluster URL has a badly %-encoded user or password');
  }
}

function parseSeed(text: string): ClusterSeed {
  // `host:port`, `[ipv6]:port`; the port defaults to 6379.
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(text);
  const port = Number(match?.[2] ?? '6379');
  if (match?.[1] === undefined || !(port >= 1 && port <= 65_535)) throw new RangeError('a Redis Cluster seed node is host:port');
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
}

/** Options of each node connection a Cluster client opens (and of our own blocking ones). */
function clusterNodeOptions(target: Extract<RedisTarget, { kind: 'cluster' }>, connectionName: string) {
  const { enableAutoPipelining: _pipelining, lazyConnect: _lazy, retryStrategy: _retry, ...node } = redisClientOptions(connectionName);
  return {
    ...node,
    ...(target.username === null ? {} : { username: target.username }),
    ...(target.password === null ? {} : { password: target.password }),
    ...(target.tls ? { tls: {} } : {}),
  };
}

/** Where a client reports its connection's outages (see `watchRedisConnection`). */
export interface RedisConnectionLog {
  /** Default: nothing is logged (failures still surface on the commands). */
  readonly log?: OutageLogFn;
  /** Times the outages; default the system clock. */
  readonly clock?: Clock;
}

/**
 * A client for the URL: `Redis` for one server, `Cluster` for `redis+cluster://`, its connection
 * watched under `connectionName` (see `watchRedisConnection`), every Lua script of ours defined on it.
 */
export function createRedisClient(url: string, connectionName = 'payments', connectionLog: RedisConnectionLog = {}): RedisClient {
  const client = newRedisClient(url, connectionName);
  watchRedisConnection(client, connectionName, connectionLog);
  if (isCluster(client)) trackCluster(client);
  // Before the client's first command: see redis-scripts.ts for why.
  defineScripts(client);
  return client;
}

/** Cluster clients of this process, so that a redirection one of them surfaced refreshes them all. */
const liveClusters = new Set<Cluster>();
/** A client reads the slot map again at most this often on account of surfaced redirections. */
const slotMapRefreshSpacingMs = 1_000;
const lastSlotMapRefreshMs = new WeakMap<Cluster, number>();

/**
 * A MOVED or ASK that reaches our code means a slot map went stale: with auto-pipelining, a
 * pipeline whose commands were redirected for different slots is neither retried nor does it
 * refresh the map (ioredis retries a pipeline only when every error in it is the same), so after a
 * failover the moved slots' commands kept failing until a restart
 * (test/integration/redis-cluster-failover.test.ts). Every cluster client of the process reads the
 * map again (at most once a second each): one refresh is one short-lived connection, so it is not
 * done on a timer. ioredis' own `slotsRefreshInterval` is not used: it re-arms after `quit` when a
 * refresh was under way, which kept processes alive.
 */
function slotMapsMayBeStale(): void {
  const nowMs = Date.now();
  for (const cluster of liveClusters) {
    if (cluster.status !== 'ready' || nowMs - (lastSlotMapRefreshMs.get(cluster) ?? 0) < slotMapRefreshSpacingMs) continue;
    lastSlotMapRefreshMs.set(cluster, nowMs);
    cluster.refreshSlotsCache();
  }
}

function trackCluster(client: Cluster): void {
  liveClusters.add(client);
  client.once('end', () => liveClusters.delete(client));
}

/**
 * Listens to a client's connection: the first error after it was up logs one warning
 * (`Redis connection lost`, with the error), further errors are only counted, and the next
 * `ready` logs one line (`Redis connection restored`) with the outage's length and its count of
 * errors. The listener is also what keeps ioredis from printing `[ioredis] Unhandled error
 * event` to stderr. A Cluster client reports its nodes' errors as `node error`: same outage.
 */
export function watchRedisConnection(client: RedisClient, name: string, connectionLog: RedisConnectionLog): void {
  const outage = new OutageLog({
    log: connectionLog.log ?? silentLog,
    clock: connectionLog.clock ?? systemClock,
    beganMessage: 'Redis connection lost',
    endedMessage: 'Redis connection restored',
    fields: { client: name },
    countName: 'errors',
  });
  const failed = (error: unknown): void => outage.failed({ error: errorText(error) });
  client.on('error', failed);
  if (isCluster(client)) client.on('node error', failed);
  client.on('ready', () => outage.recovered());
}

/** An error for a log line: its name and message, bounded (ioredis' texts name host:port, never a password). */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.slice(0, errorTextCharsMax);
}

const errorTextCharsMax = 300;

function newRedisClient(url: string, connectionName: string): RedisClient {
  const target = parseRedisTarget(url);
  if (target.kind === 'single') return new Redis(url, redisClientOptions(connectionName));
  return new Cluster(
    target.seeds.map((seed) => ({ host: seed.host, port: seed.port })),
    {
      enableAutoPipelining: true,
      lazyConnect: false,
      // Reads go to masters: a replica may lag, and stream groups are written on every read.
      scaleReads: 'master',
      maxRedirections: 16,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: 2_000,
      clusterRetryStrategy: (times: number) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
      redisOptions: clusterNodeOptions(target, connectionName),
    },
  );
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

// ---------------------------------------------------------------------------------------------
// Redis Cluster key slots: CRC16 (XMODEM) of the key, or of its hash tag (the bytes between the
// first `{` and the next `}`, when that is not empty), mod 16384. Computed by `cluster-key-slot`,
// the package ioredis routes every command with, so our grouping of streams by slot and ioredis'
// routing can never disagree (test/integration/redis-cluster.test.ts checks it against CLUSTER KEYSLOT).

export const clusterSlotCount = 16_384;

/** The Redis Cluster slot of a key (what CLUSTER KEYSLOT answers). */
export function clusterKeySlot(key: string): number {
  return calculateSlot(key);
}

/** Streams grouped by slot, in the order of their first appearance (one XREADGROUP per group). */
export function streamsBySlot(streams: readonly string[]): Array<{ readonly slot: number; readonly streams: string[] }> {
  const groups = new Map<number, string[]>();
  for (const stream of streams) {
    const slot = clusterKeySlot(stream);
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [stream]);
    else group.push(stream);
  }
  return [...groups].map(([slot, members]) => ({ slot, streams: members }));
}

// ---------------------------------------------------------------------------------------------
// Errors

/** The Redis error code is the first word of a reply error (`NOGROUP …`, `BUSYGROUP …`). */
export function redisErrorCode(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const match = /^([A-Z][A-Z_]+) /.exec(error.message);
  return match?.[1] ?? null;
}

// ioredis' ways of saying "Redis cannot be reached or cannot serve right now". ioredis gives most
// of them as plain Errors, so their messages are matched here, in this one place, against its
// exact texts (node_modules/ioredis: CONNECTION_CLOSED_ERROR_MSG and the cluster client's own).
/** Error classes (by name: ioredis does not export them) of commands that gave up on the connection. */
const unavailableErrorNames: ReadonlySet<string> = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);
const unavailableMessages: ReadonlySet<string> = new Set([
  'Connection is closed.',
  "Stream isn't writeable and enableOfflineQueue options is false",
  "Cluster isn't ready and enableOfflineQueue options is false",
  'None of startup nodes is available',
  'Cluster is disconnected.',
  'Node is disconnected',
  'Command timed out',
  'Connection is aborted',
  'Connection is discarded because a new connection is made',
]);
/** Reply errors of a server that is up but cannot serve for now (loading, failing over, out of memory). */
const unavailableReplyCodes: ReadonlySet<string> = new Set(['LOADING', 'CLUSTERDOWN', 'TRYAGAIN', 'MASTERDOWN', 'READONLY', 'BUSY', 'OOM']);
/** Socket errors (`error.code`), should one reach a command. */
const unavailableSocketCodes: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
]);

/** Whether a command failed because Redis could not be reached or cannot serve right now. */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (unavailableErrorNames.has(error.name) || unavailableMessages.has(error.message)) return true;
  if (error.message.startsWith('Too many Cluster redirections')) return true;
  const replyCode = redisErrorCode(error);
  if (replyCode !== null && unavailableReplyCodes.has(replyCode)) return true;
  const socketCode = (error as NodeJS.ErrnoException).code;
  return typeof socketCode === 'string' && unavailableSocketCodes.has(socketCode);
}

/** Maps Redis errors to the bus's error codes; the one place this happens (the lease adapter uses it too). */
export function toBusError(error: unknown): unknown {
  if (error instanceof BusError) return error;
  const replyCode = redisErrorCode(error);
  if (replyCode === 'MOVED' || replyCode === 'ASK') {
    slotMapsMayBeStale();
    return new BusError('unavailable', `Redis Cluster slot moved (${errorText(error)})`, { cause: error });
  }
  if (redisErrorCode(error) === 'NOGROUP') {
    return new BusError('no_group', error instanceof Error ? error.message : 'no such group', { cause: error });
  }
  if (isRedisUnavailable(error)) return new BusError('unavailable', `Redis is unavailable (${errorText(error)})`, { cause: error });
  return error;
}

/** `toBusError` as a rejection handler. */
export function throwBusError(error: unknown): never {
  throw toBusError(error);
}