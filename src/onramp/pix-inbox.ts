// The inbox of PIX provider payment notices: every notice is stored here (collection `pix_notices`,
// one document per provider payment id) BEFORE it is applied to its transaction, and stays
// `pending` until the transaction answered it. A notice whose application failed (the transaction
// could not be reached: bus or shard down, no reply in time) is therefore not lost: the inbox worker
// (notice-worker.ts) applies it again later, and applying is idempotent by the provider's payment
// id (command id `pix-payment:<id>`, and the domain treats the same deposit as a no-op).
//
// States: pending → applied (the transaction took it) | refused (the transaction refused it, e.g.
// too many stray payments: operations) | unknown_charge (no charge of ours: operations return the
// money). Only `pending` is retried. A notice received again with the same payment id but another
// charge or amount is a conflict: it is refused and the stored one stands. Decisions:
// docs/onramp.md.
import { createHash } from 'node:crypto';
import { decimalFromExactString, toFixedString, type Decimal } from '../domain/money.ts';
import type { JsonObject, ReadModelIndex, SnapshotStore } from '../store/store.ts';

export const pixNoticesCollection = 'pix_notices';

/** The worker finds pending notices due for an attempt through this index. */
export const onrampReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: pixNoticesCollection, name: 'by_state_next_attempt', equal: ['state'], orderBy: 'nextAttemptAtMs' },
];

export type PixNoticeState = 'pending' | 'applied' | 'refused' | 'unknown_charge';

/** A payment of one of our PIX charges, as the provider reports it. */
export interface PixPaymentNotice {
  readonly chargeId: string;
  /** The provider's id of this payment; a refund names it. */
  readonly providerPaymentId: string;
  /** BRL paid (at most 2 decimals). */
  readonly amount: Decimal;
}

/** A stored notice. */
export interface InboxEntry {
  /** The document id: sha256 of the provider payment id (provider ids may be long or odd). */
  readonly id: string;
  readonly notice: PixPaymentNotice;
  readonly state: PixNoticeState;
  readonly attempts: number;
  readonly receivedAtMs: number;
}

export type RecordResult = { readonly kind: 'recorded'; readonly entry: InboxEntry } | { readonly kind: 'conflict'; readonly entry: InboxEntry };

export interface PixInboxOptions {
  readonly store: Pick<SnapshotStore, 'get' | 'put' | 'putIfAbsent' | 'list'>;
  /** Wait before the worker may take a notice just received (the intake applies it at once). */
  readonly firstRetryDelayMs?: number;
  readonly retryDelayMsMin?: number;
  readonly retryDelayMsMax?: number;
}

export function noticeDocId(providerPaymentId: string): string {
  return createHash('sha256').update(providerPaymentId).digest('hex');
}

function entryOf(id: string, doc: JsonObject): InboxEntry | null {
  const { providerPaymentId, chargeId, amount, state, attempts, receivedAtMs } = doc;
  if (typeof providerPaymentId !== 'string' || typeof chargeId !== 'string' || typeof amount !== 'string') return null;
  if (state !== 'pending' && state !== 'applied' && state !== 'refused' && state !== 'unknown_charge') return null;
  if (typeof attempts !== 'number' || typeof receivedAtMs !== 'number') return null;
  return { id, notice: { providerPaymentId, chargeId, amount: decimalFromExactString(amount) }, state, attempts, receivedAtMs };
}

function docOf(entry: InboxEntry, fields: { nextAttemptAtMs: number; lastError?: string; outcome?: JsonObject; settledAtMs?: number }): JsonObject {
  return {
    providerPaymentId: entry.notice.providerPaymentId,
    chargeId: entry.notice.chargeId,
    amount: toFixedString(entry.notice.amount),
    state: entry.state,
    attempts: entry.attempts,
    receivedAtMs: entry.receivedAtMs,
    nextAttemptAtMs: fields.nextAttemptAtMs,
    ...(fields.lastError !== undefined ? { lastError: fields.lastError } : {}),
    ...(fields.outcome !== undefined ? { outcome: fields.outcome } : {}),
    ...(fields.settledAtMs !== undefined ? { settledAtMs: fields.settledAtMs } : {}),
  };
}

