// multipart/form-data for the KYC upload: text fields plus exactly one file part, parsed with
// busboy. `parseMultipartStream` reads the request body as it arrives (a streamed route) and hands
// the file part to its consumer as a stream, with backpressure all the way to the socket, so the
// document is never held whole in memory; `parseMultipart` does the same over a body already in
// memory. Every dimension is capped (file bytes, field count, field bytes, field-name bytes, part
// count, headers per part); crossing a cap or sending a broken form is a 4xx with a safe reason,
// never a 500.
//
// The spec leaves the KYC upload size open. Our choice: a document of at most 10 MiB
// (`kycDocumentBytesMax`, enough for a phone photo or a scanned PDF) in a request body of at most
// 10 MiB + 256 KiB (`kycUploadBodyBytesMax`, room for the eleven text fields and the multipart
// envelope). The KYC route sets `bodyBytesMax: kycUploadBodyBytesMax`.
import busboy from 'busboy';
import type { Readable } from 'node:stream';
import type { BodyParse } from './body.ts';
import { errorResponse, type ErrorCode } from './errors.ts';
import type { HttpResponse } from './http-types.ts';

export const kycDocumentBytesMax = 10 * 1024 * 1024;
export const kycUploadBodyBytesMax = kycDocumentBytesMax + 256 * 1024;

export interface MultipartLimits {
  readonly fileBytesMax: number;
  readonly fieldsCountMax: number;
  readonly fieldBytesMax: number;
  readonly fieldNameBytesMax: number;
  /** Fields plus files. */
  readonly partsCountMax: number;
  readonly headerPairsPerPartMax: number;
}

export const defaultMultipartLimits: MultipartLimits = {
  fileBytesMax: kycDocumentBytesMax,
  fieldsCountMax: 32,
  fieldBytesMax: 4096,
  fieldNameBytesMax: 100,
  partsCountMax: 33,
  headerPairsPerPartMax: 16,
};

export interface MultipartFile {
  readonly fieldName: string;
  /** Client-side file name without any path, control characters removed, ≤ 255 chars; null when absent. */
  readonly filename: string | null;
  /** The part's Content-Type as sent (busboy reports `text/plain` when the part has none). */
  readonly declaredType: string;
  readonly bytes: Buffer;
}

export interface MultipartForm {
  readonly fields: Readonly<Record<string, string>>;
  readonly file: MultipartFile;
}

export interface MultipartOptions {
  readonly limits?: Partial<MultipartLimits>;
  /** When set, the file part must carry this field name (e.g. `document`). */
  readonly fileFieldName?: string;
}

const filenameCharsMax = 255;
/** Bytes of a file part queued ahead of its consumer before busboy (and the body) is paused. */
const fileChunksHighWaterBytes = 256 * 1024;

interface Problem {
  readonly code: ErrorCode;
  readonly reason: string;
}

const malformed: Problem = { code: 'invalid_request', reason: 'Malformed multipart body' };

function isMultipartFormData(contentType: string | undefined): contentType is string {
  return contentType !== undefined && (contentType.split(';')[0] ?? '').trim().toLowerCase() === 'multipart/form-data';
}

function safeName(name: string): string {
  return name.replace(/[^\x20-\x7e]/g, '?').slice(0, 64);
}

function cleanFilename(filename: string | undefined): string | null {
  if (filename === undefined) return null;
  const cleaned = filename.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, filenameCharsMax);
  return cleaned.length === 0 ? null : cleaned;
}

/**
 * Parses a multipart/form-data body held in memory. 415 `unsupported_media_type` for another
 * Content-Type; 413 `payload_too_large` for a file over `fileBytesMax`; 400 `invalid_request` for a
 * broken form, a missing boundary, too many fields or parts, an over-long or repeated field, no
 * file part, more than one file part, or a file part under another name than `fileFieldName`.
 */
export async function parseMultipart(
  contentType: string | undefined,
  body: Buffer,
  options: MultipartOptions = {},
): Promise<BodyParse<MultipartForm>> {
  const form = await parseForm(contentType, options, collectBytes, (parser) => parser.end(body));
  if (!form.ok) return form;
  const { stored, ...file } = form.value.file;
  return { ok: true, value: { fields: form.value.fields, file: { ...file, bytes: stored } } };
}

