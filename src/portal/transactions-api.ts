// The portal's transactions: the partner's own, as `GET /transactions/list` shows them (its
// `listItem`), with the filters an administrator needs (status, user, UTC dates), and one
// transaction in detail: its hashes, refund, and the events sent for it, which are its status
// history (every status change is a `transaction.created` / `transaction.updated` event).
//
// The store matches index fields exactly and cannot range over dates: the newest `scanMax`
// transactions of the chosen index are read and the date filter applied to those (said in the
// answer as `scanned`, and in docs/portal.md).
import { transactionsCollection } from '../actors/transaction-actor.ts';
import { listItem } from '../edge/routes/transactions.ts';
import { receiptAvailable, signedReceiptResponse } from '../edge/routes/receipts.ts';
import type { ReceiptSigner } from '../edge/receipt-signing.ts';
import type { Route } from '../edge/http-types.ts';
import type { JsonObject, ReadModelIndex, SnapshotStore } from '../store/store.ts';
import type { DeliveryLog, EventLogReader } from '../webhooks/index.ts';
import { notFound, portalJson, withSession, type PortalRequestEnv, type SessionHandler } from './requests.ts';
import { parsePortal, transactionsQuerySchema } from './schemas.ts';

export interface TransactionsApiEnv extends PortalRequestEnv {
  readonly store: SnapshotStore;
  readonly deliveries: DeliveryLog;
  readonly events: EventLogReader;
  /** Signs settlement receipts (src/edge/receipt-signing.ts); null or absent: none configured. */
  readonly receipts?: ReceiptSigner | null;
}

export const transactionsPageSize = 25;
/** Transactions read per request at most when a date filter applies. */
export const scanMax = 1_000;
/** Events shown for one transaction at most. */
const eventsShownMax = 100;
const dayMs = 86_400_000;

/** Indexes the portal's filters need (src/service/context.ts adds them). */
export const portalReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: transactionsCollection, name: 'by_partner_created', equal: ['partnerId'], orderBy: 'createdAtMs' },
  { collection: transactionsCollection, name: 'by_partner_status_created', equal: ['partnerId', 'status'], orderBy: 'createdAtMs' },
];

function dayStartMs(day: string): number {
  return Date.parse(`${day}T00:00:00Z`);
}

type Handler = SessionHandler<TransactionsApiEnv>;

const listTransactions: Handler = async (env, session, request) => {
  const query = parsePortal(transactionsQuerySchema, request.query, 'query');
  if (!query.ok) return query.response;
  const { status, userId, from, to } = query.value;
  const page = Number(query.value.page ?? 1);
  if (page < 1) return portalJson(400, { code: 'invalid_request', reason: 'page must be a positive integer', retryable: false });
  const fromMs = from === undefined ? null : dayStartMs(from);
  const toMs = to === undefined ? null : dayStartMs(to) + dayMs;
  if ((fromMs !== null && Number.isNaN(fromMs)) || (toMs !== null && Number.isNaN(toMs))) {
    return portalJson(400, { code: 'invalid_request', reason: 'from and to must be real dates', retryable: false });
  }
  // The user index also answers user + status (filtered below); status alone and no filter have their own.
  const where: Record<string, string> = userId !== undefined ? { partnerId: session.partnerId, userId } : status !== undefined ? { partnerId: session.partnerId, status } : { partnerId: session.partnerId };
  const filtered = fromMs !== null || toMs !== null || (userId !== undefined && status !== undefined);
  const offset = (page - 1) * transactionsPageSize;
  const read = await env.store.list(transactionsCollection, {
    where,
    orderBy: 'createdAtMs',
    direction: 'desc',
    offset: filtered ? 0 : offset,
    limit: filtered ? scanMax : transactionsPageSize,
  });
  const keep = (doc: JsonObject): boolean => {
    const createdAtMs = typeof doc['createdAtMs'] === 'number' ? doc['createdAtMs'] : 0;
    if (fromMs !== null && createdAtMs < fromMs) return false;
    if (toMs !== null && createdAtMs >= toMs) return false;
    return status === undefined || doc['status'] === status;
  };
  const items = filtered ? read.items.filter((item) => keep(item.doc)) : read.items;
  const shown = filtered ? items.slice(offset, offset + transactionsPageSize) : items;
  return portalJson(200, {
    page,
    pageSize: transactionsPageSize,
    total: filtered ? items.length : read.total,
    scanned: filtered ? read.items.length : null,
    transactions: shown.map((item) => ({ ...(listItem(item.id, item.doc) as object), userId: item.doc['userId'] ?? null, createdAtMs: item.doc['createdAtMs'] ?? null })),
  });
};

const getTransaction: Handler = async (env, session, request) => {
  const id = request.params['id'] ?? '';
  const doc = id.length > 64 ? null : await env.store.get(transactionsCollection, id);
  // Another partner's transaction is answered like a missing one.
  if (doc === null || doc['partnerId'] !== session.partnerId) return notFound('transaction');
  const deliveries = await env.deliveries.list(session.partnerId, { transactionId: id, limit: eventsShownMax });
  const events = [];
  for (const delivery of deliveries.deliveries) {
    const event = await env.events.get(session.partnerId, delivery.eventId);
    events.push({
      eventId: delivery.eventId,
      sequence: delivery.sequence,
      event: delivery.event,
      status: event?.data.status ?? null,
      refundOnChainId: event?.data.refundOnChainId ?? null,
      createdAtMs: delivery.createdAtMs,
      delivery: delivery.status,
      attempts: delivery.attempts.length,
    });
  }
  events.sort((a, b) => a.sequence - b.sequence);
  return portalJson(200, {
    transaction: {
      ...(listItem(id, doc) as object),
      userId: doc['userId'] ?? null,
      externalId: doc['externalId'] ?? null,
      direction: doc['direction'] ?? null,
      createdAtMs: doc['createdAtMs'] ?? null,
      updatedAtMs: doc['updatedAtMs'] ?? null,
      expiresAtMs: doc['expiresAtMs'] ?? null,
      depositAddress: doc['depositAddress'] ?? null,
      depositHash: doc['onChainId'] ?? null,
      refundHash: doc['refundOnChainId'] ?? null,
      receiptAvailable: receiptAvailable(id, doc),
    },
    statusHistory: events.map((event) => ({ atMs: event.createdAtMs, status: event.status, event: event.event, refundOnChainId: event.refundOnChainId })),
    events,
  });
};

/** The signed receipt as a file download: the same document GET /transaction/{id}/receipt answers. */
const downloadReceipt: Handler = async (env, session, request) => {
  const id = request.params['id'] ?? '';
  const doc = id.length > 64 ? null : await env.store.get(transactionsCollection, id);
  if (doc === null || doc['partnerId'] !== session.partnerId) return notFound('transaction');
  const response = signedReceiptResponse(env.receipts, id, doc, {
    'cache-control': 'no-store',
    'content-disposition': `attachment; filename="receipt-${id.replace(/[^0-9a-f-]/g, '')}.json"`,
  });
  return response;
};

export function transactionsApiRoutes(env: TransactionsApiEnv): Route[] {
  return [
    { method: 'GET', pattern: '/portal/api/transactions', handler: withSession(env, listTransactions) },
    { method: 'GET', pattern: '/portal/api/transactions/:id', handler: withSession(env, getTransaction) },
    { method: 'GET', pattern: '/portal/api/transactions/:id/receipt', handler: withSession(env, downloadReceipt) },
  ];
}
