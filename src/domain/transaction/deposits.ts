// A deposit against its transaction: every deposit it knows (its own and the strays), and how a
// deposit differs from what the quote asked for. Read by decide and by the invariants.
import { compare } from '../money.ts';
import type { Quote } from '../quote.ts';
import type { Deposit, MismatchKind, TransactionState } from './types.ts';

/** The transaction's own deposit (if any) and every stray one. */
export function knownDeposits(state: TransactionState): Deposit[] {
  const stray = state.strayDeposits.map((entry) => entry.deposit);
  return state.deposit === null ? stray : [state.deposit, ...stray];
}

/** Null when the deposit is exactly what the quote asked for. */
export function mismatchOf(quote: Quote, deposit: Deposit): MismatchKind | null {
  if (deposit.rail === 'chain') {
    if (deposit.network !== quote.network) return 'wrong_network';
    if (deposit.asset !== quote.cryptoCurrency) return 'wrong_asset';
  }
  const order = compare(deposit.amount, quote.sourceAmount);
  return order < 0 ? 'short' : order > 0 ? 'over' : null;
}