/**
 * A file part's bytes as busboy produces them, queued for one consumer with backpressure: past
 * `fileChunksHighWaterBytes` queued, busboy's file stream is paused (and with it the request body,
 * and with it the socket). A consumer that stops early (a refused document) leaves the rest to be
 * drained and dropped, so the form is still parsed to its end. A cap crossed or a broken form makes
 * the iteration throw a MultipartProblemError.
 */
class FileChunks implements AsyncIterable<Buffer> {
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private ended = false;
  private failure: MultipartProblemError | null = null;
  private discarding = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly source: Readable,
    report: (problem: Problem) => void,
  ) {
    source.on('data', (chunk: Buffer) => this.onData(chunk));
    source.on('end', () => {
      this.ended = true;
      this.notify();
    });
    // busboy destroys the file stream of a form that breaks off: the consumer must not wait forever.
    source.on('error', () => report(malformed));
    source.on('close', () => {
      if (!this.ended) report(malformed);
    });
  }

  /** The form failed while the file was still arriving: the consumer's iteration throws. Too late once the file ended. */
  fail(problem: Problem): void {
    if (this.ended) return;
    this.failure ??= new MultipartProblemError(problem);
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const chunk = this.queue.shift();
        if (chunk !== undefined) {
          this.queuedBytes -= chunk.length;
          if (this.queuedBytes < fileChunksHighWaterBytes) this.source.resume();
          yield chunk;
          continue;
        }
        if (this.failure !== null) throw this.failure;
        if (this.ended) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
    } finally {
      // Stopped early (or failed): whatever else comes is drained without being kept.
      this.discarding = true;
      this.queue = [];
      this.queuedBytes = 0;
      this.source.resume();
    }
  }

  private onData(chunk: Buffer): void {
    if (this.discarding) return;
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    if (this.queuedBytes >= fileChunksHighWaterBytes) this.source.pause();
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/** A problem of the form itself (cap, broken multipart, body cut), carried through a file consumer. */
export class MultipartProblemError extends Error {
  override readonly name = 'MultipartProblemError';
  constructor(readonly problem: Problem) {
    super(problem.reason);
  }
}

export interface StreamedFile {
  readonly fieldName: string;
  /** Client-side file name without any path, control characters removed, ≤ 255 chars; null when absent. */
  readonly filename: string | null;
  /** The part's Content-Type as sent (busboy reports `text/plain` when the part has none). */
  readonly declaredType: string;
  /**
   * The file's bytes as they arrive; read at most once. It throws a MultipartProblemError when the
   * file crosses its cap or the form breaks; stopping early is allowed (the rest is dropped).
   */
  readonly chunks: AsyncIterable<Buffer>;
}

export type StreamedForm<Stored> =
  | { readonly ok: true; readonly value: { readonly fields: Readonly<Record<string, string>>; readonly file: Omit<StreamedFile, 'chunks'> & { readonly stored: Stored } } }
  /** `stored`: what `storeFile` kept before the form failed, for the caller to remove; null when nothing. */
  | { readonly ok: false; readonly response: HttpResponse; readonly stored: Stored | null };

/**
 * Parses a multipart/form-data body as it arrives: text fields are collected, the one file part is
 * handed to `storeFile` as a stream the moment it starts, so the file is never held whole here. The
 * result comes once the form has ended and `storeFile` has settled. Refusals are those of
 * `parseMultipart`; when `storeFile` rejects with anything but a MultipartProblemError (its store
 * failed), the promise rejects with that error.
 */
export function parseMultipartStream<Stored>(
  contentType: string | undefined,
  body: Readable,
  options: MultipartOptions,
  storeFile: (file: StreamedFile) => Promise<Stored>,
): Promise<StreamedForm<Stored>> {
  return parseForm(contentType, options, storeFile, (parser, fail) => {
    // A body cut by the toolkit (timeout, too slow, client gone): the form ends here.
    body.once('error', () => {
      fail({ code: 'invalid_request', reason: 'Request body incomplete' });
      parser.destroy();
    });
    body.pipe(parser);
  });
}

/** `parseMultipart` over a whole body in memory (the file part's bytes collected into one Buffer). */
function collectBytes(file: StreamedFile): Promise<Buffer> {
  return (async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of file.chunks) chunks.push(chunk);
    return Buffer.concat(chunks);
  })();
}

