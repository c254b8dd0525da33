// Retention sweeps (src/service/retention.ts) against the real embedded store with the service's
// indexes: idempotency records past their TTL, quotes expired past the grace that no transaction
// claimed, webhook events and deliveries past the retention — and what must stay: newer records,
// claimed quotes, pending deliveries, events of a live transaction and everything after them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { quoteExpiryCollection } from '../../src/actors/quote-actor.ts';
import { settlementSamplesCollection, transactionsCollection } from '../../src/actors/transaction-actor.ts';
import { createIdempotency, idempotencyCollection } from '../../src/edge/idempotency.ts';
import { jsonResponse } from '../../src/edge/http-response.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { dayMs, hourMs, retentionLeaseName, settlementSampleRetentionMs, startRetentionLoop, sweepRetention, type RetentionConfig } from '../../src/service/retention.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import type { JsonObject } from '../../src/store/store.ts';
import { deliveriesCollection, deliveryToDoc, eventsCollection, eventToDoc, type DeliveryStatus } from '../../src/webhooks/records.ts';

const config: RetentionConfig = { idempotencyTtlMs: 72 * hourMs, quoteGraceMs: dayMs, eventRetentionMs: 90 * dayMs, batchMax: 100 };
const t0 = Date.UTC(2026, 0, 1);

