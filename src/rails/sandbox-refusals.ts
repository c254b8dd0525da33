// The sandbox's "the next payout of this transaction fails" (POST
// /sandbox/transactions/{id}/fail-next-payout, docs/sandbox.md): a mark in a collection of its own,
// keyed by the payout's idempotency key, that the sandbox rail spends on the first
// payout request it records under that key. That payout is then refused like a provider refusal
// (`failed`, reason `sandbox_rehearsed_refusal`): the payout worker, the transaction and its refund
// go down their real paths. Kept in the store, so the edge that arms it and the payout role that
// spends it may be different processes.
import type { SnapshotStore } from '../store/store.ts';

export const sandboxRefusalsCollection = 'sandbox_payout_refusals';

export const rehearsedRefusalReason = 'sandbox_rehearsed_refusal';

/** Arms the refusal of the payout with this idempotency key (`payoutIdempotencyKey`); again: still one refusal. */
export async function armPayoutRefusal(store: SnapshotStore, idempotencyKey: string, nowMs: number): Promise<void> {
  await store.put(sandboxRefusalsCollection, idempotencyKey, { armedAtMs: nowMs });
}

/** Spends the mark of this payout key: true once, for the process whose removal took it. */
export async function takePayoutRefusal(store: SnapshotStore, idempotencyKey: string): Promise<boolean> {
  if ((await store.get(sandboxRefusalsCollection, idempotencyKey)) === null) return false;
  return store.remove(sandboxRefusalsCollection, idempotencyKey);
}
