// Retention: what the store would otherwise keep forever is deleted once it has served its time
// (docs/operations.md "Retention"). One sweep, in bounded batches:
//   - idempotency records started more than IDEMPOTENCY_TTL_HOURS ago (default 72 h): a retry with
//     the same key after that runs as a new request (docs/api.md);
//   - quotes expired for more than QUOTE_RETENTION_GRACE_MS that no transaction claimed: their actor
//     (snapshot, dedupe log) is removed by compare-and-set on the version read, so an actor written
//     since is left for the next round; a quote a transaction claimed or used is kept (it is that
//     transaction's price); an acceptance naming a removed quote is refused like any expired one;
//   - webhook events and their delivery records older than EVENT_RETENTION_DAYS (default 90), per
//     partner in sequence order, stopping at the first one that is newer, whose delivery is still
//     pending, or whose transaction is still live (awaiting or processing a payment);
//   - settlement samples (finished payouts, read by corridor health for one day) older than
//     `settlementSampleRetentionMs` (two days).
// Time is the injected clock's. The sweep runs in one process at a time (the `retention` lease);
// two at once would only repeat work: every delete is idempotent or compare-and-set.
import type { Leases } from '../bus/leases.ts';
import type { EnvConfig } from '../config/env.ts';
import { recordStorageUsage } from './storage-usage.ts';
import { loadQuoteRecord, quoteActorType, quoteExpiryCollection } from '../actors/quote-actor.ts';
import { actorId } from '../actors/envelope.ts';
import { settlementSamplesCollection, transactionsCollection } from '../actors/transaction-actor.ts';
import { idempotencyCollection } from '../edge/idempotency.ts';
import type { ReadModelIndex, SnapshotStore } from '../store/store.ts';
import { deliveriesCollection, deliveryFromDoc, eventFromDoc, eventsCollection } from '../webhooks/records.ts';

/** The indexes the sweep reads by age (declared with the service's others). */
export const retentionReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: idempotencyCollection, name: 'by_started', equal: [], orderBy: 'startedAtMs' },
  { collection: quoteExpiryCollection, name: 'by_expiry', equal: [], orderBy: 'expiresAtMs' },
  { collection: settlementSamplesCollection, name: 'by_finished', equal: [], orderBy: 'finishedAtMs' },
];

export interface RetentionConfig {
  readonly idempotencyTtlMs: number;
  readonly quoteGraceMs: number;
  readonly eventRetentionMs: number;
  /** Records looked at per kind (and per partner for events) in one sweep. */
  readonly batchMax: number;
}

export const hourMs = 3_600_000;
export const dayMs = 24 * hourMs;
export const retentionDefaults = {
  idempotencyTtlHours: 72,
  quoteGraceMs: dayMs,
  eventRetentionDays: 90,
  batchMax: 500,
  intervalMs: 60_000,
} as const;

/** The configuration from the environment (IDEMPOTENCY_TTL_HOURS, QUOTE_RETENTION_GRACE_HOURS, EVENT_RETENTION_DAYS). */
export function retentionConfigOf(env: Pick<EnvConfig, 'IDEMPOTENCY_TTL_HOURS' | 'QUOTE_RETENTION_GRACE_HOURS' | 'EVENT_RETENTION_DAYS'>): RetentionConfig {
  return {
    idempotencyTtlMs: env.IDEMPOTENCY_TTL_HOURS * hourMs,
    quoteGraceMs: env.QUOTE_RETENTION_GRACE_HOURS * hourMs,
    eventRetentionMs: env.EVENT_RETENTION_DAYS * dayMs,
    batchMax: retentionDefaults.batchMax,
  };
}

export interface SweepReport {
  idempotencyRecords: number;
  quotes: number;
  events: number;
  settlementSamples: number;
}

/** Corridor health reads the last day of settlement samples (docs/corridor-health.md); a second day is slack. */
export const settlementSampleRetentionMs = 2 * dayMs;

async function sweepSettlementSamples(store: SnapshotStore, cutoffMs: number, batchMax: number): Promise<number> {
  const page = await store.list(settlementSamplesCollection, { orderBy: 'finishedAtMs', direction: 'asc', limit: batchMax });
  let removed = 0;
  for (const item of page.items) {
    if (Number(item.doc['finishedAtMs']) >= cutoffMs) break;
    if (await store.remove(settlementSamplesCollection, item.id)) removed += 1;
  }
  return removed;
}

/** Statuses in which a transaction still moves money: its events are kept whatever their age. */
const liveTransactionStatuses = new Set(['AWAITING_PAYMENT', 'PROCESSING_PAYMENT']);

async function sweepIdempotency(store: SnapshotStore, cutoffMs: number, batchMax: number): Promise<number> {
  const page = await store.list(idempotencyCollection, { orderBy: 'startedAtMs', direction: 'asc', limit: batchMax });
  let removed = 0;
  for (const item of page.items) {
    if (Number(item.doc['startedAtMs']) >= cutoffMs) break;
    if (await store.remove(idempotencyCollection, item.id)) removed += 1;
  }
  return removed;
}

