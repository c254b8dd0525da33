// In-process Bus adapter for the embedded single-process default. It models Redis Streams' consumer
// groups faithfully enough to pass the same contract suite: strictly increasing `<ms>-<seq>` ids,
// one delivery per group, a pending entries list per group with owner, delivery time and count,
// re-reads of one's own pending entries, claims by idle time (on an injectable clock), blocking
// reads that wake on append, and approximate trimming that keeps at least the requested length.
// Nothing survives the process: it is for the embedded mode and tests, not for durability.
import {
  BusError,
  assertNonNegativeInteger,
  assertPositiveInteger,
  parseEntryId,
  systemClock,
  type AppendOptions,
  type Bus,
  type BusEntry,
  type ClaimBatch,
  type ClaimOptions,
  type Clock,
  type EntryId,
  type GroupSummary,
  type Headers,
  type PendingBatch,
  type ReadOptions,
  type ReadPendingOptions,
  type StreamSummary,
} from './bus.ts';

interface ParsedId {
  readonly ms: number;
  readonly seq: number;
}

interface StoredEntry {
  readonly id: EntryId;
  readonly at: ParsedId;
  readonly payload: string;
  readonly headers: Headers;
}

interface PendingState {
  consumer: string;
  deliveredAtMs: number;
  deliveryCount: number;
}

interface GroupState {
  lastDelivered: ParsedId;
  /** Keyed by entry id; insertion order is id order because deliveries only move forward. */
  readonly pending: Map<EntryId, PendingState>;
}

interface StreamState {
  /** Sorted by id. */
  entries: StoredEntry[];
  last: ParsedId;
  readonly groups: Map<string, GroupState>;
  readonly waiters: Set<() => void>;
}

function compare(a: ParsedId, b: ParsedId): number {
  return a.ms === b.ms ? a.seq - b.seq : a.ms - b.ms;
}

function formatId(id: ParsedId): EntryId {
  return `${id.ms}-${id.seq}`;
}

