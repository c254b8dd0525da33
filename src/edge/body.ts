// Request bodies on uWS: read fully into one Buffer under a per-route byte cap and a process-wide
// budget, counting bytes as they stream (chunked bodies have no length to check up front). The
// moment a cap is crossed the reader stops buffering and reports it, so the caller can answer 413
// and close the connection instead of swallowing the rest. Also: JSON body parsing with the
// catalogue's errors.
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { errorResponse } from './errors.ts';
import type { HttpResponse } from './http.ts';

/** Default cap for JSON endpoints. */
export const jsonBodyBytesMax = 64 * 1024;

/**
 * Bytes of request bodies held in memory by all in-flight requests together. Reserved as bytes
 * arrive and released when the request finishes, so many concurrent large uploads are refused with
 * 503 instead of exhausting memory.
 */
export interface BodyBudget {
  tryReserve(bytes: number): boolean;
  release(bytes: number): void;
  readonly inUseBytes: () => number;
}

export function createBodyBudget(bytesMax: number): BodyBudget {
  let inUse = 0;
  return {
    tryReserve(bytes) {
      if (inUse + bytes > bytesMax) return false;
      inUse += bytes;
      return true;
    },
    release(bytes) {
      inUse = Math.max(0, inUse - bytes);
    },
    inUseBytes: () => inUse,
  };
}

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
  | { readonly kind: 'over_budget' };

export interface BodyReader {
  /** Bytes received so far (also counted when they were not kept). */
  readonly receivedBytes: () => number;
  /** Stops reading, drops what was buffered and returns the budget reservation; idempotent. */
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
  budget: BodyBudget,
  onOutcome: (outcome: BodyReadOutcome) => void,
): BodyReader {
  const reader = new StreamedBody(bodyBytesMax, budget, onOutcome);
  res.onData((chunk, isLast) => reader.onChunk(chunk, isLast));
  return reader;
}

/** One request's body as it arrives (a class, not closures: one of these per POST). */
class StreamedBody implements BodyReader {
  private chunks: Buffer[] = [];
  private received = 0;
  private reserved = 0;
  private settled = false;

  constructor(
    private readonly bodyBytesMax: number,
    private readonly budget: BodyBudget,
    private readonly onOutcome: (outcome: BodyReadOutcome) => void,
  ) {}

  receivedBytes(): number {
    return this.received;
  }

  release(): void {
    this.settled = true;
    this.chunks = [];
    this.budget.release(this.reserved);
    this.reserved = 0;
  }

  onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.settled) return;
    const length = chunk.byteLength;
    this.received += length;
    if (this.received > this.bodyBytesMax) return this.settle({ kind: 'too_large' });
    if (length > 0) {
      if (!this.budget.tryReserve(length)) return this.settle({ kind: 'over_budget' });
      this.reserved += length;
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
