// Where an onramp transaction's PIX money came from, as far as the delivery worker must know: a
// payment faked in sandbox mode is no money at all, and it must never make the hot wallet send on
// a live chain (src/chains/sandbox-guard.ts). Two durable facts say a transaction was funded by the
// sandbox; either one is enough:
//   - the sandbox driver marked it (`sandbox_pix_payments/<transaction id>`), written BEFORE the
//     driver fakes the payment, so before the transaction can ask for a delivery;
//   - its PIX charge was issued by the sandbox rail, whose BR Code nobody real can pay: any payment
//     of it was faked. This one also covers payments applied before the mark existed (delivery
//     rows left by an earlier release).
// A store that cannot be read makes the check throw: the delivery is retried, never sent blind.
import type { SnapshotStore } from '../store/store.ts';
import { sandboxRailIssuedCharge } from '../rails/sandbox-rail.ts';
import { chargeOfTransaction } from './charges.ts';

/** transaction id → the sandbox driver faked a PIX payment for it (one document per transaction). */
export const sandboxPixPaymentsCollection = 'sandbox_pix_payments';

export interface SandboxPixPaymentMark {
  readonly transactionId: string;
  readonly chargeId: string;
  /** When the first faked payment was made (later ones keep the first mark). */
  readonly markedAtMs: number;
}

/** Durable before it resolves; a repeat keeps the first mark. */
export async function markSandboxPixPayment(store: Pick<SnapshotStore, 'putIfAbsent'>, mark: SandboxPixPaymentMark): Promise<void> {
  await store.putIfAbsent(sandboxPixPaymentsCollection, mark.transactionId, { ...mark });
}

export interface SandboxFunding {
  /** True when the transaction's PIX payment was (or may have been) faked by the sandbox. */
  isSandboxFunded(transactionId: string): Promise<boolean>;
}

export function sandboxFunding(store: Pick<SnapshotStore, 'get'>): SandboxFunding {
  return {
    async isSandboxFunded(transactionId) {
      if ((await store.get(sandboxPixPaymentsCollection, transactionId)) !== null) return true;
      const charge = await chargeOfTransaction(store, transactionId);
      return charge !== null && (await sandboxRailIssuedCharge(store, charge.chargeId));
    },
  };
}
