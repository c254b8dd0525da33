// Request bodies on uWS, two ways:
// - buffered (JSON routes): read fully into one Buffer under a per-route byte cap, each byte
//   reserved from the request's fair share (fair-shares.ts) as it arrives, counting bytes as they
//   stream (chunked bodies have no length to check up front). The moment a cap or the share is
//   crossed the reader stops buffering and reports it, so the caller can answer and close the
//   connection instead of swallowing the rest;
// - streamed (uploads): a Node Readable the handler consumes as the bytes arrive, with
//   backpressure: when the handler falls behind, uWS stops reading the socket until it catches
//   up, so an upload holds about one socket read plus `streamedBodyHighWaterBytes`, whatever its
//   size.
// Also: JSON body parsing with the catalogue's errors.
import { Readable } from 'node:stream';
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { errorResponse } from './errors.ts';
import type { Admission, Refusal } from './fair-shares.ts';
import type { HttpResponse } from './http-types.ts';

/** Default cap for JSON endpoints. */
export const jsonBodyBytesMax = 64 * 1024;

/** Bytes a streamed body buffers ahead of its consumer before uWS is told to stop reading. */
export const streamedBodyHighWaterBytes = 64 * 1024;

/**
 * `Content-Length` as a number; null when absent; 'invalid' when not a plain decimal (uWS rejects
 * most such requests before us, this is the belt to its braces).
 */
export function parseContentLength(header: string | undefined): number | null | 'invalid' {
  if (header === undefined) return null;
  const trimmed = header.trim();
  if (!/^\d{1,15}$/.test(trimmed)) return 'invalid';
  return Number(trimmed);
}

export type BodyReadOutcome =
  | { readonly kind: 'complete'; readonly body: Buffer }
  | { readonly kind: 'too_large' }
  | { readonly kind: 'over_budget'; readonly refusal: Refusal };

export interface BodyReader {
  /** Bytes received so far (also counted when they were not kept). */
  readonly receivedBytes: () => number;
  /** Stops reading and drops what was buffered (the admission gives the bytes back); idempotent. */
  release(): void;
}

/**
 * Attaches the data handler to `res` (must be called synchronously in the uWS route handler) and
 * calls `onOutcome` exactly once. uWS neuters each chunk's ArrayBuffer when the callback returns,
 * so every chunk is copied before it is kept.
 */
export function readBody(
  res: UwsResponse,
  bodyBytesMax: number,
  admission: Admission,
  onOutcome: (outcome: BodyReadOutcome) => void,
): BodyReader {
  const reader = new BufferedBody(bodyBytesMax, admission, onOutcome);
  res.onData((chunk, isLast) => reader.onChunk(chunk, isLast));
  return reader;
}

/** One request's body as it arrives (a class, not closures: one of these per POST). */
class BufferedBody implements BodyReader {
  private chunks: Buffer[] = [];
  private received = 0;
  private settled = false;

  constructor(
    private readonly bodyBytesMax: number,
    private readonly admission: Admission,
    private readonly onOutcome: (outcome: BodyReadOutcome) => void,
  ) {}

  receivedBytes(): number {
    return this.received;
  }

  release(): void {
    this.settled = true;
    this.chunks = [];
  }

  onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.settled) return;
    const length = chunk.byteLength;
    this.received += length;
    if (this.received > this.bodyBytesMax) return this.settle({ kind: 'too_large' });
    if (length > 0) {
      const refusal = this.admission.reserveBodyBytes(length);
      if (refusal !== null) return this.settle({ kind: 'over_budget', refusal });
      const copy = Buffer.allocUnsafe(length);
      copy.set(new Uint8Array(chunk));
      this.chunks.push(copy);
    }
    if (isLast) {
      const chunks = this.chunks;
      const body = chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks, this.received);
      this.chunks = [];
      this.settle({ kind: 'complete', body });
    }
  }

  private settle(outcome: BodyReadOutcome): void {
    this.settled = true;
    if (outcome.kind !== 'complete') this.release();
    this.onOutcome(outcome);
  }
}

