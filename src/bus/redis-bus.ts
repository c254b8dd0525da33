// Bus adapter on Redis Streams (ioredis 6). One shared connection with auto-pipelining serves every
// non-blocking command; each blocking read borrows a dedicated connection from a bounded pool, so a
// blocked XREADGROUP never delays other commands and can be ended at once by disconnecting it.
//
// Entry encoding: field `payload` holds the payload; each header `k` is the field `h:k`.
// The connection speaks RESP2 (`protocol: 2`) so replies have the documented RESP2 shapes parsed below.
import { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import {
  BusError,
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

export function createRedisClient(url: string, connectionName = 'payments'): Redis {
  return new Redis(url, redisClientOptions(connectionName));
}

/** The Redis error code is the first word of a reply error (`NOGROUP …`, `BUSYGROUP …`). */
export function redisErrorCode(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const match = /^([A-Z][A-Z_]+) /.exec(error.message);
  return match?.[1] ?? null;
}

/** Maps Redis reply errors to the bus's error codes; the one place this happens. */
function toBusError(error: unknown): unknown {
  if (redisErrorCode(error) === 'NOGROUP') {
    return new BusError('no_group', error instanceof Error ? error.message : 'no such group', { cause: error });
  }
  return error;
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

  async run(client: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
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
  readonly redis: string | Redis;
  /** Bound on concurrent blocking reads (each holds one connection while blocked). */
  readonly blockingConnectionsMax?: number;
}

const blockingConnectionsMaxDefault = 32;

export class RedisBus implements Bus {
  private readonly client: Redis;
  private readonly ownsClient: boolean;
  private readonly url: string | null;
  private readonly blockingConnectionsMax: number;
  private readonly idleBlockers: Redis[] = [];
  private readonly busyBlockers = new Set<Redis>();
  private readonly retired = new WeakSet<Redis>();
  private closed = false;

  constructor(options: RedisBusOptions) {
    if (typeof options.redis === 'string') {
      this.url = options.redis;
      this.client = createRedisClient(options.redis, 'bus');
      this.ownsClient = true;
    } else {
      this.url = null;
      this.client = options.redis;
      this.ownsClient = false;
    }
    this.blockingConnectionsMax = options.blockingConnectionsMax ?? blockingConnectionsMaxDefault;
    assertPositiveInteger('blockingConnectionsMax', this.blockingConnectionsMax);
  }

  async append(stream: string, payload: string, options: AppendOptions = {}): Promise<EntryId> {
    this.assertOpen();
    const args: Array<string | number> = [stream];
    if (options.maxLenApprox !== undefined) {
      assertPositiveInteger('maxLenApprox', options.maxLenApprox);
      args.push('MAXLEN', '~', options.maxLenApprox);
    }
    args.push('*', payloadField, payload);
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (name === '') throw new BusError('invalid_argument', 'header names must not be empty');
      args.push(headerFieldPrefix + name, value);
    }
    return asString('xadd', await this.client.call('XADD', ...args));
  }

  async ensureGroup(stream: string, group: string): Promise<void> {
    this.assertOpen();
    try {
      await this.client.call('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM');
    } catch (error) {
      if (redisErrorCode(error) !== 'BUSYGROUP') throw error;
    }
  }

  async read(group: string, consumer: string, streams: readonly string[], options: ReadOptions): Promise<BusEntry[]> {
    this.assertOpen();
    assertPositiveInteger('count', options.count);
    assertNonNegativeInteger('blockMs', options.blockMs);
    if (streams.length === 0) return [];
    const args = ['GROUP', group, consumer, 'COUNT', options.count];
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
    const blocker = this.url === null
      ? this.client.duplicate({ enableAutoPipelining: false, connectionName: 'bus-blocking' })
      : new Redis(this.url, { ...redisClientOptions('bus-blocking'), enableAutoPipelining: false });
    // Errors surface on the command; a disconnected idle connection is simply dropped.
    blocker.on('error', () => undefined);
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
    return asInteger('xack', await this.client.xack(stream, group, ...ids));
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
    return asInteger('xlen', await this.client.xlen(stream));
  }

  async summary(stream: string): Promise<StreamSummary> {
    this.assertOpen();
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
    for (const blocker of [...this.idleBlockers, ...this.busyBlockers]) this.retire(blocker);
    this.idleBlockers.length = 0;
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
