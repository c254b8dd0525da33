// The `unmatched_deposits` read model: one document per unmatched deposit, written by the deposit
// actor in the same step as its state (src/actors/deposit-actor.ts), read by the partner API, the
// portal and the admin CLI (docs/unmatched-deposits.md). Kept apart from the deposit actor so that
// readers need not import the actor, and the actor's file stays about decisions.
import { createHash } from 'node:crypto';
import type { Network } from '../domain/assets.ts';
import { toFixedString, type Decimal } from '../domain/money.ts';
import type { UnmatchedDepositState } from '../domain/unmatched-deposits.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import type { JsonValue } from './envelope.ts';

export const unmatchedDepositsCollection = 'unmatched_deposits';

/**
 * The index field naming the partner: its id, or '' when none can be named (an index field must be
 * a string; no partner id is empty).
 */
export const noOwner = '';

/**
 * The public id of the deposit actor `depositKey`: a UUID derived from the key (SHA-256, version
 * nibble 4-style layout), so the same transfer always has the same id and the id reveals neither the
 * hash nor the address. Partners pass it back in paths; the key itself holds `:` and `@`.
 */
export function unmatchedDepositId(depositKey: string): string {
  const hex = createHash('sha256').update(`unmatched-deposit:${depositKey}`).digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** What the document is built from (the deposit actor's facts, flattened). */
export interface UnmatchedDocumentFacts {
  readonly depositKey: string;
  readonly network: Network;
  readonly onChainId: string;
  readonly asset: string;
  readonly amount: Decimal;
  readonly sender: string;
  readonly reason: string;
  readonly partnerId: string | null;
  /** The transaction the deposit was meant for, if one is known (a late or handed-back deposit). */
  readonly transactionId: string | null;
  readonly state: UnmatchedDepositState;
  readonly appliedTo: string | null;
  readonly refundOnChainId: string | null;
  readonly refundFloor: Decimal | null;
  readonly holdEndsAtMs: number | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
}

export function unmatchedDocument(facts: UnmatchedDocumentFacts): { [key: string]: JsonValue } {
  return {
    id: unmatchedDepositId(facts.depositKey),
    depositKey: facts.depositKey,
    owner: facts.partnerId ?? noOwner,
    partnerId: facts.partnerId,
    network: facts.network,
    hash: facts.onChainId,
    asset: facts.asset,
    amount: toFixedString(facts.amount),
    sender: facts.sender,
    reason: facts.reason,
    transactionId: facts.transactionId,
    state: facts.state,
    appliedTo: facts.appliedTo,
    refundOnChainId: facts.refundOnChainId,
    refundFloor: facts.refundFloor === null ? null : toFixedString(facts.refundFloor),
    holdEndsAtMs: facts.holdEndsAtMs,
    createdAtMs: facts.createdAtMs,
    updatedAtMs: facts.updatedAtMs,
  };
}

/** Filters of a listing; `owner` is a partner id (the partner API and portal always give theirs). */
export interface UnmatchedListFilter {
  readonly owner?: string;
  readonly state?: UnmatchedDepositState;
  readonly network?: Network;
  /** Inclusive bounds on `createdAtMs` (epoch ms). */
  readonly createdFromMs?: number;
  readonly createdToMs?: number;
}

/**
 * Documents a created-range listing looks at, newest first: the store answers equality and order
 * only, so a range is applied to this many of the newest matching documents (docs/unmatched-deposits.md).
 */
export const unmatchedRangeScanMax = 10_000;
const scanPageSize = 1_000;

/** One page of unmatched deposits, newest first, with the total that matches. */
export async function listUnmatchedDeposits(
  store: SnapshotStore,
  filter: UnmatchedListFilter,
  page: { readonly offset: number; readonly limit: number },
): Promise<{ total: number; items: JsonObject[] }> {
  const where: Record<string, string> = {};
  if (filter.owner !== undefined) where['owner'] = filter.owner;
  if (filter.state !== undefined) where['state'] = filter.state;
  if (filter.network !== undefined) where['network'] = filter.network;
  const base = { where, orderBy: 'createdAtMs', direction: 'desc' as const };
  if (filter.createdFromMs === undefined && filter.createdToMs === undefined) {
    const result = await store.list(unmatchedDepositsCollection, { ...base, offset: page.offset, limit: page.limit });
    return { total: result.total, items: result.items.map((item) => item.doc) };
  }
  const from = filter.createdFromMs ?? Number.NEGATIVE_INFINITY;
  const to = filter.createdToMs ?? Number.POSITIVE_INFINITY;
  const inRange: JsonObject[] = [];
  for (let offset = 0; offset < unmatchedRangeScanMax; offset += scanPageSize) {
    const result = await store.list(unmatchedDepositsCollection, { ...base, offset, limit: scanPageSize });
    for (const { doc } of result.items) {
      const created = doc['createdAtMs'];
      if (typeof created === 'number' && created >= from && created <= to) inRange.push(doc);
    }
    const oldest = result.items.at(-1)?.doc['createdAtMs'];
    // Newest first: once a page ends before the range, no later page can reach into it.
    if (result.items.length < scanPageSize || (typeof oldest === 'number' && oldest < from)) break;
  }
  return { total: inRange.length, items: inRange.slice(page.offset, page.offset + page.limit) };
}
