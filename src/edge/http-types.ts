// The HTTP toolkit's types: what a route declares, what a guard and a handler see, what a handler
// returns, and the app's options and handles. No code: routes, the auth guards and the error
// catalogue import these without importing the toolkit itself.
import type { Logger } from 'pino';
import type { Readable } from 'node:stream';
import type { ShareLimits } from './fair-shares.ts';
import type { AccessLogEntry } from './access-log.ts';

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
  /** The whole body, read under the route's cap; empty when there was none (and on streamed routes). */
  readonly body: Buffer;
  /**
   * Streamed routes only (null otherwise): the body as it arrives, under the route's cap. It ends
   * after the last byte, or fails with a BodyCutError when the toolkit cuts it (cap, timeout, too
   * slow, client gone: the toolkit has answered then). Reading it slowly slows the client down.
   */
  readonly bodyStream: Readable | null;
  /** Set by the route's guard (partner authentication); null on unauthenticated routes. */
  readonly partnerId: string | null;
}

export type GuardResult =
  | {
      readonly allow: true;
      readonly partnerId: string | null;
      /**
       * A decision the guard could not take synchronously (a shared rate limit waiting on Redis):
       * the body is read meanwhile, and the handler runs once this settles with null; a response
       * here is sent instead. Counts against `handlerTimeoutMs`; must not reject.
       */
      readonly wait?: Promise<HttpResponse | null>;
    }
  | {
      readonly allow: false;
      readonly response: HttpResponse;
      readonly partnerId?: string | null;
      /** The guard logged this refusal itself, by sample (a flood of bad keys): no access-log line (metrics still count it). */
      readonly skipAccessLog?: boolean;
    };

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
  /**
   * 'buffered' (default): the handler runs once the whole body is in `ctx.body`. 'streamed': the
   * handler runs at once and reads `ctx.bodyStream`; the request counts as an upload in its share.
   */
  readonly bodyMode?: 'buffered' | 'streamed';
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