describe('retention sweep on the embedded store', () => {
  let dir: string;
  let store: LmdbStore;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'retention-'));
    store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
    await store.init();
  });

  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('idempotency records older than the TTL go; a retry with the key after that is a new request', async () => {
    const idempotency = createIdempotency(store);
    let runs = 0;
    const request = (key: string, nowMs: number) => idempotency.run(
      { scope: 'p', key, fingerprint: 'f', nowMs, newIds: () => ({ id: `${key}-${nowMs}` }) },
      (ids) => {
        runs += 1;
        return Promise.resolve(jsonResponse(200, ids));
      },
    );
    await request('old', t0);
    await request('new', t0 + 48 * hourMs);
    assert.equal((await store.list(idempotencyCollection, { limit: 10 })).total, 2);
    const report = await sweepRetention(store, config, [], t0 + 72 * hourMs + 1);
    assert.equal(report.idempotencyRecords, 1);
    const left = await store.list(idempotencyCollection, { limit: 10 });
    assert.equal(left.total, 1);
    assert.equal(left.items[0]?.doc['startedAtMs'], t0 + 48 * hourMs);
    const replay = await request('new', t0 + 72 * hourMs + 2);
    assert.equal(replay.headers?.['idempotent-replayed'], 'true');
    assert.equal(runs, 2);
    await request('old', t0 + 72 * hourMs + 3);
    assert.equal(runs, 3, 'the swept key runs again');
  });

  async function quote(id: string, expiresAtMs: number, acceptance?: JsonObject): Promise<void> {
    const state: JsonObject = { id, partnerId: 'p', expiresAtMs, ...(acceptance === undefined ? {} : { acceptance }) };
    const result = await store.commit({
      actorKey: `quote/${id}`, expectedVersion: 0, newVersion: 1, state, fence: { shard: 0, token: 1 },
      appliedCommands: [{ commandId: `create-${id}`, reply: null }], outbox: [],
      readModels: [{ collection: quoteExpiryCollection, id, doc: { partnerId: 'p', expiresAtMs } }],
    });
    assert.equal(result, 'ok');
  }

  test('quotes expired past the grace and never claimed go; claimed, used and recent ones stay', async () => {
    const now = t0 + 10 * dayMs;
    await quote('q-expired', now - dayMs - 1);
    await quote('q-released', now - 2 * dayMs); // claimed and given back: acceptance absent again
    await quote('q-used', now - 2 * dayMs, { transactionId: 't-1', status: 'used' });
    await quote('q-held', now - 2 * dayMs, { transactionId: 't-2', status: 'held' });
    await quote('q-in-grace', now - dayMs + 1);
    await quote('q-valid', now + 60_000);
    const report = await sweepRetention(store, config, [], now);
    assert.equal(report.quotes, 2);
    assert.equal(await store.load('quote/q-expired'), null);
    assert.equal(await store.getAppliedReply('quote/q-expired', 'create-q-expired'), null);
    assert.equal(await store.load('quote/q-released'), null);
    for (const kept of ['q-used', 'q-held', 'q-in-grace', 'q-valid']) assert.notEqual(await store.load(`quote/${kept}`), null, kept);
    const left = (await store.list(quoteExpiryCollection, { orderBy: 'expiresAtMs', limit: 10 })).items.map((item) => item.id);
    assert.deepEqual(left, ['q-in-grace', 'q-valid'], 'claimed quotes are not looked at again');
  });

  async function event(partnerId: string, seq: number, createdAtMs: number, transactionId: string, status: DeliveryStatus): Promise<void> {
    const id = `${partnerId}-e${seq}`;
    const data = { id: transactionId, status: 'PAYMENT_COMPLETED', quoteId: 'q', accountNumber: null, onChainId: null, refundOnChainId: null, taxId: null, externalId: null, partnerUserId: 'u' };
    await store.put(eventsCollection, id, eventToDoc({ id, partnerId, seq, block: 0, event: 'transaction.updated', data, createdAtMs, partitionKey: transactionId }));
    await store.put(deliveriesCollection, id, deliveryToDoc({
      id, partnerId, seq, event: 'transaction.updated', partitionKey: transactionId, status, run: 1, attemptsInRun: 1, nextAttemptAtMs: 0,
      attempts: [], lastError: null, createdAtMs, finishedAtMs: status === 'pending' ? null : createdAtMs, updatedAtMs: createdAtMs,
    }));
  }

  test('events and deliveries past the retention go, in order, up to the first that must stay', async () => {
    const now = t0 + 200 * dayMs;
    const old = now - 91 * dayMs;
    await store.put(transactionsCollection, 'tx-done', { partnerId: 'a', userId: 'u', createdAtMs: old, status: 'PAYMENT_COMPLETED' });
    await store.put(transactionsCollection, 'tx-live', { partnerId: 'a', userId: 'u', createdAtMs: old, status: 'PROCESSING_PAYMENT' });
    await event('a', 1, old, 'tx-done', 'delivered');
    await event('a', 2, old, 'tx-done', 'failed');
    await event('a', 3, old, 'tx-live', 'delivered'); // its transaction still moves money: kept, and so is what follows
    await event('a', 4, old, 'tx-done', 'delivered');
    await event('b', 1, old, 'tx-done', 'pending'); // not delivered yet: kept
    await event('b', 2, old, 'tx-done', 'delivered');
    await event('c', 1, old, 'tx-done', 'delivered');
    await event('c', 2, now - 89 * dayMs, 'tx-done', 'delivered'); // inside the retention
    const report = await sweepRetention(store, config, ['a', 'b', 'c'], now);
    assert.equal(report.events, 3);
    const ids = async (collection: string) => (await store.list(collection, { limit: 100 })).items.map((item) => item.id).sort();
    assert.deepEqual(await ids(eventsCollection), ['a-e3', 'a-e4', 'b-e1', 'b-e2', 'c-e2']);
    assert.deepEqual(await ids(deliveriesCollection), ['a-e3', 'a-e4', 'b-e1', 'b-e2', 'c-e2']);
    await store.put(transactionsCollection, 'tx-live', { partnerId: 'a', userId: 'u', createdAtMs: old, status: 'PAYMENT_COMPLETED' });
    assert.equal((await sweepRetention(store, config, ['a'], now)).events, 2);
  });

  test('settlement samples older than two days go (corridor health reads one day); newer ones stay', async () => {
    const sample = (finishedAtMs: number) => ({ transactionId: 'x', paymentMethod: 'BREB', network: 'STELLAR', cryptoCurrency: 'USDC', targetCurrency: 'COP', succeeded: true, depositAtMs: finishedAtMs - 1_000, finishedAtMs });
    const now = t0 + 500 * dayMs;
    await store.put(settlementSamplesCollection, 'old-sample', sample(now - settlementSampleRetentionMs - 1));
    await store.put(settlementSamplesCollection, 'day-old-sample', sample(now - dayMs));
    assert.equal((await sweepRetention(store, config, [], now)).settlementSamples, 1);
    const left = await store.list(settlementSamplesCollection, { limit: 10 });
    assert.deepEqual(left.items.map((item) => item.id), ['day-old-sample']);
  });

  test('the loop sweeps in the one process holding the retention lease', async () => {
    const leases = new MemoryLeases();
    let nowMs = t0 + 400 * dayMs;
    const clock = { nowMs: () => nowMs };
    const options = { store, leases, config, partnerIds: () => [], clock, intervalMs: 3_600_000 };
    const first = startRetentionLoop({ ...options, owner: 'one' });
    const second = startRetentionLoop({ ...options, owner: 'two' });
    try {
      await createIdempotency(store).run({ scope: 'p', key: 'loop', fingerprint: 'f', nowMs: nowMs - 73 * hourMs, newIds: () => ({}) }, () => Promise.resolve(jsonResponse(200, {})));
      assert.deepEqual(await first.round(), { idempotencyRecords: 1, quotes: 0, events: 0, settlementSamples: 0 });
      assert.equal(await second.round(), null, 'the other process does not sweep');
      assert.equal((await leases.owner(retentionLeaseName))?.owner, 'one');
      await first.stop();
      nowMs += 1;
      assert.notEqual(await second.round(), null, 'the lease is released at stop: the other takes over');
    } finally {
      await first.stop();
      await second.stop();
      await leases.close();
    }
  });
});
