// One request/response exchange: the only place that writes to a uWS response. An exchange lives
// from the request head to its one answer (or the client's abort): it reads or streams the body
// under its deadlines and minimum rate, runs the handler under its timeout, maps a thrown error to
// 500 (or 503 for an infrastructure failure), and writes one access-log line at the end.
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Readable } from 'node:stream';
import { BodyCutError, RequestBodyStream, type BodyFlow, type BodyReader } from './body.ts';
import type { Admission } from './fair-shares.ts';
import { DeadlineLink, DeadlineQueue } from '../bus/deadline-queue.ts';
import { errorResponse, unavailableReason } from './errors.ts';
import { writeAccessLog, type AccessLogEntry } from './access-log.ts';
import { checkResponse, headerNamesOf, tooLarge, writeResponse } from './http-response.ts';
import type { HttpResponse, RequestContext, RequestErrorInfo, Route } from './http-types.ts';

export const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const emptyBody = Buffer.alloc(0);

/** The keeper item of a `Deadlines` (it carries nothing: only its place in the queue matters). */
class TimerKeeper extends DeadlineLink {}

/**
 * A deadline queue for exchanges that keeps its Node timer armed between requests while the app
 * listens. A DeadlineQueue disarms its timer whenever it empties, and a request body usually
 * arrives in the tick its headers did (and at low concurrency each handler finishes before the
 * next starts): without the keeper, each such request would arm a timer and clear it again. The
 * keeper is one more item, added in front of an exchange when it is not already waiting; it
 * expires like any item and then waits again only when the next exchange comes, so an idle app
 * stops its timer one duration after its last request. Exchanges' own deadlines are unchanged.
 */
export class Deadlines<Item extends DeadlineLink = Exchange> {
  private readonly queue: DeadlineQueue<Item | TimerKeeper>;
  private readonly keeper = new TimerKeeper();
  private keeperWaiting = false;
  private keeping = false;

  constructor(durationMs: number, onExpired: (item: Item) => void) {
    this.queue = new DeadlineQueue<Item | TimerKeeper>(durationMs, (item) => {
      if (item instanceof TimerKeeper) this.keeperWaiting = false;
      else onExpired(item);
    });
  }

  add(item: Item): void {
    if (this.keeping && !this.keeperWaiting) {
      this.keeperWaiting = true;
      this.queue.add(this.keeper);
    }
    this.queue.add(item);
  }

  delete(item: Item): void {
    this.queue.delete(item);
  }

  /** On while listening; off drops the keeper, so a closed app's timer ends with its last request. */
  keepArmed(on: boolean): void {
    this.keeping = on;
    if (!on && this.keeperWaiting) {
      this.keeperWaiting = false;
      this.queue.delete(this.keeper);
    }
  }
}

export interface ExchangeHooks {
  /** Draining: every response closes its connection. */
  readonly draining: () => boolean;
  readonly logger: Logger;
  readonly onFinished: () => void;
  readonly reportError: (error: unknown, info: RequestErrorInfo) => void;
  /** A handler failed for an infrastructure reason (answered 503): counted, logged rate-limited. */
  readonly reportUnavailable: (reason: string, info: RequestErrorInfo) => void;
  readonly onRequestFinished?: ((entry: AccessLogEntry) => void) | undefined;
  /** Requests whose body is being read (`bodyReadTimeoutMs`). */
  readonly bodyDeadlines: Deadlines;
  /** Requests whose handler is running (`handlerTimeoutMs`). */
  readonly handlerDeadlines: Deadlines;
  /** Bodies being read, one entry per rate window (`bodyRateWindowMs`); null when the check is off. */
  readonly bodyRateWindows: Deadlines<BodyRateWatch> | null;
  /** Fewest bytes a rate window must bring. */
  readonly bodyBytesPerWindowMin: number;
}

