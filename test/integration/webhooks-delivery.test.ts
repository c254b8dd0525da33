// Webhook delivery against a real local HTTP receiver: retries of retryable failures, give-up
// after the attempt budget (and redelivery with a fresh one), timeouts, redirects and 4xx not
// retried, capped response bodies, exactly the spec's payload, verifiable signatures, ordering per
// transaction while other transactions proceed, and the production address policy.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { lookup } from 'node:dns/promises';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory, type Partner } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes, type WebhookServices, type RunningWebhooksRole, type WebhookOptions } from '../../src/webhooks/index.ts';
import { verifySignature, webhookHeaders } from '../../src/webhooks/signing.ts';
import { isBlockedAddress } from '../../src/webhooks/url-policy.ts';
import { eventually } from '../support/eventually.ts';
import { collectingLogger, commitWebhooks, newTransaction, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const secret = 'acme-webhook-secret-0123456789';
const fast: WebhookOptions = {
  policy: { retryDelayMsBase: 30, retryDelayMsMax: 400 },
  transport: { attemptTimeoutMs: 500, responseBytesMax: 4 * 1024 },
  limits: { leaseMs: 5_000, claimMarginMs: 500, pollIntervalMs: 20 },
};

interface Setup {
  readonly store: LmdbStore;
  readonly partners: PartnerDirectory;
  readonly services: WebhookServices;
  readonly role: RunningWebhooksRole;
  readonly log: ReturnType<typeof collectingLogger>;
  stop(): Promise<void>;
}

function partner(id: string, url: string | null): Partner {
  return {
    id,
    name: id,
    apiKeySha256: [],
    kycEnabled: false,
    kybApproved: true,
    disabledUsers: new Set(),
    webhook: url === null ? null : { url, secret },
    fees: undefined,
  };
}

async function setup(url: string | null, options: { sandbox?: boolean; webhook?: WebhookOptions } = {}): Promise<Setup> {
  const dir = mkdtempSync(join(tmpdir(), 'webhooks-delivery-'));
  const store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
  await store.init();
  const partners = new PartnerDirectory(createKeyRing());
  partners.set(partner('acme', url));
  const log = collectingLogger();
  const services = createWebhookServices(
    { env: { sandbox: options.sandbox ?? true }, processId: 'test', clock: { nowMs: () => Date.now() }, log, store, partners },
    options.webhook ?? fast,
  );
  const role = await services.startWebhooksRole();
  return {
    store,
    partners,
    services,
    role,
    log,
    async stop() {
      await role.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function deliveryOf(s: Setup, eventId: string) {
  const view = await s.services.deliveries.get('acme', eventId);
  assert.ok(view, `delivery record of ${eventId}`);
  return view;
}

async function eventIds(s: Setup): Promise<string[]> {
  return (await s.services.events.list('acme', 0, 500)).events.map((event) => event.id);
}

describe('webhook delivery', () => {
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await receiver.close();
  });

  test('500, 500, then 200: delivered on the third attempt, with each attempt in the delivery log', async () => {
    receiver.requests.length = 0;
    receiver.script([{ status: 500 }, { status: 500 }], { status: 200 });
    const s = await setup(receiver.url);
    try {
      const tx = newTransaction('acme');
      await commitWebhooks(s.store, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'delivered', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      const delivery = await deliveryOf(s, eventId);
      assert.equal(delivery.status, 'delivered');
      assert.deepEqual(delivery.attempts.map((a) => [a.attempt, a.httpStatus, a.outcome]), [
        [1, 500, 'retryable'],
        [2, 500, 'retryable'],
        [3, 200, 'delivered'],
      ]);
      for (const attempt of delivery.attempts) {
        assert.ok(attempt.atMs > 0 && attempt.durationMs >= 0);
      }
      assert.equal(receiver.requests.length, 3);
      await eventually(async () => assert.equal((await s.store.outboxPending('webhooks', 10)).length, 0, 'the outbox row is done'));

      // What the partner received: the spec's header, our headers, exactly the spec's body.
      const last = receiver.requests[2];
      assert.ok(last);
      assert.equal(last.method, 'POST');
      assert.equal(last.headers[webhookHeaders.secret], secret);
      assert.equal(last.headers[webhookHeaders.eventId], eventId);
      assert.equal(last.headers[webhookHeaders.sequence], '1');
      assert.equal(last.headers[webhookHeaders.attempt], '3');
      assert.match(last.headers['content-type'] ?? '', /^application\/json/);
      const body = JSON.parse(last.body) as { event: string; data: Record<string, unknown> };
      assert.deepEqual(Object.keys(body), ['event', 'data']);
      assert.equal(body.event, 'transaction.created');
      assert.deepEqual(Object.keys(body.data).sort(), ['accountNumber', 'externalId', 'id', 'onChainId', 'partnerUserId', 'quoteId', 'refundOnChainId', 'status', 'taxId']);
      assert.equal(body.data['id'], tx.transactionId);
      assert.ok(!last.body.includes('bankCode') && !last.body.includes('origin'));
      assert.ok(verifySignature({ secret, timestamp: last.headers[webhookHeaders.timestamp], signature: last.headers[webhookHeaders.signature], body: last.body, nowMs: Date.now() }));
      assert.ok(!verifySignature({ secret: 'another-secret-000000000', timestamp: last.headers[webhookHeaders.timestamp], signature: last.headers[webhookHeaders.signature], body: last.body, nowMs: Date.now() }));
      assert.ok(!s.log.lines.some((line) => line.includes(secret)), 'the secret is never logged');
    } finally {
      await s.stop();
    }
  });

  test('a receiver that does not answer in time: the attempt times out and is retried', async () => {
    receiver.requests.length = 0;
    receiver.script([{ delayMs: 3_000 }], { status: 204 });
    const s = await setup(receiver.url);
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'delivered', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      const delivery = await deliveryOf(s, eventId);
      assert.deepEqual(delivery.attempts.map((a) => [a.attempt, a.httpStatus, a.error]), [
        [1, null, 'timeout'],
        [2, 204, null],
      ]);
    } finally {
      await s.stop();
    }
  });

  test('always 503: gives up after 5 attempts, each in the log; a redelivery gets a fresh budget', async () => {
    receiver.requests.length = 0;
    receiver.script([], { status: 503 });
    const s = await setup(receiver.url);
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'failed', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      const failed = await deliveryOf(s, eventId);
      assert.equal(failed.status, 'failed');
      assert.deepEqual(failed.attempts.map((a) => [a.run, a.attempt, a.httpStatus]), [1, 2, 3, 4, 5].map((n) => [1, n, 503]));
      assert.equal(failed.lastError, 'http_status');
      assert.equal(receiver.requests.length, 5);
      // The record is written first, then the row is marked done (crash-safe order).
      await eventually(async () => assert.equal((await s.store.outboxPending('webhooks', 10)).length, 0, 'given up: the row is done'));
      // Still in the partner's event log (GET /events is the catch-up path).
      assert.equal((await s.services.events.list('acme', 0, 10)).events.length, 1);

      // Redeliver: the receiver is fixed now.
      receiver.script([], { status: 200 });
      const redelivered = await s.services.deliveries.redeliver('acme', eventId, Date.now());
      assert.deepEqual(redelivered, { ok: true, run: 2 });
      assert.equal((await s.services.deliveries.redeliver('acme', eventId, Date.now())).ok, false, 'a second click does not start another run');
      s.role.wake();
      await eventually(async () => assert.equal((await deliveryOf(s, eventId)).status, 'delivered'));
      const delivered = await deliveryOf(s, eventId);
      assert.equal(delivered.run, 2);
      assert.deepEqual(delivered.attempts.slice(-1).map((a) => [a.run, a.attempt, a.httpStatus]), [[2, 1, 200]]);
      const last = receiver.requests[receiver.requests.length - 1];
      assert.equal(last?.headers[webhookHeaders.eventId], eventId, 'same event id and sequence on redelivery');
      assert.equal(last?.headers[webhookHeaders.sequence], '1');
      assert.deepEqual(await s.services.deliveries.redeliver('acme', eventId, Date.now()), { ok: false, code: 'not_failed', reason: 'The delivery is delivered; only a failed delivery can be redelivered' });
      assert.equal((await s.services.deliveries.redeliver('other', eventId, Date.now())).ok, false, 'scoped to the partner');
    } finally {
      await s.stop();
    }
  });

  test('a redirect is not followed and not retried', async () => {
    receiver.requests.length = 0;
    receiver.script([{ redirectTo: `${receiver.origin}/elsewhere` }], { status: 200 });
    const s = await setup(receiver.url);
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'failed', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      const delivery = await deliveryOf(s, eventId);
      assert.deepEqual(delivery.attempts.map((a) => [a.httpStatus, a.outcome, a.error]), [[302, 'rejected', 'redirect']]);
      assert.equal(receiver.requestsTo('/elsewhere').length, 0, 'the Location was never requested');
      assert.equal(receiver.requests.length, 1);
    } finally {
      await s.stop();
    }
  });

  test('a 401 from the receiver is not retried', async () => {
    receiver.requests.length = 0;
    receiver.script([], { status: 401 });
    const s = await setup(receiver.url);
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'failed', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      assert.deepEqual((await deliveryOf(s, eventId)).attempts.map((a) => [a.httpStatus, a.outcome]), [[401, 'rejected']]);
      assert.equal(receiver.requests.length, 1);
    } finally {
      await s.stop();
    }
  });

  test('a huge response body is read only up to the cap; the 2xx counts', async () => {
    receiver.requests.length = 0;
    receiver.script([{ status: 200, bodyBytes: 50 * 1024 * 1024 }], { status: 200 });
    const s = await setup(receiver.url);
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'delivered', limit: 10 })).total, 1));
      assert.equal(receiver.requests.length, 1);
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      const [attempt] = (await deliveryOf(s, eventId)).attempts;
      assert.ok(attempt && attempt.durationMs < 500, 'the connection was closed instead of reading 50 MiB');
    } finally {
      await s.stop();
    }
  });

  test('a partner without a destination: fails at once, recorded, and the event is in the feed', async () => {
    const s = await setup(null);
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'failed', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      assert.deepEqual((await deliveryOf(s, eventId)).attempts.map((a) => [a.httpStatus, a.error]), [[null, 'no_destination']]);
    } finally {
      await s.stop();
    }
  });

  test('production mode: a destination on a loopback address is refused at delivery time, nothing is sent', async () => {
    receiver.requests.length = 0;
    receiver.script([], { status: 200 });
    // https on 443 so the URL passes the static check's scheme and port rules; the address rule is what refuses it.
    const s = await setup('https://127.0.0.1/hooks', { sandbox: false });
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'failed', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      assert.deepEqual((await deliveryOf(s, eventId)).attempts.map((a) => [a.outcome, a.error]), [['rejected', 'invalid_destination']]);
      assert.equal(receiver.requests.length, 0);
    } finally {
      await s.stop();
    }
  });

  test('production mode: a host name that resolves to a private address is refused after the lookup', async (t) => {
    const host = hostname();
    const addresses = await lookup(host, { all: true }).catch(() => []);
    if (addresses.length === 0 || !addresses.every((entry) => isBlockedAddress(entry.address))) {
      t.skip(`${host} does not resolve to non-public addresses only here`);
      return;
    }
    receiver.requests.length = 0;
    // Port 443 (the only one production accepts): refused at the lookup, nothing connects anywhere.
    const s = await setup(`https://${host}/hooks`, { sandbox: false });
    try {
      await commitWebhooks(s.store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'failed', limit: 10 })).total, 1));
      const [eventId] = await eventIds(s);
      assert.ok(eventId);
      assert.deepEqual((await deliveryOf(s, eventId)).attempts.map((a) => [a.outcome, a.error]), [['rejected', 'blocked_address']]);
      assert.equal(receiver.requests.length, 0);
    } finally {
      await s.stop();
    }
  });

  test('events of one transaction arrive in order while other transactions proceed in parallel', async () => {
    receiver.requests.length = 0;
    // Every delivery is slow-ish and the first try of every event fails: a retry must not let the
    // next event of the same transaction overtake it.
    const seen = new Set<string>();
    receiver.respondWith((request) => {
      const first = request.eventId !== null && !seen.has(request.eventId);
      if (request.eventId !== null) seen.add(request.eventId);
      return { status: first ? 500 : 200, delayMs: 5 + (request.index % 4) * 5 };
    });
    const s = await setup(receiver.url);
    try {
      const transactions = Array.from({ length: 12 }, () => newTransaction('acme'));
      const statuses = ['AWAITING_PAYMENT', 'PROCESSING_PAYMENT', 'PAYMENT_COMPLETED'];
      // Interleave the commits of all transactions, step by step, like real traffic.
      for (const [step, status] of statuses.entries()) {
        for (const tx of transactions) {
          await commitWebhooks(s.store, tx, [{ event: step === 0 ? 'transaction.created' : 'transaction.updated', status }]);
        }
      }
      const total = transactions.length * statuses.length;
      await eventually(async () => assert.equal((await s.services.deliveries.list('acme', { status: 'delivered', limit: 10 })).total, total), 20_000);
      for (const tx of transactions) {
        const arrivals = receiver.requests.filter((request) => request.transactionId === tx.transactionId);
        assert.equal(arrivals.length, statuses.length * 2, 'each event: one failure, one success');
        // Every attempt of step k finished before the first attempt of step k+1 started.
        for (let step = 1; step < statuses.length; step += 1) {
          const previous = arrivals.filter((request) => request.status_ === statuses[step - 1]);
          const current = arrivals.filter((request) => request.status_ === statuses[step]);
          const previousEnd = Math.max(...previous.map((request) => request.respondedAtMs ?? Infinity));
          const currentStart = Math.min(...current.map((request) => request.receivedAtMs));
          assert.ok(previousEnd <= currentStart, `${tx.transactionId}: ${statuses[step]} started before ${statuses[step - 1]} finished`);
        }
        // Sequences follow the commit order within the transaction.
        const sequences = arrivals.filter((request) => request.status === 200).map((request) => request.sequence ?? 0);
        assert.deepEqual(sequences, [...sequences].sort((a, b) => a - b));
      }
      assert.equal(receiver.maxConcurrentPerTransaction(), 1);
      assert.ok(receiver.maxConcurrent() > 1, 'different transactions were delivered concurrently');
      const page = await s.services.events.list('acme', 0, 500);
      assert.deepEqual(page.events.map((event) => event.sequence), Array.from({ length: total }, (_, index) => index + 1));
    } finally {
      receiver.respondWith(null);
      await s.stop();
    }
  });
});
