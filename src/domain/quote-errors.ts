// The quote error catalogue: every code the three quote endpoints can answer, and whether the same
// request may be retried. Rejections are values of this union; the edge maps them to HTTP once
// (`httpStatusOf` in src/edge/errors.ts). Provider errors never reach a reason text.

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
  readonly retryable: boolean;
  readonly meaning: string;
}

/**
 * The spec fixes `retryable` false for `minimum` and true for `quote_unavailable`; the rest is ours
 * (docs/decisions-pricing.md). The HTTP statuses (the spec's 401 for `authentication_failed`, 400
 * for the request's or the route's fault, 500 for ours) are the edge's (src/edge/errors.ts).
 */
export const quoteErrorCatalogue: Readonly<Record<QuoteErrorCode, QuoteErrorEntry>> = {
  authentication_failed: { retryable: false, meaning: 'Missing or invalid API key or bearer token.' },
  invalid_request: { retryable: false, meaning: 'A field is missing, malformed or out of range.' },
  corridor_unavailable: { retryable: false, meaning: 'The route is not enabled.' },
  minimum: { retryable: false, meaning: 'The amount is below the corridor minimum.' },
  maximum: { retryable: false, meaning: 'The amount is above the corridor maximum.' },
  quote_unavailable: { retryable: true, meaning: 'No rate is available right now.' },
  server_error: { retryable: true, meaning: 'Internal error.' },
};

export function quoteError<C extends QuoteErrorCode>(code: C, reason: string): QuoteError & { readonly code: C } {
  return { code, reason, retryable: quoteErrorCatalogue[code].retryable };
}