/** Bounded exponential backoff: `minMs` after the first failure, doubling, at most `maxMs`. */
function backoffMs(attempts: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempts - 1, 0), 20));
}

export class PixInbox {
  private readonly firstRetryDelayMs: number;
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;

  constructor(private readonly options: PixInboxOptions) {
    this.firstRetryDelayMs = options.firstRetryDelayMs ?? 5_000;
    this.retryDelayMsMin = options.retryDelayMsMin ?? 2_000;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 60_000;
  }

  /**
   * Stores a new notice as `pending` (durable when this resolves), or finds the one stored before
   * under the same payment id. Throws only when the store fails: then nothing is stored, and the
   * provider must be told so (it sends the notice again).
   */
  async record(notice: PixPaymentNotice, nowMs: number): Promise<RecordResult> {
    const id = noticeDocId(notice.providerPaymentId);
    const entry: InboxEntry = { id, notice, state: 'pending', attempts: 0, receivedAtMs: nowMs };
    const put = await this.options.store.putIfAbsent(pixNoticesCollection, id, docOf(entry, { nextAttemptAtMs: nowMs + this.firstRetryDelayMs }));
    if (put.status === 'inserted') return { kind: 'recorded', entry };
    const stored = entryOf(id, put.doc);
    if (stored === null) throw new Error(`pix notice ${id}: unreadable inbox document`);
    const same = stored.notice.providerPaymentId === notice.providerPaymentId && stored.notice.chargeId === notice.chargeId && toFixedString(stored.notice.amount) === toFixedString(notice.amount);
    return same ? { kind: 'recorded', entry: stored } : { kind: 'conflict', entry: stored };
  }

  /** The transaction answered: the notice is settled (applied, refused) or its charge is unknown. */
  async settle(entry: InboxEntry, state: Exclude<PixNoticeState, 'pending'>, outcome: JsonObject, nowMs: number): Promise<void> {
    await this.options.store.put(pixNoticesCollection, entry.id, docOf({ ...entry, state, attempts: entry.attempts + 1 }, { nextAttemptAtMs: nowMs, outcome, settledAtMs: nowMs }));
  }

  /** The attempt failed on the way (infrastructure): pending, next attempt after a backoff. */
  async retryLater(entry: InboxEntry, reason: string, nowMs: number): Promise<InboxEntry> {
    const next: InboxEntry = { ...entry, state: 'pending', attempts: entry.attempts + 1 };
    await this.options.store.put(pixNoticesCollection, entry.id, docOf(next, { nextAttemptAtMs: nowMs + backoffMs(next.attempts, this.retryDelayMsMin, this.retryDelayMsMax), lastError: reason.slice(0, 200) }));
    return next;
  }

  /**
   * Takes a due notice for one attempt: its next attempt moves `leaseMs` ahead first, so another
   * worker does not take it meanwhile (if one does anyway, applying twice is harmless).
   */
  async take(entry: InboxEntry, nowMs: number, leaseMs: number): Promise<void> {
    await this.options.store.put(pixNoticesCollection, entry.id, docOf(entry, { nextAttemptAtMs: nowMs + leaseMs }));
  }

  /** Pending notices whose next attempt is due, oldest due first, at most `limit`. */
  async due(nowMs: number, limit: number): Promise<InboxEntry[]> {
    const page = await this.options.store.list(pixNoticesCollection, { where: { state: 'pending' }, orderBy: 'nextAttemptAtMs', direction: 'asc', limit });
    const entries: InboxEntry[] = [];
    for (const item of page.items) {
      if (typeof item.doc['nextAttemptAtMs'] !== 'number' || item.doc['nextAttemptAtMs'] > nowMs) break;
      const entry = entryOf(item.id, item.doc);
      if (entry !== null) entries.push(entry);
    }
    return entries;
  }

  /** The stored notice of a payment id (tests, operations). */
  async get(providerPaymentId: string): Promise<(InboxEntry & { readonly doc: JsonObject }) | null> {
    const id = noticeDocId(providerPaymentId);
    const doc = await this.options.store.get(pixNoticesCollection, id);
    const entry = doc === null ? null : entryOf(id, doc);
    return entry === null || doc === null ? null : { ...entry, doc };
  }
}
