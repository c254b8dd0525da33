// The Bus port: append-only streams consumed through consumer groups, with at-least-once delivery.
// Two adapters implement it with the same semantics and pass one contract suite
// (test/integration/bus-contract.test.ts): Redis Streams (redis-bus.ts) and in-process (memory-bus.ts).
//
// Semantics, as Redis Streams define them:
// - An entry gets an id `<ms>-<seq>` that increases strictly within its stream.
// - A group delivers each new entry to exactly one of its consumers; the entry then sits in that
//   consumer's pending entries list (PEL) until acknowledged. Unacknowledged entries are re-read by
//   the same consumer with `readPending` (after a restart) or taken over by another consumer with
//   `claimStale` once idle long enough (the first consumer died).
// - Streams are trimmed approximately to a length bound on append. An entry trimmed while still
//   pending is reported in `deletedIds` by `readPending` / `claimStale` (never silently lost), see
//   docs/bus.md for the bounds we use.

export type EntryId = string;

/** Header names the bus itself sets on request/reply traffic (see request-reply.ts). */
export const headerReplyTo = 'replyTo';
export const headerRequestId = 'requestId';

export type Headers = Readonly<Record<string, string>>;

export interface BusEntry {
  readonly stream: string;
  readonly id: EntryId;
  /** Opaque to the bus; callers encode JSON. */
  readonly payload: string;
  readonly headers: Headers;
  /**
   * How many times the entry has been delivered to a consumer of the group, this delivery included.
   * 1 for a first delivery by `read`; higher for `readPending` / `claimStale` redeliveries.
   */
  readonly deliveryCount: number;
}

export interface AppendOptions {
  /** Trim the stream to about this many most recent entries (never fewer). Omitted: no trimming. */
  readonly maxLenApprox?: number;
  readonly headers?: Headers;
}

export interface ReadOptions {
  /** Entries at most per stream. */
  readonly count: number;
  /** Wait up to this long for new entries when there are none; 0 returns at once (never "forever"). */
  readonly blockMs: number;
  /** Aborting resolves a blocked read promptly with no entries (used on shutdown). */
  readonly signal?: AbortSignal;
}

export interface ReadPendingOptions {
  readonly count: number;
  /** Page through the PEL: only entries with an id greater than this. Default: from the start. */
  readonly afterId?: EntryId;
}

export interface PendingBatch {
  /** This consumer's pending entries, redelivered (their delivery counts go up by one). */
  readonly entries: readonly BusEntry[];
  /**
   * Pending ids whose entries were trimmed from the stream before being acknowledged. They are
   * reported once so the caller can raise an alarm; the adapter removes them from the PEL.
   */
  readonly deletedIds: readonly EntryId[];
}

export interface ClaimOptions {
  /** Only entries not delivered (or claimed) for at least this long are taken. */
  readonly minIdleMs: number;
  readonly count: number;
  /** Cursor from a previous call's `cursor`; default `0-0` (scan the whole PEL). */
  readonly cursor?: EntryId;
}

export interface ClaimBatch extends PendingBatch {
  /** Where to continue scanning the PEL; `0-0` once the scan is complete. */
  readonly cursor: EntryId;
}

export interface ConsumerPending {
  readonly consumer: string;
  readonly pending: number;
}

export interface GroupSummary {
  readonly group: string;
  /** Entries delivered but not yet acknowledged, all consumers together. */
  readonly pending: number;
  readonly oldestPendingId: EntryId | null;
  readonly consumers: readonly ConsumerPending[];
  /** Entries not yet delivered to the group; null when Redis cannot tell (after some trims/deletes). */
  readonly lag: number | null;
  readonly lastDeliveredId: EntryId;
}

export interface StreamSummary {
  readonly stream: string;
  readonly length: number;
  readonly groups: readonly GroupSummary[];
}

export interface Bus {
  /** Appends one entry; returns its id. */
  append(stream: string, payload: string, options?: AppendOptions): Promise<EntryId>;
  /**
   * Creates the group (and the stream) if missing, positioned at the start of the stream so nothing
   * appended before the group existed is missed. Idempotent.
   */
  ensureGroup(stream: string, group: string): Promise<void>;
  /** New entries for this consumer across `streams` (each stream's group must exist), oldest first per stream. */
  read(group: string, consumer: string, streams: readonly string[], options: ReadOptions): Promise<BusEntry[]>;
  /** This consumer's own unacknowledged entries, oldest first (re-read after a restart). */
  readPending(stream: string, group: string, consumer: string, options: ReadPendingOptions): Promise<PendingBatch>;
  /** Acknowledges entries; returns how many were pending. */
  ack(stream: string, group: string, ids: readonly EntryId[]): Promise<number>;
  /** Moves entries pending on any consumer for at least `minIdleMs` to `consumer` and returns them. */
  claimStale(stream: string, group: string, consumer: string, options: ClaimOptions): Promise<ClaimBatch>;
  /** Length, groups, pending counts and lag, for the admin service. Missing stream: length 0, no groups. */
  summary(stream: string): Promise<StreamSummary>;
  length(stream: string): Promise<number>;
  /** Ends blocked reads (they resolve empty) and releases connections. Further calls reject. */
  close(): Promise<void>;
}

/**
 * Why a bus call failed, as a closed set; adapters map their errors here in one place.
 * `unavailable`: the server could not be reached or cannot serve right now (connection lost,
 * retries exhausted, cluster down, loading); the same call may succeed later. The lease adapter
 * on the same server (leases.ts) fails with it too.
 */
export type BusErrorCode = 'no_group' | 'closed' | 'invalid_argument' | 'readers_exhausted' | 'unavailable';

export class BusError extends Error {
  override readonly name = 'BusError';
  constructor(
    readonly code: BusErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Time source for idle and lease computations; tests inject a manual clock. */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that only moves when told to, for tests of idle time and lease expiry. */
export class ManualClock implements Clock {
  constructor(private currentMs = 1_700_000_000_000) {}
  nowMs(): number {
    return this.currentMs;
  }
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot move a clock back (${ms} ms)`);
    this.currentMs += ms;
  }
}

/** Parses `<ms>-<seq>` (or `<ms>`, meaning `<ms>-0`, as Redis accepts); throws on anything else. */
export function parseEntryId(id: EntryId): { readonly ms: number; readonly seq: number } {
  const match = /^(\d+)(?:-(\d+))?$/.exec(id);
  if (match === null) throw new BusError('invalid_argument', `not a stream entry id: ${JSON.stringify(id)}`);
  return { ms: Number(match[1]), seq: Number(match[2] ?? '0') };
}

/** Negative, zero or positive as `a` is before, equal to or after `b`. */
export function compareEntryIds(a: EntryId, b: EntryId): number {
  const left = parseEntryId(a);
  const right = parseEntryId(b);
  return left.ms === right.ms ? left.seq - right.seq : left.ms - right.ms;
}

export function assertPositiveInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new BusError('invalid_argument', `${name} must be a positive integer, got ${value}`);
  }
}

export function assertNonNegativeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new BusError('invalid_argument', `${name} must be a non-negative integer, got ${value}`);
  }
}
