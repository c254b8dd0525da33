// The quote error catalogue: every code the three quote endpoints can answer, with its HTTP status
// and whether the same request may be retried. Rejections are values of this union; the edge maps
// them to HTTP once, through `quoteErrorHttpStatus`. Provider errors never reach a reason text.

export const quoteErrorCodes = [
  'authentication_failed',
  'invalid_request',
  'corridor_unavailable',
  'minimum',
  'maximum',
  'quote_unavailable',
  'server_error',
] as const;
export type QuoteErrorCode = (typeof quoteErrorCodes)[number];

export interface QuoteError {
  readonly code: QuoteErrorCode;
  /** Human-readable, safe to show a partner. */
  readonly reason: string;
  /** True when the very same request may succeed if tried again. */
  readonly retryable: boolean;
}

export interface QuoteErrorEntry {
  readonly httpStatus: 400 | 401 | 500;
  readonly retryable: boolean;
  readonly meaning: string;
}

/**
 * The spec fixes 401 for `authentication_failed`, `retryable` false for `minimum` and true for
 * `quote_unavailable`; the rest is ours (docs/decisions-pricing.md). Every rejection caused by the
 * request or by the route is 400; only a failure on our side is 500.
 */
export const quoteErrorCatalogue: Readonly<Record<QuoteErrorCode, QuoteErrorEntry>> = {
  authentication_failed: { httpStatus: 401, retryable: false, meaning: 'Missing or invalid API key or bearer token.' },
  invalid_request: { httpStatus: 400, retryable: false, meaning: 'A field is missing, malformed or out of range.' },
  corridor_unavailable: { httpStatus: 400, retryable: false, meaning: 'The route is not enabled.' },
  minimum: { httpStatus: 400, retryable: false, meaning: 'The amount is below the corridor minimum.' },
  maximum: { httpStatus: 400, retryable: false, meaning: 'The amount is above the corridor maximum.' },
  quote_unavailable: { httpStatus: 400, retryable: true, meaning: 'No rate is available right now.' },
  server_error: { httpStatus: 500, retryable: true, meaning: 'Internal error.' },
};

export function quoteError<C extends QuoteErrorCode>(code: C, reason: string): QuoteError & { readonly code: C } {
  return { code, reason, retryable: quoteErrorCatalogue[code].retryable };
}

export function quoteErrorHttpStatus(code: QuoteErrorCode): 400 | 401 | 500 {
  return quoteErrorCatalogue[code].httpStatus;
}

/** The JSON body of a quote error response. */
export function quoteErrorToJson(error: QuoteError): { code: QuoteErrorCode; reason: string; retryable: boolean } {
  return { code: error.code, reason: error.reason, retryable: error.retryable };
}
