// The per-partner event log: every webhook event gets the partner's next sequence number (dense:
// 1, 2, 3, …) exactly once, and is stored in `events` with its delivery record BEFORE any delivery
// is attempted. GET /events reads it.
//
// Sequencing: one log "actor" per partner (`webhook-log/<partnerId>`, state `{ nextSeq }`) written
// with compare-and-set (store-cas.ts). Recording a batch of outbox rows is one commit holding the
// new counter, the event documents and their delivery records. The event id is derived from the
// outbox row id, so "already recorded?" is a lookup; under CAS two dispatchers recording the same
// rows cannot both succeed, and the loser sees the winner's documents when it retries.
//
// Order: recorders read the outbox in commit order and record a partner's rows in that order, and
// a row is never delivered (so never marked done) before it is recorded. Hence, for one partner,
// sequence order = commit order, and events of one transaction keep their order in the log.
// Visibility: a sequence and its event document land in one commit, so a partner that sees
// sequence n can already see every sequence below n (the feed has no holes to skip over).
import type { OutboxRow, ReadModelUpsert, SnapshotStore } from '../store/store.ts';
import {
  blockOf,
  deliveriesCollection,
  deliveryToDoc,
  eventBlockSize,
  eventFromDoc,
  eventsCollection,
  eventToDoc,
  type DeliveryRecord,
  type EventRecord,
  type TransactionWebhook,
  type WebhookData,
} from './records.ts';
import { eventIdOf } from './signing.ts';
import { casUpdate } from './store-cas.ts';

export function logActorKey(partnerId: string): string {
  return `webhook-log/${partnerId}`;
}

/** Rows per recording commit: two documents each, under the store's 1,000 items per commit. */
export const recordBatchRowsMax = 400;

export const eventsPageSizeDefault = 100;
export const eventsPageSizeMax = 500;

interface LogState {
  readonly nextSeq: number;
}

export function logStateOf(state: unknown): LogState {
  if (typeof state === 'object' && state !== null && 'nextSeq' in state) {
    const nextSeq = (state as { nextSeq: unknown }).nextSeq;
    if (typeof nextSeq === 'number' && Number.isSafeInteger(nextSeq) && nextSeq >= 1) return { nextSeq };
  }
  return { nextSeq: 1 };
}

export interface RowToRecord {
  readonly row: OutboxRow;
  readonly webhook: TransactionWebhook;
}

/**
 * Records rows of ONE partner, given in commit order: each row not yet recorded gets the next
 * sequence. Idempotent. Returns how many were newly recorded.
 */
export async function recordPartnerRows(store: SnapshotStore, partnerId: string, rows: readonly RowToRecord[], nowMs: number): Promise<number> {
  let recorded = 0;
  for (let start = 0; start < rows.length; start += recordBatchRowsMax) {
    const batch = rows.slice(start, start + recordBatchRowsMax);
    recorded += await casUpdate(store, logActorKey(partnerId), async (state) => {
      let { nextSeq } = logStateOf(state);
      const readModels: ReadModelUpsert[] = [];
      for (const { row, webhook } of batch) {
        const id = eventIdOf(row.id);
        if ((await store.get(eventsCollection, id)) !== null) continue;
        const seq = nextSeq;
        nextSeq += 1;
        const partitionKey = row.partitionKey ?? id;
        const event: EventRecord = { id, partnerId, seq, block: blockOf(seq), event: webhook.event, data: webhook.data, createdAtMs: nowMs, partitionKey };
        const delivery: DeliveryRecord = {
          id,
          partnerId,
          seq,
          event: webhook.event,
          partitionKey,
          status: 'pending',
          run: 1,
          attemptsInRun: 0,
          nextAttemptAtMs: 0,
          attempts: [],
          lastError: null,
          createdAtMs: nowMs,
          finishedAtMs: null,
          updatedAtMs: nowMs,
        };
        readModels.push({ collection: eventsCollection, id, doc: eventToDoc(event) });
        readModels.push({ collection: deliveriesCollection, id, doc: deliveryToDoc(delivery) });
      }
      if (readModels.length === 0) return { change: null, result: 0 };
      return { change: { state: { nextSeq }, readModels }, result: readModels.length / 2 };
    });
  }
  return recorded;
}

/** One item of GET /events. */
export interface PartnerEvent {
  readonly sequence: number;
  readonly id: string;
  readonly event: string;
  readonly data: WebhookData;
  readonly createdAtMs: number;
}

export interface EventsPage {
  readonly events: PartnerEvent[];
  /** The sequence to pass as `after` next time: the last returned, or `after` when none. */
  readonly nextAfter: number;
}

/** The per-partner event log, read side (GET /events; the admin service). */
export interface EventLogReader {
  list(partnerId: string, afterSequence: number, limit: number): Promise<EventsPage>;
  get(partnerId: string, eventId: string): Promise<PartnerEvent | null>;
}

function toPartnerEvent(record: EventRecord): PartnerEvent {
  return { sequence: record.seq, id: record.id, event: record.event, data: record.data, createdAtMs: record.createdAtMs };
}

export function createEventLogReader(store: SnapshotStore): EventLogReader {
  return {
    async list(partnerId, afterSequence, limit) {
      if (!Number.isSafeInteger(afterSequence) || afterSequence < 0) throw new RangeError('afterSequence must be a non-negative integer');
      if (!Number.isInteger(limit) || limit < 1 || limit > eventsPageSizeMax) throw new RangeError(`limit must be in [1, ${eventsPageSizeMax}]`);
      const events: PartnerEvent[] = [];
      let wanted = afterSequence + 1;
      // Dense sequences: sequence s sits at offset (s - 1) mod blockSize of block ⌊(s - 1) / blockSize⌋.
      while (events.length < limit) {
        const block = blockOf(wanted);
        const offset = (wanted - 1) % eventBlockSize;
        const pageLimit = Math.min(limit - events.length, eventBlockSize - offset);
        const page = await store.list(eventsCollection, { where: { partnerId, block }, orderBy: 'seq', direction: 'asc', offset, limit: pageLimit });
        let contiguous = true;
        for (const item of page.items) {
          const record = eventFromDoc(item.doc);
          if (record === null || record.seq !== wanted) {
            contiguous = false; // never expected (the counter is dense); stop rather than skip
            break;
          }
          events.push(toPartnerEvent(record));
          wanted += 1;
        }
        if (!contiguous || page.items.length < pageLimit) break;
      }
      const last = events[events.length - 1];
      return { events, nextAfter: last === undefined ? afterSequence : last.sequence };
    },
    async get(partnerId, eventId) {
      const record = eventFromDoc(await store.get(eventsCollection, eventId));
      return record === null || record.partnerId !== partnerId ? null : toPartnerEvent(record);
    },
  };
}
