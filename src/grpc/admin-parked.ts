// What the admin service shows of outbox rows that wait for a retry (ListParked): rows a worker
// deferred (src/store/outbox-jobs.ts), read page by page in commit order from the store, parked
// ones only unless retrying ones are asked for too. Bounded: at most `parkedListMax` rows in a
// reply and `waitingScanRowsMax` rows read per topic, so a huge backlog of retries costs a bounded
// read (the reply says `truncated`).
import type { OutboxRow, SnapshotStore } from '../store/store.ts';

export const parkedListMax = 500;
export const parkedListDefault = 100;
/** Waiting rows read per topic at most for one listing. */
export const waitingScanRowsMax = 10_000;
/** Longest note an operator leaves when resolving a row by hand (characters). */
export const resolveNoteCharsMax = 500;
const pageRowsMax = 500;

export interface ParkedRowReply {
  readonly topic: string;
  readonly id: string;
  readonly partition_key: string;
  readonly state: 'parked' | 'retrying';
  readonly attempts: number;
  readonly reason: string;
  readonly not_before_ms: string;
  readonly created_at_ms: string;
  readonly claimed: boolean;
}

export interface ParkedListing {
  readonly rows: ParkedRowReply[];
  readonly truncated: boolean;
}

/** The reply's view of a waiting row (64-bit integers as strings, as the proto loader has them). */
export function parkedRowReply(row: OutboxRow, nowMs: number): ParkedRowReply {
  return {
    topic: row.topic,
    id: row.id,
    partition_key: row.partitionKey ?? '',
    state: row.parked === true ? 'parked' : 'retrying',
    attempts: row.attempts ?? 0,
    reason: row.reason ?? '',
    not_before_ms: String(row.notBeforeMs ?? 0),
    created_at_ms: String(row.createdAtMs ?? 0),
    claimed: row.claimExpiresAtMs > nowMs,
  };
}

/** Parked (and, if asked, retrying) rows of the topics, topic by topic in commit order. */
export async function listParked(
  store: SnapshotStore,
  topics: readonly string[],
  query: { readonly includeRetrying: boolean; readonly limit: number; readonly nowMs: number },
): Promise<ParkedListing> {
  const rows: ParkedRowReply[] = [];
  let truncated = false;
  for (const topic of topics) {
    let afterSeq = 0;
    for (let read = 0; ; ) {
      if (read >= waitingScanRowsMax) {
        truncated = true;
        break;
      }
      const page = await store.outboxWaiting(topic, Math.min(pageRowsMax, waitingScanRowsMax - read), afterSeq);
      read += page.length;
      for (const row of page) {
        if (!query.includeRetrying && row.parked !== true) continue;
        if (rows.length >= query.limit) return { rows, truncated: true };
        rows.push(parkedRowReply(row, query.nowMs));
      }
      const last = page.at(-1);
      if (last === undefined) break;
      afterSeq = last.seq;
    }
  }
  return { rows, truncated };
}
