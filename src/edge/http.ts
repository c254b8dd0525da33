// The HTTP toolkit the edge's routes are built on: a small router over uWebSockets.js with the
// uWS rules handled once, here, instead of in every route:
// - uWS's request object dies when the route callback returns, so everything a handler may need
//   (method, path, query, headers, remote address) is copied synchronously first;
// - a response may be aborted at any time: every write checks the aborted flag, goes through
//   `res.cork`, and happens at most once;
// - bodies are read under a byte cap (413 as soon as it is crossed, connection closed) and a
//   process-wide budget; a thrown handler error is a generic 500, the real error goes to the log;
// - every response carries `X-Request-Id`; every request gives one access-log line.
// Routing: exact segments and `:param` segments; the most specific matching pattern owns the path
// (static segments beat params, left to right). Unknown path → 404 `not_found`; known path with
// another method → 405 `method_not_allowed` with `Allow`. HEAD is served by the GET route without a
// body; OPTIONS answers 204 with `Allow` unless a route claims it. No CORS: this is a
// server-to-server API.
import { STATUS_CODES } from 'node:http';
import { randomUUID } from 'node:crypto';
import uWS from 'uWebSockets.js';
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from 'pino';
import {
  createBodyBudget,
  jsonBodyBytesMax,
  parseContentLength,
  readBody,
  type BodyBudget,
  type BodyReader,
} from './body.ts';
import { errorResponse } from './errors.ts';
import { writeAccessLog, type AccessLogEntry } from './access-log.ts';

