// The refund floor: the smallest on-chain deposit we return automatically, per network.
//
// A refund costs us the network fee and, on Solana, the rent of the sender's token account when the
// refund has to create it (≈ 0.002 SOL, which the sender can reclaim by closing the account again).
// Refunding dust therefore drains the hot wallet, and a sender can make it a profitable loop. So a
// deposit we would refund (a wrong amount, a late or stray deposit, one beyond a transaction's stray
// slots, an unmatched one) is returned only when its amount is AT OR ABOVE its network's floor;
// below it, it is recorded as dust for operations and never refunded automatically. A deposit that
// pays its transaction exactly is a payment, whatever its size, and a refund after our own failure
// (payout or delivery failed) is always made. Floors are in token units of the deposited asset (all
// our assets are USD stablecoins) and come from configuration (src/config/limits.ts); the rule,
// and which deposits it applies to: docs/decisions-states.md, "Dust below the refund floor".
import type { Network } from './assets.ts';
import { compare, type Decimal } from './money.ts';

/** Per network; a network without a floor refunds every amount. */
export type ChainRefundFloors = Readonly<Partial<Record<Network, Decimal>>>;

/** The floor that applies to a deposit on `network`, or null when none is configured. */
export function refundFloorOf(floors: ChainRefundFloors | undefined, network: Network): Decimal | null {
  return floors?.[network] ?? null;
}

/** Pure: whether refunding `amount` is below the floor (dust). At the floor exactly it is refunded. */
export function isBelowRefundFloor(amount: Decimal, floor: Decimal | null): boolean {
  return floor !== null && compare(amount, floor) < 0;
}
