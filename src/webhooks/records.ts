// The documents of the webhooks role and how outbox payloads are read. Collections:
// - `events`              one per webhook event: the per-partner log behind GET /events;
// - `webhook_deliveries`  one per event: delivery status and the attempt log;
// - `webhook_destinations` one per partner that an administrator changed (overrides the partners file).
// Outbox payloads are parsed defensively: the data object sent to partners is rebuilt field by
// field from the spec's list, so nothing else (bankCode, origin, internal fields) can leak.
import type { JsonObject, JsonValue, ReadModelIndex } from '../store/store.ts';
import type { AttemptErrorCode } from './policy.ts';

export const webhooksTopic = 'webhooks';
export const eventsCollection = 'events';
export const deliveriesCollection = 'webhook_deliveries';
export const destinationsCollection = 'webhook_destinations';

/**
 * Sequences are dense per partner (1, 2, 3, …). The store pages by offset, not by range, so the
 * event log is indexed by (partnerId, block) with block = ⌊(seq − 1) / eventBlockSize⌋: the events
 * after sequence N are found at a known offset inside a known block.
 */
export const eventBlockSize = 1_000;

export function blockOf(sequence: number): number {
  return Math.floor((sequence - 1) / eventBlockSize);
}

/** Add these to the service's read-model indexes (src/service/context.ts). */
export const webhookReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: eventsCollection, name: 'by_partner_block_seq', equal: ['partnerId', 'block'], orderBy: 'seq' },
  { collection: deliveriesCollection, name: 'by_partner_seq', equal: ['partnerId'], orderBy: 'seq' },
  { collection: deliveriesCollection, name: 'by_partner_status_seq', equal: ['partnerId', 'status'], orderBy: 'seq' },
  // The portal's deliveries of one transaction (partitionKey is the transaction id).
  { collection: deliveriesCollection, name: 'by_partner_partition_seq', equal: ['partnerId', 'partitionKey'], orderBy: 'seq' },
];

export const webhookEventNames = ['transaction.created', 'transaction.updated'] as const;
export type WebhookEventName = (typeof webhookEventNames)[number];

/** The spec's webhook data object, exactly. */
export interface WebhookData {
  readonly id: string;
  readonly status: string;
  readonly quoteId: string;
  readonly accountNumber: string | null;
  readonly onChainId: string | null;
  readonly refundOnChainId: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
  readonly partnerUserId: string;
}

export interface TransactionWebhook {
  readonly kind: 'event';
  readonly partnerId: string;
  readonly event: WebhookEventName;
  readonly data: WebhookData;
}

/** An administrator asked to deliver a given-up event again (written by DeliveryLog.redeliver). */
export interface RedeliveryRequest {
  readonly kind: 'redelivery';
  readonly partnerId: string;
  readonly eventId: string;
  readonly run: number;
}

export type WebhookRowPayload = TransactionWebhook | RedeliveryRequest;

const fieldCharsMax = 512;

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: JsonValue | undefined): string | null | undefined {
  if (value === null) return null;
  if (typeof value === 'string' && value.length <= fieldCharsMax) return value;
  return undefined;
}

function requiredText(value: JsonValue | undefined): string | undefined {
  const result = text(value);
  return typeof result === 'string' && result.length > 0 ? result : undefined;
}

function optionalText(value: JsonValue | undefined): string | null | undefined {
  return value === undefined ? null : text(value);
}

export function parseWebhookData(value: JsonValue | undefined): WebhookData | null {
  if (!isObject(value)) return null;
  const id = requiredText(value['id']);
  const status = requiredText(value['status']);
  const quoteId = requiredText(value['quoteId']);
  const partnerUserId = requiredText(value['partnerUserId']);
  const accountNumber = optionalText(value['accountNumber']);
  const onChainId = optionalText(value['onChainId']);
  const refundOnChainId = optionalText(value['refundOnChainId']);
  const taxId = optionalText(value['taxId']);
  const externalId = optionalText(value['externalId']);
  if (id === undefined || status === undefined || quoteId === undefined || partnerUserId === undefined) return null;
  if (accountNumber === undefined || onChainId === undefined || refundOnChainId === undefined || taxId === undefined || externalId === undefined) {
    return null;
  }
  return { id, status, quoteId, accountNumber, onChainId, refundOnChainId, taxId, externalId, partnerUserId };
}

/** The payload of a `webhooks` outbox row, or null when it is malformed (a bug upstream). */
export function parseRowPayload(payload: JsonValue): WebhookRowPayload | null {
  if (!isObject(payload)) return null;
  const partnerId = requiredText(payload['partnerId']);
  if (partnerId === undefined) return null;
  if (payload['kind'] === 'redelivery') {
    const eventId = requiredText(payload['eventId']);
    const run = payload['run'];
    if (eventId === undefined || typeof run !== 'number' || !Number.isSafeInteger(run) || run < 2) return null;
    return { kind: 'redelivery', partnerId, eventId, run };
  }
  const event = payload['event'];
  if (typeof event !== 'string' || !(webhookEventNames as readonly string[]).includes(event)) return null;
  const data = parseWebhookData(payload['data']);
  if (data === null) return null;
  return { kind: 'event', partnerId, event: event as WebhookEventName, data };
}