async function sweepQuotes(store: SnapshotStore, cutoffMs: number, batchMax: number): Promise<number> {
  const page = await store.list(quoteExpiryCollection, { orderBy: 'expiresAtMs', direction: 'asc', limit: batchMax });
  let removed = 0;
  for (const item of page.items) {
    if (Number(item.doc['expiresAtMs']) >= cutoffMs) break;
    const key = actorId(quoteActorType, item.id);
    const snapshot = await store.load(key);
    const record = await loadQuoteRecord({ load: () => Promise.resolve(snapshot) }, item.id);
    if (snapshot !== null && record !== null && record.use === null) {
      const deleted = await store.deleteActor(key, snapshot.version);
      if (deleted === 'version_conflict') continue; // written since: looked at again next round
      if (deleted === 'ok') removed += 1;
    }
    // Gone, removed now, or claimed by a transaction (kept with it): nothing more to look at.
    await store.remove(quoteExpiryCollection, item.id);
  }
  return removed;
}

async function transactionIsLive(store: SnapshotStore, transactionId: string): Promise<boolean> {
  const doc = await store.get(transactionsCollection, transactionId);
  return doc !== null && liveTransactionStatuses.has(String(doc['status']));
}

async function sweepEvents(store: SnapshotStore, partnerId: string, cutoffMs: number, batchMax: number): Promise<number> {
  const page = await store.list(deliveriesCollection, { where: { partnerId }, orderBy: 'seq', direction: 'asc', limit: batchMax });
  let removed = 0;
  for (const item of page.items) {
    const delivery = deliveryFromDoc(item.doc);
    const event = eventFromDoc(await store.get(eventsCollection, item.id));
    if (delivery === null || delivery.status === 'pending') break;
    if (event !== null && (event.createdAtMs >= cutoffMs || (await transactionIsLive(store, event.data.id)))) break;
    // The event first: a delivery record without its event is never sent (nothing to send).
    if (event !== null) await store.remove(eventsCollection, item.id);
    await store.remove(deliveriesCollection, item.id);
    removed += 1;
  }
  return removed;
}

/** One sweep at `nowMs` over the partners named. */
export async function sweepRetention(store: SnapshotStore, config: RetentionConfig, partnerIds: readonly string[], nowMs: number): Promise<SweepReport> {
  const report: SweepReport = {
    idempotencyRecords: await sweepIdempotency(store, nowMs - config.idempotencyTtlMs, config.batchMax),
    quotes: await sweepQuotes(store, nowMs - config.quoteGraceMs, config.batchMax),
    events: 0,
    settlementSamples: await sweepSettlementSamples(store, nowMs - settlementSampleRetentionMs, config.batchMax),
  };
  for (const partnerId of partnerIds) report.events += await sweepEvents(store, partnerId, nowMs - config.eventRetentionMs, config.batchMax);
  return report;
}

export const retentionLeaseName = 'retention';

export interface RetentionLoopOptions {
  readonly store: SnapshotStore;
  readonly leases: Leases;
  /** Unique per process. */
  readonly owner: string;
  readonly config: RetentionConfig;
  readonly partnerIds: () => readonly string[];
  readonly clock: { nowMs(): number };
  readonly intervalMs?: number;
  /** Told of each sweep that removed something (counts only) and of each failure. */
  readonly onSweep?: (report: SweepReport) => void;
  readonly onError?: (error: unknown) => void;
}

export interface RetentionLoop {
  /** Runs one round now (tests): the lease, then a sweep if this process holds it. */
  round(): Promise<SweepReport | null>;
  stop(): Promise<void>;
}

/**
 * A sweep every `intervalMs` in the process holding the `retention` lease (held for three intervals
 * and renewed every round, so a dead holder is replaced within that). A full batch sweeps again at
 * the next round, so a backlog drains at `batchMax` per kind per round.
 */
export function startRetentionLoop(options: RetentionLoopOptions): RetentionLoop {
  const intervalMs = options.intervalMs ?? retentionDefaults.intervalMs;
  const ttlMs = Math.min(3 * intervalMs, 24 * hourMs);
  let token: number | null = null;
  let stopped = false;
  let running: Promise<SweepReport | null> | null = null;

  async function holdLease(): Promise<boolean> {
    if (token !== null && (await options.leases.renew(retentionLeaseName, options.owner, token, ttlMs))) return true;
    const grant = await options.leases.acquire(retentionLeaseName, options.owner, ttlMs);
    token = grant?.token ?? null;
    return token !== null;
  }

  async function roundOnce(): Promise<SweepReport | null> {
    try {
      if (!(await holdLease())) return null;
      const nowMs = options.clock.nowMs();
      const report = await sweepRetention(options.store, options.config, options.partnerIds(), nowMs);
      // The per-partner storage metric, counted from the indexes after the sweep (src/service/storage-usage.ts).
      await recordStorageUsage(options.store, options.partnerIds(), nowMs);
      if (report.idempotencyRecords + report.quotes + report.events + report.settlementSamples > 0) options.onSweep?.(report);
      return report;
    } catch (error) {
      options.onError?.(error);
      return null;
    }
  }

  const round = (): Promise<SweepReport | null> => {
    running ??= roundOnce().finally(() => {
      running = null;
    });
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void round();
  }, intervalMs);
  timer.unref();

  return {
    round,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      if (token !== null) await options.leases.release(retentionLeaseName, options.owner, token).catch(() => false);
      token = null;
    },
  };
}
