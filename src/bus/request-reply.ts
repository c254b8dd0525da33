// Request/reply over the bus. An edge process owns one reply stream (`replyStreamKey(prefix, edgeId)`)
// and one Requester: `request` appends a command carrying the headers `replyTo` and `requestId`,
// then waits for the reply with that requestId. A single loop reads the reply stream and hands each
// reply to its waiting caller, so a thousand concurrent requests cost one blocking read, not a
// thousand. The consumer side answers with `reply(bus, entry, payload)` (or `replyTo` for a reply
// deferred past the command's handling). Replies are at-least-once like everything on the bus: a
// duplicate or late reply (after a timeout) finds no waiting caller and is dropped and counted.
//
// Batched entries (docs/bus.md, "Batched entries"): `requestInBatch` gathers the requests made for
// one stream within one event-loop turn into ONE entry, whose payload is a JSON array of the
// requests' own JSON texts and whose header `n` says how many; a consumer answers the requests of
// one reply stream with ONE entry too (`replyBatches`: a JSON array of `[requestId, reply]` pairs,
// header `n`). Each request's text is encoded once by its caller and joined, not re-encoded; each
// reply entry is parsed once here and its replies handed over as values.
import { randomBytes } from 'node:crypto';
import {
  BusError,
  headerReplyTo,
  headerRequestId,
  type Bus,
  type BusEntry,
  type EntryId,
  type Headers,
} from './bus.ts';
import { DeadlineLink, DeadlineQueue } from './deadline-queue.ts';
import { commandStreamMaxLenApprox, replyStreamMaxLenApprox } from './shards.ts';

/** Where a reply goes; structurally the same as the actor runtime's `ReplyTarget`. */
export interface ReplyAddress {
  readonly stream: string;
  readonly requestId: string;
}

export interface Reply {
  readonly requestId: string;
  readonly payload: string;
  readonly headers: Headers;
  readonly entryId: EntryId;
}

/** Header of a batched entry: how many requests (or replies) its payload, a JSON array, holds. */
export const headerBatchCount = 'n';

/**
 * Requests joined into one entry at most (more in one turn go out in several entries); a consumer
 * refuses a command entry with more as malformed. Bounds an entry's size and the work one entry
 * holds back until all of it is durable.
 */
export const batchRequestsMax = 64;

/** Replies joined into one reply entry at most (a larger batch of replies goes out in several). */
export const batchRepliesMax = 256;

/**
 * Why a request got no reply: none in time, too many waiting, the requester closed, or (refused
 * before it was sent) no live worker owns the target shard (shard-coverage.ts).
 */
export type RequestErrorCode = 'timeout' | 'overloaded' | 'closed' | 'no_owner';

