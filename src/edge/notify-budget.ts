// The notify budget: POST /payments/notify of deposits that cannot fund their transaction is
// rate-limited per partner (docs/api.md, "Notify budget").
//
// Every notify that reaches the chain costs us a verification (RPC calls against our provider's
// quota), and one whose deposit cannot fund its transaction also costs a refund (a network fee; on
// Solana possibly the rent of the sender's token account). A partner could otherwise make us do
// that work without bound, or run a rent loop. So each partner has a token bucket (default 10,
// refilled at 2 a minute) that is charged only by notifies of deposits that cannot fund their
// transaction:
//   charged — the transaction was no longer AWAITING_PAYMENT when it was read (a new deposit is a
//             stray or late one; the same hash again is a repeat), the verified deposit differs from
//             the quote (a wrong amount, asset or network, dust: `mismatched` from the intake,
//             src/chains/notify-match.ts), or the chain said the transfer does not validate
//             (`invalid`: failed, wrong token, not to our address…);
//   free    — the exact payment of an awaiting transaction, `not_found` (not final yet: the
//             partner's normal retry loop), and our own failures (`unavailable`, an exception).
// A token is taken before verifying and given back when the outcome is free, so concurrent
// notifies cannot overdraw the bucket. With the bucket empty, every notify of that partner is
// answered 429 `rate_limited` with Retry-After BEFORE any verification, and nothing is recorded:
// the transfer stays on chain and the same notify succeeds once the delay has passed.
//
// Like the general per-partner limit, the buckets live in each edge process (an LRU of partner
// ids), so N edges allow N times the budget; the clock is the service's injected clock.
import type { NotifyResult } from '../ports/ports.ts';
import { createRateLimiter, type TakeTokenResult } from './rate-limit.ts';

export interface NotifyBudgetConfig {
  /** Sustained: tokens refilled per minute. */
  readonly perMinute: number;
  /** Bucket size: charged notifies allowed in a burst after a quiet period. */
  readonly burst: number;
}

export const defaultNotifyBudgetConfig: NotifyBudgetConfig = { perMinute: 2, burst: 10 };

export interface NotifyBudget {
  /** Takes a token before verifying; refused: answer 429 with `retryAfterSeconds`. */
  reserve(partnerId: string): TakeTokenResult;
  /** After the notify: a free outcome gives its token back. */
  settle(partnerId: string, charged: boolean): void;
}

/** Pure: whether a notify's outcome is charged, from the transaction's status read before it. */
export function notifyIsCharged(transactionStatusBefore: string, result: NotifyResult): boolean {
  switch (result.result) {
    case 'enqueued':
      return transactionStatusBefore !== 'AWAITING_PAYMENT' || result.mismatched === true;
    case 'invalid':
      return true;
    case 'not_found':
    case 'unavailable':
      return false;
  }
}

export function createNotifyBudget(config: NotifyBudgetConfig, nowMs: () => number): NotifyBudget {
  if (!Number.isFinite(config.perMinute) || config.perMinute <= 0) throw new RangeError('notify budget perMinute must be positive');
  const limiter = createRateLimiter({ config: { ratePerSecond: config.perMinute / 60, burst: config.burst }, nowMs });
  return {
    reserve: (partnerId) => limiter.take(partnerId),
    settle(partnerId, charged) {
      if (!charged) limiter.giveBack(partnerId);
    },
  };
}
