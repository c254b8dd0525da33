// The error catalogue of the partner-facing edge for every endpoint other than the quotes (whose
// codes are the spec's quote error shape). One table: code → HTTP status, retryable flag and the
// default reason. The body is always `{ code, reason, retryable }` (DESIGN.md, "Error body of
// non-quote endpoints"). Reasons are for humans and never carry provider errors, stack traces,
// keys or personal data; callers may pass a more specific, equally safe reason.
import type { HttpResponse } from './http.ts';

export interface ErrorDefinition {
  readonly status: number;
  readonly retryable: boolean;
  readonly defaultReason: string;
}

export const errorCatalogue = {
  invalid_request: { status: 400, retryable: false, defaultReason: 'Invalid request' },
  authentication_failed: { status: 401, retryable: false, defaultReason: 'Missing or invalid API key' },
  user_disabled: { status: 403, retryable: false, defaultReason: 'The user is disabled' },
  not_found: { status: 404, retryable: false, defaultReason: 'Not found' },
  method_not_allowed: { status: 405, retryable: false, defaultReason: 'Method not allowed' },
  request_timeout: { status: 408, retryable: true, defaultReason: 'Request not received in time' },
  quote_not_found: { status: 400, retryable: false, defaultReason: 'The quote does not exist; request a new quote' },
  kyc_rejected: { status: 400, retryable: false, defaultReason: 'KYC for this user was rejected; contact support' },
  idempotency_in_progress: {
    status: 409,
    retryable: true,
    defaultReason: 'A request with this Idempotency-Key is still being processed; retry later',
  },
  idempotency_conflict: {
    status: 422,
    retryable: false,
    defaultReason: 'The same idempotency key was used with a different request',
  },
  payload_too_large: { status: 413, retryable: false, defaultReason: 'Request body too large' },
  unsupported_media_type: { status: 415, retryable: false, defaultReason: 'Unsupported content type' },
  rate_limited: { status: 429, retryable: true, defaultReason: 'Rate limit reached; retry after the Retry-After delay' },
  headers_too_large: { status: 431, retryable: false, defaultReason: 'Request headers too large' },
  server_error: { status: 500, retryable: true, defaultReason: 'Internal error' },
  service_unavailable: { status: 503, retryable: true, defaultReason: 'Service temporarily unavailable' },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof errorCatalogue;

export interface ErrorBody {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly retryable: boolean;
}

/** Longest reason we send; a longer one is cut (reasons are short human sentences). */
export const reasonCharsMax = 300;

export function errorBody(code: ErrorCode, reason?: string): ErrorBody {
  const definition: ErrorDefinition = errorCatalogue[code];
  const text = reason === undefined || reason.length === 0 ? definition.defaultReason : reason;
  return { code, reason: text.slice(0, reasonCharsMax), retryable: definition.retryable };
}

export function errorStatus(code: ErrorCode): number {
  return errorCatalogue[code].status;
}

/** The HTTP response for a catalogue error; `headers` adds e.g. `Allow` or `Retry-After`. */
export function errorResponse(
  code: ErrorCode,
  reason?: string,
  headers?: Readonly<Record<string, string>>,
): HttpResponse {
  return {
    status: errorStatus(code),
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(errorBody(code, reason)),
  };
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.prototype.hasOwnProperty.call(errorCatalogue, value);
}
