// The one error catalogue of the partner-facing edge: every code a partner can receive, and the
// one place a code becomes an HTTP status (`httpStatusOf`). Two kinds of codes:
// - the edge's own (`errorCatalogue`): code → HTTP status, retryable flag and default reason;
// - the domain's rejections (quote errors, src/domain/quote-errors.ts; acceptance rejections,
//   src/domain/limits.ts): the domain decides code, retryable and reason, and knows nothing of
//   HTTP; `domainErrorStatuses` gives each its status here.
// A test ties this to docs/api.md's error table (test/unit/error-catalogue.test.ts): every code is
// documented with its status, and the doc names no other.
// The body is always `{ code, reason, retryable }` (docs/api.md lists every code).
// Reasons are for humans and never carry provider errors, stack traces, keys or personal data;
// callers may pass a more specific, equally safe reason.
//
// Infrastructure failures (Redis unreachable, no shard worker, no reply in time) are not bugs:
// `unavailableReason` is the one place they become a 503 `service_unavailable` with a reason that
// names what is missing; every 503 carries `Retry-After`.
import { BusError } from '../bus/bus.ts';
import { RequestError, isUnavailableFailure } from '../bus/request-reply.ts';
import type { HttpResponse } from './http-types.ts';
import type { QuoteErrorCode } from '../domain/quote-errors.ts';
import type { AcceptanceRejectionCode } from '../domain/limits.ts';

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
  rehearsal_not_applicable: {
    status: 409,
    retryable: false,
    defaultReason: 'This sandbox rehearsal does not apply to the transaction in its current state',
  },
  receipt_not_available: {
    status: 409,
    retryable: false,
    defaultReason: 'No receipt yet: a receipt exists once the transaction is PAYMENT_COMPLETED or its deposit is refunded',
  },
  unmatched_deposit_not_open: {
    status: 409,
    retryable: false,
    defaultReason: 'The unmatched deposit is no longer open: it is being refunded, was refunded or was applied',
  },
  refund_withheld: {
    status: 409,
    retryable: false,
    defaultReason: 'The deposit is below its network\'s refund floor and is not refunded; apply it to a quote for its exact amount instead',
  },
  deposit_quote_mismatch: {
    status: 400,
    retryable: false,
    defaultReason: 'The deposit cannot fund a transaction of this quote',
  },
  payload_too_large: { status: 413, retryable: false, defaultReason: 'Request body too large' },
  uri_too_long: { status: 414, retryable: false, defaultReason: 'Request URI too long' },
  unsupported_media_type: { status: 415, retryable: false, defaultReason: 'Unsupported content type' },
  rate_limited: { status: 429, retryable: true, defaultReason: 'Rate limit reached; retry after the Retry-After delay' },
  headers_too_large: { status: 431, retryable: false, defaultReason: 'Request headers too large' },
  server_error: { status: 500, retryable: true, defaultReason: 'Internal error' },
  service_unavailable: { status: 503, retryable: true, defaultReason: 'Service temporarily unavailable' },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof errorCatalogue;

/** The domain's codes that the edge does not also answer by itself. */
type DomainOnlyCode = Exclude<QuoteErrorCode | AcceptanceRejectionCode, ErrorCode>;

/**
 * HTTP status of each domain rejection (a code both the edge and the domain use takes the edge's
 * row above). Every refusal caused by the request, the quote, the route or a limit is 400;
 * `user_disabled` is 403 (above).
 */
export const domainErrorStatuses: { readonly [C in DomainOnlyCode]: 400 } = {
  corridor_unavailable: 400,
  minimum: 400,
  maximum: 400,
  quote_unavailable: 400,
  quote_expired: 400,
  quote_used: 400,
  quote_in_use: 400,
  transaction_cap: 400,
  kyb_cap: 400,
  rail_unavailable: 400,
  account_unverifiable: 400,
  liquidity_insufficient: 400,
  user_daily_count_cap: 400,
  user_daily_amount_cap: 400,
  method_daily_cap: 400,
};

/** Every code a partner can receive. */
export type PartnerErrorCode = ErrorCode | DomainOnlyCode;

export const partnerErrorCodes: readonly PartnerErrorCode[] = Object.freeze([
  ...(Object.keys(errorCatalogue) as ErrorCode[]),
  ...(Object.keys(domainErrorStatuses) as DomainOnlyCode[]),
]);

export function isPartnerErrorCode(value: string): value is PartnerErrorCode {
  return isErrorCode(value) || Object.prototype.hasOwnProperty.call(domainErrorStatuses, value);
}

/** The HTTP status of a code: the one place codes become statuses. */
export function httpStatusOf(code: PartnerErrorCode): number {
  return isErrorCode(code) ? errorCatalogue[code].status : domainErrorStatuses[code];
}

/** A rejection the domain decided (code, reason, retryable), as the partner sees it. */
export function rejectionResponse(code: PartnerErrorCode, reason: string, retryable: boolean): HttpResponse {
  return {
    status: httpStatusOf(code),
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({ code, reason, retryable }),
  };
}

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

/**
 * `Retry-After` of every 503: a shard worker's shards are taken over within a lease round or two
 * (the lease TTL is 10 s by default), Redis reconnects within 2 s of coming back.
 */
export const unavailableRetryAfterSeconds = 5;

/**
 * The HTTP response for a catalogue error; `headers` adds e.g. `Allow` or `Retry-After` (a 503
 * gets `Retry-After: unavailableRetryAfterSeconds` unless `headers` sets it).
 */
export function errorResponse(
  code: ErrorCode,
  reason?: string,
  headers?: Readonly<Record<string, string>>,
): HttpResponse {
  const retryAfter = code === 'service_unavailable' ? { 'retry-after': String(unavailableRetryAfterSeconds) } : undefined;
  return {
    status: errorStatus(code),
    headers: { 'content-type': 'application/json; charset=utf-8', ...retryAfter, ...headers },
    body: JSON.stringify(errorBody(code, reason)),
  };
}

/** Reasons of the 503s for infrastructure failures (they name what is missing; no error texts). */
export const unavailableReasons = {
  no_owner: 'No shard worker is serving requests right now; retry later',
  redis: 'The message bus (Redis) is not reachable right now; retry later',
  timeout: 'The service did not answer in time; retry later',
  overloaded: 'Too many requests are waiting for an answer; retry later',
  closed: 'The service is shutting down; retry later',
} as const;

/**
 * The reason of the 503 for an infrastructure failure, or null for anything else (a bug: 500).
 * The one place these failures are recognised; the adapters have already turned their own errors
 * into these (Redis: `toBusError` in src/bus/redis-connection.ts).
 */
export function unavailableReason(error: unknown): string | null {
  if (!isUnavailableFailure(error)) return null;
  if (error instanceof RequestError) return unavailableReasons[error.code];
  return error instanceof BusError && error.code === 'closed' ? unavailableReasons.closed : unavailableReasons.redis;
}

/** The 503 for an infrastructure failure, or null for anything else. */
export function unavailableResponse(error: unknown): HttpResponse | null {
  const reason = unavailableReason(error);
  return reason === null ? null : errorResponse('service_unavailable', reason);
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.prototype.hasOwnProperty.call(errorCatalogue, value);
}
