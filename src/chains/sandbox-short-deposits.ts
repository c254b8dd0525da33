// The sandbox's "the next deposit of this transaction arrives short" (POST
// /sandbox/transactions/{id}/short-next-deposit, docs/sandbox.md): a mark in the store that the
// sandbox driver spends on the transaction's next simulated deposit (POST /sandbox/deposits) that is
// made, which then sends `shortDepositShare` of the quoted amount instead of what was asked. The transfer
// itself is an ordinary sandbox-chain transfer: the watcher, the transaction's wrong-amount rule and
// its refund treat it as any short deposit. In the store, so the edge that arms it and the driver
// that spends it may be different processes.
import { decimal, multiply, type Decimal } from '../domain/money.ts';
import type { SnapshotStore } from '../store/store.ts';

export const sandboxShortDepositsCollection = 'sandbox_short_deposits';
/** The share of the quoted amount a short deposit carries: 90 %, well above any refund floor. */
export const shortDepositShare: Decimal = decimal(9n, 1);

/** What a short deposit of `quoted` sends, at the token's decimals (rounded down: short stays short). */
export function shortDepositAmount(quoted: Decimal, decimals: number): Decimal {
  return multiply(quoted, shortDepositShare, decimals, 'floor');
}

export async function armShortDeposit(store: SnapshotStore, transactionId: string, nowMs: number): Promise<void> {
  await store.put(sandboxShortDepositsCollection, transactionId, { armedAtMs: nowMs });
}

/**
 * Runs one deposit of the transaction with its mark taken (`short`: true once, for the caller whose
 * removal took it). The mark is given back unless the deposit was made (`ok`): a deposit refused or
 * failed spends nothing, so the partner's retry still arrives short.
 */
export async function spendingShortDeposit<T extends { readonly ok: boolean }>(store: SnapshotStore, transactionId: string, deposit: (short: boolean) => Promise<T>): Promise<T> {
  const mark = await store.get(sandboxShortDepositsCollection, transactionId);
  const short = mark !== null && (await store.remove(sandboxShortDepositsCollection, transactionId));
  let made = false;
  try {
    const result = await deposit(short);
    made = result.ok;
    return result;
  } finally {
    if (short && !made) await store.put(sandboxShortDepositsCollection, transactionId, mark);
  }
}