/** Index of the first entry with an id greater than `after`. */
function firstAfter(entries: readonly StoredEntry[], after: ParsedId): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const entry = entries[middle];
    if (entry !== undefined && compare(entry.at, after) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

function findEntry(entries: readonly StoredEntry[], id: ParsedId): StoredEntry | undefined {
  const index = firstAfter(entries, { ms: id.ms, seq: id.seq - 1 });
  const entry = entries[index];
  return entry !== undefined && compare(entry.at, id) === 0 ? entry : undefined;
}

/**
 * Like Redis' `MAXLEN ~`: trim only once the excess is worth a copy (10 % over the bound), and
 * never below the bound. Amortised cost: about ten entries copied per append.
 */
function trimSlack(maxLen: number): number {
  return Math.max(1, Math.ceil(maxLen / 10));
}

const zeroId: ParsedId = { ms: 0, seq: 0 };

export interface MemoryBusOptions {
  readonly clock?: Clock;
}

export class MemoryBus implements Bus {
  private readonly clock: Clock;
  private readonly streams = new Map<string, StreamState>();
  private closed = false;

  constructor(options: MemoryBusOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  append(stream: string, payload: string, options: AppendOptions = {}): Promise<EntryId> {
    return this.run(() => {
      if (options.maxLenApprox !== undefined) assertPositiveInteger('maxLenApprox', options.maxLenApprox);
      const state = this.streamOrCreate(stream);
      const nowMs = this.clock.nowMs();
      const at = nowMs > state.last.ms ? { ms: nowMs, seq: 0 } : { ms: state.last.ms, seq: state.last.seq + 1 };
      const id = formatId(at);
      state.entries.push({ id, at, payload, headers: Object.freeze({ ...options.headers }) });
      state.last = at;
      const maxLen = options.maxLenApprox;
      if (maxLen !== undefined && state.entries.length >= maxLen + trimSlack(maxLen)) {
        state.entries = state.entries.slice(state.entries.length - maxLen);
      }
      const waiters = [...state.waiters];
      state.waiters.clear();
      for (const wake of waiters) wake();
      return id;
    });
  }

  ensureGroup(stream: string, group: string): Promise<void> {
    return this.run(() => {
      const state = this.streamOrCreate(stream);
      if (!state.groups.has(group)) state.groups.set(group, { lastDelivered: zeroId, pending: new Map() });
    });
  }

  async read(group: string, consumer: string, streams: readonly string[], options: ReadOptions): Promise<BusEntry[]> {
    this.assertOpen();
    assertPositiveInteger('count', options.count);
    assertNonNegativeInteger('blockMs', options.blockMs);
    const deadlineMs = Date.now() + options.blockMs;
    for (;;) {
      const entries = this.deliverNew(group, consumer, streams, options.count);
      if (entries.length > 0 || options.blockMs === 0) return entries;
      const remainingMs = deadlineMs - Date.now();
      if (remainingMs <= 0 || this.stopped(options.signal)) return [];
      await this.waitForAppend(streams, remainingMs, options.signal);
      if (this.stopped(options.signal)) return [];
    }
  }

  private stopped(signal: AbortSignal | undefined): boolean {
    return this.closed || signal?.aborted === true;
  }

  /** Delivers entries after each group's last delivered id, like XREADGROUP with `>`. */
  private deliverNew(group: string, consumer: string, streams: readonly string[], count: number): BusEntry[] {
    const groups = streams.map((stream) => this.groupOrThrow(stream, group));
    const nowMs = this.clock.nowMs();
    const result: BusEntry[] = [];
    streams.forEach((stream, index) => {
      const groupState = groups[index];
      const state = this.streams.get(stream);
      if (groupState === undefined || state === undefined) return;
      const start = firstAfter(state.entries, groupState.lastDelivered);
      for (const entry of state.entries.slice(start, start + count)) {
        groupState.pending.set(entry.id, { consumer, deliveredAtMs: nowMs, deliveryCount: 1 });
        groupState.lastDelivered = entry.at;
        result.push({ stream, id: entry.id, payload: entry.payload, headers: entry.headers, deliveryCount: 1 });
      }
    });
    return result;
  }

  private async waitForAppend(streams: readonly string[], timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    await new Promise<void>((resolve) => {
      const states = streams.map((stream) => this.streamOrCreate(stream));
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        for (const state of states) state.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      for (const state of states) state.waiters.add(done);
    });
  }

  readPending(stream: string, group: string, consumer: string, options: ReadPendingOptions): Promise<PendingBatch> {
    return this.run(() => {
      assertPositiveInteger('count', options.count);
      const groupState = this.groupOrThrow(stream, group);
      const state = this.streamOrCreate(stream);
      const after = parseEntryId(options.afterId ?? '0');
      const nowMs = this.clock.nowMs();
      const entries: BusEntry[] = [];
      const deletedIds: EntryId[] = [];
      for (const [id, pending] of groupState.pending) {
        if (entries.length + deletedIds.length >= options.count) break;
        if (pending.consumer !== consumer || compare(parseEntryId(id), after) <= 0) continue;
        const entry = findEntry(state.entries, parseEntryId(id));
        if (entry === undefined) {
          deletedIds.push(id);
          continue;
        }
        pending.deliveredAtMs = nowMs;
        pending.deliveryCount += 1;
        entries.push({ stream, id, payload: entry.payload, headers: entry.headers, deliveryCount: pending.deliveryCount });
      }
      for (const id of deletedIds) groupState.pending.delete(id);
      return { entries, deletedIds };
    });
  }

  ack(stream: string, group: string, ids: readonly EntryId[]): Promise<number> {
    return this.run(() => {
      const groupState = this.streams.get(stream)?.groups.get(group);
      if (groupState === undefined) return 0;
      let acknowledged = 0;
      for (const id of new Set(ids)) if (groupState.pending.delete(formatId(parseEntryId(id)))) acknowledged += 1;
      return acknowledged;
    });
  }

  claimStale(stream: string, group: string, consumer: string, options: ClaimOptions): Promise<ClaimBatch> {
    return this.run(() => {
      assertNonNegativeInteger('minIdleMs', options.minIdleMs);
      assertPositiveInteger('count', options.count);
      const groupState = this.groupOrThrow(stream, group);
      const state = this.streamOrCreate(stream);
      const from = parseEntryId(options.cursor ?? '0-0');
      const nowMs = this.clock.nowMs();
      const entries: BusEntry[] = [];
      const deletedIds: EntryId[] = [];
      let cursor = '0-0';
      for (const [id, pending] of groupState.pending) {
        const at = parseEntryId(id);
        if (compare(at, from) < 0) continue;
        if (entries.length + deletedIds.length >= options.count) {
          cursor = id;
          break;
        }
        if (nowMs - pending.deliveredAtMs < options.minIdleMs) continue;
        const entry = findEntry(state.entries, at);
        if (entry === undefined) {
          deletedIds.push(id);
          continue;
        }
        pending.consumer = consumer;
        pending.deliveredAtMs = nowMs;
        pending.deliveryCount += 1;
        entries.push({ stream, id, payload: entry.payload, headers: entry.headers, deliveryCount: pending.deliveryCount });
      }
      for (const id of deletedIds) groupState.pending.delete(id);
      return { cursor, entries, deletedIds };
    });
  }

  length(stream: string): Promise<number> {
    return this.run(() => this.streams.get(stream)?.entries.length ?? 0);
  }

  summary(stream: string): Promise<StreamSummary> {
    return this.run(() => {
      const state = this.streams.get(stream);
      if (state === undefined) return { stream, length: 0, groups: [] };
      const groups: GroupSummary[] = [...state.groups].map(([group, groupState]) => {
        const perConsumer = new Map<string, number>();
        for (const pending of groupState.pending.values()) {
          perConsumer.set(pending.consumer, (perConsumer.get(pending.consumer) ?? 0) + 1);
        }
        const oldest = groupState.pending.keys().next();
        return {
          group,
          pending: groupState.pending.size,
          oldestPendingId: oldest.done === true ? null : oldest.value,
          consumers: [...perConsumer].map(([consumer, pending]) => ({ consumer, pending })),
          lag: state.entries.length - firstAfter(state.entries, groupState.lastDelivered),
          lastDeliveredId: formatId(groupState.lastDelivered),
        };
      });
      return { stream, length: state.entries.length, groups };
    });
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      for (const state of this.streams.values()) {
        const waiters = [...state.waiters];
        state.waiters.clear();
        for (const wake of waiters) wake();
      }
    }
    return Promise.resolve();
  }

  /** Runs a synchronous operation as an async bus call: errors become rejections, like Redis'. */
  private run<T>(operation: () => T): Promise<T> {
    try {
      this.assertOpen();
      return Promise.resolve(operation());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private streamOrCreate(stream: string): StreamState {
    let state = this.streams.get(stream);
    if (state === undefined) {
      state = { entries: [], last: zeroId, groups: new Map(), waiters: new Set() };
      this.streams.set(stream, state);
    }
    return state;
  }

  private groupOrThrow(stream: string, group: string): GroupState {
    const groupState = this.streams.get(stream)?.groups.get(group);
    if (groupState === undefined) {
      throw new BusError('no_group', `no such key '${stream}' or consumer group '${group}'`);
    }
    return groupState;
  }

  private assertOpen(): void {
    if (this.closed) throw new BusError('closed', 'the bus is closed');
  }
}
