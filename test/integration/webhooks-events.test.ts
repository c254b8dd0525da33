// GET /events over real HTTP (the edge toolkit on uWebSockets.js): a partner reads its own webhook
// events in sequence order, pages with after/limit across the event log's block boundary, gets 400
// for bad parameters and 401 without a key, and sees an event before its delivery has finished.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing, partnerGuard, sha256Hex } from '../../src/edge/auth.ts';
import { createEdgeLogger } from '../../src/edge/access-log.ts';
import { createHttpApp } from '../../src/edge/http-app.ts';
import type { Listening } from '../../src/edge/http-types.ts';
import { eventsRoutes } from '../../src/edge/routes/events.ts';
import { PartnerDirectory, type Partner } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes, type WebhookServices } from '../../src/webhooks/index.ts';
import { eventually } from '../support/eventually.ts';
import { collectingLogger, commitWebhooks, newTransaction, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

const acmeKey = 'acme-api-key-0123456789abcdef';
const otherKey = 'other-api-key-0123456789abcdef';
const slowKey = 'slow-api-key-0123456789abcdef';

interface FeedEvent {
  sequence: number;
  id: string;
  event: string;
  data: Record<string, unknown>;
  createdAtMs: number;
}

interface FeedPage {
  events: FeedEvent[];
  next_after: number;
}

function partner(id: string, key: string, url: string | null): Partner {
  return {
    id,
    name: id,
    apiKeySha256: [sha256Hex(key)],
    kycEnabled: false,
    kybApproved: true,
    disabledUsers: new Set(),
    webhook: url === null ? null : { url, secret: `${id}-webhook-secret-0123456789` },
    fees: undefined,
  };
}

describe('GET /events', () => {
  let dir: string;
  let store: LmdbStore;
  let listening: Listening;
  let base: string;
  let services: WebhookServices;
  let receiver: WebhookReceiver;
  const acmeTransactions = Array.from({ length: 350 }, () => newTransaction('acme'));
  const otherTransactions = Array.from({ length: 3 }, () => newTransaction('other'));

  before(async () => {
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-events-'));
    store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    const keyRing = createKeyRing();
    const partners = new PartnerDirectory(keyRing);
    partners.set(partner('acme', acmeKey, null));
    partners.set(partner('other', otherKey, null));
    partners.set(partner('slow', slowKey, receiver.url));
    services = createWebhookServices({ env: { sandbox: true }, processId: 'test', clock: { nowMs: () => Date.now() }, log: collectingLogger(), store, partners });
    const app = createHttpApp({
      routes: eventsRoutes({ guard: partnerGuard({ keyRing }), events: services.events }),
      logger: createEdgeLogger({ level: 'silent' }),
    });
    listening = await app.listen('127.0.0.1', 0);
    base = `http://127.0.0.1:${listening.port}`;

    // 1,050 events for acme (350 transactions × 3 events, committed interleaved with 'other').
    for (const [index, tx] of acmeTransactions.entries()) {
      await commitWebhooks(store, tx, [
        { event: 'transaction.created', status: 'AWAITING_PAYMENT' },
        { event: 'transaction.created', status: 'PROCESSING_PAYMENT', onChainId: `0x${index.toString(16).padStart(64, '0')}` },
        { event: 'transaction.updated', status: 'PROCESSING_PAYMENT', onChainId: `0x${index.toString(16).padStart(64, '0')}` },
      ]);
      const other = otherTransactions[index];
      if (other !== undefined) await commitWebhooks(store, other, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    }
    // Record them through a dispatcher's normal rounds (these partners have no destination).
    const dispatcher = services.createDispatcher();
    try {
      await eventually(async () => {
        await dispatcher.runRound();
        await dispatcher.idle();
        assert.equal((await services.events.list('acme', 1_049, 10)).events.length, 1);
      }, 30_000);
    } finally {
      await dispatcher.stop();
    }
  });

  after(() => teardown(
    () => { listening.close(); },
    () => receiver?.close(),
    () => store?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  async function get(path: string, key: string | null = acmeKey): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${base}${path}`, { headers: key === null ? {} : { 'x-api-key': key } });
    return { status: response.status, body: await response.json() };
  }

  async function page(path: string, key = acmeKey): Promise<FeedPage> {
    const response = await get(path, key);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body as FeedPage;
  }

  test('the first page: 100 events by default, sequences 1..100, in commit order', async () => {
    const first = await page('/events');
    assert.equal(first.events.length, 100);
    assert.deepEqual(first.events.map((event) => event.sequence), Array.from({ length: 100 }, (_, index) => index + 1));
    assert.equal(first.next_after, 100);
    const [event] = first.events;
    assert.ok(event);
    assert.match(event.id, /^evt_[0-9a-f]{32}$/);
    assert.equal(event.event, 'transaction.created');
    assert.deepEqual(Object.keys(event).sort(), ['createdAtMs', 'data', 'event', 'id', 'sequence']);
    assert.deepEqual(Object.keys(event.data).sort(), ['accountNumber', 'externalId', 'id', 'onChainId', 'partnerUserId', 'quoteId', 'refundOnChainId', 'status', 'taxId']);
    // One transaction's three events are consecutive, in the order they were committed.
    assert.deepEqual(first.events.slice(0, 3).map((item) => [item.event, item.data['status']]), [
      ['transaction.created', 'AWAITING_PAYMENT'],
      ['transaction.created', 'PROCESSING_PAYMENT'],
      ['transaction.updated', 'PROCESSING_PAYMENT'],
    ]);
  });

  test('paging with next_after walks all 1,050 events once, across the block boundary', async () => {
    const sequences: number[] = [];
    let cursor = 0;
    for (let pages = 0; pages < 10; pages += 1) {
      const current = await page(`/events?after=${cursor}&limit=500`);
      if (current.events.length === 0) break;
      sequences.push(...current.events.map((event) => event.sequence));
      cursor = current.next_after;
    }
    assert.deepEqual(sequences, Array.from({ length: 1_050 }, (_, index) => index + 1));
    const across = await page('/events?after=995&limit=10');
    assert.deepEqual(across.events.map((event) => event.sequence), [996, 997, 998, 999, 1_000, 1_001, 1_002, 1_003, 1_004, 1_005]);
    const end = await page('/events?after=1050');
    assert.deepEqual(end, { events: [], next_after: 1_050 });
    assert.deepEqual(await page('/events?after=999999'), { events: [], next_after: 999_999 });
  });

  test('each partner sees only its own events, with its own sequence', async () => {
    const other = await page('/events', otherKey);
    assert.deepEqual(other.events.map((event) => event.sequence), [1, 2, 3]);
    assert.deepEqual(other.events.map((event) => event.data['id']), otherTransactions.map((tx) => tx.transactionId));
  });

  test('bad parameters are 400; no key is 401', async () => {
    for (const query of ['after=-1', 'after=abc', 'after=1.5', 'limit=0', 'limit=501', 'limit=ten', `after=${'9'.repeat(20)}`]) {
      const response = await get(`/events?${query}`);
      assert.equal(response.status, 400, query);
      assert.equal((response.body as { code: string }).code, 'invalid_request');
    }
    assert.equal((await get('/events?limit=500')).status, 200);
    const unauthenticated = await get('/events', null);
    assert.equal(unauthenticated.status, 401);
    assert.equal((unauthenticated.body as { code: string }).code, 'authentication_failed');
  });

  test('an event is in the feed before its delivery has finished', async () => {
    receiver.script([], { status: 200, delayMs: 2_000 });
    const tx = newTransaction('slow');
    await commitWebhooks(store, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    const dispatcher = services.createDispatcher();
    try {
      // Rounds until the slow partner's row is claimed (acme's older rows come first).
      await eventually(async () => {
        await dispatcher.runRound();
        assert.ok(receiver.requests.length >= 1, 'the delivery has started');
      }, 20_000);
      const feed = await page('/events', slowKey);
      assert.equal(feed.events.length, 1);
      const [event] = feed.events;
      assert.ok(event);
      assert.equal(event.data['id'], tx.transactionId);
      assert.equal((await services.deliveries.get('slow', event.id))?.status, 'pending', 'still being delivered');
      await dispatcher.idle();
      assert.equal((await services.deliveries.get('slow', event.id))?.status, 'delivered');
    } finally {
      await dispatcher.stop();
    }
  });
});