/** A body being read, waiting for the end of its current rate window (see `Exchange.bodyRateWindowEnded`). */
export class BodyRateWatch extends DeadlineLink {
  /** Bytes received when the current window began. */
  windowStartBytes = 0;
  constructor(readonly exchange: Exchange) {
    super();
  }
}

export class Exchange extends DeadlineLink implements BodyFlow {
  aborted = false;
  private responded = false;
  private finished = false;
  handlerRunning = false;
  routePattern: string | null = null;
  partnerId: string | null = null;
  /** The guard's pending decision (`GuardResult.wait`), awaited before the handler. */
  guardWait: Promise<HttpResponse | null> | null = null;
  /** The guard logged the refusal itself (`GuardResult.skipAccessLog`). */
  skipAccessLog = false;
  /** The request's hold on its fair share, once admitted. */
  admission: Admission | null = null;
  bodyReader: BodyReader | null = null;
  /** The body of a streamed route, handed to the handler as it arrives. */
  private bodyStream: RequestBodyStream | null = null;
  private streamedBodyBytesMax = 0;
  /** The deadline queue this exchange waits in (body read or handler), if any. */
  private deadlines: Deadlines | null = null;
  private rateWatch: BodyRateWatch | null = null;
  /** True while reading the socket is paused because a streamed body's consumer fell behind. */
  private readingPaused = false;
  private remoteAddressText: string | null = null;
  private readonly startedAt = performance.now();

  constructor(
    private readonly res: UwsResponse,
    readonly method: string,
    readonly requestId: string,
    private readonly hooks: ExchangeHooks,
  ) {
    super();
  }

  /** True once answered or abandoned by the client: nothing more may be written. */
  get done(): boolean {
    return this.responded || this.aborted;
  }

  /** The TCP peer, read on first use (a syscall most requests never need); '' once the response is gone. */
  remoteAddress(): string {
    if (this.remoteAddressText === null) {
      if (this.done) return '';
      this.remoteAddressText = Buffer.from(this.res.getRemoteAddressAsText()).toString('latin1');
    }
    return this.remoteAddressText;
  }

  onAborted(): void {
    this.aborted = true;
    this.stopWatchingBody();
    this.cutBodyStream('aborted');
    if (!this.handlerRunning) this.finish(null);
  }

  /** Counts down `bodyReadTimeoutMs` (see `bodyTimedOut`) and checks the body's rate (see `bodyRateWindowEnded`). */
  startBodyTimer(): void {
    this.waitIn(this.hooks.bodyDeadlines);
    this.watchBodyRate();
  }

  clearTimer(): void {
    this.deadlines?.delete(this);
    this.deadlines = null;
  }

  /** A buffered body is read (or refused): its read deadline and rate check end. */
  bodyReadEnded(): void {
    this.clearTimer();
    this.stopWatchingBody();
  }

  bodyTimedOut(): void {
    this.deadlines = null;
    this.cutBody('timeout', 'Request body not received in time');
  }

  /**
   * A rate window ended while the body was still arriving. Judged after the next I/O poll, not now:
   * a timer can fire right after the event loop was busy (a GC, a burst of work), before the bytes
   * that reached the socket meanwhile were read, and those count for the client.
   */
  bodyRateWindowEnded(watch: BodyRateWatch): void {
    if (this.done || this.rateWatch !== watch) return;
    setImmediate(() => this.judgeBodyRate(watch));
  }

  /** Cuts the body if its window brought too little; otherwise a new window begins. */
  private judgeBodyRate(watch: BodyRateWatch): void {
    // Gone meanwhile: answered, the body complete or paused (a new watch when it resumes).
    if (this.done || this.rateWatch !== watch || watch.waitingIn !== null) return;
    const received = this.receivedBytes();
    if (received - watch.windowStartBytes < this.hooks.bodyBytesPerWindowMin) {
      this.rateWatch = null;
      this.clearTimer();
      this.cutBody('too_slow', 'Request body arriving too slowly');
      return;
    }
    watch.windowStartBytes = received;
    this.hooks.bodyRateWindows?.add(watch);
  }

