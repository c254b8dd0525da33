// Which chain transfers may fund a Solana or Celo transaction (docs/money-movement.md, "Binding a
// transfer to a transaction"). Pure: the deposit intake gathers the facts (the address frozen in the
// transaction's payment_context, the address the network derives for its id, the transfer's chain
// time) and asks here.
//
// - A transaction with its own address (the frozen depositAddress is the one derived for its id)
//   is funded only by transfers into that address. Nobody can know the address before the
//   transaction exists (it is derived from the random transaction id), so no time check is needed.
// - A transaction created before per-transaction addresses (its frozen depositAddress is the old
//   shared one, or unknown because its record predates the field) keeps the shared-address path,
//   with one more rule: a transfer whose chain time is older than the transaction is never bound
//   to it. Block times are whole seconds (Solana `blockTime`, EVM `timestamp`), so both sides are
//   compared at second granularity: a transfer in the same second as the acceptance still counts.

export type DepositBinding =
  /** The transaction's own address: verify the transfer INTO exactly this address. */
  | { readonly kind: 'own'; readonly address: string }
  /**
   * The shared (legacy) address: `address` is the frozen one (null when the record predates the
   * field), and transfers older than `createdAtMs` (at second granularity) never count.
   */
  | { readonly kind: 'shared'; readonly address: string | null; readonly createdAtMs: number };

/**
 * The binding of a transaction. `frozenAddress`: payment_context.depositAddress as stored with the
 * transaction (null when unknown); `ownAddress`: the address the network derives for its id (null
 * when the network has no per-transaction addresses); `sameAddress` compares in the network's form.
 */
export function depositBinding(
  frozenAddress: string | null,
  ownAddress: string | null,
  createdAtMs: number,
  sameAddress: (a: string, b: string) => boolean,
): DepositBinding {
  if (frozenAddress !== null && ownAddress !== null && sameAddress(frozenAddress, ownAddress)) {
    return { kind: 'own', address: frozenAddress };
  }
  return { kind: 'shared', address: frozenAddress, createdAtMs };
}

const msPerSecond = 1_000;

/** Whole seconds since the epoch (chain block times have no finer resolution). */
function epochSecond(ms: number): number {
  return Math.floor(ms / msPerSecond);
}

/**
 * Why a transfer may not fund the transaction, or null when it may. Only the shared binding has a
 * time rule: a transfer made in an earlier second than the transaction was created is refused.
 */
export function bindingRefusal(binding: DepositBinding, transferChainTimeMs: number): 'predates_transaction' | null {
  if (binding.kind === 'own') return null;
  return epochSecond(transferChainTimeMs) < epochSecond(binding.createdAtMs) ? 'predates_transaction' : null;
}
