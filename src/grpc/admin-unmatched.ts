// What the admin service shows of unmatched deposits (ListUnmatched, docs/unmatched-deposits.md):
// the `unmatched_deposits` read model, newest first, by partner (or none), state and network. Unlike
// the partner API it also lists deposits no partner can be named for (refunded at once).
import { listUnmatchedDeposits, noOwner, type UnmatchedListFilter } from '../actors/unmatched-documents.ts';
import { isOneOf, networks } from '../domain/assets.ts';
import { unmatchedDepositStates } from '../domain/unmatched-deposits.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';

export const unmatchedListMax = 500;
export const unmatchedListDefault = 100;

/** The filter of a ListUnmatched request, or why it is refused (an INVALID_ARGUMENT). */
export function unmatchedFilterOf(request: Record<string, unknown>): { ok: true; filter: UnmatchedListFilter; limit: number } | { ok: false; reason: string } {
  const text = (name: string): string => (typeof request[name] === 'string' ? request[name] : '');
  const partner = text('partner_id');
  const state = text('state');
  const network = text('network');
  if (state !== '' && !isOneOf(unmatchedDepositStates, state)) return { ok: false, reason: `state must be one of ${unmatchedDepositStates.join(', ')}` };
  if (network !== '' && !isOneOf(networks, network)) return { ok: false, reason: `network must be one of ${networks.join(', ')}` };
  const asked = Number(request['limit'] ?? 0);
  const limit = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, unmatchedListMax) : unmatchedListDefault;
  const filter: UnmatchedListFilter = {
    ...(partner === '' ? {} : { owner: partner === '-' ? noOwner : partner }),
    ...(state === '' ? {} : { state }),
    ...(network === '' ? {} : { network }),
  };
  return { ok: true, filter, limit };
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** One row of the reply (proto3: empty strings and 0 for absent values). */
export function unmatchedRow(doc: JsonObject): Record<string, unknown> {
  return {
    id: textOf(doc['id']),
    partner_id: textOf(doc['partnerId']),
    state: textOf(doc['state']),
    network: textOf(doc['network']),
    asset: textOf(doc['asset']),
    amount: textOf(doc['amount']),
    hash: textOf(doc['hash']),
    sender: textOf(doc['sender']),
    reason: textOf(doc['reason']),
    transaction_id: textOf(doc['transactionId']),
    applied_to: textOf(doc['appliedTo']),
    refund_hash: textOf(doc['refundOnChainId']),
    created_at_ms: String(typeof doc['createdAtMs'] === 'number' ? doc['createdAtMs'] : 0),
    hold_ends_at_ms: String(typeof doc['holdEndsAtMs'] === 'number' ? doc['holdEndsAtMs'] : 0),
  };
}

export async function listUnmatched(store: SnapshotStore, filter: UnmatchedListFilter, limit: number): Promise<{ rows: Record<string, unknown>[]; total: string }> {
  const page = await listUnmatchedDeposits(store, filter, { offset: 0, limit });
  return { rows: page.items.map(unmatchedRow), total: String(page.total) };
}