  /**
   * Streamed routes: the handler runs while the body arrives (under the body's deadlines); the
   * handler's own deadline starts when the last byte is in.
   */
  streamBody(route: Route, ctx: IncomingRequest, bodyBytesMax: number): void {
    this.streamedBodyBytesMax = bodyBytesMax;
    const stream = new RequestBodyStream(this, bodyBytesMax);
    this.bodyStream = stream;
    this.bodyReader = stream;
    ctx.bodyStream = stream;
    this.startBodyTimer();
    this.res.onData((chunk, isLast) => this.onStreamedChunk(chunk, isLast));
    this.startHandler(route, ctx);
  }

  private onStreamedChunk(chunk: ArrayBuffer, isLast: boolean): void {
    const stream = this.bodyStream;
    if (stream === null || this.done) return;
    const outcome = stream.onChunk(chunk, isLast);
    if (outcome === 'too_large') {
      this.clearTimer();
      this.stopWatchingBody();
      this.handlerRunning = false;
      this.cutBodyStream('too_large');
      this.respond(tooLarge(this.streamedBodyBytesMax), true);
    } else if (outcome === 'complete') {
      this.stopWatchingBody();
      if (this.handlerRunning) this.waitIn(this.hooks.handlerDeadlines);
    }
  }

  pauseReading(): void {
    if (this.done || this.readingPaused) return;
    this.readingPaused = true;
    // Time the consumer spends catching up is not the client's: the rate window stops meanwhile.
    this.stopWatchingBody();
    this.res.pause();
  }

  resumeReading(): void {
    if (this.done || !this.readingPaused) return;
    this.readingPaused = false;
    this.res.resume();
    this.watchBodyRate();
  }

  /**
   * Runs the route's handler under `handlerTimeoutMs` (after the guard's `wait`, if it left one),
   * then answers with what it returned.
   */
  runHandler(route: Route, ctx: RequestContext): void {
    this.waitIn(this.hooks.handlerDeadlines);
    this.startHandler(route, ctx);
  }

  private startHandler(route: Route, ctx: RequestContext): void {
    this.handlerRunning = true;
    let answer: Promise<HttpResponse>;
    try {
      const guardWait = this.guardWait;
      answer = guardWait === null ? route.handler(ctx) : guardWait.then((refusal) => refusal ?? route.handler(ctx));
    } catch (error) {
      return this.handlerFailed(error);
    }
    answer.then(
      (response) => this.handlerAnswered(response),
      (error: unknown) => this.handlerFailed(error),
    );
  }

  /** The handler's time is up: 503 now; its late answer, whatever it is, is dropped. */
  handlerTimedOut(timeoutMs: number): void {
    this.deadlines = null;
    if (!this.handlerRunning) return;
    this.handlerRunning = false;
    this.hooks.logger.warn({ requestId: this.requestId, route: this.routePattern, timeoutMs }, 'handler timed out');
    this.respond(errorResponse('service_unavailable', 'The request took too long; retry later'));
  }

  private handlerAnswered(response: HttpResponse): void {
    if (!this.handlerRunning) return;
    this.handlerRunning = false;
    this.clearTimer();
    this.respond(response);
  }

  private handlerFailed(error: unknown): void {
    if (!this.handlerRunning) return;
    this.handlerRunning = false;
    this.clearTimer();
    const unavailable = unavailableReason(error);
    if (unavailable !== null) {
      this.hooks.reportUnavailable(unavailable, this.info());
      return this.respond(errorResponse('service_unavailable', unavailable));
    }
    this.hooks.reportError(error, this.info());
    this.respond(errorResponse('server_error'));
  }

  /** 408 and close: the body did not arrive (in time, or fast enough); a streaming handler's late answer is dropped. */
  private cutBody(cause: 'timeout' | 'too_slow', reason: string): void {
    this.stopWatchingBody();
    if (this.bodyStream !== null) {
      this.handlerRunning = false;
      this.cutBodyStream(cause);
    }
    this.respond(errorResponse('request_timeout', reason), true);
  }

