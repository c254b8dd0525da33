// The HTTP toolkit the edge's routes are built on: a small router over uWebSockets.js with the
// uWS rules handled once, here, instead of in every route:
// - uWS's request object dies when the route callback returns, so everything a handler may need
//   (method, path, query, headers) is copied synchronously first; the peer address lives on the
//   response and is read only if asked for (a syscall per request otherwise);
// - a response may be aborted at any time: every write checks the aborted flag, goes through
//   `res.cork`, and happens at most once;
// - every request the router admits belongs to a fair share (fair-shares.ts: its partner's, or
//   the one share of unauthenticated requests) that bounds what it may hold at once: requests in
//   flight, buffered body bytes, uploads; over its share a partner gets 429, over the process's
//   budget everyone gets 503, and nobody can starve the others;
// - bodies are read under a byte cap (413 as soon as it is crossed, connection closed), a total
//   read time and a minimum rate (408 when a window passes with too few bytes: a slow body gives its
//   budget back instead of holding it); a route may take its body streamed (`bodyMode:
//   'streamed'`, uploads) instead of buffered; a GET or HEAD with a body is 400;
// - a thrown handler error is a generic 500, the real error goes to the log —
//   unless it is an infrastructure failure (Redis unreachable, no shard worker, no reply in time:
//   `unavailableReason` in errors.ts), which is a 503 with Retry-After for every route and is
//   logged at most once a minute with a count, not once per request;
// - every response carries `X-Request-Id`; every request gives one access-log line;
// - per request, no timer (deadline queues, one timer per kind of timeout), no closure that a
//   class method can replace, and nothing built for a log level that drops it.
// Routing: exact segments and `:param` segments; the most specific matching pattern owns the path
// (static segments beat params, left to right). Unknown path → 404 `not_found`; known path with
// another method → 405 `method_not_allowed` with `Allow`. HEAD is served by the GET route without a
// body; OPTIONS answers 204 with `Allow` unless a route claims it. No CORS: this is a
// server-to-server API.
import { STATUS_CODES } from 'node:http';
import uWS from 'uWebSockets.js';
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Readable } from 'node:stream';
import {
  BodyCutError, RequestBodyStream, jsonBodyBytesMax, parseContentLength, readBody, type BodyFlow, type BodyReader,
} from './body.ts';
import {
  anonymousShareKey, createFairShares, fairShareDefaults, isRefusal, type Admission, type FairShareLimits, type Refusal,
  type ShareLimits,
} from './fair-shares.ts';
import { DeadlineLink, DeadlineQueue } from '../bus/deadline-queue.ts';
import { randomUuid } from './uuid.ts';
import { errorResponse, unavailableReason } from './errors.ts';
import { writeAccessLog, type AccessLogEntry } from './access-log.ts';
import { RateLimitedLog } from '../bus/outage-log.ts';
import { systemClock } from '../bus/bus.ts';
import type { HttpMethod, HttpResponse, RequestContext, GuardResult, Route } from './http-types.ts';

export { parseJsonBody, type BodyParse } from './body.ts';

export interface RequestErrorInfo {
  readonly requestId: string;
  readonly method: string;
  readonly routePattern: string | null;
}