export { parseJsonBody, type BodyParse } from './body.ts';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** What a handler returns. `body` is sent as is; set `content-type` yourself (or use the helpers). */
export interface HttpResponse {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

/** Everything known about a request before its body is read (what a guard sees). */
export interface RequestHead {
  /** Upper-case method as received (HEAD stays HEAD when the GET route serves it). */
  readonly method: string;
  /** Path as received, without the query string and without a trailing slash. */
  readonly path: string;
  /** The matched route's pattern, e.g. `/transaction/:id`. */
  readonly routePattern: string;
  /** Percent-decoded path parameters. */
  readonly params: Readonly<Record<string, string>>;
  /** Decoded query parameters (each name at most once; bounded count and length). */
  readonly query: Readonly<Record<string, string>>;
  /** Lower-cased header names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly requestId: string;
  readonly remoteAddress: string;
  /** Wall-clock time the request arrived, epoch ms (the `now` to hand to the domain). */
  readonly receivedAtMs: number;
}

export interface RequestContext extends RequestHead {
  /** The whole body, read under the route's cap; empty when there was none. */
  readonly body: Buffer;
  /** Set by the route's guard (partner authentication); null on unauthenticated routes. */
  readonly partnerId: string | null;
}

export type GuardResult =
  | { readonly allow: true; readonly partnerId: string | null }
  | { readonly allow: false; readonly response: HttpResponse; readonly partnerId?: string | null };

/**
 * Runs before any body byte is buffered (so unauthenticated or rate-limited uploads are refused
 * without reading them). Synchronous on purpose: keys and buckets are in memory, and a guard that
 * awaited would force buffering the body meanwhile.
 */
export type Guard = (head: RequestHead) => GuardResult;

export interface Route {
  readonly method: HttpMethod;
  /** `/segment/:param/...`; params match one non-empty segment. */
  readonly pattern: string;
  readonly handler: (ctx: RequestContext) => Promise<HttpResponse>;
  /** Overrides the app's `bodyBytesMax` for this route (e.g. the KYC upload). */
  readonly bodyBytesMax?: number;
  readonly guard?: Guard;
}

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
  /** Bodies held by all in-flight requests together; 256 MiB. Beyond it: 503. */
  readonly bodyBytesInFlightMax?: number;
  /** Concurrent requests being read or handled; 10,000. Beyond it: 503. */
  readonly inFlightRequestsMax?: number;
  /** Time from the request head to the last body byte; 60 s. Beyond it: 408 and close. */
  readonly bodyReadTimeoutMs?: number;
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
  /** Request ids for requests that bring none; `crypto.randomUUID` by default. */
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

export interface HttpApp {
  listen(host: string, port: number): Promise<Listening>;
  stats(): { inFlightRequests: number; bodyBytesInFlight: number };
  /** True once a drain has begun: readiness probes answer 503 so load balancers stop routing here. */
  draining(): boolean;
}

/** How often a drain checks whether the requests in flight have finished. */
const drainPollMs = 10;

export const httpDefaults = {
  bodyBytesMax: jsonBodyBytesMax,
  bodyBytesInFlightMax: 256 * 1024 * 1024,
  inFlightRequestsMax: 10_000,
  bodyReadTimeoutMs: 60_000,
  handlerTimeoutMs: 30_000,
  pathBytesMax: 2048,
  headerBytesMax: 16 * 1024,
  queryStringBytesMax: 4096,
  queryParamsCountMax: 32,
} as const;

// ---------------------------------------------------------------------------------------------
// Response helpers

const jsonContentType = 'application/json; charset=utf-8';

export function jsonResponse(status: number, value: unknown, headers?: Readonly<Record<string, string>>): HttpResponse {
  return { status, headers: { 'content-type': jsonContentType, ...headers }, body: JSON.stringify(value) };
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
  /** '1' per static segment, '0' per param: a higher string is a more specific pattern. */
  readonly specificity: string;
  readonly routes: Map<string, Route>;
  /** Value of the `Allow` header. */
  allow: string;
}

const paramNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;
const methods: readonly HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

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

function compileRoutes(routes: readonly Route[]): PathGroup[] {
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
      group = { shape, pattern: route.pattern, segments, specificity, routes: new Map(), allow: '' };
      groups.set(shape, group);
    }
    if (group.routes.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.pattern}`);
    group.routes.set(route.method, route);
  }
  for (const group of groups.values()) {
    const allowed = new Set(group.routes.keys());
    if (allowed.has('GET')) allowed.add('HEAD');
    allowed.add('OPTIONS');
    group.allow = methods.filter((method) => allowed.has(method)).join(', ');
  }
  return [...groups.values()];
}

function matchGroup(groups: readonly PathGroup[], pathSegments: readonly string[]): PathGroup | null {
  let best: PathGroup | null = null;
  for (const group of groups) {
    if (group.segments.length !== pathSegments.length) continue;
    const matches = group.segments.every((segment, index) => {
      const part = pathSegments[index] ?? '';
      return segment.kind === 'static' ? segment.value === part : part.length > 0;
    });
    if (matches && (best === null || group.specificity > best.specificity)) best = group;
  }
  return best;
}

function decodeParams(group: PathGroup, pathSegments: readonly string[]): Record<string, string> | null {
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

type QueryParse = { readonly ok: true; readonly query: Record<string, string> } | { readonly ok: false; readonly reason: string };

function parseQuery(raw: string, bytesMax: number, countMax: number): QueryParse {
  const query: Record<string, string> = Object.create(null) as Record<string, string>;
  if (raw.length === 0) return { ok: true, query };
  if (raw.length > bytesMax) return { ok: false, reason: 'Query string too long' };
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
// One request/response exchange: the only place that writes to a uWS response.

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;
const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const headerValueForbidden = /[\r\n\0]/;
/** Framing headers uWS writes itself; a handler's copy would corrupt the response. */
const framingHeaders = new Set(['content-length', 'transfer-encoding', 'connection', 'x-request-id']);

interface ExchangeHooks {
  /** Draining: every response closes its connection. */
  readonly draining: () => boolean;
  readonly logger: Logger;
  readonly budget: BodyBudget;
  readonly onFinished: () => void;
  readonly reportError: (error: unknown, info: RequestErrorInfo) => void;
  readonly onRequestFinished?: ((entry: AccessLogEntry) => void) | undefined;
}

class Exchange {
  aborted = false;
  private responded = false;
  private finished = false;
  handlerRunning = false;
  routePattern: string | null = null;
  partnerId: string | null = null;
  bodyReader: BodyReader | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly startedAt = performance.now();

  constructor(
    private readonly res: UwsResponse,
    readonly method: string,
    readonly requestId: string,
    private readonly hooks: ExchangeHooks,
  ) {}

  /** True once answered or abandoned by the client: nothing more may be written. */
  get done(): boolean {
    return this.responded || this.aborted;
  }

  onAborted(): void {
    this.aborted = true;
    if (!this.handlerRunning) this.finish(null);
  }

  startTimer(ms: number, onTimeout: () => void): void {
    this.clearTimer();
    this.timer = setTimeout(onTimeout, ms);
  }

  clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /**
   * Writes the response once, unless the client is gone. `closeConnection` when the request body
   * was not (fully) consumed: the connection is not reusable and we will not read the rest.
   */
  respond(response: HttpResponse, closeConnection = false): void {
    if (this.responded || this.aborted) return this.finish(null);
    this.responded = true;
    let status = response.status;
    try {
      this.res.cork(() => this.write(response, closeConnection || this.hooks.draining()));
    } catch (error) {
      // Only a malformed response from our own code gets here (bad status or header), before any
      // byte was written: replace it with a generic 500.
      this.hooks.reportError(error, this.info());
      status = 500;
      this.res.cork(() => this.write(errorResponse('server_error'), true));
    }
    this.finish(status);
  }

  info(): RequestErrorInfo {
    return { requestId: this.requestId, method: this.method, routePattern: this.routePattern };
  }

  private write(response: HttpResponse, closeConnection: boolean): void {
    const statusText = STATUS_CODES[response.status];
    if (!Number.isInteger(response.status) || response.status < 200 || response.status > 599 || statusText === undefined) {
      throw new Error(`invalid response status ${response.status}`);
    }
    const headers = Object.entries(response.headers ?? {});
    for (const [name, value] of headers) {
      if (!headerNamePattern.test(name) || headerValueForbidden.test(value)) throw new Error(`invalid response header ${name}`);
    }
    const res = this.res;
    res.writeStatus(`${response.status} ${statusText}`);
    res.writeHeader('x-request-id', this.requestId);
    let hasCacheControl = false;
    for (const [name, value] of headers) {
      const lower = name.toLowerCase();
      if (framingHeaders.has(lower)) continue;
      if (lower === 'cache-control') hasCacheControl = true;
      res.writeHeader(lower, value);
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
    } else if (this.method === 'HEAD') {
      const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
      res.writeHeader('content-length', String(length));
      res.endWithoutBody();
    } else {
      res.end(body, closeConnection);
    }
  }

  private finish(status: number | null): void {
    if (this.finished) return;
    this.finished = true;
    this.clearTimer();
    this.bodyReader?.release();
    this.hooks.onFinished();
    const entry: AccessLogEntry = {
      method: this.method,
      route: this.routePattern,
      status,
      durationMs: performance.now() - this.startedAt,
      requestId: this.requestId,
      partnerId: this.partnerId,
      requestBytes: this.bodyReader?.receivedBytes() ?? 0,
      aborted: this.aborted,
    };
    writeAccessLog(this.hooks.logger, entry);
    this.hooks.onRequestFinished?.(entry);
  }
}

// ---------------------------------------------------------------------------------------------
// The app

interface Limits {
  readonly bodyBytesMax: number;
  readonly inFlightRequestsMax: number;
  readonly bodyReadTimeoutMs: number;
  readonly handlerTimeoutMs: number;
  readonly pathBytesMax: number;
  readonly headerBytesMax: number;
  readonly queryStringBytesMax: number;
  readonly queryParamsCountMax: number;
}

function resolveLimits(options: HttpAppOptions): Limits & { readonly bodyBytesInFlightMax: number } {
  const limits = {
    bodyBytesMax: options.bodyBytesMax ?? httpDefaults.bodyBytesMax,
    bodyBytesInFlightMax: options.bodyBytesInFlightMax ?? httpDefaults.bodyBytesInFlightMax,
    inFlightRequestsMax: options.inFlightRequestsMax ?? httpDefaults.inFlightRequestsMax,
    bodyReadTimeoutMs: options.bodyReadTimeoutMs ?? httpDefaults.bodyReadTimeoutMs,
    handlerTimeoutMs: options.handlerTimeoutMs ?? httpDefaults.handlerTimeoutMs,
    pathBytesMax: options.pathBytesMax ?? httpDefaults.pathBytesMax,
    headerBytesMax: options.headerBytesMax ?? httpDefaults.headerBytesMax,
    queryStringBytesMax: options.queryStringBytesMax ?? httpDefaults.queryStringBytesMax,
    queryParamsCountMax: options.queryParamsCountMax ?? httpDefaults.queryParamsCountMax,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
  return limits;
}

class HandlerTimeout extends Error {}

/** The parts of a uWS request copied out synchronously, before uWS frees it. */
interface RawRequest {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly headerBytes: number;
  readonly rawPath: string;
  readonly rawQuery: string;
  readonly requestId: string;
  readonly receivedAtMs: number;
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
  const groups = compileRoutes(options.routes);
  const { logger } = options;
  const budget = createBodyBudget(limits.bodyBytesInFlightMax);
  const generateRequestId = options.generateRequestId ?? randomUUID;
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
  const hooks: ExchangeHooks = { draining: () => draining, logger, budget, reportError, onFinished: () => (inFlight -= 1), onRequestFinished: options.onRequestFinished };

  async function runHandler(exchange: Exchange, route: Route, ctx: RequestContext): Promise<void> {
    exchange.handlerRunning = true;
    let timer: NodeJS.Timeout | undefined;
    let response: HttpResponse;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HandlerTimeout('handler timed out')), limits.handlerTimeoutMs);
      });
      response = await Promise.race([route.handler(ctx), timeout]);
    } catch (error) {
      if (error instanceof HandlerTimeout) {
        logger.warn({ requestId: exchange.requestId, route: exchange.routePattern, timeoutMs: limits.handlerTimeoutMs }, 'handler timed out');
        response = errorResponse('service_unavailable', 'The request took too long; retry later');
      } else {
        reportError(error, exchange.info());
        response = errorResponse('server_error');
      }
    } finally {
      clearTimeout(timer);
      exchange.handlerRunning = false;
    }
    exchange.respond(response);
  }

  function start(exchange: Exchange, route: Route, head: RequestHead, body: Buffer): void {
    const ctx: RequestContext = { ...head, body, partnerId: exchange.partnerId };
    void runHandler(exchange, route, ctx);
  }

  function handle(res: UwsResponse, req: UwsRequest): void {
    // Synchronous part: copy all of the request we need, decide everything that needs no body.
    const receivedAtMs = Date.now();
    const method = req.getMethod().toUpperCase();
    const { headers, headerBytes } = copyHeaders(req);
    const rawPath = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const clientRequestId = headers['x-request-id'];
    const requestId = clientRequestId !== undefined && requestIdPattern.test(clientRequestId) ? clientRequestId : generateRequestId();
    const exchange = new Exchange(res, method, requestId, hooks);
    res.onAborted(() => exchange.onAborted());
    inFlight += 1;
    try {
      dispatch(res, exchange, { method, headers, headerBytes, rawPath, rawQuery, requestId, receivedAtMs });
    } catch (error) {
      // A bug in the synchronous part (ours or a guard's): answer 500 and keep serving.
      reportError(error, exchange.info());
      exchange.respond(errorResponse('server_error'), true);
    }
  }

  function dispatch(res: UwsResponse, exchange: Exchange, raw: RawRequest): void {
    const { method, headers, headerBytes, rawPath, rawQuery, requestId, receivedAtMs } = raw;
    const contentLength = parseContentLength(headers['content-length']);
    const hasBody = headers['transfer-encoding'] !== undefined || (typeof contentLength === 'number' && contentLength > 0);
    // Any answer given before the body is read closes the connection: we will not read the rest.
    const reject = (response: HttpResponse): void => exchange.respond(response, hasBody);

    if (inFlight > limits.inFlightRequestsMax) return reject(errorResponse('service_unavailable', 'Too many requests in flight'));
    if (headerBytes > limits.headerBytesMax) return reject(errorResponse('headers_too_large'));
    if (rawPath.length > limits.pathBytesMax) return reject(errorResponse('invalid_request', 'Path too long'));
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
    const pathSegments = path === '/' ? [] : path.slice(1).split('/');
    const group = rawPath.startsWith('/') ? matchGroup(groups, pathSegments) : null;
    if (group === null) return reject(errorResponse('not_found', 'No such endpoint'));
    exchange.routePattern = group.pattern;
    const route = group.routes.get(method) ?? (method === 'HEAD' ? group.routes.get('GET') : undefined);
    if (route === undefined) {
      if (method === 'OPTIONS') return reject(emptyResponse(204, { allow: group.allow }));
      return reject(errorResponse('method_not_allowed', `Method ${method.slice(0, 16)} not allowed`, { allow: group.allow }));
    }
    exchange.routePattern = route.pattern;
    const params = decodeParams(group, pathSegments);
    if (params === null) return reject(errorResponse('invalid_request', 'Malformed path'));
    const query = parseQuery(rawQuery, limits.queryStringBytesMax, limits.queryParamsCountMax);
    if (!query.ok) return reject(errorResponse('invalid_request', query.reason));
    if (contentLength === 'invalid') return reject(errorResponse('invalid_request', 'Invalid Content-Length'));

    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
    const head: RequestHead = { method, path, routePattern: route.pattern, params, query: query.query, headers, requestId, remoteAddress, receivedAtMs };
    if (route.guard !== undefined) {
      const verdict = route.guard(head);
      exchange.partnerId = verdict.partnerId ?? null;
      if (!verdict.allow) return reject(verdict.response);
    }

    const bodyBytesMax = route.bodyBytesMax ?? limits.bodyBytesMax;
    if (typeof contentLength === 'number' && contentLength > bodyBytesMax) return reject(tooLarge(bodyBytesMax));
    if (!hasBody) return start(exchange, route, head, Buffer.alloc(0));

    exchange.startTimer(limits.bodyReadTimeoutMs, () => {
      exchange.respond(errorResponse('request_timeout', 'Request body not received in time'), true);
    });
    exchange.bodyReader = readBody(res, bodyBytesMax, budget, (outcome) => {
      exchange.clearTimer();
      if (exchange.done) return;
      if (outcome.kind === 'too_large') return exchange.respond(tooLarge(bodyBytesMax), true);
      if (outcome.kind === 'over_budget') {
        return exchange.respond(errorResponse('service_unavailable', 'Server busy; retry later'), true);
      }
      start(exchange, route, head, outcome.body);
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
          const close = (): void => {
            if (closed) return;
            closed = true;
            uWS.us_listen_socket_close(listenSocket);
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
    stats: () => ({ inFlightRequests: inFlight, bodyBytesInFlight: budget.inUseBytes() }),
    draining: () => draining,
  };
}

function tooLarge(bodyBytesMax: number): HttpResponse {
  return errorResponse('payload_too_large', `Request body exceeds ${bodyBytesMax} bytes`);
}