  /** The consumer of a streamed body sees it fail (nothing more will arrive). */
  private cutBodyStream(cause: BodyCutError['cutBy']): void {
    const stream = this.bodyStream;
    if (stream !== null && !stream.complete && !stream.destroyed) stream.destroy(new BodyCutError(cause));
  }

  private receivedBytes(): number {
    return this.bodyReader?.receivedBytes() ?? 0;
  }

  private watchBodyRate(): void {
    const windows = this.hooks.bodyRateWindows;
    if (windows === null || this.done) return;
    this.rateWatch ??= new BodyRateWatch(this);
    this.rateWatch.windowStartBytes = this.receivedBytes();
    windows.add(this.rateWatch);
  }

  private stopWatchingBody(): void {
    if (this.rateWatch === null) return;
    this.hooks.bodyRateWindows?.delete(this.rateWatch);
    this.rateWatch = null;
  }

  private waitIn(deadlines: Deadlines): void {
    this.clearTimer();
    this.deadlines = deadlines;
    deadlines.add(this);
  }

  /**
   * Writes the response once, unless the client is gone. `closeConnection` when the request body
   * was not (fully) consumed: the connection is not reusable and we will not read the rest (a
   * streamed body not read to its end closes it too).
   */
  respond(response: HttpResponse, closeConnection = false): void {
    if (this.responded || this.aborted) return this.finish(null);
    this.responded = true;
    let status = response.status;
    const bodyUnread = this.bodyStream !== null && !this.bodyStream.complete;
    const close = closeConnection || bodyUnread || this.hooks.draining();
    try {
      const names = headerNamesOf(response);
      checkResponse(response, names);
      this.res.cork(() => writeResponse(this.res, this.requestId, this.method, response, names, close));
    } catch (error) {
      // Only a malformed response from our own code gets here (bad status or header), before any
      // byte was written: replace it with a generic 500.
      this.hooks.reportError(error, this.info());
      status = 500;
      const fallback = errorResponse('server_error');
      const names = Object.keys(fallback.headers ?? {});
      this.res.cork(() => writeResponse(this.res, this.requestId, this.method, fallback, names, true));
    }
    this.finish(status);
  }

  info(): RequestErrorInfo {
    return { requestId: this.requestId, method: this.method, routePattern: this.routePattern };
  }

  private finish(status: number | null): void {
    if (this.finished) return;
    this.finished = true;
    this.clearTimer();
    this.stopWatchingBody();
    this.bodyReader?.release();
    this.admission?.release();
    this.hooks.onFinished();
    const { logger, onRequestFinished } = this.hooks;
    // The entry is built only for someone: at LOG_LEVEL=warn and without a hook nothing is.
    const logged = !this.skipAccessLog && logger.isLevelEnabled('info');
    if (!logged && onRequestFinished === undefined) return;
    const entry: AccessLogEntry = {
      method: this.method,
      route: this.routePattern,
      status,
      durationMs: performance.now() - this.startedAt,
      requestId: this.requestId,
      partnerId: this.partnerId,
      requestBytes: this.receivedBytes(),
      aborted: this.aborted,
    };
    if (logged) writeAccessLog(logger, entry);
    onRequestFinished?.(entry);
  }
}

/** What a guard and then the handler see: copied from uWS up front, except the peer address. */
export class IncomingRequest implements RequestContext {
  body: Buffer = emptyBody;
  bodyStream: Readable | null = null;
  partnerId: string | null = null;

  constructor(
    private readonly exchange: Exchange,
    readonly method: string,
    readonly path: string,
    readonly routePattern: string,
    readonly params: Readonly<Record<string, string>>,
    readonly query: Readonly<Record<string, string>>,
    readonly headers: Readonly<Record<string, string>>,
    readonly requestId: string,
    readonly receivedAtMs: number,
  ) {}

  get remoteAddress(): string {
    return this.exchange.remoteAddress();
  }
}