export interface HttpAppOptions {
  readonly routes: readonly Route[];
  readonly logger: Logger;
  /** Default body cap per request; 64 KiB (JSON endpoints). */
  readonly bodyBytesMax?: number;
  /** Buffered bodies held by all in-flight requests together; 64 MiB. Beyond it: 503. */
  readonly bodyBytesInFlightMax?: number;
  /** Uploads (streamed bodies) in flight together; 32. Beyond it: 503. */
  readonly uploadsInFlightMax?: number;
  /** What each partner (and the ops caller) may hold at once (`fairShareDefaults.partner`). Beyond it: 429. */
  readonly partnerShare?: Partial<ShareLimits>;
  /** What all unauthenticated requests together may hold at once (`fairShareDefaults.anonymous`). Beyond it: 503. */
  readonly anonymousShare?: Partial<ShareLimits>;
  /** Concurrent requests being read or handled; 10,000. Beyond it: 503. */
  readonly inFlightRequestsMax?: number;
  /** Time from the request head to the last body byte; 60 s. Beyond it: 408 and close. */
  readonly bodyReadTimeoutMs?: number;
  /**
   * A body still arriving is checked once per window (5 s; the first window is the grace): a window
   * that brought fewer than `bodyBytesPerSecondMin` × its length is cut with 408 and close. Keep it
   * under uWS's 10 s idle timeout, which closes a silent connection without an answer.
   */
  readonly bodyRateWindowMs?: number;
  /** 16 KiB/s. 0 turns the rate check off. */
  readonly bodyBytesPerSecondMin?: number;
  /** Time a handler may take; 30 s. Beyond it: 503 `service_unavailable` (the handler's late answer is dropped). */
  readonly handlerTimeoutMs?: number;
  /** 2,048 bytes. */
  readonly pathBytesMax?: number;
  /** 16 KiB of header names and values together (uWS itself stops at ~512 KiB and ~47 headers). Beyond it: 431. */
  readonly headerBytesMax?: number;
  /** 4,096 bytes of raw query string. */
  readonly queryStringBytesMax?: number;
  /** 32 query parameters. */
  readonly queryParamsCountMax?: number;
  /** Called (after logging) for every handler exception and internal failure; for metrics/alerts. */
  readonly onError?: (error: unknown, info: RequestErrorInfo) => void;
  /** Called once per request with its access-log entry, after the line is written (metrics). */
  readonly onRequestFinished?: (entry: AccessLogEntry) => void;
  /** Request ids for requests that bring none; a random UUID (`randomUuid`) by default. */
  readonly generateRequestId?: () => string;
}

export interface Listening {
  readonly port: number;
  /** Stops accepting connections; requests in flight finish on their own. */
  close(): void;
  /**
   * Graceful drain (SIGTERM): stops accepting connections, answers every request still arriving on
   * open keep-alive connections as usual but closes each connection after its response (clients
   * reconnect to another edge), and resolves once nothing is in flight or `timeoutMs` has passed,
   * with the number of requests still in flight then (0 = drained).
   */
  drain(timeoutMs: number): Promise<number>;
}

export interface HttpAppStats {
  readonly inFlightRequests: number;
  /** Buffered body bytes held by requests in flight. */
  readonly bodyBytesInFlight: number;
  /** Streamed bodies (uploads) in flight. */
  readonly uploadsInFlight: number;
}

export interface HttpApp {
  listen(host: string, port: number): Promise<Listening>;
  stats(): HttpAppStats;
  /** True once a drain has begun: readiness probes answer 503 so load balancers stop routing here. */
  draining(): boolean;
}

/** How often a drain checks whether the requests in flight have finished. */
const drainPollMs = 10;
/** Requests answered 503 for an infrastructure failure: one log line per this long at most. */
const unavailableLogIntervalMs = 60_000;

export const httpDefaults = {
  bodyBytesMax: jsonBodyBytesMax,
  bodyBytesInFlightMax: fairShareDefaults.bodyBytesInFlightMax,
  uploadsInFlightMax: fairShareDefaults.uploadsInFlightMax,
  inFlightRequestsMax: 10_000,
  bodyReadTimeoutMs: 60_000,
  bodyRateWindowMs: 5_000,
  bodyBytesPerSecondMin: 16 * 1024,
  handlerTimeoutMs: 30_000,
  pathBytesMax: 2048,
  headerBytesMax: 16 * 1024,
  queryStringBytesMax: 4096,
  queryParamsCountMax: 32,
} as const;

// ---------------------------------------------------------------------------------------------
// Response helpers

const jsonContentType = 'application/json; charset=utf-8';
/** The headers of every JSON response that adds none of its own (shared: responses are only read). */
const jsonHeaders: Readonly<Record<string, string>> = Object.freeze({ 'content-type': jsonContentType });

export function jsonResponse(status: number, value: unknown, headers?: Readonly<Record<string, string>>): HttpResponse {
  return { status, headers: headers === undefined ? jsonHeaders : { 'content-type': jsonContentType, ...headers }, body: JSON.stringify(value) };
}

