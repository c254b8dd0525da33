// Unmatched deposits as objects a partner can act on (docs/unmatched-deposits.md). Pure: the deposit
// actor (src/actors/deposit-actor.ts) keeps the facts and asks here what they mean and what a
// partner's call may do.
//
// A transfer that funds no transaction is "unmatched". When a transaction can be named (it reached
// that transaction's own address, its memo named it, or the transaction handed it back: late, beyond
// its stray slots, dust), the transaction's partner is the one it is attributable to, and the
// deposit waits `open` for that partner's decision: `refund` (to the sender, through the chain
// refund path and its floor) or `apply` (it funds a new transaction from a fresh quote). Nothing
// waits forever: an open deposit nobody decided on is refunded automatically once its hold ends
// (72 h by default), through the same path. A deposit no partner can be named for (a memo naming
// nothing) is refunded at once, as before this existed.
//
// Dust (below the network's refund floor) is never refunded: it stays `open`, a `refund` call is
// refused (`refund_withheld`), the hold does not refund it either, and `apply` is allowed like for
// any other open deposit (its amount must still be exactly the quote's deposit amount).
import type { CryptoAsset, Network } from './assets.ts';
import { compare, type Decimal } from './money.ts';

export type UnmatchedDepositState = 'open' | 'refunding' | 'refunded' | 'applied';
export const unmatchedDepositStates: readonly UnmatchedDepositState[] = ['open', 'refunding', 'refunded', 'applied'];

/** How long an attributable deposit waits for its partner before it is refunded automatically. */
export const unmatchedHoldMsDefault = 72 * 60 * 60 * 1000;

/**
 * An unmatched deposit's refund progress as the deposit actor records it: `held` waits for the
 * partner (open), `withheld` is dust (open, never refunded), `pending` is on its way (refunding),
 * `settled` is back with the sender (refunded). `none` with `appliedTo` set: it funds a transaction.
 */
export type UnmatchedRefund = 'none' | 'held' | 'withheld' | 'pending' | 'settled';

/** The partner-visible state of an unmatched deposit. */
export function unmatchedStateOf(refund: UnmatchedRefund, appliedTo: string | null): UnmatchedDepositState {
  if (appliedTo !== null) return 'applied';
  if (refund === 'pending') return 'refunding';
  if (refund === 'settled') return 'refunded';
  return 'open';
}

/**
 * What happens to a transfer when it becomes unmatched: refunded at once (nobody can decide on
 * it), held for its partner, or withheld as dust (below the floor, whoever it belongs to).
 */
export function initialRefund(partnerId: string | null, belowFloor: boolean): 'pending' | 'held' | 'withheld' {
  if (belowFloor) return 'withheld';
  return partnerId === null ? 'pending' : 'held';
}

/** When an open, held deposit is refunded if its partner has not decided; null when nothing is due. */
export function holdEndsAtMs(refund: UnmatchedRefund, unmatchedAtMs: number, holdMs: number): number | null {
  return refund === 'held' ? unmatchedAtMs + holdMs : null;
}

/** The facts of one unmatched deposit a partner decision is judged on. */
export interface UnmatchedFacts {
  readonly partnerId: string | null;
  readonly refund: UnmatchedRefund;
  readonly appliedTo: string | null;
}

export type RefundDecision =
  /** Start the refund now (write the refund row). */
  | { readonly kind: 'refund' }
  /** Already refunding or refunded: nothing more happens (a repeat or a concurrent call). */
  | { readonly kind: 'already' }
  | { readonly kind: 'refused'; readonly code: 'not_found' | 'refund_withheld' | 'unmatched_deposit_not_open' };

/** A partner's `refund` call. Another partner's deposit (or one nobody can claim) is not found. */
export function decideRefund(facts: UnmatchedFacts, partnerId: string): RefundDecision {
  if (facts.partnerId !== partnerId) return { kind: 'refused', code: 'not_found' };
  if (facts.appliedTo !== null) return { kind: 'refused', code: 'unmatched_deposit_not_open' };
  if (facts.refund === 'pending' || facts.refund === 'settled') return { kind: 'already' };
  if (facts.refund === 'withheld') return { kind: 'refused', code: 'refund_withheld' };
  return facts.refund === 'held' ? { kind: 'refund' } : { kind: 'refused', code: 'unmatched_deposit_not_open' };
}

export type ApplyDecision =
  | { readonly kind: 'apply' }
  /** Applied to this same transaction before (a repeat): tell the transaction again, harmlessly. */
  | { readonly kind: 'already' }
  | { readonly kind: 'refused'; readonly code: 'not_found' | 'unmatched_deposit_not_open' };

/** A partner's `apply` to the transaction `transactionId` (already created from its fresh quote). */
export function decideApply(facts: UnmatchedFacts, partnerId: string, transactionId: string): ApplyDecision {
  if (facts.partnerId !== partnerId) return { kind: 'refused', code: 'not_found' };
  if (facts.appliedTo !== null) return facts.appliedTo === transactionId ? { kind: 'already' } : { kind: 'refused', code: 'unmatched_deposit_not_open' };
  return facts.refund === 'held' || facts.refund === 'withheld' ? { kind: 'apply' } : { kind: 'refused', code: 'unmatched_deposit_not_open' };
}

/** What the deposit is, against the quote it would be applied to. */
export interface ApplyQuoteFacts {
  readonly direction: 'payout' | 'onramp';
  readonly network: Network;
  readonly cryptoCurrency: CryptoAsset;
  /** The crypto the quote asks to be deposited. */
  readonly sourceAmount: Decimal;
}

/**
 * Why the deposit cannot fund a transaction of this quote, or null when it can. The rule: the
 * deposit must be exactly what a deposit for the quote would have to be (a payout quote on the same
 * network and asset, for exactly its amount), so the new transaction is funded in full and nothing is
 * left over to refund. A different amount needs a quote for that amount (`POST /quote/reverse`).
 */
export function applyMismatch(
  deposit: { readonly network: Network; readonly asset: CryptoAsset; readonly amount: Decimal },
  quote: ApplyQuoteFacts,
): string | null {
  if (quote.direction !== 'payout') return 'The quote is not a payout quote; only a payout can be funded by a deposit';
  if (quote.network !== deposit.network) return `The quote is for ${quote.network}; the deposit arrived on ${deposit.network}`;
  if (quote.cryptoCurrency !== deposit.asset) return `The quote is for ${quote.cryptoCurrency}; the deposit is ${deposit.asset}`;
  if (compare(quote.sourceAmount, deposit.amount) !== 0) {
    return 'The quote\'s deposit amount differs from the deposit\'s amount; request a quote for exactly the deposit\'s amount (POST /quote/reverse)';
  }
  return null;
}
