// Single use of a quote: the pure part. A quote promises a rate for up to an hour; accepted any
// number of times it would be an open FX position for that hour. So a quote backs at most one
// transaction (docs/decisions-limits.md, "Single-use quotes"):
// - an acceptance claims the quote for its transaction id (`claim`); while held, another
//   acceptance is refused (`quote_in_use`, retryable: the holder may still be refused);
// - the holder's transaction is created: the quote is used for good (`consume`), and every later
//   acceptance is refused (`quote_used`, naming that transaction);
// - the holder creates nothing (refused by a cap, kycRequired, expired meanwhile): the claim is
//   given back (`releaseClaim`) and the quote may be accepted again while it is valid.
// The quote actor is the one writer of a quote's use; the edge runs `claim` on the quote as last
// written to refuse early. Every function is idempotent for the same transaction id.
import type { AcceptanceRejection } from './limits.ts';

export interface QuoteUse {
  /** The transaction that claimed the quote. */
  readonly transactionId: string;
  /** `held`: its acceptance is running; `used`: the transaction was created. */
  readonly status: 'held' | 'used';
}

export type QuoteClaimRejection = Extract<AcceptanceRejection, { code: 'quote_used' | 'quote_in_use' }>;

export type QuoteClaimOutcome = { readonly ok: true } | { readonly ok: false; readonly rejection: QuoteClaimRejection };

/** The answer to `transactionId` claiming a quote in `use` (null: unclaimed), and the use after it. */
export function claim(use: QuoteUse | null, transactionId: string): { readonly outcome: QuoteClaimOutcome; readonly use: QuoteUse | null } {
  assertTransactionId(transactionId);
  if (use === null) return { outcome: { ok: true }, use: { transactionId, status: 'held' } };
  // The same transaction asking again (a redelivery, a retry with the same ids): granted as before.
  if (use.transactionId === transactionId) return { outcome: { ok: true }, use };
  const rejection: QuoteClaimRejection = use.status === 'used' ? { code: 'quote_used', transactionId: use.transactionId } : { code: 'quote_in_use' };
  return { outcome: { ok: false, rejection }, use };
}

/** The holder's acceptance created nothing: the quote is free again. Anything else changes nothing. */
export function releaseClaim(use: QuoteUse | null, transactionId: string): QuoteUse | null {
  return use !== null && use.transactionId === transactionId && use.status === 'held' ? null : use;
}

/** The holder's transaction was created: the quote is used for good. Anything else changes nothing. */
export function consume(use: QuoteUse | null, transactionId: string): QuoteUse | null {
  return use !== null && use.transactionId === transactionId && use.status === 'held' ? { transactionId, status: 'used' } : use;
}

function assertTransactionId(transactionId: string): void {
  if (typeof transactionId !== 'string' || transactionId.length === 0) throw new Error('quote use invariant violated: empty transaction id');
}
