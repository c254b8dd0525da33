// Bus adapter on Redis Streams (ioredis 6), for a single Redis server or a Redis Cluster.
// One shared client with auto-pipelining serves every non-blocking command; each blocking read
// borrows a dedicated connection from a bounded pool, so a blocked XREADGROUP never delays other
// commands and can be ended at once by disconnecting it.
//
// Redis Cluster (`redis+cluster://h1:p1,h2:p2`, see `parseRedisTarget` and docs/operations.md):
// the shared client is an ioredis `Cluster` (it routes each command by its key's slot and follows
// MOVED/ASK). Every key we use carries a hash tag, so each command and each Lua script touches one
// slot. The one exception is `read` over several streams (a shard worker reads all its shards at
// once): XREADGROUP across slots fails with CROSSSLOT, so in cluster mode `read` groups the streams
// by slot and blocks on one dedicated node connection per slot in parallel (a busy reader first
// tries every slot without blocking, pipelined per node); the first read that returns entries ends the
// others with CLIENT UNBLOCK, and every entry any of them returned is given to the caller (a read
// the server served before the unblock keeps its entries; they are never left pending unseen).
// Unblocking rather than disconnecting keeps the connections for the next read: a wake-up costs one
// CLIENT UNBLOCK per other slot, not a new connection per slot. The cost is in docs/operations.md.
//
// Entry encoding: field `payload` holds the payload; each header `k` is the field `h:k`.
// The connection speaks RESP2 (`protocol: 2`) so replies have the documented RESP2 shapes parsed below.
//
// Failures: every error ioredis gives for "Redis cannot be reached or cannot serve right now" (see
// `isRedisUnavailable`) becomes BusError `unavailable` in `toBusError`, the one place; callers
// never see ioredis' own errors for that. Every client built here (`createRedisClient`, the
// blocking connections) has an error listener: a connection loss is logged once through the
// logger given (`watchRedisConnection`), never printed raw by ioredis.
import { Cluster, Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutageLog, silentLog, type OutageLogFn } from './outage-log.ts';
import {
  BusError,
  systemClock,
  type Clock,
  assertNonNegativeInteger,
  assertPositiveInteger,
  type AppendOptions,
  type Bus,
  type BusEntry,
  type ClaimBatch,
  type ClaimOptions,
  type EntryId,
  type GroupSummary,
  type Headers,
  type PendingBatch,
  type ReadOptions,
  type ReadPendingOptions,
  type StreamSummary,
} from './bus.ts';

const payloadField = 'payload';
const headerFieldPrefix = 'h:';

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
 * watched under `connectionName` (see `watchRedisConnection`).
 */
export function createRedisClient(url: string, connectionName = 'payments', connectionLog: RedisConnectionLog = {}): RedisClient {
  const client = newRedisClient(url, connectionName);
  watchRedisConnection(client, connectionName, connectionLog);
  return client;
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
function errorText(error: unknown): string {
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
// Redis Cluster key slots: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key, or of its
// hash tag — the bytes between the first `{` and the next `}`, when that is not empty — mod 16384.

export const clusterSlotCount = 16_384;
const crc16Table = Uint16Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (crc16Table[((crc >> 8) ^ byte) & 0xff] ?? 0);
  return crc;
}

/** The Redis Cluster slot of a key (what CLUSTER KEYSLOT answers). */
export function clusterKeySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b); // '{'
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // '}'
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % clusterSlotCount;
  }
  return crc16(bytes) % clusterSlotCount;
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

/**
 * A Lua script run with EVALSHA, falling back to EVAL once when the server does not have it
 * cached (first use, or after a restart / SCRIPT FLUSH).
 */
