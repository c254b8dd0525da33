// The types a route is written against (what a handler gets and returns, what a guard decides),
// apart from the toolkit that serves them (http.ts): the modules a route uses (errors, bodies,
// guards, idempotency) need these and nothing else of the toolkit, so they do not import it, and
// the toolkit can import them without a circle.
import type { Readable } from 'node:stream';

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
