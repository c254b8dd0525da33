// How other actors address a deposit actor (src/actors/deposit-actor.ts), kept apart so that the
// transaction actor can send one a command without importing the deposit actor (which imports it).
import type { Network } from '../domain/assets.ts';

export const depositActorType = 'deposit';

export function depositActorKey(network: Network, onChainId: string): string {
  return `${network}:${onChainId}`;
}

/**
 * The command a transaction sends back to the deposit actor of a transfer it refused to take: beyond
 * its stray slots (`too_many_deposits`) or dust (`below_refund_floor`). The deposit actor then
 * treats the transfer as unmatched: refunded to its sender, or recorded as dust below the floor.
 */
export const depositHandBackKind = 'handBack';
export type HandBackReason = 'too_many_deposits' | 'below_refund_floor';
export const handBackReasons: readonly HandBackReason[] = ['too_many_deposits', 'below_refund_floor'];