function parseForm<Stored>(
  contentType: string | undefined,
  options: MultipartOptions,
  storeFile: (file: StreamedFile) => Promise<Stored>,
  feed: (parser: busboy.Busboy, fail: (problem: Problem) => void) => void,
): Promise<StreamedForm<Stored>> {
  if (!isMultipartFormData(contentType)) {
    return Promise.resolve({ ok: false, response: errorResponse('unsupported_media_type', 'Content-Type must be multipart/form-data'), stored: null });
  }
  const limits: MultipartLimits = { ...defaultMultipartLimits, ...options.limits };
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      defParamCharset: 'utf8',
      preservePath: false,
      limits: {
        fileSize: limits.fileBytesMax,
        files: 1,
        fields: limits.fieldsCountMax,
        fieldSize: limits.fieldBytesMax,
        fieldNameSize: limits.fieldNameBytesMax,
        parts: limits.partsCountMax,
        headerPairs: limits.headerPairsPerPartMax,
      },
    });
  } catch {
    // busboy throws synchronously for a Content-Type without a usable boundary.
    return Promise.resolve({ ok: false, response: errorResponse('invalid_request', 'Malformed multipart Content-Type (boundary missing)'), stored: null });
  }
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    let file: Omit<StreamedFile, 'chunks'> | null = null;
    let chunks: FileChunks | null = null;
    let storing: Promise<void> | null = null;
    let stored: { readonly value: Stored } | null = null;
    let storeFailure: { readonly error: unknown } | null = null;
    let problem: Problem | null = null;
    let finished = false;
    const fail = (code: ErrorCode, reason: string): void => {
      problem ??= { code, reason };
      chunks?.fail(problem);
    };
    const finish = (): void => {
      if (finished) return;
      finished = true;
      void (storing ?? Promise.resolve()).then(() => {
        if (storeFailure !== null) return reject(storeFailure.error instanceof Error ? storeFailure.error : new Error(String(storeFailure.error)));
        if (problem === null && file === null) fail('invalid_request', 'A file part is required');
        const keptValue = stored === null ? null : stored.value;
        if (problem !== null) return resolve({ ok: false, response: errorResponse(problem.code, problem.reason), stored: keptValue });
        if (file === null || stored === null) return reject(new Error('multipart: a file part without its stored result'));
        resolve({ ok: true, value: { fields, file: { ...file, stored: stored.value } } });
      });
    };

    parser.on('field', (name, value, info) => {
      if (info.nameTruncated) return fail('invalid_request', 'Field name too long');
      if (info.valueTruncated) return fail('invalid_request', `Field '${safeName(name)}' exceeds ${limits.fieldBytesMax} bytes`);
      if (name in fields) return fail('invalid_request', `Field '${safeName(name)}' given more than once`);
      fields[name] = value;
    });
    parser.on('file', (name: string, stream: Readable, info: busboy.FileInfo) => {
      if (options.fileFieldName !== undefined && name !== options.fileFieldName) {
        fail('invalid_request', `The file part must be named '${options.fileFieldName}'`);
        // Drained and dropped; busboy fails the stream of a form that breaks off (already refused).
        stream.on('error', () => undefined);
        stream.resume();
        return;
      }
      const fileChunks = new FileChunks(stream, (fileProblem) => fail(fileProblem.code, fileProblem.reason));
      chunks = fileChunks;
      stream.on('limit', () => fail('payload_too_large', `Document exceeds ${limits.fileBytesMax} bytes`));
      file = { fieldName: name, filename: cleanFilename(info.filename), declaredType: info.mimeType };
      storing = storeFile({ ...file, chunks: fileChunks }).then(
        (value) => {
          stored = { value };
        },
        (error: unknown) => {
          if (!(error instanceof MultipartProblemError)) storeFailure = { error };
        },
      );
    });
    parser.on('filesLimit', () => fail('invalid_request', 'Exactly one file part is expected'));
    parser.on('fieldsLimit', () => fail('invalid_request', `At most ${limits.fieldsCountMax} fields are accepted`));
    parser.on('partsLimit', () => fail('invalid_request', `At most ${limits.partsCountMax} parts are accepted`));
    parser.on('error', () => {
      fail('invalid_request', 'Malformed multipart body');
      finish();
    });
    parser.on('close', finish);
    feed(parser, (problemOfFeed) => fail(problemOfFeed.code, problemOfFeed.reason));
  });
}