/** The delivered body: exactly `{ event, data }` with the spec's data fields. */
export function deliveryBody(event: string, data: WebhookData): string {
  return JSON.stringify({
    event,
    data: {
      id: data.id,
      status: data.status,
      quoteId: data.quoteId,
      accountNumber: data.accountNumber,
      onChainId: data.onChainId,
      refundOnChainId: data.refundOnChainId,
      taxId: data.taxId,
      externalId: data.externalId,
      partnerUserId: data.partnerUserId,
    },
  });
}

// ---- events ----

export interface EventRecord {
  readonly id: string;
  readonly partnerId: string;
  readonly seq: number;
  readonly block: number;
  readonly event: WebhookEventName;
  readonly data: WebhookData;
  readonly createdAtMs: number;
  /** Deliveries of one partition (transaction) happen in order. */
  readonly partitionKey: string;
}

export function eventToDoc(record: EventRecord): JsonObject {
  return { ...record, data: { ...record.data } };
}

export function eventFromDoc(doc: JsonObject | null): EventRecord | null {
  if (doc === null) return null;
  const data = parseWebhookData(doc['data']);
  const event = doc['event'];
  if (data === null || typeof event !== 'string' || !(webhookEventNames as readonly string[]).includes(event)) return null;
  if (typeof doc['id'] !== 'string' || typeof doc['partnerId'] !== 'string' || typeof doc['seq'] !== 'number') return null;
  return {
    id: doc['id'],
    partnerId: doc['partnerId'],
    seq: doc['seq'],
    block: typeof doc['block'] === 'number' ? doc['block'] : blockOf(doc['seq']),
    event: event as WebhookEventName,
    data,
    createdAtMs: typeof doc['createdAtMs'] === 'number' ? doc['createdAtMs'] : 0,
    partitionKey: typeof doc['partitionKey'] === 'string' ? doc['partitionKey'] : doc['id'],
  };
}

// ---- deliveries ----

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface AttemptLogEntry {
  /** 1 for the original delivery, +1 per redelivery. */
  readonly run: number;
  /** 1-based within the run. */
  readonly attempt: number;
  readonly atMs: number;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  readonly outcome: 'delivered' | 'retryable' | 'rejected';
  readonly error: AttemptErrorCode | null;
}

export interface DeliveryRecord {
  readonly id: string;
  readonly partnerId: string;
  readonly seq: number;
  readonly event: WebhookEventName;
  readonly partitionKey: string;
  readonly status: DeliveryStatus;
  readonly run: number;
  readonly attemptsInRun: number;
  /** When the next attempt is due; 0 = now; meaningful while pending. */
  readonly nextAttemptAtMs: number;
  /** The most recent attempts (at most attemptLogMax), oldest first. */
  readonly attempts: readonly AttemptLogEntry[];
  readonly lastError: AttemptErrorCode | null;
  readonly createdAtMs: number;
  readonly finishedAtMs: number | null;
  readonly updatedAtMs: number;
}

/** Attempts kept per event across runs (5 per run; an event redelivered many times keeps the latest). */
export const attemptLogMax = 50;

export function deliveryToDoc(record: DeliveryRecord): JsonObject {
  return { ...record, attempts: record.attempts.map((entry) => ({ ...entry })) };
}

export function deliveryFromDoc(doc: JsonObject | null): DeliveryRecord | null {
  if (doc === null) return null;
  const status = doc['status'];
  if (status !== 'pending' && status !== 'delivered' && status !== 'failed') return null;
  if (typeof doc['id'] !== 'string' || typeof doc['partnerId'] !== 'string' || typeof doc['seq'] !== 'number') return null;
  if (!Array.isArray(doc['attempts'])) return null;
  return doc as unknown as DeliveryRecord;
}

// ---- destinations ----

export interface TestSummary {
  readonly ok: boolean;
  readonly atMs: number;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  readonly error: AttemptErrorCode | null;
  /**
   * The start of the receiver's answer (response-excerpt.ts: at most 512 bytes read, printable
   * text); null when no answer came, and on results recorded before excerpts were kept.
   */
  readonly responseExcerpt?: string | null;
}

export interface DestinationRecord {
  readonly partnerId: string;
  /** The live URL; null = no destination (events are still logged for GET /events). */
  readonly url: string | null;
  /** The live signing secret; null = unavailable (deliveries fail at once). */
  readonly secret: string | null;
  /**
   * The staged URL. `testSecret` signs its test deliveries (a draft is not trusted with the live or
   * staged secret); absent on drafts staged before drafts had one (they must be staged again).
   */
  readonly draft: { readonly url: string; readonly stagedAtMs: number; readonly test: TestSummary | null; readonly testSecret?: string } | null;
  readonly pendingSecret: { readonly secret: string; readonly stagedAtMs: number } | null;
  readonly updatedAtMs: number;
}

export function destinationToDoc(record: DestinationRecord): JsonObject {
  return JSON.parse(JSON.stringify(record)) as JsonObject;
}

export function destinationFromDoc(doc: JsonValue | null): DestinationRecord | null {
  if (doc === null || !isObject(doc) || typeof doc['partnerId'] !== 'string') return null;
  return doc as unknown as DestinationRecord;
}
