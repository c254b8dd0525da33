// The HTTP toolkit the edge's routes are built on: a small router over uWebSockets.js with the
// uWS rules handled once, here, instead of in every route:
// - uWS's request object dies when the route callback returns, so everything a handler may need
//   (method, path, query, headers) is copied synchronously first; the peer address lives on the
//   response and is read only if asked for (a syscall per request otherwise);
// - a response may be aborted at any time: every write checks the aborted flag, goes through
//   `res.cork`, and happens at most once (http-exchange.ts, http-response.ts);
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
// Routing (http-router.ts): the most specific matching pattern owns the path. Unknown path → 404
// `not_found`; known path with another method → 405 `method_not_allowed` with `Allow`. HEAD is
// served by the GET route without a body; OPTIONS answers 204 with `Allow` unless a route claims
// it. No CORS: this is a server-to-server API.
//
// The toolkit is five modules: http-types.ts (what routes declare and see), http-router.ts,
// http-response.ts (helpers and the one writer), http-exchange.ts (one request's life) and this
// one, which admits each request and wires the rest.
import uWS from 'uWebSockets.js';
import type { HttpRequest as UwsRequest, HttpResponse as UwsResponse, us_listen_socket } from 'uWebSockets.js';
import { jsonBodyBytesMax, parseContentLength, readBody } from './body.ts';
import {
  anonymousShareKey, createFairShares, fairShareDefaults, isRefusal, type FairShareLimits, type FairShares,
} from './fair-shares.ts';
import { randomUuid } from './uuid.ts';
import { errorResponse } from './errors.ts';
import { RateLimitedLog } from '../bus/outage-log.ts';
import { systemClock } from '../bus/bus.ts';
import { BodyRateWatch, Deadlines, Exchange, IncomingRequest, requestIdPattern, type ExchangeHooks } from './http-exchange.ts';
import { emptyResponse, jsonContentType, refusalResponse, tooLarge } from './http-response.ts';
import { compileRoutes, decodeParams, matchGroup, parseQuery, upperCaseMethods, type RouteTable } from './http-router.ts';
import type { HttpApp, HttpAppOptions, HttpResponse, Listening, RequestErrorInfo, Route } from './http-types.ts';

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


/** What the app counts while it runs (shared by the dispatcher, the hooks and the listeners). */
interface AppState {
  inFlight: number;
  draining: boolean;
  /** Listen sockets open: the deadline queues keep their timers armed while there is one. */
  listeners: number;
}

/** Logs a failed request and tells the `onError` hook (a throwing hook is logged, never rethrown). */
function errorReporter(options: HttpAppOptions): (error: unknown, info: RequestErrorInfo) => void {
  const { logger } = options;
  return (error, info) => {
    logger.error({ err: error, requestId: info.requestId, method: info.method, route: info.routePattern }, 'request failed');
    try {
      options.onError?.(error, info);
    } catch (hookError) {
      logger.error({ err: hookError }, 'onError hook threw');
    }
  };
}

function exchangeHooks(options: HttpAppOptions, limits: Limits, state: AppState, reportError: ExchangeHooks['reportError']): ExchangeHooks {
  const { logger } = options;
  const unavailableLog = new RateLimitedLog({
    log: (level, message, fields) => logger[level](fields, message),
    clock: systemClock,
    level: 'warn',
    message: 'requests answered 503: a dependency is unavailable',
    intervalMs: unavailableLogIntervalMs,
  });
  return {
    draining: () => state.draining,
    logger,
    reportError,
    reportUnavailable: (reason, info) => unavailableLog.note({ reason, requestId: info.requestId, route: info.routePattern }),
    onFinished: () => (state.inFlight -= 1),
    onRequestFinished: options.onRequestFinished,
    bodyDeadlines: new Deadlines(limits.bodyReadTimeoutMs, (exchange) => exchange.bodyTimedOut()),
    handlerDeadlines: new Deadlines(limits.handlerTimeoutMs, (exchange) => exchange.handlerTimedOut(limits.handlerTimeoutMs)),
    bodyRateWindows:
      limits.bodyBytesPerSecondMin === 0
        ? null
        : new Deadlines<BodyRateWatch>(limits.bodyRateWindowMs, (watch) => watch.exchange.bodyRateWindowEnded(watch)),
    bodyBytesPerWindowMin: Math.ceil((limits.bodyBytesPerSecondMin * limits.bodyRateWindowMs) / 1000),
  };
}

