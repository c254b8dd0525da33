// Whether a verified transfer can fund its transaction, judged on the transaction's read model as
// it stood before the claim: awaiting payment, and exactly the quoted amount, asset and network
// (the state machine's own `mismatchOf`). Anything else (a stray, a repeat, a wrong amount, dust) is
// a mismatched deposit, which the edge charges to the partner's notify budget
// (src/edge/notify-budget.ts). Lateness is not judged here (no clock): a late deposit is caught
// once the expiry timer has moved the transaction on. Pure; the caller reads the document.
import { fromJsonValue } from '../actors/state-codec.ts';
import type { ClaimedTransfer } from '../actors/deposit-actor.ts';
import { mismatchOf } from '../domain/transaction.ts';
import type { Quote } from '../domain/quote.ts';
import type { JsonObject } from '../store/store.ts';

export function canFund(transactionDoc: JsonObject, transfer: ClaimedTransfer): boolean {
  if (transactionDoc.status !== 'AWAITING_PAYMENT') return false;
  const quote = fromJsonValue<Partial<Quote> | null>(transactionDoc.quote ?? null);
  // A read model we cannot read is our bug, not the partner's: never charged for it.
  if (quote === null || typeof quote !== 'object' || typeof quote.sourceAmount?.units !== 'bigint') return true;
  if (typeof quote.network !== 'string' || typeof quote.cryptoCurrency !== 'string') return true;
  const deposit = {
    rail: 'chain', id: transfer.onChainId, amount: transfer.amount, network: transfer.network, asset: transfer.asset, sender: transfer.sender, receivedAtMs: 0,
  } as const;
  return mismatchOf(quote as Quote, deposit) === null;
}
