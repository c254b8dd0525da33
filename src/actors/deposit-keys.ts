// How other actors address a deposit actor (src/actors/deposit-actor.ts), kept apart so that the
// transaction actor can send one a command without importing the deposit actor (which imports it).
import type { Network } from '../domain/assets.ts';

export const depositActorType = 'deposit';

/**
 * The deposit actor (and `deposits` document) of a transfer: the chain transaction, qualified by
 * the per-transaction address it reached when there is one (EVM addresses in lower case): one chain
 * transaction may pay several such addresses, and each part funds the transaction of its address.
 */
export function depositActorKey(network: Network, onChainId: string, depositAddress: string | null = null): string {
  if (depositAddress === null) return `${network}:${onChainId}`;
  return `${network}:${onChainId}@${network === 'CELO' ? depositAddress.toLowerCase() : depositAddress}`;
}

/**
 * The command a transaction sends back to the deposit actor of a transfer it refused to take: late
 * (`deposit_late`: at or after its expiry), beyond its stray slots (`too_many_deposits`) or dust
 * (`below_refund_floor`). The deposit actor then treats the transfer as an unmatched deposit
 * attributable to the transaction's partner (docs/unmatched-deposits.md).
 */
export const depositHandBackKind = 'handBack';
export type HandBackReason = 'deposit_late' | 'too_many_deposits' | 'below_refund_floor';
export const handBackReasons: readonly HandBackReason[] = ['deposit_late', 'too_many_deposits', 'below_refund_floor'];