/** A request as copied from uWS, before routing. */
interface RawRequest {
  readonly headers: Record<string, string>;
  readonly headerBytes: number;
  readonly rawPath: string;
  readonly rawQuery: string;
  readonly receivedAtMs: number;
  readonly contentLength: ReturnType<typeof parseContentLength>;
  readonly hasBody: boolean;
}

/** The refusals that need neither the route nor the body, in this order; null when none applies. */
function refuseHead(raw: RawRequest, limits: Limits, inFlight: number): HttpResponse | null {
  if (inFlight > limits.inFlightRequestsMax) return errorResponse('service_unavailable', 'Too many requests in flight');
  if (raw.headerBytes > limits.headerBytesMax) return errorResponse('headers_too_large');
  if (raw.rawPath.length > limits.pathBytesMax) return errorResponse('uri_too_long', 'Path too long');
  if (raw.rawQuery.length > limits.queryStringBytesMax) return errorResponse('uri_too_long', 'Query string too long');
  return null;
}

/**
 * Admits each request: copies it from uWS, refuses what can be refused before reading a body,
 * routes it, runs its guard, takes its fair share, then reads (or streams) its body and hands it
 * to its exchange. Any answer given before the body is read closes the connection when the request
 * has a body: we will not read the rest.
 */
class Dispatcher {
  constructor(
    private readonly options: HttpAppOptions,
    private readonly limits: Limits,
    private readonly routeTable: RouteTable,
    private readonly shares: FairShares,
    private readonly hooks: ExchangeHooks,
    private readonly state: AppState,
    private readonly generateRequestId: () => string,
  ) {}

  /** uWS's callback: never throws (uWS would crash the process). */
  readonly safeHandle = (res: UwsResponse, req: UwsRequest): void => {
    try {
      this.handle(res, req);
    } catch (error) {
      // Failed before a response object existed (copying the request). Answer 500 if nothing was sent yet.
      this.options.logger.error({ err: error }, 'edge request handling failed');
      try {
        res.cork(() => {
          res.writeStatus('500 Internal Server Error').writeHeader('content-type', jsonContentType);
          res.end(errorResponse('server_error').body, true);
        });
      } catch {
        // Already answered or aborted; nothing more to do.
      }
    }
  };

  private handle(res: UwsResponse, req: UwsRequest): void {
    // Synchronous part: copy all of the request we need, decide everything that needs no body.
    const receivedAtMs = Date.now();
    const lowerCaseMethod = req.getMethod();
    const method = upperCaseMethods.get(lowerCaseMethod) ?? lowerCaseMethod.toUpperCase();
    const { headers, headerBytes } = copyHeaders(req);
    const rawPath = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const clientRequestId = headers['x-request-id'];
    const requestId = clientRequestId !== undefined && requestIdPattern.test(clientRequestId) ? clientRequestId : this.generateRequestId();
    const exchange = new Exchange(res, method, requestId, this.hooks);
    res.onAborted(() => exchange.onAborted());
    this.state.inFlight += 1;
    try {
      const contentLength = parseContentLength(headers['content-length']);
      const hasBody = headers['transfer-encoding'] !== undefined || (typeof contentLength === 'number' && contentLength > 0);
      this.dispatch(res, exchange, { headers, headerBytes, rawPath, rawQuery, receivedAtMs, contentLength, hasBody });
    } catch (error) {
      // A bug in the synchronous part (ours or a guard's): answer 500 and keep serving.
      this.hooks.reportError(error, exchange.info());
      exchange.respond(errorResponse('server_error'), true);
    }
  }

  private dispatch(res: UwsResponse, exchange: Exchange, raw: RawRequest): void {
    const { method } = exchange;
    const refusal = refuseHead(raw, this.limits, this.state.inFlight);
    if (refusal !== null) return exchange.respond(refusal, raw.hasBody);
    // A body on GET or HEAD means nothing here (RFC 9110 §9.3.1) and a front proxy may frame it
    // differently from us: refused, never read.
    if (raw.hasBody && (method === 'GET' || method === 'HEAD')) {
      return exchange.respond(errorResponse('invalid_request', `A ${method} request must not have a body`), true);
    }
    const routed = this.route(exchange, raw);
    if (routed === null) return;
    const { route, request } = routed;
    if (route.guard !== undefined) {
      const verdict = route.guard(request);
      exchange.partnerId = verdict.partnerId ?? null;
      if (!verdict.allow) {
        exchange.skipAccessLog = verdict.skipAccessLog === true;
        return exchange.respond(verdict.response, raw.hasBody);
      }
      exchange.guardWait = verdict.wait ?? null;
    }
    request.partnerId = exchange.partnerId;
    this.admitAndRead(res, exchange, raw, route, request);
  }

