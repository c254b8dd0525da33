// One rule for every chain before a send replaces an attempt that looks dead.
//
// Each adapter decides "this attempt can never move money" from two reads: a fact about the hot
// wallet or the chain's height (Stellar: the account's sequence number is past the attempt's;
// Celo: the transaction count at confirmation depth is past its nonce; Solana: the finalized block
// height is past its lastValidBlockHeight), read FIRST, then a lookup of the attempt itself (hash,
// receipt, signature status) that finds nothing. Behind a load balancer the two reads can reach
// different backends, the lookup a lagging one that has not seen the block the attempt landed in
// yet; replacing the attempt then pays twice. So a dead-looking attempt is replaced only once it
// has looked dead for `settleMs` (default 30 s) since it first did. That first sighting is written
// to the send journal with putIfAbsent, so every retry, every process and a restarted one count
// from the same moment, and the moment comes from the injected clock. Until then the send answers
// 'pending'. The window must exceed the worst lag of any backend behind the RPC URL.
//
// The cost: an attempt that is truly gone (its nonce or sequence number taken by another send,
// its blockhash expired unsent) is replaced `settleMs` later than it could be.
import type { SendJournal } from './chains.ts';

/** How long a dead-looking attempt must stay unfound before it is replaced (lagging backends). */
export const unseenSettleMsDefault = 30_000;
/** Upper bound of the option: a longer window only delays a refund that is truly gone. */
const unseenSettleMsMax = 3_600_000;

/** Validates an adapter's settle-window option (whole milliseconds, 0 … 1 h). */
export function checkedSettleMs(value: number | undefined, label: string): number {
  const settleMs = value ?? unseenSettleMsDefault;
  if (!Number.isSafeInteger(settleMs) || settleMs < 0 || settleMs > unseenSettleMsMax) {
    throw new Error(`${label} must be a whole number of milliseconds in [0, ${unseenSettleMsMax}]`);
  }
  return settleMs;
}

/** Pure: whether a window that opened at `seenAtMs` has passed at `nowMs`. */
export function settleWindowPassed(seenAtMs: number, nowMs: number, settleMs: number): boolean {
  return nowMs - seenAtMs >= settleMs;
}

/**
 * Records the first sighting of a dead-looking attempt under `sightingKey` (first writer wins) and
 * tells whether it has looked dead for `settleMs` since. Call it only when the attempt looks dead
 * right now; a sighting left behind by an attempt that later turned up is never consulted again.
 */
export async function unseenLongEnough(journal: SendJournal, sightingKey: string, nowMs: number, settleMs: number): Promise<boolean> {
  const sighting = await journal.putIfAbsent(sightingKey, { seenAtMs: nowMs });
  const seenAtMs = sighting.status === 'inserted' ? nowMs : sighting.doc['seenAtMs'];
  if (typeof seenAtMs !== 'number' || !Number.isSafeInteger(seenAtMs)) {
    throw new Error(`malformed send journal record ${sightingKey}: first sighting of an unfound attempt`);
  }
  return settleWindowPassed(seenAtMs, nowMs, settleMs);
}