export class LuaScript {
  readonly sha: string;
  constructor(
    readonly name: string,
    readonly lua: string,
    readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(client: RedisClient, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    if (keys.length !== this.numberOfKeys) {
      throw new Error(`script ${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
    try {
      return await client.evalsha(this.sha, this.numberOfKeys, ...keys, ...args);
    } catch (error) {
      if (redisErrorCode(error) !== 'NOSCRIPT') throw error;
      return client.eval(this.lua, this.numberOfKeys, ...keys, ...args);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Lua scripts (single key each, so they work on Redis Cluster too)

/**
 * readPending: re-read this consumer's own pending entries and report their delivery counts.
 *   KEYS[1]  stream
 *   ARGV[1]  group
 *   ARGV[2]  consumer
 *   ARGV[3]  count
 *   ARGV[4]  afterId (exclusive; '0' = from the start)
 * Returns { entries, pending }:
 *   entries  XREADGROUP's entries for the stream: { id, fields } or { id, false } when trimmed;
 *            trimmed ids are XACKed here, so each is reported exactly once.
 *   pending  XPENDING extended rows { id, consumer, idleMs, deliveries } after the re-read.
 * Errors: NOGROUP when the group (or stream) does not exist.
 */
const readPendingScript = new LuaScript('busReadPending', `
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], ARGV[4])
local entries = {}
if reply and reply[1] then entries = reply[1][2] end
for _, entry in ipairs(entries) do
  if not entry[2] then redis.call('XACK', KEYS[1], ARGV[1], entry[1]) end
end
local start = '-'
if ARGV[4] ~= '0' and ARGV[4] ~= '0-0' then start = '(' .. ARGV[4] end
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], start, '+', ARGV[3], ARGV[2])
return { entries, pending }
`, 1);

/**
 * claimStale: take over entries idle for at least minIdleMs, with their delivery counts.
 *   KEYS[1]  stream
 *   ARGV[1]  group
 *   ARGV[2]  consumer that takes the entries
 *   ARGV[3]  minIdleMs
 *   ARGV[4]  cursor ('0-0' = start of the PEL)
 *   ARGV[5]  count
 * Returns { nextCursor, entries, deletedIds, deliveries }: XAUTOCLAIM's reply (deleted ids are
 *   removed from the PEL by XAUTOCLAIM itself) plus deliveries[i] = delivery count of entries[i].
 * Errors: NOGROUP when the group (or stream) does not exist.
 */
const claimStaleScript = new LuaScript('busClaimStale', `
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local deliveries = {}
for i, entry in ipairs(claimed[2]) do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], entry[1], entry[1], 1)
  if row[1] then deliveries[i] = row[1][4] else deliveries[i] = 1 end