export class RequestError extends Error {
  override readonly name: string = 'RequestError';
  constructor(
    readonly code: RequestErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Whether a failure is the infrastructure's — Redis unreachable or the bus closed, no reply in
 * time, too many waiting, no live shard worker — so the same call may succeed later; anything
 * else is a bug. Adapters have already mapped their own errors (Redis: `toBusError`).
 */
export function isUnavailableFailure(error: unknown): boolean {
  if (error instanceof RequestError) return true;
  return error instanceof BusError && (error.code === 'unavailable' || error.code === 'closed');
}

/** No reply within the request's timeout. The command may still be applied later (ids make it safe). */
export class RequestTimeoutError extends RequestError {
  override readonly name = 'RequestTimeoutError';
  constructor(
    readonly requestId: string,
    readonly timeoutMs: number,
  ) {
    super('timeout', `no reply to request ${requestId} within ${timeoutMs} ms`);
  }
}

/** `pendingMax` requests are already waiting; shed load instead of queueing without bound. */
export class RequesterOverloadedError extends RequestError {
  override readonly name = 'RequesterOverloadedError';
  constructor(readonly pendingMax: number) {
    super('overloaded', `${pendingMax} requests are already waiting for replies`);
  }
}

export class RequesterClosedError extends RequestError {
  override readonly name = 'RequesterClosedError';
  constructor() {
    super('closed', 'the requester is closed');
  }
}

export interface RequesterOptions {
  readonly bus: Bus;
  /** This process's reply stream, `replyStreamKey(prefix, edgeId)`. */
  readonly replyStream: string;
  /** Consumer name on the reply stream's group; default `requester`. */
  readonly consumer?: string;
  readonly timeoutMsDefault?: number;
  /** Requests waiting for a reply at most; beyond it `request` rejects with RequesterOverloadedError. */
  readonly pendingMax?: number;
  /** Replies read per round of the loop. */
  readonly readCount?: number;
  /** How long one blocking read of the reply stream waits before the loop goes round again. */
  readonly blockMs?: number;
  /** Request ids, unique per Requester; by default a random prefix per Requester and a counter. */
  readonly newRequestId?: () => string;
  /** Reply-loop failures (e.g. Redis unreachable); the loop backs off and keeps going. */
  readonly onError?: (error: unknown) => void;
  /** The reply loop read again after failures (to end what `onError` began, e.g. an outage line). */
  readonly onRecovered?: () => void;
}

export interface RequestOptions {
  /** Default: the Requester's `timeoutMsDefault` (also when explicitly undefined). */
  readonly timeoutMs?: number | undefined;
  readonly headers?: Headers;
  /** Trim bound for the command stream (see docs/bus.md); default `commandStreamMaxLenApprox`. */
  readonly maxLenApprox?: number;
}

export interface RequesterStats {
  readonly pending: number;
  /** Replies that arrived with no caller waiting (after a timeout, or duplicates), or did not parse. */
  readonly unmatchedReplies: number;
}

/** A reply as it arrived: a single reply entry's text, or one item of a batched reply entry, parsed. */
type Arrived = { readonly requestId: string; readonly entry: BusEntry } & ({ readonly text: string } | { readonly value: unknown });

/** A request waiting for its reply (also its own key in the timeout queue). */
class Waiting extends DeadlineLink {
  constructor(
    readonly requestId: string,
    readonly timeoutMs: number,
    readonly resolve: (reply: Arrived) => void,
    readonly reject: (error: Error) => void,
  ) {
    super();
  }
}

/** Requests for one stream made in this event-loop turn, to be appended as one entry. */
interface OutgoingBatch {
  readonly stream: string;
  readonly texts: string[];
  readonly requestIds: string[];
  maxLenApprox: number;
}

/** The reply of a single reply entry as text (a batched reply's value is encoded once for it). */
function replyOf(arrived: Arrived): Reply {
  const payload = 'text' in arrived ? arrived.text : JSON.stringify(arrived.value);
  return { requestId: arrived.requestId, payload, headers: arrived.entry.headers, entryId: arrived.entry.id };
}

/** The reply's value: a batched reply's item as parsed, or a single reply entry's text parsed as JSON. */
function valueOf(arrived: Arrived): unknown {
  return 'value' in arrived ? arrived.value : JSON.parse(arrived.text);
}

/**
 * Request ids only need to be unique among the replies this Requester can receive: a random
 * prefix per Requester (so a restarted process never matches a late reply meant for its previous
 * incarnation) and a counter. Cheaper than a UUID per request.
 */
function sequentialRequestIds(): () => string {
  const prefix = `${randomBytes(9).toString('base64url')}-`;
  let sequence = 0;
  return () => {
    sequence += 1;
    return prefix + sequence.toString(36);
  };
}

/** The reply stream has one group; its single consumer is the process that owns the stream. */
export const replyGroup = 'requester';

const timeoutMsDefault = 10_000;
const pendingMaxDefault = 10_000;
const readCountDefault = 512;
const blockMsDefault = 1_000;
const backoffMsMax = 2_000;
/** At start, leftovers of a previous incarnation are acknowledged, this many pages at most. */
const leftoverPagesMax = 100;
/** Replies acknowledged together at most this long after being read (see `flushAcks`). */
const ackIntervalMs = 100;
/** Replies acknowledged in one XACK at most. */
const ackBatchMax = 1_024;
/** Distinct request timeouts with their own queue before idle queues are dropped (callers use a few). */
const timeoutQueuesMax = 16;

export class Requester {
  private readonly bus: Bus;
  private readonly replyStream: string;
  private readonly consumer: string;
  private readonly timeoutMsDefault: number;
  private readonly pendingMax: number;
  private readonly readCount: number;
  private readonly blockMs: number;
  private readonly newRequestId: () => string;
  private readonly onError: (error: unknown) => void;
  private readonly onRecovered: () => void;
  private readonly waiting = new Map<string, Waiting>();
  /** One timeout queue per distinct timeoutMs (one timer each, not one per request). */
  private readonly timeouts = new Map<number, DeadlineQueue<Waiting>>();
  private readonly stop = new AbortController();
  private loopDone: Promise<void> = Promise.resolve();
  /** Replies dispatched but not yet acknowledged (see `flushAcks`). */
  private unacked: EntryId[] = [];
  private lastAckAtMs = 0;
  private ackInFlight: Promise<void> | null = null;
  private unmatchedReplies = 0;
  private closed = false;
  /** `requestInBatch` requests of this turn, per stream; appended together by `flushBatches`. */
  private readonly outgoing = new Map<string, OutgoingBatch>();
  private flushScheduled = false;

  private constructor(options: RequesterOptions) {
    this.bus = options.bus;
    this.replyStream = options.replyStream;
    this.consumer = options.consumer ?? 'requester';
    this.timeoutMsDefault = options.timeoutMsDefault ?? timeoutMsDefault;
    this.pendingMax = options.pendingMax ?? pendingMaxDefault;
    this.readCount = options.readCount ?? readCountDefault;
    this.blockMs = options.blockMs ?? blockMsDefault;
    this.newRequestId = options.newRequestId ?? sequentialRequestIds();
    this.onError = options.onError ?? (() => undefined);
    this.onRecovered = options.onRecovered ?? (() => undefined);
    for (const [name, value] of Object.entries({ pendingMax: this.pendingMax, readCount: this.readCount, blockMs: this.blockMs })) {
      if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer`);
    }
  }

  /** Creates the reply stream's group, drops a previous incarnation's leftovers, starts the loop. */
  static async start(options: RequesterOptions): Promise<Requester> {
    const requester = new Requester(options);
    await requester.bus.ensureGroup(requester.replyStream, replyGroup);
    await requester.dropLeftovers();
    requester.loopDone = requester.loop();
    return requester;
  }

  get stats(): RequesterStats {
    return { pending: this.waiting.size, unmatchedReplies: this.unmatchedReplies };
  }

  /**
   * Appends `payload` to `stream` with reply headers and resolves with the reply. `payload` may be
   * a function of the reply address, to embed it in the command body (e.g. a CommandEnvelope).
   * Never throws: every failure is a rejection.
   */
  async request(stream: string, payload: string | ((replyTo: ReplyAddress) => string), options: RequestOptions = {}): Promise<Reply> {
    const { requestId, replied } = this.register(options.timeoutMs);
    const body = typeof payload === 'function' ? this.encodeOrForget(requestId, payload) : payload;
    const headers =
      options.headers === undefined
        ? { [headerReplyTo]: this.replyStream, [headerRequestId]: requestId }
        : { ...options.headers, [headerReplyTo]: this.replyStream, [headerRequestId]: requestId };
    // Not awaited here: the reply may come before the append's own answer; a failed append rejects `replied`.
    this.bus
      .append(stream, body, { headers, maxLenApprox: options.maxLenApprox ?? commandStreamMaxLenApprox })
      .then(undefined, (error: unknown) => this.appendFailed([requestId], error));
    return replyOf(await replied);
  }

  /**
   * Like `request`, but the command goes out in a batched entry with the other `requestInBatch`
   * requests for the same stream of this event-loop turn (`batchRequestsMax` at most per entry),
   * and resolves with the reply's value, parsed from JSON once. `command` must give JSON text (the
   * entry's payload is the array of them); it carries the reply address itself, since the entry's
   * headers name only the reply stream. Options other than `timeoutMs` and `maxLenApprox` are not
   * used. Never throws: every failure is a rejection.
   */
  async requestInBatch(stream: string, command: (replyTo: ReplyAddress) => string, options: RequestOptions = {}): Promise<unknown> {
    const { requestId, replied } = this.register(options.timeoutMs);
    const text = this.encodeOrForget(requestId, command);
    const maxLenApprox = options.maxLenApprox ?? commandStreamMaxLenApprox;
    let batch = this.outgoing.get(stream);
    if (batch === undefined) {
      batch = { stream, texts: [], requestIds: [], maxLenApprox };
      this.outgoing.set(stream, batch);
    }
    batch.texts.push(text);
    batch.requestIds.push(requestId);
    batch.maxLenApprox = Math.min(batch.maxLenApprox, maxLenApprox);
    if (batch.texts.length >= batchRequestsMax) this.sendBatch(batch);
    else if (!this.flushScheduled) {
      // Once this turn's I/O callbacks have run: every request they made for a stream goes in its entry.
      this.flushScheduled = true;
      setImmediate(() => this.flushBatches());
    }
    return valueOf(await replied);
  }

  /** A new request id, waiting for its reply (registered before anything is appended: a fast consumer may reply first). */
  private register(timeoutMsOption: number | undefined): { requestId: string; replied: Promise<Arrived> } {
    if (this.closed) throw new RequesterClosedError();
    if (this.waiting.size >= this.pendingMax) throw new RequesterOverloadedError(this.pendingMax);
    const timeoutMs = timeoutMsOption ?? this.timeoutMsDefault;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new RangeError('timeoutMs must be a positive integer');
    const requestId = this.newRequestId();
    if (this.waiting.has(requestId)) throw new Error(`duplicate request id ${requestId}`);
    const replied = new Promise<Arrived>((resolve, reject) => {
      const waiting = new Waiting(requestId, timeoutMs, resolve, reject);
      this.waiting.set(requestId, waiting);
      this.timeoutQueue(timeoutMs).add(waiting);
    });
    return { requestId, replied };
  }

  /** The request's text; if encoding it throws, the request stops waiting (nothing was sent) and the error goes to the caller. */
  private encodeOrForget(requestId: string, encode: (replyTo: ReplyAddress) => string): string {
    try {
      return encode({ stream: this.replyStream, requestId });
    } catch (error) {
      this.settle(requestId);
      throw error;
    }
  }

  private flushBatches(): void {
    this.flushScheduled = false;
    for (const batch of [...this.outgoing.values()]) this.sendBatch(batch);
  }

  /** Appends one stream's batch as one entry: a JSON array of the requests' texts, joined as they are. */
  private sendBatch(batch: OutgoingBatch): void {
    this.outgoing.delete(batch.stream);
    const headers = { [headerReplyTo]: this.replyStream, [headerBatchCount]: String(batch.texts.length) };
    this.bus
      .append(batch.stream, `[${batch.texts.join(',')}]`, { headers, maxLenApprox: batch.maxLenApprox })
      .then(undefined, (error: unknown) => this.appendFailed(batch.requestIds, error));
  }

  /** Stops the loop, rejects every waiting request with RequesterClosedError. Does not close the bus. */
  async close(): Promise<void> {
    this.shutdown();
    await this.loopDone;
    await this.ackInFlight;
  }

  private appendFailed(requestIds: readonly string[], error: unknown): void {
    const failure = error instanceof Error ? error : new Error(String(error));
    for (const requestId of requestIds) this.settle(requestId)?.reject(failure);
  }

  private timeoutQueue(timeoutMs: number): DeadlineQueue<Waiting> {
    const existing = this.timeouts.get(timeoutMs);
    if (existing !== undefined) return existing;
    if (this.timeouts.size >= timeoutQueuesMax) {
      // An idle queue holds nothing; its timer, if still armed, fires once and finds nothing.
      for (const [duration, queue] of this.timeouts) if (queue.size === 0) this.timeouts.delete(duration);
    }
    const queue = new DeadlineQueue<Waiting>(timeoutMs, (waiting) => this.timedOut(waiting));
    this.timeouts.set(timeoutMs, queue);
    return queue;
  }

  private timedOut(waiting: Waiting): void {
    if (this.waiting.get(waiting.requestId) !== waiting) return;
    this.waiting.delete(waiting.requestId);
    waiting.reject(new RequestTimeoutError(waiting.requestId, waiting.timeoutMs));
  }

  private shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    this.outgoing.clear();
    for (const requestId of [...this.waiting.keys()]) this.settle(requestId)?.reject(new RequesterClosedError());
    for (const queue of this.timeouts.values()) queue.clear();
    this.timeouts.clear();
  }

  private settle(requestId: string): Waiting | undefined {
    const waiting = this.waiting.get(requestId);
    if (waiting === undefined) return undefined;
    this.timeouts.get(waiting.timeoutMs)?.delete(waiting);
    this.waiting.delete(requestId);
    return waiting;
  }

  private dispatch(entry: BusEntry): void {
    if (entry.headers[headerBatchCount] !== undefined) {
      this.dispatchBatch(entry);
      return;
    }
    const requestId = entry.headers[headerRequestId];
    const waiting = requestId === undefined ? undefined : this.settle(requestId);
    if (requestId === undefined || waiting === undefined) {
      this.unmatchedReplies += 1;
      return;
    }
    waiting.resolve({ requestId, entry, text: entry.payload });
  }

  /** A batched reply entry: `[[requestId, reply], …]`, parsed once; each reply goes to its caller. */
  private dispatchBatch(entry: BusEntry): void {
    const items = parseReplyBatch(entry.payload);
    if (items === null) {
      this.unmatchedReplies += 1;
      return;
    }
    for (const [requestId, value] of items) {
      const waiting = this.settle(requestId);
      if (waiting === undefined) this.unmatchedReplies += 1;
      else waiting.resolve({ requestId, entry, value });
    }
  }

  private async dropLeftovers(): Promise<void> {
    for (let page = 0; page < leftoverPagesMax; page += 1) {
      const batch = await this.bus.readPending(this.replyStream, replyGroup, this.consumer, { count: this.readCount });
      const ids = batch.entries.map((entry) => entry.id);
      if (ids.length > 0) await this.bus.ack(this.replyStream, replyGroup, ids);
      if (ids.length + batch.deletedIds.length === 0) return;
    }
  }

  /**
   * Acknowledges the replies read so far, in the background, one XACK at a time. Replies are
   * acknowledged in bulk (every `ackIntervalMs` or `ackBatchMax` replies, and whenever a read comes
   * back empty), not after every read: acknowledging only keeps the group's pending list short — a
   * reply is never read twice by the running loop, and a restarted process drops leftovers
   * (`dropLeftovers`) — so it need not delay the next read nor cost a command per read.
   */
  private flushAcks(): void {
    if (this.ackInFlight !== null || this.unacked.length === 0) return;
    const ids = this.unacked;
    this.unacked = [];
    this.lastAckAtMs = Date.now();
    this.ackInFlight = this.bus.ack(this.replyStream, replyGroup, ids).then(
      () => {
        this.ackInFlight = null;
      },
      (error: unknown) => {
        this.ackInFlight = null;
        // A missing group shows up on the next read too, which recreates it; closing ends the loop.
        if (!this.closed) this.onError(error);
      },
    );
  }

  /** The one reader of the reply stream. Never throws; backs off on failures until closed. */
  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.closed) {
      try {
        const entries = await this.bus.read(replyGroup, this.consumer, [this.replyStream], {
          count: this.readCount,
          blockMs: this.blockMs,
          signal: this.stop.signal,
        });
        if (failures > 0) this.onRecovered();
        failures = 0;
        for (const entry of entries) {
          this.dispatch(entry);
          this.unacked.push(entry.id);
        }
        if (entries.length === 0 || this.unacked.length >= ackBatchMax || Date.now() - this.lastAckAtMs >= ackIntervalMs) this.flushAcks();
      } catch (error) {
        if (this.closed) return;
        if (error instanceof BusError && error.code === 'closed') {
          // The bus was closed under us: no reply can arrive any more.
          this.shutdown();
          return;
        }
        this.onError(error);
        failures += 1;
        // The stream (and its group) may have been deleted, e.g. by an operator: recreate it.
        if (error instanceof BusError && error.code === 'no_group') {
          await this.bus.ensureGroup(this.replyStream, replyGroup).catch((cause: unknown) => this.onError(cause));
        }
        await abortableDelay(Math.min(25 * 2 ** failures, backoffMsMax), this.stop.signal);
      }
    }
  }
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export interface ReplyOptions {
  readonly headers?: Headers;
  /** Trim bound of the reply stream; default `replyStreamMaxLenApprox`. */
  readonly maxLenApprox?: number;
}

/** The reply address a command entry carries, or null for a command that expects no reply. */
export function replyAddressOf(entry: BusEntry): ReplyAddress | null {
  const stream = entry.headers[headerReplyTo];
  const requestId = entry.headers[headerRequestId];
  return stream === undefined || requestId === undefined ? null : { stream, requestId };
}

/** Sends a reply to an address (e.g. one stored with a deferred reply). */
export async function replyTo(bus: Bus, address: ReplyAddress, payload: string, options: ReplyOptions = {}): Promise<EntryId> {
  return bus.append(address.stream, payload, {
    headers: { ...options.headers, [headerRequestId]: address.requestId },
    maxLenApprox: options.maxLenApprox ?? replyStreamMaxLenApprox,
  });
}

/** A reply for a batched reply entry: where it goes and the reply itself, any JSON value. */
export interface AddressedReply {
  readonly to: ReplyAddress;
  readonly payload: unknown;
}

/**
 * Sends replies as batched reply entries: one entry per reply stream (per asking edge), with
 * `batchRepliesMax` replies at most (more go out in several), each encoded once:
 * `[[requestId, reply], …]` with the header `n`. The Requester resolves each request from it.
 */
export async function replyBatches(bus: Bus, replies: readonly AddressedReply[], options: ReplyOptions = {}): Promise<void> {
  const byStream = new Map<string, Array<[string, unknown]>>();
  for (const { to, payload } of replies) {
    const items = byStream.get(to.stream);
    if (items === undefined) byStream.set(to.stream, [[to.requestId, payload]]);
    else items.push([to.requestId, payload]);
  }
  const maxLenApprox = options.maxLenApprox ?? replyStreamMaxLenApprox;
  const appends: Array<Promise<EntryId>> = [];
  for (const [stream, items] of byStream) {
    for (let start = 0; start < items.length; start += batchRepliesMax) {
      const chunk = items.slice(start, start + batchRepliesMax);
      const headers = { ...options.headers, [headerBatchCount]: String(chunk.length) };
      appends.push(bus.append(stream, JSON.stringify(chunk), { headers, maxLenApprox }));
    }
  }
  await Promise.all(appends);
}

/** A batched reply entry's items, or null when its payload is not such an array. */
function parseReplyBatch(text: string): Array<[string, unknown]> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) return null;
  const items: Array<[string, unknown]> = [];
  for (const item of parsed as unknown[]) {
    if (!Array.isArray(item) || item.length !== 2 || typeof item[0] !== 'string') return null;
    items.push([item[0], item[1]]);
  }
  return items;
}

/** Replies to a command entry; null when the command carried no reply address. */
export async function reply(bus: Bus, entry: BusEntry, payload: string, options: ReplyOptions = {}): Promise<EntryId | null> {
  const address = replyAddressOf(entry);
  return address === null ? null : replyTo(bus, address, payload, options);
}