/** How a streamed body tells the exchange to stop and restart reading the socket. */
export interface BodyFlow {
  pauseReading(): void;
  resumeReading(): void;
}

/** Why a streamed body ended before its last byte (the error its consumer sees). */
export class BodyCutError extends Error {
  override readonly name = 'BodyCutError';
  constructor(readonly cutBy: 'too_large' | 'timeout' | 'too_slow' | 'aborted' | 'answered') {
    super(`request body cut: ${cutBy}`);
  }
}

/**
 * A streamed request body: chunks from uWS pushed into a Readable; when the consumer is behind by
 * `streamedBodyHighWaterBytes`, reading the socket pauses until it asks for more. Ends after the
 * last chunk; destroyed with a BodyCutError when the exchange cuts it (cap, timeout, client gone).
 */
export class RequestBodyStream extends Readable implements BodyReader {
  private received = 0;
  private ended = false;

  constructor(
    private readonly flow: BodyFlow,
    private readonly bodyBytesMax: number,
  ) {
    super({ highWaterMark: streamedBodyHighWaterBytes });
    // A cut is news only for a consumer still reading, which listens itself; a handler that
    // answered without reading (or stopped) must not turn the toolkit's cut into a crash.
    this.on('error', () => undefined);
  }

  /** True once the last byte arrived. */
  get complete(): boolean {
    return this.ended;
  }

  receivedBytes(): number {
    return this.received;
  }

  release(): void {
    if (!this.ended && !this.destroyed) this.destroy(new BodyCutError('answered'));
  }

  override _read(): void {
    this.flow.resumeReading();
  }

  /** One chunk from uWS: 'too_large' when it crosses the cap (nothing more is pushed). */
  onChunk(chunk: ArrayBuffer, isLast: boolean): 'ok' | 'complete' | 'too_large' {
    if (this.ended || this.destroyed) return 'ok';
    this.received += chunk.byteLength;
    if (this.received > this.bodyBytesMax) return 'too_large';
    const wantsMore = chunk.byteLength === 0 || this.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      this.ended = true;
      this.push(null);
      return 'complete';
    }
    if (!wantsMore) this.flow.pauseReading();
    return 'ok';
  }
}

export type BodyParse<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly response: HttpResponse };

const jsonMediaType = /^application\/(?:[a-z0-9!#$&^_.+-]+\+)?json$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Accepts `Content-Type: application/json` (or `application/<x>+json`), optionally with
 * `charset=utf-8`; an absent Content-Type is accepted as JSON because many partner HTTP clients
 * omit it on POST, and the body must parse as JSON anyway.
 */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType === 'application/json' || contentType === 'application/json; charset=utf-8') return true;
  if (contentType.trim() === '') return true;
  const [essence = '', ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  if (!jsonMediaType.test(essence)) return false;
  return parameters.every((parameter) => {
    const [name, value] = parameter.split('=', 2).map((part) => part.trim().replace(/^"|"$/g, ''));
    return name !== 'charset' || value === 'utf-8' || value === 'utf8';
  });
}

/**
 * The body as JSON. 415 `unsupported_media_type` for a non-JSON Content-Type; 400
 * `invalid_request` "Malformed JSON body" for anything that is not one valid UTF-8 JSON text
 * (including an empty body and a byte-order mark).
 */
export function parseJsonBody(ctx: {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
}): BodyParse<unknown> {
  if (!isJsonContentType(ctx.headers['content-type'])) {
    return { ok: false, response: errorResponse('unsupported_media_type', 'Content-Type must be application/json') };
  }
  try {
    return { ok: true, value: JSON.parse(strictUtf8.decode(ctx.body)) as unknown };
  } catch {
    return { ok: false, response: errorResponse('invalid_request', 'Malformed JSON body') };
  }
}