end
return { claimed[1], claimed[2], claimed[3] or {}, deliveries }
`, 1);

// ---------------------------------------------------------------------------------------------
// Reply parsing (RESP2 shapes). A shape we do not expect is a bug or a broken server: throw.

function fail(what: string, value: unknown): never {
  throw new Error(`unexpected Redis reply for ${what}: ${JSON.stringify(value)?.slice(0, 200)}`);
}

function asArray(what: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) fail(what, value);
  return value as unknown[];
}

function asString(what: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return fail(what, value);
}

function asInteger(what: string, value: unknown): number {
  const parsed = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(parsed)) fail(what, value);
  return parsed;
}

interface RawEntry {
  readonly id: EntryId;
  /** null when the entry was trimmed away while pending. */
  readonly fields: { payload: string; headers: Headers } | null;
}

function parseFields(value: unknown): { payload: string; headers: Headers } {
  const flat = asArray('entry fields', value);
  let payload: string | undefined;
  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = asString('field name', flat[i]);
    const fieldValue = asString('field value', flat[i + 1]);
    if (field === payloadField) payload = fieldValue;
    else if (field.startsWith(headerFieldPrefix)) headers[field.slice(headerFieldPrefix.length)] = fieldValue;
  }
  if (payload === undefined) fail('entry without payload', value);
  return { payload, headers };
}

function parseRawEntries(value: unknown): RawEntry[] {
  return asArray('entries', value).map((item) => {
    const pair = asArray('entry', item);
    const id = asString('entry id', pair[0]);
    const fields = pair[1] == null || pair[1] === false ? null : parseFields(pair[1]);
    return { id, fields };
  });
}

function toEntry(stream: string, raw: RawEntry, deliveryCount: number): BusEntry | null {
  if (raw.fields === null) return null;
  return { stream, id: raw.id, payload: raw.fields.payload, headers: raw.fields.headers, deliveryCount };
}

/** XREADGROUP's `[[stream, entries], …] | null`, new entries only (delivery count 1). */
function parseReadReply(value: unknown): BusEntry[] {
  if (value == null) return [];
  const result: BusEntry[] = [];
  for (const item of asArray('xreadgroup', value)) {
    const pair = asArray('xreadgroup stream', item);
    const stream = asString('stream name', pair[0]);
    for (const raw of parseRawEntries(pair[1])) {
      const entry = toEntry(stream, raw, 1);
      if (entry !== null) result.push(entry);
    }
  }
  return result;
}

/** Flat `[name, value, name, value, …]` (XINFO in RESP2) to a record. */
function flatRecord(what: string, value: unknown): Record<string, unknown> {
  const flat = asArray(what, value);
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[asString(what, flat[i])] = flat[i + 1];
  return record;
}

// ---------------------------------------------------------------------------------------------

export interface RedisBusOptions {
  /** A Redis URL (the bus owns and closes its connections) or a client to share (not closed). */
  readonly redis: string | RedisClient;
  /**
   * Bound on concurrent blocking reads (each holds one connection while blocked). On a cluster one
   * `read` blocks on one connection per slot of its streams: allow at least the shards one worker
   * may own plus one per requester. Default 32 (one server) or 256 (cluster).
   */
  readonly blockingConnectionsMax?: number;
  /** Where connection outages are logged (a client of our own: under the name `bus`). */
  readonly connectionLog?: RedisConnectionLog;
}

const blockingConnectionsMaxDefault = 32;
const clusterBlockingConnectionsMaxDefault = 256;
/** After a CLIENT UNBLOCK that found the read not blocked (yet), wait this long before trying again. */
const unblockRetryMs = 5;
/** A blocked read still running this long after its blockMs is presumed broken and disconnected. */
const blockedReadGraceMs = 2_000;
/** Readers remembered as busy, at most (a bound, not a tuning knob: real deployments have a few). */
const busyReadersMax = 1_024;

/** What one slot's read produced: its entries, or the (bus-mapped) error it failed with. */
interface SlotOutcome {
  readonly entries: BusEntry[];
  readonly error: unknown;
  /**
   * The read's connection was dropped before its reply arrived. The server may have served it
   * already: its entries then sit in this consumer's pending list, where `>` reads never look.
   */
  readonly interrupted?: boolean;
}

/** The master serving a slot: ioredis' node key (`host:port`) and the cluster client's connection to it. */
interface ClusterMaster {
  readonly nodeKey: string;
  readonly node: Redis;
}

/** A blocking read in flight on one node connection (cluster mode). */
interface SlotRead extends ClusterMaster {
  readonly blocker: Redis;
  settled: boolean;
  outcome: Promise<SlotOutcome>;
}

const nothing: SlotOutcome = { entries: [], error: null };
const interruptedRead: SlotOutcome = { entries: [], error: null, interrupted: true };

/** Entries of every slot; when none has entries, the first error (if any) is thrown. Entries are
 *  never dropped because another slot failed: they are already pending on this consumer. */
function mergeOutcomes(outcomes: readonly SlotOutcome[]): BusEntry[] {
  const entries = outcomes.flatMap((outcome) => outcome.entries);
  const failed = outcomes.find((outcome) => outcome.error !== null);
  if (entries.length === 0 && failed !== undefined) throw failed.error;
  return entries;
}

/** The cluster client's connection to the node with this key (`host:port`), if it has one. */
function clusterNode(cluster: Cluster, nodeKey: string): Redis | undefined {
  return cluster.nodes('all').find((node) => `${node.options.host}:${node.options.port}` === nodeKey);
}

/** XADD's arguments after the command name: `stream [MAXLEN ~ n] * payload <p> h:<name> <value>…`. */
function appendArguments(stream: string, payload: string, options: AppendOptions): Array<string | number> {
  const args: Array<string | number> = [stream];
  if (options.maxLenApprox !== undefined) {
    assertPositiveInteger('maxLenApprox', options.maxLenApprox);
    args.push('MAXLEN', '~', options.maxLenApprox);
  }
  args.push('*', payloadField, payload);
  const headers = options.headers;
  if (headers !== undefined) {
    for (const name of Object.keys(headers)) {
      if (name === '') throw new BusError('invalid_argument', 'header names must not be empty');
      args.push(headerFieldPrefix + name, headers[name] ?? '');
    }
  }
  return args;
}

function entryIdOf(reply: unknown): EntryId {
  return asString('xadd', reply);
}

export class RedisBus implements Bus {
  private readonly client: RedisClient;
  /** The same client when it is a Cluster client, else null. */
  private readonly cluster: Cluster | null;
  private readonly ownsClient: boolean;
  private readonly url: string | null;
  private readonly blockingConnectionsMax: number;
  private readonly idleBlockers: Redis[] = [];
  /** Cluster mode: idle blocking connections per node (`host:port`). */
  private readonly idleNodeBlockers = new Map<string, Redis[]>();
  private readonly busyBlockers = new Set<Redis>();
  private readonly retired = new WeakSet<Redis>();
  /** Cluster mode: readers (`group\nconsumer`) whose last read found entries. */
  private readonly busyReaders = new Set<string>();
  /** Cluster mode: each blocking connection's CLIENT ID (null if it could not be read). */
  private readonly blockerIds = new WeakMap<Redis, Promise<number | null>>();
  private closed = false;
  private readonly log: OutageLogFn;
  /**
   * A blocking connection's errors: its read fails with them and its reader reports that; the
   * connection is dropped after it. So they are kept at debug level, never on stderr.
   */
  private readonly blockerError = (error: unknown): void => this.log('debug', 'blocking Redis connection error', { error: errorText(error) });

  constructor(options: RedisBusOptions) {
    const connectionLog = options.connectionLog ?? {};
    this.log = connectionLog.log ?? silentLog;
    if (typeof options.redis === 'string') {
      this.url = options.redis;
      this.client = createRedisClient(options.redis, 'bus', connectionLog);
      this.ownsClient = true;
    } else {
      this.url = null;
      this.client = options.redis;
      this.ownsClient = false;
    }
    this.cluster = isCluster(this.client) ? this.client : null;
    this.blockingConnectionsMax =
      options.blockingConnectionsMax ?? (this.cluster === null ? blockingConnectionsMaxDefault : clusterBlockingConnectionsMaxDefault);
    assertPositiveInteger('blockingConnectionsMax', this.blockingConnectionsMax);
  }

  // Not `async`: the edge appends once per request, and every promise layer costs. Failures are
  // still rejections, never synchronous throws.
  append(stream: string, payload: string, options: AppendOptions = {}): Promise<EntryId> {
    let args: Array<string | number>;
    try {
      this.assertOpen();
      args = appendArguments(stream, payload, options);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return this.client.call('XADD', args).then(entryIdOf, throwBusError);
  }

  async ensureGroup(stream: string, group: string): Promise<void> {
    this.assertOpen();
    try {
      await this.client.call('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM');
    } catch (error) {
      if (redisErrorCode(error) !== 'BUSYGROUP') throw toBusError(error);
    }
  }

  async read(group: string, consumer: string, streams: readonly string[], options: ReadOptions): Promise<BusEntry[]> {
    this.assertOpen();
    assertPositiveInteger('count', options.count);
    assertNonNegativeInteger('blockMs', options.blockMs);
    if (streams.length === 0) return [];
    const args = ['GROUP', group, consumer, 'COUNT', options.count];
    if (this.cluster !== null) return this.clusterRead(this.cluster, `${group}\n${consumer}`, args, streams, options);
    if (options.blockMs === 0) {
      const reply = await this.client.call('XREADGROUP', ...args, 'STREAMS', ...streams, ...streams.map(() => '>')).catch((error: unknown) => {
        throw toBusError(error);
      });
      return parseReadReply(reply);
    }
    return this.blockingRead([...args, 'BLOCK', options.blockMs, 'STREAMS', ...streams, ...streams.map(() => '>')], options.signal);
  }

  /** Runs one XREADGROUP … BLOCK on a borrowed connection; abort or close disconnects it. */
  private async blockingRead(args: Array<string | number>, signal: AbortSignal | undefined): Promise<BusEntry[]> {
    if (signal?.aborted === true) return [];
    const blocker = this.borrowBlocker();
    const end = (): void => this.retire(blocker);
    signal?.addEventListener('abort', end, { once: true });
    try {
      const reply = await blocker.call('XREADGROUP', ...args);
      return parseReadReply(reply);
    } catch (error) {
      if (this.retired.has(blocker)) return [];
      throw toBusError(error);
    } finally {
      signal?.removeEventListener('abort', end);
      this.busyBlockers.delete(blocker);
      if (this.closed || blocker.status !== 'ready') this.retire(blocker);
      if (!this.retired.has(blocker)) this.idleBlockers.push(blocker);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Reads on a Redis Cluster (see the header comment)

  /**
   * One slot: a plain blocking read on that slot's master. Several slots: one blocking read per
   * slot in parallel — but when this consumer is busy (its previous read found entries in several
   * slots, or found entries without blocking), first one non-blocking XREADGROUP per slot
   * (auto-pipelined per node), which under load returns entries without the fan-out and its
   * CLIENT UNBLOCKs.
   */
  private async clusterRead(cluster: Cluster, reader: string, args: Array<string | number>, streams: readonly string[], options: ReadOptions): Promise<BusEntry[]> {
    const groups = streamsBySlot(streams);
    if (options.blockMs === 0 || (groups.length > 1 && this.busyReaders.has(reader))) {
      const entries = await this.readSlotsNow(args, groups);
      this.noteBusy(reader, entries.length > 0);
      if (entries.length > 0 || options.blockMs === 0) return entries;
    }
    if (options.signal?.aborted === true) return [];
    const entries = await this.blockOnCluster(cluster, args, groups, options);
    // One slot woke us: traffic is light, block again next time. Several had entries: it is busy.
    this.noteBusy(reader, new Set(entries.map((entry) => clusterKeySlot(entry.stream))).size > 1);
    return entries;
  }

  /** Remembers which readers (group × consumer) found entries last time; bounded. */
  private noteBusy(reader: string, busy: boolean): void {
    if (!busy) {
      this.busyReaders.delete(reader);
      return;
    }
    if (this.busyReaders.size >= busyReadersMax) this.busyReaders.clear();
    this.busyReaders.add(reader);
  }

  private async blockOnCluster(cluster: Cluster, args: Array<string | number>, groups: ReturnType<typeof streamsBySlot>, options: ReadOptions): Promise<BusEntry[]> {
    const masters: ClusterMaster[] = [];
    for (const group of groups) {
      const nodeKey = cluster.slots[group.slot]?.[0];
      const node = nodeKey === undefined ? undefined : clusterNode(cluster, nodeKey);
      // Slot map not known yet (still connecting) or a hole in it (cluster down): a read through
      // the cluster client waits for the map, or fails with the cluster's own error.
      if (nodeKey === undefined || node === undefined) return this.readSlotsNow(args, groups);
      masters.push({ nodeKey, node });
    }
    return this.blockOnSlots(cluster, args, groups, masters, options.blockMs, options.signal);
  }

  /** One non-blocking XREADGROUP per slot through the cluster client: new entries (`>`). */
  private async readSlotsNow(args: Array<string | number>, groups: ReturnType<typeof streamsBySlot>): Promise<BusEntry[]> {
    return mergeOutcomes(await this.readSlotsFrom(args, groups, '>'));
  }

  /** This consumer's own pending entries (id `0`) in each slot's streams; failures come back as outcomes. */
  private async readOwnPending(args: Array<string | number>, groups: ReturnType<typeof streamsBySlot>): Promise<SlotOutcome[]> {
    return this.readSlotsFrom(args, groups, '0');
  }

  private async readSlotsFrom(args: Array<string | number>, groups: ReturnType<typeof streamsBySlot>, from: '>' | '0'): Promise<SlotOutcome[]> {
    return Promise.all(
      groups.map(async ({ streams }): Promise<SlotOutcome> => {
        try {
          const reply = await this.client.call('XREADGROUP', ...args, 'STREAMS', ...streams, ...streams.map(() => from));
          return { entries: parseReadReply(reply), error: null };
        } catch (error) {
          return { entries: [], error: toBusError(error) };
        }
      }),
    );
  }

  /**
   * Blocks on every slot at once, each on its own connection to the slot's master. As soon as one
   * returns entries (or fails), the others are ended with CLIENT UNBLOCK … TIMEOUT: a read still
   * blocked returns empty, one the server already served returns its entries, and those are kept.
   */
  private async blockOnSlots(
    cluster: Cluster,
    args: Array<string | number>,
    groups: ReturnType<typeof streamsBySlot>,
    masters: readonly ClusterMaster[],
    blockMs: number,
    signal: AbortSignal | undefined,
  ): Promise<BusEntry[]> {
    if (this.busyBlockers.size + groups.length > this.blockingConnectionsMax) {
      throw new BusError('readers_exhausted', `a read over ${groups.length} slots needs more than ${this.blockingConnectionsMax} blocking connections`);
    }
    const deadlineMs = Date.now() + blockMs + blockedReadGraceMs;
    let wake = (): void => undefined;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const reads = groups.map(({ streams }, index): SlotRead => {
      const master = masters[index];
      if (master === undefined) throw new Error('bug: a slot without its master');
      const { nodeKey, node } = master;
      const blocker = this.borrowNodeBlocker(node, nodeKey);
      const read: SlotRead = { blocker, node, nodeKey, settled: false, outcome: Promise.resolve(nothing) };
      const command = [...args, 'BLOCK', blockMs, 'STREAMS', ...streams, ...streams.map(() => '>')];
      read.outcome = this.nodeBlockingRead(cluster, nodeKey, blocker, command).then((outcome) => {
        read.settled = true;
        if (outcome.entries.length > 0 || outcome.error !== null) wake();
        return outcome;
      });
      return read;
    });
    // Abort (shutdown) ends every read at once by disconnecting, as on a single server.
    const end = (): void => reads.forEach((read) => this.retire(read.blocker));
    signal?.addEventListener('abort', end, { once: true });
    try {
      const all = Promise.all(reads.map(async (read) => read.outcome));
      await Promise.race([all, woken]);
      await Promise.all(reads.filter((read) => !read.settled).map(async (read) => this.unblock(read, deadlineMs)));
      const outcomes = await all;
      // A read ended by disconnecting (a late event loop past the deadline, a failed UNBLOCK) may
      // have been served: fetch what it may have taken from this consumer's own pending list.
      // Entries pending from before come back too; consumers dedupe (at-least-once).
      const interrupted = groups.filter((_, index) => outcomes[index]?.interrupted === true);
      if (interrupted.length > 0 && signal?.aborted !== true && !this.closed) outcomes.push(...(await this.readOwnPending(args, interrupted)));
      return mergeOutcomes(outcomes);
    } finally {
      signal?.removeEventListener('abort', end);
    }
  }

  private async nodeBlockingRead(cluster: Cluster, nodeKey: string, blocker: Redis, command: Array<string | number>): Promise<SlotOutcome> {
    try {
      return { entries: parseReadReply(await blocker.call('XREADGROUP', ...command)), error: null };
    } catch (error) {
      if (this.retired.has(blocker)) return interruptedRead;
      // The slot moved (resharding, failover): learn the new map; the caller reads again.
      const code = redisErrorCode(error);
      if (code === 'MOVED' || code === 'ASK') cluster.refreshSlotsCache();
      return { entries: [], error: toBusError(error) };
    } finally {
      this.busyBlockers.delete(blocker);
      if (this.closed || blocker.status !== 'ready') this.retire(blocker);
      if (!this.retired.has(blocker)) this.idleNodeBlockersOf(nodeKey).push(blocker);
    }
  }

  /**
   * Ends a blocked read with CLIENT UNBLOCK, sent on the cluster client's own connection to that
   * node. A reply of 0 means the read is not blocked: either it was already served (its reply is
   * on the way) or it has not reached the server yet, so try again shortly. Only a node we cannot
   * talk to, or a read far past its blockMs, is ended by disconnecting.
   */
  private async unblock(read: SlotRead, deadlineMs: number): Promise<void> {
    const clientId = await (this.blockerIds.get(read.blocker) ?? Promise.resolve(null));
    const control = read.node;
    while (!read.settled) {
      if (clientId === null || Date.now() > deadlineMs) {
        this.retire(read.blocker);
        return;
      }
      const unblocked = await control.call('CLIENT', 'UNBLOCK', clientId, 'TIMEOUT').catch(() => null);
      if (unblocked === null) {
        this.retire(read.blocker);
        return;
      }
      if (unblocked === 1) return;
      await Promise.race([read.outcome, sleep(unblockRetryMs)]);
    }
  }

  private idleNodeBlockersOf(nodeKey: string): Redis[] {
    let idle = this.idleNodeBlockers.get(nodeKey);
    if (idle === undefined) {
      idle = [];
      this.idleNodeBlockers.set(nodeKey, idle);
    }
    return idle;
  }

  /** A dedicated connection to one cluster node (no reconnects: a broken one is dropped). */
  private borrowNodeBlocker(node: Redis, nodeKey: string): Redis {
    const idle = this.idleNodeBlockersOf(nodeKey).pop();
    if (idle !== undefined) {
      this.busyBlockers.add(idle);
      return idle;
    }
    // A copy of the cluster client's own connection to that node: same address, credentials and
    // TLS, and no reconnects (ioredis' default for cluster nodes).
    const blocker = node.duplicate({ connectionName: 'bus-blocking', enableAutoPipelining: false, lazyConnect: false, retryStrategy: () => null });
    blocker.on('error', this.blockerError);
    // Sent before any read on this connection, so it is answered before the connection blocks.
    this.blockerIds.set(
      blocker,
      blocker.call('CLIENT', 'ID').then(
        (id) => asInteger('client id', id),
        () => null,
      ),
    );
    this.busyBlockers.add(blocker);
    return blocker;
  }

  // -------------------------------------------------------------------------------------------

  /**
   * Disconnects a blocking connection, once: ioredis arms a 2 s timer on every disconnect() that
   * only the socket's (single) close event clears, so a second call would hold the process open.
   */
  private retire(blocker: Redis): void {
    if (this.retired.has(blocker)) return;
    this.retired.add(blocker);
    blocker.disconnect();
  }

  private borrowBlocker(): Redis {
    const idle = this.idleBlockers.pop();
    if (idle !== undefined) {
      this.busyBlockers.add(idle);
      return idle;
    }
    if (this.busyBlockers.size >= this.blockingConnectionsMax) {
      throw new BusError('readers_exhausted', `more than ${this.blockingConnectionsMax} concurrent blocking reads`);
    }
    const client = this.client;
    if (isCluster(client)) throw new Error('bug: single-server blocking read on a cluster client');
    const blocker = this.url === null
      ? client.duplicate({ enableAutoPipelining: false, connectionName: 'bus-blocking' })
      : new Redis(this.url, { ...redisClientOptions('bus-blocking'), enableAutoPipelining: false });
    // Errors surface on the command; a disconnected idle connection is simply dropped.
    blocker.on('error', this.blockerError);
    this.busyBlockers.add(blocker);
    return blocker;
  }

  async readPending(stream: string, group: string, consumer: string, options: ReadPendingOptions): Promise<PendingBatch> {
    this.assertOpen();
    assertPositiveInteger('count', options.count);
    const reply = await readPendingScript
      .run(this.client, [stream], [group, consumer, options.count, options.afterId ?? '0'])
      .catch((error: unknown) => {
        throw toBusError(error);
      });
    const [rawEntries, rawPending] = asArray('readPending', reply);
    const deliveries = new Map<string, number>();
    for (const row of asArray('xpending rows', rawPending)) {
      const fields = asArray('xpending row', row);
      deliveries.set(asString('pending id', fields[0]), asInteger('deliveries', fields[3]));
    }
    const entries: BusEntry[] = [];
    const deletedIds: EntryId[] = [];
    for (const raw of parseRawEntries(rawEntries)) {
      const entry = toEntry(stream, raw, deliveries.get(raw.id) ?? 1);
      if (entry === null) deletedIds.push(raw.id);
      else entries.push(entry);
    }
    return { entries, deletedIds };
  }

  async ack(stream: string, group: string, ids: readonly EntryId[]): Promise<number> {
    this.assertOpen();
    if (ids.length === 0) return 0;
    return asInteger('xack', await this.client.xack(stream, group, ...ids).catch(throwBusError));
  }

  async claimStale(stream: string, group: string, consumer: string, options: ClaimOptions): Promise<ClaimBatch> {
    this.assertOpen();
    assertNonNegativeInteger('minIdleMs', options.minIdleMs);
    assertPositiveInteger('count', options.count);
    const reply = await claimStaleScript
      .run(this.client, [stream], [group, consumer, options.minIdleMs, options.cursor ?? '0-0', options.count])
      .catch((error: unknown) => {
        throw toBusError(error);
      });
    const [cursor, rawEntries, rawDeleted, rawDeliveries] = asArray('claimStale', reply);
    const deliveries = asArray('claim deliveries', rawDeliveries);
    const entries: BusEntry[] = [];
    const deletedIds = asArray('claim deleted', rawDeleted).map((id) => asString('deleted id', id));
    parseRawEntries(rawEntries).forEach((raw, index) => {
      const entry = toEntry(stream, raw, asInteger('deliveries', deliveries[index] ?? 1));
      if (entry === null) deletedIds.push(raw.id);
      else entries.push(entry);
    });
    return { cursor: asString('claim cursor', cursor), entries, deletedIds };
  }

  async length(stream: string): Promise<number> {
    this.assertOpen();
    return asInteger('xlen', await this.client.xlen(stream).catch(throwBusError));
  }

  async summary(stream: string): Promise<StreamSummary> {
    this.assertOpen();
    return this.readSummary(stream).catch(throwBusError);
  }

  private async readSummary(stream: string): Promise<StreamSummary> {
    const [length, exists] = await Promise.all([this.client.xlen(stream), this.client.exists(stream)]);
    if (exists === 0) return { stream, length: 0, groups: [] };
    let rawGroups: unknown;
    try {
      rawGroups = await this.client.call('XINFO', 'GROUPS', stream);
    } catch (error) {
      // Deleted between EXISTS and XINFO (or a key of another type): nothing to report.
      if (redisErrorCode(error) === 'ERR') return { stream, length: 0, groups: [] };
      throw error;
    }
    const groups = await Promise.all(
      asArray('xinfo groups', rawGroups).map(async (raw) => this.groupSummary(stream, flatRecord('xinfo group', raw))),
    );
    return { stream, length: asInteger('xlen', length), groups };
  }

  private async groupSummary(stream: string, info: Record<string, unknown>): Promise<GroupSummary> {
    const group = asString('group name', info.name);
    const pendingReply = asArray('xpending summary', await this.client.call('XPENDING', stream, group));
    const consumers = pendingReply[3] == null ? [] : asArray('xpending consumers', pendingReply[3]).map((row) => {
      const pair = asArray('xpending consumer', row);
      return { consumer: asString('consumer', pair[0]), pending: asInteger('consumer pending', pair[1]) };
    });
    return {
      group,
      pending: asInteger('pending', pendingReply[0]),
      oldestPendingId: pendingReply[1] == null ? null : asString('oldest pending', pendingReply[1]),
      consumers,
      lag: info.lag == null ? null : asInteger('lag', info.lag),
      lastDeliveredId: asString('last delivered', info['last-delivered-id']),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const idleOnNodes = [...this.idleNodeBlockers.values()].flat();
    for (const blocker of [...this.idleBlockers, ...idleOnNodes, ...this.busyBlockers]) this.retire(blocker);
    this.idleBlockers.length = 0;
    this.idleNodeBlockers.clear();
    if (this.ownsClient) {
      await this.client.quit().catch(() => {
        this.client.disconnect();
      });
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new BusError('closed', 'the bus is closed');
  }
}