/** A JSON response whose body is already JSON text (sent as is). */
export function jsonTextResponse(status: number, jsonText: string): HttpResponse {
  return { status, headers: jsonHeaders, body: jsonText };
}

export function emptyResponse(status: number, headers?: Readonly<Record<string, string>>): HttpResponse {
  return headers === undefined ? { status } : { status, headers };
}

// ---------------------------------------------------------------------------------------------
// Routing

type Segment = { readonly kind: 'static'; readonly value: string } | { readonly kind: 'param'; readonly name: string };

interface PathGroup {
  /** Pattern shape with params blanked, e.g. `/transaction/:`; one group per shape. */
  readonly shape: string;
  /** The first registered pattern of this shape (what the access log names). */
  readonly pattern: string;
  readonly segments: readonly Segment[];
  readonly hasParams: boolean;
  /** '1' per static segment, '0' per param: a higher string is a more specific pattern. */
  readonly specificity: string;
  readonly routes: Map<string, Route>;
  /** Value of the `Allow` header. */
  allow: string;
}

/** Path groups by segment count: a path is only compared with the patterns of its own length. */
type RouteTable = ReadonlyMap<number, readonly PathGroup[]>;

const paramNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;
const methods: readonly HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** uWS reports methods in lower case; upper-casing a string goes through ICU, a lookup does not. */
const upperCaseMethods: ReadonlyMap<string, string> = new Map(methods.map((method) => [method.toLowerCase(), method]));

function parsePattern(pattern: string): Segment[] {
  if (!pattern.startsWith('/')) throw new Error(`route pattern must start with '/': ${pattern}`);
  if (pattern === '/') return [];
  const names = new Set<string>();
  return pattern.slice(1).split('/').map((part): Segment => {
    if (part.startsWith(':')) {
      const name = part.slice(1);
      if (!paramNamePattern.test(name) || names.has(name)) throw new Error(`bad parameter '${part}' in ${pattern}`);
      names.add(name);
      return { kind: 'param', name };
    }
    if (part.length === 0 || part.includes('?') || part.includes('*')) throw new Error(`bad segment in ${pattern}`);
    return { kind: 'static', value: part };
  });
}

