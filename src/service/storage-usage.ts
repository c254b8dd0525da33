// The per-partner storage metric: how many records (and KYC document bytes) each partner holds in
// the store. Counted by the retention loop after each sweep from the indexes (a count of an index
// range, no document read, except the KYC ledger's sizes), and kept in one `storage_stats`
// document, so a scrape of /metrics reads one document, never the store's contents.
import { quoteExpiryCollection } from '../actors/quote-actor.ts';
import { idempotencyCollection } from '../edge/idempotency.ts';
import { kycDocumentsCollection } from '../edge/routes/kyc.ts';
import type { MetricFamily } from '../lifecycle/metrics.ts';
import { listOffsetMax, listPageSizeMax, type JsonObject, type ReadModelIndex, type SnapshotStore } from '../store/store.ts';
import { deliveriesCollection } from '../webhooks/records.ts';

export const storageStatsCollection = 'storage_stats';
const statsId = 'partners';

export const storageUsageReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: idempotencyCollection, name: 'by_scope_started', equal: ['scope'], orderBy: 'startedAtMs' },
  { collection: quoteExpiryCollection, name: 'by_partner_expiry', equal: ['partnerId'], orderBy: 'expiresAtMs' },
  { collection: kycDocumentsCollection, name: 'by_partner_stored', equal: ['partnerId'], orderBy: 'storedAtMs' },
];

export interface PartnerStorage {
  readonly kycDocuments: number;
  /** Bytes of the partner's KYC documents (a lower bound when `kycBytesCapped`). */
  readonly kycDocumentBytes: number;
  readonly kycBytesCapped: boolean;
  readonly idempotencyRecords: number;
  /**
   * Quotes not yet past the retention sweep: quotes a transaction claimed (a quote nobody accepted
   * is an offer in Redis, bounded per partner by QUOTE_OFFERS_PER_PARTNER_MAX, not in the store).
   */
  readonly quotes: number;
  /** Webhook events (each with its delivery record). */
  readonly events: number;
}

async function countOf(store: SnapshotStore, collection: string, field: string, partnerId: string, orderBy: string): Promise<number> {
  return (await store.list(collection, { where: { [field]: partnerId }, orderBy, limit: 1 })).total;
}

async function kycBytes(store: SnapshotStore, partnerId: string): Promise<{ bytes: number; capped: boolean }> {
  let bytes = 0;
  for (let offset = 0; offset <= listOffsetMax; offset += listPageSizeMax) {
    const page = await store.list(kycDocumentsCollection, { where: { partnerId }, orderBy: 'storedAtMs', offset, limit: listPageSizeMax });
    for (const item of page.items) bytes += Number(item.doc['bytes']) || 0;
    if (offset + page.items.length >= page.total) return { bytes, capped: false };
  }
  return { bytes, capped: true };
}

export async function partnerStorage(store: SnapshotStore, partnerId: string): Promise<PartnerStorage> {
  const kyc = await kycBytes(store, partnerId);
  return {
    kycDocuments: await countOf(store, kycDocumentsCollection, 'partnerId', partnerId, 'storedAtMs'),
    kycDocumentBytes: kyc.bytes,
    kycBytesCapped: kyc.capped,
    idempotencyRecords: await countOf(store, idempotencyCollection, 'scope', partnerId, 'startedAtMs'),
    quotes: await countOf(store, quoteExpiryCollection, 'partnerId', partnerId, 'expiresAtMs'),
    events: await countOf(store, deliveriesCollection, 'partnerId', partnerId, 'seq'),
  };
}

/** Counts every partner's storage and saves it for the scrapes. */
export async function recordStorageUsage(store: SnapshotStore, partnerIds: readonly string[], nowMs: number): Promise<void> {
  const partners: JsonObject = {};
  for (const partnerId of partnerIds) partners[partnerId] = { ...(await partnerStorage(store, partnerId)) };
  await store.put(storageStatsCollection, statsId, { countedAtMs: nowMs, partners });
}

/** The families of the last count (none before the first). */
export async function storageUsageMetrics(store: SnapshotStore, nowMs: number): Promise<MetricFamily[]> {
  const doc = await store.get(storageStatsCollection, statsId);
  if (doc === null) return [];
  const partners = (doc['partners'] ?? {}) as Record<string, Partial<Record<keyof PartnerStorage, number>>>;
  const records: MetricFamily['samples'][number][] = [];
  const bytes: MetricFamily['samples'][number][] = [];
  for (const [partner, usage] of Object.entries(partners)) {
    for (const kind of ['kycDocuments', 'idempotencyRecords', 'quotes', 'events'] as const) {
      records.push({ labels: { partner, kind: snake(kind) }, value: Number(usage[kind] ?? 0) });
    }
    bytes.push({ labels: { partner, kind: 'kyc_documents' }, value: Number(usage.kycDocumentBytes ?? 0) });
  }
  return [
    { name: 'storage_partner_records', type: 'gauge', help: 'Records each partner holds in the store, by kind (counted after each retention sweep).', samples: records },
    { name: 'storage_partner_bytes', type: 'gauge', help: 'Bytes each partner holds in the store (KYC documents, before encryption).', samples: bytes },
    { name: 'storage_stats_age_seconds', type: 'gauge', help: 'Age of the storage numbers above.', samples: [{ value: Math.max(0, nowMs - Number(doc['countedAtMs'] ?? 0)) / 1000 }] },
  ];
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
