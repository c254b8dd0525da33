// Fair webhook delivery, as partners and operators see it: one partner's endpoint that accepts and
// never answers cannot hold up anybody else's deliveries. The transport gives up on such an
// endpoint at short connect and first-byte timeouts; each partner gets at most its share of the
// attempts in flight, served round-robin; a per-partner breaker backs a failing partner off without
// its events spending attempts while it is open; destination tests have a pool of their own.
// Real local receivers (test/support/webhook-receiver.ts); backoff and breaker times come from an
// injected clock.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory, type Partner } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes, type WebhookOptions, type WebhookServices } from '../../src/webhooks/index.ts';
import { sendWebhook } from '../../src/webhooks/transport.ts';
import type { MetricFamily } from '../../src/lifecycle/metrics.ts';
import { eventually, within } from '../support/eventually.ts';
import { collectingLogger, commitWebhooks, newTransaction, startTarpit, startWebhookReceiver, type FedTransaction, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

const secret = 'fairness-webhook-secret-0123456789';
const created = { event: 'transaction.created', status: 'AWAITING_PAYMENT' } as const;
const expired = { event: 'transaction.updated', status: 'PAYMENT_EXPIRED' } as const;

function partner(id: string, url: string): Partner {
  return { id, name: id, apiKeySha256: [], kycEnabled: false, kybApproved: true, disabledUsers: new Set(), webhook: { url, secret }, fees: undefined };
}

/** A clock the test moves by hand (the dispatcher's backoff and breaker times). */
function manualClock(startMs: number): { now: number; nowMs(): number } {
  const clock = { now: startMs, nowMs: () => clock.now };
  return clock;
}

function sample(families: readonly MetricFamily[], name: string, labels: Readonly<Record<string, string>>): number | undefined {
  const family = families.find((item) => item.name === name);
  return family?.samples.find((item) => Object.entries(labels).every(([key, value]) => item.labels?.[key] === value))?.value;
}

describe('fair webhook delivery', () => {
  let receiver: WebhookReceiver;
  let dir: string;
  let stores: LmdbStore[] = [];

  before(async () => {
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-fairness-'));
  });
  after(() => teardown(
    () => receiver?.close(),
    ...[...stores].map((store) => () => store.close()),
    () => { stores = []; },
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  async function freshStore(): Promise<LmdbStore> {
    const store = new LmdbStore({ dir: mkdtempSync(join(dir, 'store-')), readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    stores.push(store);
    return store;
  }

  function services(store: LmdbStore, partners: readonly Partner[], clock: { nowMs(): number }, options: WebhookOptions): WebhookServices {
    const directory = new PartnerDirectory(createKeyRing());
    for (const item of partners) directory.set(item);
    return createWebhookServices({ env: { sandbox: true }, processId: 'test', clock, log: collectingLogger(), store, partners: directory }, options);
  }

  test('an endpoint that accepts and never answers is cut off at the first-byte timeout; one whose connection never gets ready, at the connect timeout', async () => {
    const tarpit = await startTarpit();
    try {
      const request = { url: tarpit.url, headers: { 'content-type': 'application/json' }, body: '{}' };
      const slowAnswer = await within(
        'an attempt on a silent endpoint',
        5_000,
        sendWebhook(request, { sandbox: true }, { attemptTimeoutMs: 60_000, connectTimeoutMs: 60_000, firstByteTimeoutMs: 200, responseBytesMax: 4 * 1_024 }),
      );
      assert.deepEqual(slowAnswer.result, { kind: 'error', error: 'timeout' });
      // Over https the tarpit never finishes the TLS handshake: the connection never gets ready.
      const slowConnect = await within(
        'an attempt whose handshake hangs',
        5_000,
        sendWebhook({ ...request, url: tarpit.httpsUrl }, { sandbox: true }, { attemptTimeoutMs: 60_000, connectTimeoutMs: 200, firstByteTimeoutMs: 60_000, responseBytesMax: 4 * 1_024 }),
      );
      assert.deepEqual(slowConnect.result, { kind: 'error', error: 'timeout' });
      assert.equal(tarpit.connections(), 2, 'each attempt reached the endpoint once');
    } finally {
      await tarpit.close();
    }
  });

  test("a tarpit with 400 events queued for one partner does not delay another partner's delivery beyond a second", async () => {
    const store = await freshStore();
    const tarpit = await startTarpit();
    const share = 8;
    // The clock stands still: the tarpit's failed events never come due again during the test.
    const clock = manualClock(Date.now());
    const webhooks = services(store, [partner('slow', tarpit.url), partner('fast', receiver.url)], clock, { limits: { pollIntervalMs: 20, inFlightPerPartnerMax: share } });
    // The backlog is queued before the role starts: started first, its first attempts could time out
    // while a loaded machine is still writing the 400 rows, and with five such failures the breaker
    // opens on the still clock, so the tarpit would never hold the share this test is about.
    for (let index = 0; index < 400; index += 1) await commitWebhooks(store, newTransaction('slow'), [created]);
    const role = await webhooks.startWebhooksRole();
    try {
      role.wake();
      await eventually(() => assert.ok(tarpit.open() >= share, `the tarpit holds ${tarpit.open()} attempts`), 20_000);

      const fast = newTransaction('fast');
      await commitWebhooks(store, fast, [created]);
      role.wake();
      await eventually(async () => assert.equal((await webhooks.deliveries.list('fast', { status: 'delivered', limit: 1 })).total, 1, 'the other partner got its event'), 1_000);
      assert.equal(receiver.requests.filter((request) => request.transactionId === fast.transactionId).length, 1);
      assert.ok(tarpit.maxOpen() <= share, `the slow partner had ${tarpit.maxOpen()} attempts in flight, more than its share of ${share}`);
    } finally {
      await tarpit.close(); // ends the attempts stuck on it, so stop() does not wait for their timeouts
      await role.stop();
    }
  });

  test("a backlog bigger than a dispatcher holds: the other partners' rows behind it are still reached, and nothing of the backlog is lost", async () => {
    const store = await freshStore();
    const tarpit = await startTarpit();
    const clock = manualClock(Date.now());
    const limits = { pollIntervalMs: 20, heldRowsMax: 50, heldPerPartnerMax: 20, inFlightPerPartnerMax: 4, claimBatchMax: 25 };
    const webhooks = services(store, [partner('slow', tarpit.url), partner('fast', receiver.url)], clock, { limits });
    const dispatcher = webhooks.createDispatcher();
    dispatcher.start();
    try {
      for (let index = 0; index < 200; index += 1) await commitWebhooks(store, newTransaction('slow'), [created]);
      dispatcher.wake();
      await eventually(() => assert.equal(tarpit.open(), limits.inFlightPerPartnerMax), 20_000);
      const fast = Array.from({ length: 3 }, () => newTransaction('fast'));
      for (const tx of fast) await commitWebhooks(store, tx, [created]);
      dispatcher.wake();
      await eventually(async () => assert.equal((await webhooks.deliveries.list('fast', { status: 'delivered', limit: 5 })).total, 3), 1_000);
      assert.ok(dispatcher.heldCount() <= limits.heldRowsMax);
      assert.ok((sample(dispatcher.metrics(), 'webhook_rows_parked', {}) ?? 0) > 0, "the slow partner's rows beyond its share are parked");
      assert.ok(tarpit.maxOpen() <= limits.inFlightPerPartnerMax);

      // Nothing of the slow partner is lost: once it points at a working endpoint, every one of its
      // events is delivered, the parked ones too (the clock jumps past every claim: held and parked
      // rows are handed back and claimed again).
      await tarpit.close();
      assert.ok((await webhooks.destinations.stageDraft('slow', `${receiver.origin}/recovered`)).ok);
      assert.ok((await webhooks.destinations.testDraft('slow')).ok);
      assert.ok((await webhooks.destinations.activateDraft('slow')).ok);
      clock.now += 120_000;
      dispatcher.wake();
      await eventually(async () => assert.equal((await webhooks.deliveries.list('slow', { status: 'delivered', limit: 1 })).total, 200), 30_000);
      assert.equal((await webhooks.deliveries.list('slow', { status: 'failed', limit: 1 })).total, 0);
      const events = await webhooks.events.list('slow', 0, 500);
      const answered = new Set(receiver.requestsTo('/recovered').filter((request) => request.status === 200).map((request) => request.eventId));
      assert.equal(events.events.length, 200);
      for (const event of events.events) assert.ok(answered.has(event.id), `${event.id} delivered`);
      assert.equal(sample(dispatcher.metrics(), 'webhook_rows_parked', {}), 0);
    } finally {
      await tarpit.close();
      await dispatcher.stop();
    }
  });

  test('the breaker opens after consecutive failures; while open no event spends an attempt; a successful probe closes it and the queue drains in order', async () => {
    const store = await freshStore();
    const clock = manualClock(Date.UTC(2025, 5, 1, 12));
    let status = 503;
    receiver.requests.length = 0;
    receiver.respondWith((request) => (request.path === '/breaker' ? { status } : { status: 200 }));
    const webhooks = services(store, [partner('acme', `${receiver.origin}/breaker`)], clock, {
      random: () => 0.5,
      limits: { inFlightPerPartnerMax: 2 },
      breaker: { failuresMax: 3, openMsBase: 10_000, openMsMax: 40_000 },
    });
    const dispatcher = webhooks.createDispatcher();
    const round = async (): Promise<void> => {
      await dispatcher.runRound();
      await dispatcher.idle();
    };
    const sent = (): number => receiver.requestsTo('/breaker').length;
    const breaker = (state: string): number | undefined => sample(dispatcher.metrics(), 'webhook_breaker_state', { partner: 'acme', state });
    const attemptsSpent = async (): Promise<number> => {
      const page = await webhooks.deliveries.list('acme', { limit: 100 });
      return page.deliveries.reduce((sum, delivery) => sum + delivery.attempts.length, 0);
    };
    try {
      const transactions: FedTransaction[] = Array.from({ length: 5 }, () => newTransaction('acme'));
      for (const tx of transactions) await commitWebhooks(store, tx, [created]);
      for (const tx of transactions) await commitWebhooks(store, tx, [expired]);
      const startMs = clock.now;

      await round();
      assert.equal(sent(), 2, 'the partner gets its share of 2 attempts at once');
      await round();
      assert.equal(sent(), 4, 'two more: the third consecutive failure opens the breaker, the fourth was already on its way');
      assert.equal(breaker('open'), 1);
      assert.equal(breaker('closed'), 0);
      assert.equal(await attemptsSpent(), 4);

      // Every event's own backoff (about 2 s, then 4 s) comes due while the breaker is open: the
      // partner's queue waits, and no event spends an attempt.
      for (const atMs of [2_000, 5_000, 9_999]) {
        clock.now = startMs + atMs;
        await round();
        await round();
      }
      assert.equal(sent(), 4, 'nothing is attempted while the breaker is open');
      assert.equal(await attemptsSpent(), 4);

      // Half-open: exactly one probe, with the oldest event that is due.
      clock.now = startMs + 10_000;
      await round();
      await round();
      assert.equal(sent(), 5, 'one probe');
      assert.equal(receiver.requestsTo('/breaker').at(-1)?.sequence, 1, 'the probe is the oldest event due');
      assert.equal(breaker('open'), 1, 'the failed probe opens the breaker again');
      // …for twice as long.
      clock.now = startMs + 10_000 + 19_999;
      await round();
      assert.equal(sent(), 5);
      clock.now = startMs + 30_000;
      await round();
      await round();
      assert.equal(sent(), 6, 'the second probe, after 20 s');

      // The endpoint recovers: the next probe (after 40 s) succeeds, the breaker closes, the queue drains.
      status = 200;
      clock.now = startMs + 70_000;
      await round();
      assert.equal(sent(), 7);
      assert.equal(breaker('closed'), 1);
      for (let index = 0; index < 20 && (await webhooks.deliveries.list('acme', { status: 'pending', limit: 1 })).total > 0; index += 1) await round();

      const page = await webhooks.deliveries.list('acme', { limit: 100 });
      assert.equal(page.total, 10);
      assert.deepEqual(page.deliveries.map((delivery) => delivery.status), Array.from({ length: 10 }, () => 'delivered'), 'no event was given up');
      const first = page.deliveries.find((delivery) => delivery.sequence === 1);
      assert.deepEqual(first?.attempts.map((attempt) => attempt.httpStatus), [503, 503, 503, 200], 'the probe event spent only the attempts it made');
      for (const delivery of page.deliveries) assert.ok(delivery.attempts.length <= 5, `event ${delivery.sequence}: ${delivery.attempts.length} attempts`);
      // In order per transaction: the created event was delivered before its update was first tried.
      const arrivals = receiver.requestsTo('/breaker');
      for (const tx of transactions) {
        const ofTx = arrivals.filter((request) => request.transactionId === tx.transactionId);
        const createdDelivered = ofTx.findIndex((request) => request.event === 'transaction.created' && request.status === 200);
        const updatedFirst = ofTx.findIndex((request) => request.event === 'transaction.updated');
        assert.ok(createdDelivered >= 0 && updatedFirst > createdDelivered, `${tx.transactionId}: updated before created was delivered`);
      }
      assert.equal(sample(dispatcher.metrics(), 'webhook_attempts_in_flight', { partner: 'acme' }) ?? 0, 0);
    } finally {
      receiver.respondWith(null);
      await dispatcher.stop();
    }
  });

  test('an administrator who activates a new URL while the breaker is open sees it tried at once, not after the opening', async () => {
    const store = await freshStore();
    const clock = manualClock(Date.UTC(2025, 5, 2, 12));
    receiver.requests.length = 0;
    receiver.respondWith((request) => ({ status: request.path === '/broken' ? 503 : 200 }));
    const webhooks = services(store, [partner('acme', `${receiver.origin}/broken`)], clock, {
      random: () => 0.5,
      limits: { inFlightPerPartnerMax: 1 },
      breaker: { failuresMax: 2, openMsBase: 60_000, openMsMax: 60_000 },
    });
    const dispatcher = webhooks.createDispatcher();
    const round = async (): Promise<void> => {
      await dispatcher.runRound();
      await dispatcher.idle();
    };
    try {
      for (let index = 0; index < 3; index += 1) await commitWebhooks(store, newTransaction('acme'), [created]);
      await round();
      await round();
      assert.equal(receiver.requestsTo('/broken').length, 2, 'two failures open the breaker for a minute');
      clock.now += 5_000;
      await round();
      assert.equal(receiver.requestsTo('/broken').length, 2, 'open: the queue waits');

      assert.ok((await webhooks.destinations.stageDraft('acme', `${receiver.origin}/fixed`)).ok);
      assert.ok((await webhooks.destinations.testDraft('acme')).ok);
      assert.ok((await webhooks.destinations.activateDraft('acme')).ok);
      for (let index = 0; index < 10 && (await webhooks.deliveries.list('acme', { status: 'pending', limit: 1 })).total > 0; index += 1) await round();
      assert.equal((await webhooks.deliveries.list('acme', { status: 'delivered', limit: 10 })).total, 3, 'all delivered to the new URL, well within the opening');
      assert.equal(receiver.requestsTo('/broken').length, 2);
      assert.equal(receiver.requestsTo('/fixed').length, 4, 'the test delivery and the three events');
    } finally {
      receiver.respondWith(null);
      await dispatcher.stop();
    }
  });

  test('destination tests go through while the live pool is saturated, and take no live slot', async () => {
    const store = await freshStore();
    const tarpit = await startTarpit();
    const clock = manualClock(Date.now());
    const long = { attemptTimeoutMs: 60_000, connectTimeoutMs: 60_000, firstByteTimeoutMs: 60_000 };
    const webhooks = services(store, [partner('acme', tarpit.url), partner('other', tarpit.url)], clock, {
      transport: long,
      limits: { inFlightMax: 2, inFlightPerPartnerMax: 2, leaseMs: 120_000, pollIntervalMs: 20 },
    });
    const dispatcher = webhooks.createDispatcher();
    dispatcher.start();
    try {
      for (let index = 0; index < 10; index += 1) await commitWebhooks(store, newTransaction('acme'), [created]);
      dispatcher.wake();
      await eventually(() => {
        assert.equal(dispatcher.inFlightCount(), 2, 'every live slot is taken');
        assert.equal(tarpit.open(), 2);
      }, 10_000);

      for (const id of ['acme', 'other']) {
        assert.ok((await webhooks.destinations.stageDraft(id, `${receiver.origin}/draft-${id}`)).ok);
        const tested = await within(`the test delivery of ${id}`, 2_000, webhooks.destinations.testDraft(id));
        assert.ok(tested.ok && tested.test.ok, `${id}: ${JSON.stringify(tested)}`);
        assert.equal(receiver.requestsTo(`/draft-${id}`).length, 1);
      }
      assert.equal(dispatcher.inFlightCount(), 2, 'the tests took no live slot');
    } finally {
      await tarpit.close();
      await dispatcher.stop();
    }
  });

  test('destination tests have a bounded pool: beyond it a test is refused at once as busy', async () => {
    const store = await freshStore();
    const tarpit = await startTarpit();
    const webhooks = services(store, [partner('acme', receiver.url)], manualClock(Date.now()), {
      transport: { attemptTimeoutMs: 60_000, connectTimeoutMs: 60_000, firstByteTimeoutMs: 60_000 },
      destinationTests: { inFlightMax: 2, queuedMax: 3 },
    });
    try {
      assert.ok((await webhooks.destinations.stageDraft('acme', tarpit.url)).ok);
      const running = Array.from({ length: 5 }, () => webhooks.destinations.testDraft('acme'));
      const refused = await within('a test beyond the pool', 2_000, webhooks.destinations.testDraft('acme'));
      assert.equal(refused.ok, false);
      assert.equal(!refused.ok && refused.code, 'test_busy');
      await eventually(() => assert.equal(tarpit.open(), 2));
      assert.equal(tarpit.maxOpen(), 2, 'at most the pool size of tests in flight');
      await tarpit.close();
      const results = await within('the queued tests', 5_000, Promise.all(running));
      assert.ok(results.every((result) => result.ok && !result.test.ok), 'each queued test ran and reported the failure');
      assert.equal(tarpit.connections(), 2, 'the queued tests ran after the tarpit closed: refused connections, not new ones');
    } finally {
      await tarpit.close();
    }
  });
});
