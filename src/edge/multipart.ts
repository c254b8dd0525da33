// multipart/form-data for the KYC upload: text fields plus exactly one file part, parsed with
// busboy from the body the router already read under the route's byte cap. Every dimension is
// capped (file bytes, field count, field bytes, field-name bytes, part count, headers per part);
// crossing a cap or sending a broken form is a 4xx with a safe reason, never a 500.
//
// The spec leaves the KYC upload size open. Our choice: a document of at most 10 MiB
// (`kycDocumentBytesMax`, enough for a phone photo or a scanned PDF) in a request body of at most
// 10 MiB + 256 KiB (`kycUploadBodyBytesMax`, room for the eleven text fields and the multipart
// envelope). The KYC route sets `bodyBytesMax: kycUploadBodyBytesMax`.
import busboy from 'busboy';
import type { Readable } from 'node:stream';
import type { BodyParse } from './body.ts';
import { errorResponse, type ErrorCode } from './errors.ts';

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

interface Problem {
  readonly code: ErrorCode;
  readonly reason: string;
}

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
 * Parses a multipart/form-data body. 415 `unsupported_media_type` for another Content-Type;
 * 413 `payload_too_large` for a file over `fileBytesMax`; 400 `invalid_request` for a broken form,
 * a missing boundary, too many fields or parts, an over-long or repeated field, no file part, or
 * more than one file part.
 */
export function parseMultipart(
  contentType: string | undefined,
  body: Buffer,
  options: MultipartOptions = {},
): Promise<BodyParse<MultipartForm>> {
  if (!isMultipartFormData(contentType)) {
    return Promise.resolve({
      ok: false,
      response: errorResponse('unsupported_media_type', 'Content-Type must be multipart/form-data'),
    });
  }
  const limits: MultipartLimits = { ...defaultMultipartLimits, ...options.limits };
  return new Promise((resolve) => {
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    let file: MultipartFile | null = null;
    let problem: Problem | null = null;
    const fail = (code: ErrorCode, reason: string): void => {
      problem ??= { code, reason };
    };
    const finish = (): void => {
      if (problem === null && file === null) fail('invalid_request', 'A file part is required');
      if (problem !== null) resolve({ ok: false, response: errorResponse(problem.code, problem.reason) });
      else if (file !== null) resolve({ ok: true, value: { fields, file } });
    };

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
      resolve({ ok: false, response: errorResponse('invalid_request', 'Malformed multipart Content-Type (boundary missing)') });
      return;
    }

    parser.on('field', (name, value, info) => {
      if (info.nameTruncated) return fail('invalid_request', 'Field name too long');
      if (info.valueTruncated) return fail('invalid_request', `Field '${safeName(name)}' exceeds ${limits.fieldBytesMax} bytes`);
      if (name in fields) return fail('invalid_request', `Field '${safeName(name)}' given more than once`);
      fields[name] = value;
    });
    parser.on('file', (name: string, stream: Readable & { truncated?: boolean }, info: busboy.FileInfo) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
      });
      stream.on('limit', () => fail('payload_too_large', `Document exceeds ${limits.fileBytesMax} bytes`));
      stream.on('error', () => fail('invalid_request', 'Malformed multipart body'));
      stream.on('end', () => {
        if (options.fileFieldName !== undefined && name !== options.fileFieldName) {
          return fail('invalid_request', `The file part must be named '${options.fileFieldName}'`);
        }
        file = {
          fieldName: name,
          filename: cleanFilename(info.filename),
          declaredType: info.mimeType,
          bytes: Buffer.concat(chunks, size),
        };
      });
    });
    parser.on('filesLimit', () => fail('invalid_request', 'Exactly one file part is expected'));
    parser.on('fieldsLimit', () => fail('invalid_request', `At most ${limits.fieldsCountMax} fields are accepted`));
    parser.on('partsLimit', () => fail('invalid_request', `At most ${limits.partsCountMax} parts are accepted`));
    parser.on('error', () => {
      fail('invalid_request', 'Malformed multipart body');
      finish();
    });
    parser.on('close', finish);
    parser.end(body);
  });
}
