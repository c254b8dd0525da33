// Request/reply over the bus. An edge process owns one reply stream (`replyStreamKey(prefix, edgeId)`)
// and one Requester: `request` appends a command carrying the headers `replyTo` and `requestId`,
// then waits for the reply with that requestId. A single loop reads the reply stream and hands each
// reply to its waiting caller, so a thousand concurrent requests cost one blocking read, not a
// thousand. The consumer side answers with `reply(bus, entry, payload)` (or `replyTo` for a reply
// deferred past the command's handling). Replies are at-least-once like everything on the bus: a
// duplicate or late reply (after a timeout) finds no waiting caller and is dropped and counted.
import { randomUUID } from 'node:crypto';
import {
  BusError,
  headerReplyTo,
  headerRequestId,
  type Bus,
  type BusEntry,
  type EntryId,
  type Headers,
} from './bus.ts';
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

export type RequestErrorCode = 'timeout' | 'overloaded' | 'closed';

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
  readonly newRequestId?: () => string;
  /** Reply-loop failures (e.g. Redis unreachable); the loop backs off and keeps going. */
  readonly onError?: (error: unknown) => void;
}

export interface RequestOptions {
  readonly timeoutMs?: number;
  readonly headers?: Headers;
  /** Trim bound for the command stream (see docs/bus.md); default `commandStreamMaxLenApprox`. */
  readonly maxLenApprox?: number;
}

export interface RequesterStats {
  readonly pending: number;
  /** Replies that arrived with no caller waiting (after a timeout, or duplicates). */
  readonly unmatchedReplies: number;
}

interface Waiting {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
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
  private readonly waiting = new Map<string, Waiting>();
  private readonly stop = new AbortController();
  private loopDone: Promise<void> = Promise.resolve();
  private unmatchedReplies = 0;
  private closed = false;

  private constructor(options: RequesterOptions) {
    this.bus = options.bus;
    this.replyStream = options.replyStream;
    this.consumer = options.consumer ?? 'requester';
    this.timeoutMsDefault = options.timeoutMsDefault ?? timeoutMsDefault;
    this.pendingMax = options.pendingMax ?? pendingMaxDefault;
    this.readCount = options.readCount ?? readCountDefault;
    this.blockMs = options.blockMs ?? blockMsDefault;
    this.newRequestId = options.newRequestId ?? randomUUID;
    this.onError = options.onError ?? (() => undefined);
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
   */
  async request(
    stream: string,
    payload: string | ((replyTo: ReplyAddress) => string),
    options: RequestOptions = {},
  ): Promise<Reply> {
    if (this.closed) throw new RequesterClosedError();
    if (this.waiting.size >= this.pendingMax) throw new RequesterOverloadedError(this.pendingMax);
    const timeoutMs = options.timeoutMs ?? this.timeoutMsDefault;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new RangeError('timeoutMs must be a positive integer');
    const requestId = this.newRequestId();
    if (this.waiting.has(requestId)) throw new Error(`duplicate request id ${requestId}`);
    const address: ReplyAddress = { stream: this.replyStream, requestId };
    const body = typeof payload === 'function' ? payload(address) : payload;
    // Register before appending: a fast consumer may reply before append() returns.
    const replied = new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(requestId);
        reject(new RequestTimeoutError(requestId, timeoutMs));
      }, timeoutMs);
      this.waiting.set(requestId, { resolve, reject, timer });
    });
    // The timeout may fire while the append is still in flight; the rejection is returned below.
    replied.catch(() => undefined);
    try {
      await this.bus.append(stream, body, {
        headers: { ...options.headers, [headerReplyTo]: this.replyStream, [headerRequestId]: requestId },
        maxLenApprox: options.maxLenApprox ?? commandStreamMaxLenApprox,
      });
    } catch (error) {
      this.settle(requestId)?.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return replied;
  }

  /** Stops the loop, rejects every waiting request with RequesterClosedError. Does not close the bus. */
  async close(): Promise<void> {
    this.shutdown();
    await this.loopDone;
  }

  private shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    for (const requestId of [...this.waiting.keys()]) this.settle(requestId)?.reject(new RequesterClosedError());
  }

  private settle(requestId: string): Waiting | undefined {
    const waiting = this.waiting.get(requestId);
    if (waiting === undefined) return undefined;
    clearTimeout(waiting.timer);
    this.waiting.delete(requestId);
    return waiting;
  }

  private dispatch(entry: BusEntry): void {
    const requestId = entry.headers[headerRequestId];
    const waiting = requestId === undefined ? undefined : this.settle(requestId);
    if (requestId === undefined || waiting === undefined) {
      this.unmatchedReplies += 1;
      return;
    }
    waiting.resolve({ requestId, payload: entry.payload, headers: entry.headers, entryId: entry.id });
  }

  private async dropLeftovers(): Promise<void> {
    for (let page = 0; page < leftoverPagesMax; page += 1) {
      const batch = await this.bus.readPending(this.replyStream, replyGroup, this.consumer, { count: this.readCount });
      const ids = batch.entries.map((entry) => entry.id);
      if (ids.length > 0) await this.bus.ack(this.replyStream, replyGroup, ids);
      if (ids.length + batch.deletedIds.length === 0) return;
    }
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
        failures = 0;
        if (entries.length === 0) continue;
        for (const entry of entries) this.dispatch(entry);
        await this.bus.ack(this.replyStream, replyGroup, entries.map((entry) => entry.id));
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

/** Replies to a command entry; null when the command carried no reply address. */
export async function reply(bus: Bus, entry: BusEntry, payload: string, options: ReplyOptions = {}): Promise<EntryId | null> {
  const address = replyAddressOf(entry);
  return address === null ? null : replyTo(bus, address, payload, options);
}
