// The delivery log (per event: status, attempts with time, HTTP status, duration, error) and
// redelivery of a given-up event with a fresh attempt budget. Redelivery is a commit on the
// partner's log actor: the delivery record goes back to `pending` with run + 1 AND a new outbox row
// asks the dispatchers to deliver it, in one atomic write (so a click is never half-applied, and two
// clicks cannot both start a run: the second sees `pending`).
import type { SnapshotStore } from '../store/store.ts';
import { logActorKey } from './event-log.ts';
import {
  deliveriesCollection,
  deliveryFromDoc,
  deliveryToDoc,
  webhooksTopic,
  type AttemptLogEntry,
  type DeliveryRecord,
  type DeliveryStatus,
  type RedeliveryRequest,
} from './records.ts';
import { casUpdate } from './store-cas.ts';

export const eventIdPattern = /^evt_[0-9a-f]{32}$/;
export const deliveriesPageSizeMax = 500;

export interface DeliveryView {
  readonly eventId: string;
  readonly sequence: number;
  readonly event: string;
  /** The transaction the event is about (its partition: a transaction's events are delivered in order). */
  readonly transactionId: string;
  readonly status: DeliveryStatus;
  readonly run: number;
  readonly attemptsInRun: number;
  /** When the next attempt is due (pending only). */
  readonly nextAttemptAtMs: number | null;
  readonly lastError: string | null;
  readonly createdAtMs: number;
  readonly finishedAtMs: number | null;
  readonly attempts: readonly AttemptLogEntry[];
}

export type RedeliverResult =
  | { readonly ok: true; readonly run: number }
  | { readonly ok: false; readonly code: 'not_found' | 'not_failed'; readonly reason: string };

export interface DeliveryLog {
  get(partnerId: string, eventId: string): Promise<DeliveryView | null>;
  /** Newest first; `status` filters (e.g. 'failed' for the portal's "needs attention"). */
  list(
    partnerId: string,
    query: { readonly status?: DeliveryStatus; readonly transactionId?: string; readonly limit: number; readonly offset?: number },
  ): Promise<{ total: number; deliveries: DeliveryView[] }>;
  /**
   * Starts a fresh run (attemptsMax new attempts) for an event whose delivery was given up; with
   * `again`, also for one that was delivered (the portal's deliberate "deliver again"). Never for
   * one still pending: its run is under way.
   */
  redeliver(partnerId: string, eventId: string, nowMs: number, options?: { readonly again?: boolean }): Promise<RedeliverResult>;
}

function view(record: DeliveryRecord): DeliveryView {
  return {
    eventId: record.id,
    sequence: record.seq,
    event: record.event,
    transactionId: record.partitionKey,
    status: record.status,
    run: record.run,
    attemptsInRun: record.attemptsInRun,
    nextAttemptAtMs: record.status === 'pending' ? record.nextAttemptAtMs : null,
    lastError: record.lastError,
    createdAtMs: record.createdAtMs,
    finishedAtMs: record.finishedAtMs,
    attempts: record.attempts,
  };
}

async function load(store: SnapshotStore, partnerId: string, eventId: string): Promise<DeliveryRecord | null> {
  if (!eventIdPattern.test(eventId)) return null;
  const record = deliveryFromDoc(await store.get(deliveriesCollection, eventId));
  return record === null || record.partnerId !== partnerId ? null : record;
}

export function createDeliveryLog(store: SnapshotStore): DeliveryLog {
  return {
    async get(partnerId, eventId) {
      const record = await load(store, partnerId, eventId);
      return record === null ? null : view(record);
    },
    async list(partnerId, query) {
      const limit = Math.min(Math.max(1, Math.floor(query.limit)), deliveriesPageSizeMax);
      // One index per filter (the store matches an index's equality fields exactly); the portal
      // filters by transaction or by state, the admin service by state.
      const where: Record<string, string> =
        query.transactionId !== undefined ? { partnerId, partitionKey: query.transactionId } : query.status !== undefined ? { partnerId, status: query.status } : { partnerId };
      const page = await store.list(deliveriesCollection, { where, orderBy: 'seq', direction: 'desc', offset: query.offset ?? 0, limit });
      const wanted = query.transactionId !== undefined && query.status !== undefined ? query.status : null;
      const deliveries: DeliveryView[] = [];
      for (const item of page.items) {
        const record = deliveryFromDoc(item.doc);
        if (record !== null && (wanted === null || record.status === wanted)) deliveries.push(view(record));
      }
      return { total: page.total, deliveries };
    },
    async redeliver(partnerId, eventId, nowMs, options = {}) {
      if ((await load(store, partnerId, eventId)) === null) return { ok: false, code: 'not_found', reason: 'No such event for this partner' };
      return casUpdate<RedeliverResult>(store, logActorKey(partnerId), async (state) => {
        const record = await load(store, partnerId, eventId);
        if (record === null) return { change: null, result: { ok: false, code: 'not_found', reason: 'No such event for this partner' } };
        const allowed = record.status === 'failed' || (record.status === 'delivered' && options.again === true);
        if (!allowed) {
          const reason =
            record.status === 'pending'
              ? 'The delivery is pending: its attempts are under way'
              : `The delivery is ${record.status}; only a failed delivery can be redelivered`;
          return { change: null, result: { ok: false, code: 'not_failed', reason } };
        }
        const run = record.run + 1;
        const next: DeliveryRecord = { ...record, status: 'pending', run, attemptsInRun: 0, nextAttemptAtMs: 0, lastError: null, finishedAtMs: null, updatedAtMs: nowMs };
        const request: RedeliveryRequest = { kind: 'redelivery', partnerId, eventId, run };
        return {
          change: {
            state: state ?? { nextSeq: record.seq + 1 },
            readModels: [{ collection: deliveriesCollection, id: eventId, doc: deliveryToDoc(next) }],
            outbox: [{ topic: webhooksTopic, partitionKey: record.partitionKey, payload: { ...request } }],
          },
          result: { ok: true, run },
        };
      });
    },
  };
}
