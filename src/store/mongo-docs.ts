// The documents of the MongoDB store (mongo-store.ts), one interface per collection, and the
// outbox row a document stands for. Their layout is described in docs/store.md.
import type { JsonObject, JsonValue, OutboxRow } from './store.ts';

export interface ActorDoc {
  _id: string;
  version: number;
  state: JsonValue;
  appliedSeq: number;
}
export interface FenceDoc {
  _id: number;
  token: number;
}
export interface AppliedDoc {
  _id: { actorKey: string; commandId: string };
  actorKey: string;
  seq: number;
  reply: JsonValue;
}
export interface EventDoc {
  _id: { actorKey: string; version: number; index: number };
  actorKey: string;
  version: number;
  index: number;
  event: JsonValue;
}
export interface OutboxDoc {
  _id: string;
  topic: string;
  seq: number;
  actorKey: string;
  version: number;
  payload: JsonValue;
  partitionKey?: string;
  claimOwner: string | null;
  claimExpiresAtMs: number;
  /** Set by the claim that holds the row, so the claimer can read back exactly what it won. */
  claimId: string | null;
  createdAtMs?: number;
  /** Set by outboxDefer (with the three below); absent on rows never deferred: due. */
  notBeforeMs?: number;
  attempts?: number;
  reason?: string;
  parked?: boolean;
}
export interface CounterDoc {
  _id: string;
  seq: number;
}
export interface ReadModelDoc {
  _id: string;
  doc: JsonObject;
}

/** The port's row for an outbox document (fields a row never had stay absent). */
export function toOutboxRow(doc: OutboxDoc): OutboxRow {
  const row: OutboxRow = {
    id: doc._id, topic: doc.topic, seq: doc.seq, actorKey: doc.actorKey, version: doc.version,
    payload: doc.payload, claimOwner: doc.claimOwner, claimExpiresAtMs: doc.claimExpiresAtMs,
  };
  if (doc.partitionKey !== undefined) row.partitionKey = doc.partitionKey;
  if (doc.createdAtMs !== undefined) row.createdAtMs = doc.createdAtMs;
  if (typeof doc.notBeforeMs === 'number') row.notBeforeMs = doc.notBeforeMs;
  if (typeof doc.attempts === 'number') row.attempts = doc.attempts;
  if (typeof doc.reason === 'string') row.reason = doc.reason;
  if (typeof doc.parked === 'boolean') row.parked = doc.parked;
  return row;
}