  /** The route and the request a guard sees; null when the exchange was answered (404, 405, OPTIONS, 400). */
  private route(exchange: Exchange, raw: RawRequest): { route: Route; request: IncomingRequest } | null {
    const { method } = exchange;
    const { rawPath, hasBody } = raw;
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
    const pathSegments = path === '/' ? [] : path.slice(1).split('/');
    const group = rawPath.startsWith('/') ? matchGroup(this.routeTable, pathSegments) : null;
    if (group === null) return answered(exchange, errorResponse('not_found', 'No such endpoint'), hasBody);
    exchange.routePattern = group.pattern;
    const route = group.routes.get(method) ?? (method === 'HEAD' ? group.routes.get('GET') : undefined);
    if (route === undefined) {
      if (method === 'OPTIONS') return answered(exchange, emptyResponse(204, { allow: group.allow }), hasBody);
      return answered(exchange, errorResponse('method_not_allowed', `Method ${method.slice(0, 16)} not allowed`, { allow: group.allow }), hasBody);
    }
    exchange.routePattern = route.pattern;
    const params = decodeParams(group, pathSegments);
    if (params === null) return answered(exchange, errorResponse('invalid_request', 'Malformed path'), hasBody);
    const query = parseQuery(raw.rawQuery, this.limits.queryParamsCountMax);
    if (!query.ok) return answered(exchange, errorResponse('invalid_request', query.reason), hasBody);
    if (raw.contentLength === 'invalid') return answered(exchange, errorResponse('invalid_request', 'Invalid Content-Length'), hasBody);
    const request = new IncomingRequest(exchange, method, path, route.pattern, params, query.query, raw.headers, exchange.requestId, raw.receivedAtMs);
    return { route, request };
  }

  /** Takes the request's fair share, then streams its body, reads it, or runs the handler at once. */
  private admitAndRead(res: UwsResponse, exchange: Exchange, raw: RawRequest, route: Route, request: IncomingRequest): void {
    const { contentLength, hasBody } = raw;
    const bodyBytesMax = route.bodyBytesMax ?? this.limits.bodyBytesMax;
    if (typeof contentLength === 'number' && contentLength > bodyBytesMax) return exchange.respond(tooLarge(bodyBytesMax), hasBody);
    const streamed = route.bodyMode === 'streamed';
    const shareKey = shareKeyOf(route, exchange.partnerId);
    const admission = this.shares.admit(shareKey, streamed);
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
}

/** Answers the exchange; null so that routing can return it. */
function answered(exchange: Exchange, response: HttpResponse, closeConnection: boolean): null {
  exchange.respond(response, closeConnection);
  return null;
}

/** Listens; the deadline queues keep their timers armed while any listen socket is open. */
async function listenOn(app: uWS.TemplatedApp, host: string, port: number, state: AppState, hooks: ExchangeHooks): Promise<Listening> {
  const keepTimersArmed = (change: 1 | -1): void => {
    state.listeners += change;
    hooks.bodyDeadlines.keepArmed(state.listeners > 0);
    hooks.handlerDeadlines.keepArmed(state.listeners > 0);
    hooks.bodyRateWindows?.keepArmed(state.listeners > 0);
  };
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
          state.draining = true;
          close();
          const deadlineMs = Date.now() + timeoutMs;
          while (state.inFlight > 0 && Date.now() < deadlineMs) await new Promise((wake) => setTimeout(wake, drainPollMs));
          return state.inFlight;
        },
      });
    });
  });
}

export function createHttpApp(options: HttpAppOptions): HttpApp {
  const limits = resolveLimits(options);
  const shares = createFairShares(resolveFairShares(options));
  const state: AppState = { inFlight: 0, draining: false, listeners: 0 };
  const hooks = exchangeHooks(options, limits, state, errorReporter(options));
  const dispatcher = new Dispatcher(options, limits, compileRoutes(options.routes), shares, hooks, state, options.generateRequestId ?? randomUuid);
  const app = uWS.App();
  app.any('/*', dispatcher.safeHandle);
  return {
    listen: async (host, port) => listenOn(app, host, port, state, hooks),
    stats: () => {
      const held = shares.stats();
      return { inFlightRequests: state.inFlight, bodyBytesInFlight: held.bodyBytesInFlight, uploadsInFlight: held.uploadsInFlight };
    },
    draining: () => state.draining,
  };
}