function compileRoutes(routes: readonly Route[]): RouteTable {
  const groups = new Map<string, PathGroup>();
  for (const route of routes) {
    if (!methods.includes(route.method)) throw new Error(`unsupported method ${String(route.method)}`);
    if (route.bodyBytesMax !== undefined && (!Number.isInteger(route.bodyBytesMax) || route.bodyBytesMax < 0)) {
      throw new Error(`bodyBytesMax of ${route.method} ${route.pattern} must be a non-negative integer`);
    }
    const segments = parsePattern(route.pattern);
    const shape = '/' + segments.map((s) => (s.kind === 'static' ? s.value : ':')).join('/');
    let group = groups.get(shape);
    if (group === undefined) {
      const specificity = segments.map((s) => (s.kind === 'static' ? '1' : '0')).join('');
      const hasParams = segments.some((s) => s.kind === 'param');
      group = { shape, pattern: route.pattern, segments, hasParams, specificity, routes: new Map(), allow: '' };
      groups.set(shape, group);
    }
    if (group.routes.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.pattern}`);
    group.routes.set(route.method, route);
  }
  const table = new Map<number, PathGroup[]>();
  for (const group of groups.values()) {
    const allowed = new Set(group.routes.keys());
    if (allowed.has('GET')) allowed.add('HEAD');
    allowed.add('OPTIONS');
    group.allow = methods.filter((method) => allowed.has(method)).join(', ');
    const sameLength = table.get(group.segments.length);
    if (sameLength === undefined) table.set(group.segments.length, [group]);
    else sameLength.push(group);
  }
  return table;
}

function matchesPath(group: PathGroup, pathSegments: readonly string[]): boolean {
  const segments = group.segments;
  for (let index = 0; index < segments.length; index += 1) {
    const segment = segments[index];
    const part = pathSegments[index] ?? '';
    if (segment === undefined || (segment.kind === 'static' ? segment.value !== part : part.length === 0)) return false;
  }
  return true;
}

function matchGroup(table: RouteTable, pathSegments: readonly string[]): PathGroup | null {
  const candidates = table.get(pathSegments.length);
  if (candidates === undefined) return null;
  let best: PathGroup | null = null;
  for (const group of candidates) {
    if (matchesPath(group, pathSegments) && (best === null || group.specificity > best.specificity)) best = group;
  }
  return best;
}

/** Params and query of requests that have none (shared, frozen: handlers only read them). */
const noEntries: Readonly<Record<string, string>> = Object.freeze(Object.create(null) as Record<string, string>);

function decodeParams(group: PathGroup, pathSegments: readonly string[]): Readonly<Record<string, string>> | null {
  if (!group.hasParams) return noEntries;
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [index, segment] of group.segments.entries()) {
    if (segment.kind !== 'param') continue;
    try {
      params[segment.name] = decodeURIComponent(pathSegments[index] ?? '');
    } catch {
      return null;
    }
  }
  return params;
}

type QueryParse = { readonly ok: true; readonly query: Readonly<Record<string, string>> } | { readonly ok: false; readonly reason: string };

const emptyQuery: QueryParse = { ok: true, query: noEntries };

/** The query's length was checked by the router (414): here only its parameters. */
function parseQuery(raw: string, countMax: number): QueryParse {
  if (raw.length === 0) return emptyQuery;
  const query: Record<string, string> = Object.create(null) as Record<string, string>;
  let count = 0;
  for (const [name, value] of new URLSearchParams(raw)) {
    count += 1;
    if (count > countMax) return { ok: false, reason: 'Too many query parameters' };
    if (name in query) return { ok: false, reason: `Query parameter '${name.slice(0, 64)}' given more than once` };
    query[name] = value;
  }
  return { ok: true, query };
}

// ---------------------------------------------------------------------------------------------
// Writing responses: status lines and header names are checked once and remembered.

const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const headerValueForbidden = /[\r\n\0]/;
/** Framing headers uWS writes itself; a handler's copy would corrupt the response. */
const framingHeaders = new Set(['content-length', 'transfer-encoding', 'connection', 'x-request-id']);

/** `200 OK`, … for each valid status used so far (at most the 400 statuses of 200–599). */
const statusLines = new Map<number, string>();

function statusLine(status: number): string {
  const known = statusLines.get(status);
  if (known !== undefined) return known;
  const statusText = STATUS_CODES[status];
  if (!Number.isInteger(status) || status < 200 || status > 599 || statusText === undefined) {
    throw new Error(`invalid response status ${status}`);
  }
  const line = `${status} ${statusText}`;
  statusLines.set(status, line);
  return line;
}

/** Header names found valid, with their lower-case form. Names come from our code (a few dozen). */
const checkedHeaderNames = new Map<string, string>();
const checkedHeaderNamesMax = 1024;

function lowerCaseHeaderName(name: string): string {
  const known = checkedHeaderNames.get(name);
  if (known !== undefined) return known;
  if (!headerNamePattern.test(name)) throw new Error(`invalid response header ${name}`);
  const lower = name.toLowerCase();
  if (checkedHeaderNames.size < checkedHeaderNamesMax) checkedHeaderNames.set(name, lower);
  return lower;
}

/** `jsonHeaders`' names: valid by construction, so responses using them skip the header checks. */
const jsonHeaderNames: readonly string[] = Object.freeze(Object.keys(jsonHeaders));

function headerNamesOf(response: HttpResponse): readonly string[] {
  const headers = response.headers;
  if (headers === undefined) return noHeaderNames;
  return headers === jsonHeaders ? jsonHeaderNames : Object.keys(headers);
}

/** Throws on an invalid status or header before anything is written (the caller answers 500). */
function checkResponse(response: HttpResponse, names: readonly string[]): void {
  statusLine(response.status);
  const headers = response.headers;
  if (headers === undefined || headers === jsonHeaders) return;
  for (const name of names) {
    lowerCaseHeaderName(name);
    if (headerValueForbidden.test(headers[name] ?? '')) throw new Error(`invalid response header ${name}`);
  }
}

function writeResponse(res: UwsResponse, requestId: string, method: string, response: HttpResponse, names: readonly string[], closeConnection: boolean): void {
  // uWS writes `200 OK` itself when no status was written: one native call less for most answers.
  if (response.status !== 200) res.writeStatus(statusLine(response.status));
  res.writeHeader('x-request-id', requestId);
  let hasCacheControl = false;
  const headers = response.headers;
  if (headers !== undefined) {
    for (const name of names) {
      const lower = lowerCaseHeaderName(name);
      if (framingHeaders.has(lower)) continue;
      if (lower === 'cache-control') hasCacheControl = true;
      res.writeHeader(lower, headers[name] ?? '');
    }
  }
  if (!hasCacheControl) res.writeHeader('cache-control', 'no-store');
  res.writeHeader('x-content-type-options', 'nosniff');
  const body = response.body ?? '';
  // uWS 20.30 quirk: endWithoutBody() must be called with no arguments; with a length or an
  // explicit undefined it leaves the response open (the client hangs, then onAborted fires).
  // So responses without a body cannot ask for the connection to close; uWS keeps parsing and
  // discarding any unread request body instead, which only HEAD/OPTIONS requests can cause here.
  if (response.status === 204 || response.status === 304) {
    res.endWithoutBody();
  } else if (method === 'HEAD') {
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    res.writeHeader('content-length', String(length));
    res.endWithoutBody();
  } else {
    res.end(body, closeConnection);
  }
}

// ---------------------------------------------------------------------------------------------
// One request/response exchange: the only place that writes to a uWS response.

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const emptyBody = Buffer.alloc(0);
const noHeaderNames: readonly string[] = Object.freeze([]);

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
class Deadlines<Item extends DeadlineLink = Exchange> {
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

interface ExchangeHooks {
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
class BodyRateWatch extends DeadlineLink {
  /** Bytes received when the current window began. */
  windowStartBytes = 0;
  constructor(readonly exchange: Exchange) {
    super();
  }
}

class Exchange extends DeadlineLink implements BodyFlow {
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
class IncomingRequest implements RequestContext {
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


// ---------------------------------------------------------------------------------------------
// The app

interface Limits {
  readonly bodyBytesMax: number;
  readonly inFlightRequestsMax: number;
  readonly bodyReadTimeoutMs: number;
  readonly bodyRateWindowMs: number;
  readonly bodyBytesPerSecondMin: number;
  readonly handlerTimeoutMs: number;
  readonly pathBytesMax: number;
  readonly headerBytesMax: number;
  readonly queryStringBytesMax: number;
  readonly queryParamsCountMax: number;
}

function resolveLimits(options: HttpAppOptions): Limits {
  const limits = {
    bodyBytesMax: options.bodyBytesMax ?? httpDefaults.bodyBytesMax,
    inFlightRequestsMax: options.inFlightRequestsMax ?? httpDefaults.inFlightRequestsMax,
    bodyReadTimeoutMs: options.bodyReadTimeoutMs ?? httpDefaults.bodyReadTimeoutMs,
    bodyRateWindowMs: options.bodyRateWindowMs ?? httpDefaults.bodyRateWindowMs,
    bodyBytesPerSecondMin: options.bodyBytesPerSecondMin ?? httpDefaults.bodyBytesPerSecondMin,
    handlerTimeoutMs: options.handlerTimeoutMs ?? httpDefaults.handlerTimeoutMs,
    pathBytesMax: options.pathBytesMax ?? httpDefaults.pathBytesMax,
    headerBytesMax: options.headerBytesMax ?? httpDefaults.headerBytesMax,
    queryStringBytesMax: options.queryStringBytesMax ?? httpDefaults.queryStringBytesMax,
    queryParamsCountMax: options.queryParamsCountMax ?? httpDefaults.queryParamsCountMax,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
  if (limits.bodyRateWindowMs === 0) throw new RangeError('bodyRateWindowMs must be positive');
  return limits;
}

function resolveFairShares(options: HttpAppOptions): FairShareLimits {
  return {
    partner: { ...fairShareDefaults.partner, ...options.partnerShare },
    anonymous: { ...fairShareDefaults.anonymous, ...options.anonymousShare },
    bodyBytesInFlightMax: options.bodyBytesInFlightMax ?? httpDefaults.bodyBytesInFlightMax,
    uploadsInFlightMax: options.uploadsInFlightMax ?? httpDefaults.uploadsInFlightMax,
  };
}

/**
 * The share a request counts in: its partner's; the ops caller's (a guarded route that names no
 * partner); or the one share of unauthenticated requests.
 */
function shareKeyOf(route: Route, partnerId: string | null): string {
  if (partnerId !== null) return `partner:${partnerId}`;
  return route.guard === undefined ? anonymousShareKey : 'ops';
}

/** 429 when the caller is over its own share (a partner: only it is slowed down), else 503. */
function refusalResponse(refusal: Refusal, shareKey: string): HttpResponse {
  const what = refusal.resource === 'requests' ? 'requests' : refusal.resource === 'uploads' ? 'uploads' : 'request bytes';
  if (refusal.scope === 'share' && shareKey !== anonymousShareKey) {
    return errorResponse('rate_limited', `Too many ${what} in flight for this API key; retry after the Retry-After delay`, { 'retry-after': '1' });
  }
  if (refusal.scope === 'share') return errorResponse('service_unavailable', `Too many unauthenticated ${what} in flight; retry later`);
  return errorResponse('service_unavailable', 'Server busy; retry later');
}

function copyHeaders(req: UwsRequest): { headers: Record<string, string>; headerBytes: number } {
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  let headerBytes = 0;
  req.forEach((name, value) => {
    headerBytes += name.length + value.length;
    const previous = headers[name];
    headers[name] = previous === undefined ? value : `${previous}, ${value}`;
  });
  return { headers, headerBytes };
}

export function createHttpApp(options: HttpAppOptions): HttpApp {
  const limits = resolveLimits(options);
  const routeTable = compileRoutes(options.routes);
  const { logger } = options;
  const shares = createFairShares(resolveFairShares(options));
  const generateRequestId = options.generateRequestId ?? randomUuid;
  let inFlight = 0;
  let draining = false;

  const reportError = (error: unknown, info: RequestErrorInfo): void => {
    logger.error({ err: error, requestId: info.requestId, method: info.method, route: info.routePattern }, 'request failed');
    try {
      options.onError?.(error, info);
    } catch (hookError) {
      logger.error({ err: hookError }, 'onError hook threw');
    }
  };
  const unavailableLog = new RateLimitedLog({
    log: (level, message, fields) => logger[level](fields, message),
    clock: systemClock,
    level: 'warn',
    message: 'requests answered 503: a dependency is unavailable',
    intervalMs: unavailableLogIntervalMs,
  });
  const hooks: ExchangeHooks = {
    draining: () => draining,
    logger,
    reportError,
    reportUnavailable: (reason, info) => unavailableLog.note({ reason, requestId: info.requestId, route: info.routePattern }),
    onFinished: () => (inFlight -= 1),
    onRequestFinished: options.onRequestFinished,
    bodyDeadlines: new Deadlines(limits.bodyReadTimeoutMs, (exchange) => exchange.bodyTimedOut()),
    handlerDeadlines: new Deadlines(limits.handlerTimeoutMs, (exchange) => exchange.handlerTimedOut(limits.handlerTimeoutMs)),
    bodyRateWindows:
      limits.bodyBytesPerSecondMin === 0
        ? null
        : new Deadlines<BodyRateWatch>(limits.bodyRateWindowMs, (watch) => watch.exchange.bodyRateWindowEnded(watch)),
    bodyBytesPerWindowMin: Math.ceil((limits.bodyBytesPerSecondMin * limits.bodyRateWindowMs) / 1000),
  };
  let listeners = 0;
  const keepTimersArmed = (change: 1 | -1): void => {
    listeners += change;
    hooks.bodyDeadlines.keepArmed(listeners > 0);
    hooks.handlerDeadlines.keepArmed(listeners > 0);
    hooks.bodyRateWindows?.keepArmed(listeners > 0);
  };

  function handle(res: UwsResponse, req: UwsRequest): void {
    // Synchronous part: copy all of the request we need, decide everything that needs no body.
    const receivedAtMs = Date.now();
    const lowerCaseMethod = req.getMethod();
    const method = upperCaseMethods.get(lowerCaseMethod) ?? lowerCaseMethod.toUpperCase();
    const { headers, headerBytes } = copyHeaders(req);
    const rawPath = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const clientRequestId = headers['x-request-id'];
    const requestId = clientRequestId !== undefined && requestIdPattern.test(clientRequestId) ? clientRequestId : generateRequestId();
    const exchange = new Exchange(res, method, requestId, hooks);
    res.onAborted(() => exchange.onAborted());
    inFlight += 1;
    try {
      dispatch(res, exchange, headers, headerBytes, rawPath, rawQuery, receivedAtMs);
    } catch (error) {
      // A bug in the synchronous part (ours or a guard's): answer 500 and keep serving.
      reportError(error, exchange.info());
      exchange.respond(errorResponse('server_error'), true);
    }
  }

  // Any answer given before the body is read closes the connection when the request has a body:
  // we will not read the rest.
  function dispatch(
    res: UwsResponse,
    exchange: Exchange,
    headers: Record<string, string>,
    headerBytes: number,
    rawPath: string,
    rawQuery: string,
    receivedAtMs: number,
  ): void {
    const method = exchange.method;
    const contentLength = parseContentLength(headers['content-length']);
    const hasBody = headers['transfer-encoding'] !== undefined || (typeof contentLength === 'number' && contentLength > 0);

    if (inFlight > limits.inFlightRequestsMax) return exchange.respond(errorResponse('service_unavailable', 'Too many requests in flight'), hasBody);
    if (headerBytes > limits.headerBytesMax) return exchange.respond(errorResponse('headers_too_large'), hasBody);
    if (rawPath.length > limits.pathBytesMax) return exchange.respond(errorResponse('uri_too_long', 'Path too long'), hasBody);
    if (rawQuery.length > limits.queryStringBytesMax) return exchange.respond(errorResponse('uri_too_long', 'Query string too long'), hasBody);
    // A body on GET or HEAD means nothing here (RFC 9110 §9.3.1) and a front proxy may frame it
    // differently from us: refused, never read.
    if (hasBody && (method === 'GET' || method === 'HEAD')) {
      return exchange.respond(errorResponse('invalid_request', `A ${method} request must not have a body`), true);
    }
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
    const pathSegments = path === '/' ? [] : path.slice(1).split('/');
    const group = rawPath.startsWith('/') ? matchGroup(routeTable, pathSegments) : null;
    if (group === null) return exchange.respond(errorResponse('not_found', 'No such endpoint'), hasBody);
    exchange.routePattern = group.pattern;
    const route = group.routes.get(method) ?? (method === 'HEAD' ? group.routes.get('GET') : undefined);
    if (route === undefined) {
      if (method === 'OPTIONS') return exchange.respond(emptyResponse(204, { allow: group.allow }), hasBody);
      return exchange.respond(errorResponse('method_not_allowed', `Method ${method.slice(0, 16)} not allowed`, { allow: group.allow }), hasBody);
    }
    exchange.routePattern = route.pattern;
    const params = decodeParams(group, pathSegments);
    if (params === null) return exchange.respond(errorResponse('invalid_request', 'Malformed path'), hasBody);
    const query = parseQuery(rawQuery, limits.queryParamsCountMax);
    if (!query.ok) return exchange.respond(errorResponse('invalid_request', query.reason), hasBody);
    if (contentLength === 'invalid') return exchange.respond(errorResponse('invalid_request', 'Invalid Content-Length'), hasBody);

    const request = new IncomingRequest(exchange, method, path, route.pattern, params, query.query, headers, exchange.requestId, receivedAtMs);
    if (route.guard !== undefined) {
      const verdict = route.guard(request);
      exchange.partnerId = verdict.partnerId ?? null;
      if (!verdict.allow) {
        exchange.skipAccessLog = verdict.skipAccessLog === true;
        return exchange.respond(verdict.response, hasBody);
      }
      exchange.guardWait = verdict.wait ?? null;
    }
    request.partnerId = exchange.partnerId;

    const bodyBytesMax = route.bodyBytesMax ?? limits.bodyBytesMax;
    if (typeof contentLength === 'number' && contentLength > bodyBytesMax) return exchange.respond(tooLarge(bodyBytesMax), hasBody);
    const streamed = route.bodyMode === 'streamed';
    const shareKey = shareKeyOf(route, exchange.partnerId);
    const admission = shares.admit(shareKey, streamed);
    if (isRefusal(admission)) {
      // Refused before reading: a body of a known length within the cap is left to uWS, which
      // reads and drops it and keeps the connection. Closing with it unread would reset the
      // connection, and the client, still sending, could lose the 429 and its Retry-After.
      const drainable = typeof contentLength === 'number' && contentLength <= bodyBytesMax;
      return exchange.respond(refusalResponse(admission, shareKey), hasBody && !drainable);
    }
    exchange.admission = admission;
    if (streamed) return exchange.streamBody(route, request, bodyBytesMax);
    if (!hasBody) return exchange.runHandler(route, request);

    exchange.startBodyTimer();
    exchange.bodyReader = readBody(res, bodyBytesMax, admission, (outcome) => {
      exchange.bodyReadEnded();
      if (exchange.done) return;
      if (outcome.kind === 'too_large') return exchange.respond(tooLarge(bodyBytesMax), true);
      if (outcome.kind === 'over_budget') return exchange.respond(refusalResponse(outcome.refusal, shareKey), true);
      request.body = outcome.body;
      exchange.runHandler(route, request);
    });
  }

  function safeHandle(res: UwsResponse, req: UwsRequest): void {
    try {
      handle(res, req);
    } catch (error) {
      // Failed before a response object existed (copying the request). uWS would crash the
      // process on a throw from its callback; answer 500 instead if nothing was sent yet.
      logger.error({ err: error }, 'edge request handling failed');
      try {
        res.cork(() => {
          res.writeStatus('500 Internal Server Error').writeHeader('content-type', jsonContentType);
          res.end(errorResponse('server_error').body, true);
        });
      } catch {
        // Already answered or aborted; nothing more to do.
      }
    }
  }

  const app = uWS.App();
  app.any('/*', safeHandle);

  return {
    listen(host, port) {
      return new Promise<Listening>((resolve, reject) => {
        app.listen(host, port, (listenSocket: us_listen_socket | false) => {
          if (listenSocket === false) return reject(new Error(`could not listen on ${host}:${port}`));
          let closed = false;
          keepTimersArmed(1);
          const close = (): void => {
            if (closed) return;
            closed = true;
            uWS.us_listen_socket_close(listenSocket);
            keepTimersArmed(-1);
          };
          resolve({
            port: uWS.us_socket_local_port(listenSocket),
            close,
            drain: async (timeoutMs) => {
              draining = true;
              close();
              const deadlineMs = Date.now() + timeoutMs;
              while (inFlight > 0 && Date.now() < deadlineMs) await new Promise((wake) => setTimeout(wake, drainPollMs));
              return inFlight;
            },
          });
        });
      });
    },
    stats: () => {
      const held = shares.stats();
      return { inFlightRequests: inFlight, bodyBytesInFlight: held.bodyBytesInFlight, uploadsInFlight: held.uploadsInFlight };
    },
    draining: () => draining,
  };
}

function tooLarge(bodyBytesMax: number): HttpResponse {
  return errorResponse('payload_too_large', `Request body exceeds ${bodyBytesMax} bytes`);
}
