// Bus adapter on Redis Streams (ioredis 6), for a single Redis server or a Redis Cluster.
// One shared client with auto-pipelining serves every non-blocking command; each blocking read
// borrows a dedicated connection from a bounded pool, so a blocked XREADGROUP never delays other
// commands and can be ended at once by disconnecting it. Connections, URLs, key slots and error
// mapping are in redis-connection.ts; the entry encoding and reply parsing in redis-replies.ts;
// the Lua scripts in redis-scripts.ts.
//
// Redis Cluster: every key we use carries a hash tag, so each command and each Lua script touches
// one slot. The one exception is `read` over several streams (a shard worker reads all its shards
// at once): XREADGROUP across slots fails with CROSSSLOT, so in cluster mode `read` groups the
// streams by slot (the 8 shards of a shard group share one: shard-groups.ts, so that is one read
// per group) and blocks on one dedicated node connection per slot in parallel (a busy reader
// first tries every slot without blocking, pipelined per node); the first read that returns entries
// ends the others with CLIENT UNBLOCK, and every entry any of them returned is given to the caller
// (a read the server served before the unblock keeps its entries; they are never left pending
// unseen). Unblocking rather than disconnecting keeps the connections for the next read: a wake-up
// costs one CLIENT UNBLOCK per other slot, not a new connection per slot. The cost is in
// docs/operations.md.
//
// Failures: Redis errors become BusErrors in `toBusError` (redis-connection.ts), the one place.
import { Redis, type Cluster } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLog, type OutageLogFn } from './outage-log.ts';
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
  type PendingBatch,
  type ReadOptions,
  type ReadPendingOptions,
  type StreamSummary,
} from './bus.ts';
import {
  clusterKeySlot,
  createRedisClient,
  errorText,
  isCluster,
  redisClientOptions,
  redisErrorCode,
  streamsBySlot,
  throwBusError,
  toBusError,
  type RedisClient,
  type RedisConnectionLog,
} from './redis-connection.ts';
import {
  appendArguments,
  asArray,
  asInteger,
  asString,
  entryIdOf,
  flatRecord,
  parseRawEntries,
  parseReadReply,
  toEntry,
} from './redis-replies.ts';
import { claimStaleScript, defineScripts, readPendingScript } from './redis-scripts.ts';

export interface RedisBusOptions {
  /** A Redis URL (the bus owns and closes its connections) or a client to share, made by `createRedisClient` (not closed). */
  readonly redis: string | RedisClient;
  /**
   * Bound on concurrent blocking reads (each holds one connection while blocked). On a cluster one
   * `read` blocks on one connection per slot of its streams (one per shard group a worker holds):
   * allow at least the groups one worker may hold plus one per requester. Default 32 (one server)
   * or 256 (cluster).
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
    defineScripts(this.client);
  }

  async append(stream: string, payload: string, options: AppendOptions = {}): Promise<EntryId> {
    this.assertOpen();
    const args = appendArguments(stream, payload, options);
    return entryIdOf(await this.client.call('XADD', args).catch(throwBusError));
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