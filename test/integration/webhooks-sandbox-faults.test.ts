// The sandbox's webhook faults are the partner's, wherever its deliveries go out from: two webhook
// roles (two dispatchers, as two processes would run them) over one store apply the same settings,
// spend a counted fault once between them, and send a delivery held by one after the next delivery
// sent by the other. Against a real local receiver; the settings are written as the route writes
// them (src/webhooks/sandbox-faults.ts), and another partner on the same dispatchers is untouched.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory, type Partner } from '../../src/ports/partners.ts';
import { noWebhookFaults, webhookFaultBounds } from '../../src/domain/webhook-faults.ts';
import { createWebhookServices, webhookReadModelIndexes, type RunningWebhooksRole, type WebhookOptions } from '../../src/webhooks/index.ts';
import { readWebhookFaults, resetWebhookFaults, writeWebhookFaults } from '../../src/webhooks/sandbox-faults.ts';
import { verifySignature, webhookHeaders } from '../../src/webhooks/signing.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { collectingLogger, commitWebhooks, newTransaction, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

const secret = 'rehearsal-webhook-secret-0123456789';
const fast: WebhookOptions = {
  policy: { retryDelayMsBase: 30, retryDelayMsMax: 400 },
  transport: { attemptTimeoutMs: 2_000, responseBytesMax: 4 * 1024 },
  limits: { leaseMs: 10_000, claimMarginMs: 500, pollIntervalMs: 20 },
};

function partner(id: string, url: string): Partner {
  return { id, name: id, apiKeySha256: [], kycEnabled: false, kybApproved: true, disabledUsers: new Set(), webhook: { url, secret }, fees: undefined };
}

function verified(request: ReceivedRequest): boolean {
  const { headers, body } = request;
  return verifySignature({ secret, timestamp: headers[webhookHeaders.timestamp], signature: headers[webhookHeaders.signature], body, nowMs: Date.now() });
}

describe('sandbox webhook faults across two dispatchers on one store', () => {
  let dir: string | undefined;
  let store: LmdbStore | undefined;
  let receiver: WebhookReceiver | undefined;
  let other: WebhookReceiver | undefined;
  const roles: RunningWebhooksRole[] = [];

  before(async () => {
    receiver = await startWebhookReceiver();
    other = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-faults-'));
    store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    const partners = new PartnerDirectory(createKeyRing());
    partners.set(partner('acme', receiver.url));
    partners.set(partner('globex', other.url));
    for (const processId of ['one', 'two']) {
      const services = createWebhookServices({ env: { sandbox: true }, processId, clock: { nowMs: () => Date.now() }, log: collectingLogger(), store, partners }, fast);
      roles.push(await services.startWebhooksRole());
    }
  });

  after(() => teardown(...roles.map((role) => () => role.stop()), () => store?.close(), () => receiver?.close(), () => other?.close(), () => dir !== undefined && rmSync(dir, { recursive: true, force: true })));

  const theStore = (): LmdbStore => store ?? assert.fail('the store is open');

  test('wrong_signature_next is spent exactly N times between the two; the other partner is untouched', async () => {
    await writeWebhookFaults(theStore(), 'acme', { ...noWebhookFaults, wrongSignatureNext: 3 });
    const transactions = Array.from({ length: 8 }, () => newTransaction('acme'));
    const others = Array.from({ length: 4 }, () => newTransaction('globex'));
    for (const tx of [...transactions, ...others]) await commitWebhooks(theStore(), tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    for (const role of roles) role.wake();
    // A forged delivery is answered 200 here, so nothing is retried: each event arrives once.
    await receiver?.waitForRequests(8, 20_000);
    await other?.waitForRequests(4, 20_000);
    const forged = (receiver?.requests ?? []).filter((request) => !verified(request));
    assert.equal(forged.length, 3, 'three forged signatures in all, whichever dispatcher sent them');
    assert.ok((other?.requests ?? []).every(verified), "another partner's deliveries are signed with its secret");
    assert.equal((await readWebhookFaults(theStore(), 'acme')).wrongSignatureNext, 0);
  });

  test('duplicate and out of order apply from both dispatchers; a reset turns them off in one call', async () => {
    await resetWebhookFaults(theStore(), 'acme');
    if (receiver !== undefined) receiver.requests.length = 0;
    await writeWebhookFaults(theStore(), 'acme', { ...noWebhookFaults, duplicate: true, outOfOrder: true });
    const tx = newTransaction('acme');
    await commitWebhooks(theStore(), tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    await commitWebhooks(theStore(), tx, [{ event: 'transaction.updated', status: 'PROCESSING_PAYMENT' }]);
    for (const role of roles) role.wake();
    const arrived = await eventually(() => {
      const seen = (receiver?.requests ?? []).filter((request) => request.transactionId === tx.transactionId);
      assert.equal(seen.length, 4, `${seen.length} so far`);
      return seen;
    }, 20_000);
    assert.deepEqual(arrived.map((request) => request.status_), ['PROCESSING_PAYMENT', 'PROCESSING_PAYMENT', 'AWAITING_PAYMENT', 'AWAITING_PAYMENT'], 'the held first event went after the second, each twice');
    await resetWebhookFaults(theStore(), 'acme');
    const later = newTransaction('acme');
    await commitWebhooks(theStore(), later, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    for (const role of roles) role.wake();
    await eventually(() => assert.equal((receiver?.requests ?? []).filter((request) => request.transactionId === later.transactionId).length, 1), 20_000);
    assert.deepEqual(await readWebhookFaults(theStore(), 'acme'), noWebhookFaults);
  });

  test('a held delivery with no next one goes out alone once the hold is over', async () => {
    await resetWebhookFaults(theStore(), 'acme');
    await writeWebhookFaults(theStore(), 'acme', { ...noWebhookFaults, outOfOrder: true });
    const tx = newTransaction('acme');
    const committedAtMs = Date.now();
    await commitWebhooks(theStore(), tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    for (const role of roles) role.wake();
    const alone = await eventually(() => (receiver?.requests ?? []).find((request) => request.transactionId === tx.transactionId) ?? assert.fail('not yet'), 20_000);
    assert.ok(alone.receivedAtMs - committedAtMs >= webhookFaultBounds.outOfOrderHoldMs, `arrived ${alone.receivedAtMs - committedAtMs} ms after its commit`);
    assert.ok(verified(alone), 'signed with the secret of the moment it left');
    await resetWebhookFaults(theStore(), 'acme');
  });

  test('wrong_signature_next with out_of_order: the one wrong signature reaches the receiver, not spent on the held delivery', async () => {
    await resetWebhookFaults(theStore(), 'acme');
    await writeWebhookFaults(theStore(), 'acme', { ...noWebhookFaults, wrongSignatureNext: 1, outOfOrder: true });
    const tx = newTransaction('acme');
    await commitWebhooks(theStore(), tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    await commitWebhooks(theStore(), tx, [{ event: 'transaction.updated', status: 'PROCESSING_PAYMENT' }]);
    for (const role of roles) role.wake();
    const arrived = await eventually(() => {
      const seen = (receiver?.requests ?? []).filter((request) => request.transactionId === tx.transactionId);
      assert.equal(seen.length, 2, `${seen.length} so far`);
      return seen;
    }, 20_000);
    assert.deepEqual(arrived.map((request) => request.status_), ['PROCESSING_PAYMENT', 'AWAITING_PAYMENT'], 'the held first event went after the second');
    assert.equal(arrived.filter((request) => !verified(request)).length, 1, 'exactly one delivery arrived badly signed');
    assert.equal((await readWebhookFaults(theStore(), 'acme')).wrongSignatureNext, 0);
    await resetWebhookFaults(theStore(), 'acme');
  });
});

// One dispatcher alone: nothing else would deliver while its round waited on a slow held send.
describe('sandbox webhook faults on a single dispatcher', () => {
  let dir: string | undefined;
  let store: LmdbStore | undefined;
  let receiver: WebhookReceiver | undefined;
  let other: WebhookReceiver | undefined;
  let role: RunningWebhooksRole | undefined;

  before(async () => {
    receiver = await startWebhookReceiver();
    other = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-faults-one-'));
    store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    const partners = new PartnerDirectory(createKeyRing());
    partners.set(partner('acme', receiver.url));
    partners.set(partner('globex', other.url));
    role = await createWebhookServices({ env: { sandbox: true }, processId: 'only', clock: { nowMs: () => Date.now() }, log: collectingLogger(), store, partners }, fast).startWebhooksRole();
  });

  after(() => teardown(() => role?.stop(), () => store?.close(), () => receiver?.close(), () => other?.close(), () => dir !== undefined && rmSync(dir, { recursive: true, force: true })));

  const theStore = (): LmdbStore => store ?? assert.fail('the store is open');
  const roles = { wake: () => role?.wake() };

  test("a held delivery to a receiver that answers slowly holds up no other partner's deliveries", async () => {
    await resetWebhookFaults(theStore(), 'acme');
    await writeWebhookFaults(theStore(), 'acme', { ...noWebhookFaults, outOfOrder: true });
    const slowMs = 1_500; // under the attempt timeout (2 s): the held send waits for all of it
    receiver?.respondWith(() => ({ delayMs: slowMs }));
    try {
      const held = newTransaction('acme');
      await commitWebhooks(theStore(), held, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      roles.wake();
      // The hold is over and its send has reached the receiver, which takes its time to answer.
      const slow = await eventually(() => (receiver?.requests ?? []).find((request) => request.transactionId === held.transactionId) ?? assert.fail('not yet'), 20_000);
      const meanwhile = newTransaction('globex');
      await commitWebhooks(theStore(), meanwhile, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      roles.wake();
      const other_ = await eventually(() => (other?.requests ?? []).find((request) => request.transactionId === meanwhile.transactionId) ?? assert.fail('not yet'), 20_000);
      assert.ok(other_.receivedAtMs < slow.receivedAtMs + slowMs, `another partner's delivery arrived ${other_.receivedAtMs - slow.receivedAtMs} ms after the slow held send began, before it was answered`);
    } finally {
      receiver?.respondWith(null);
      await resetWebhookFaults(theStore(), 'acme');
    }
  });
});

// A faulted attempt outlasts the attempt timeout (a delay, then a send and its duplicate): it must
// not start on a claim that lapses before it ends, or the other dispatcher claims the row and sends
// the event once more. Short limits: a 6 s claim, 1 s attempts; the second event of a transaction
// waits ~3.3 s behind the first, so its claim has ~2.7 s left, enough for a plain attempt (1.2 s)
// but not for this faulted one (1.5 s delay + 2 sends of up to 1 s).
describe('sandbox webhook faults: a faulted attempt starts only on a claim that covers it', () => {
  const short: WebhookOptions = {
    policy: { retryDelayMsBase: 30, retryDelayMsMax: 400 },
    transport: { attemptTimeoutMs: 1_000, responseBytesMax: 4 * 1024 },
    limits: { leaseMs: 6_000, claimMarginMs: 200, pollIntervalMs: 20 },
  };
  let dir: string | undefined;
  let store: LmdbStore | undefined;
  let receiver: WebhookReceiver | undefined;
  const roles: RunningWebhooksRole[] = [];

  before(async () => {
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-faults-claim-'));
    store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    const partners = new PartnerDirectory(createKeyRing());
    partners.set(partner('acme', receiver.url));
    for (const processId of ['one', 'two']) {
      const services = createWebhookServices({ env: { sandbox: true }, processId, clock: { nowMs: () => Date.now() }, log: collectingLogger(), store, partners }, short);
      roles.push(await services.startWebhooksRole());
    }
  });

  after(() => teardown(...roles.map((role) => () => role.stop()), () => store?.close(), () => receiver?.close(), () => dir !== undefined && rmSync(dir, { recursive: true, force: true })));

  test('delay and duplicate with two dispatchers: each event arrives exactly twice (its duplicate), never sent again by the other', async () => {
    const theStore = store ?? assert.fail('the store is open');
    await writeWebhookFaults(theStore, 'acme', { ...noWebhookFaults, delayMs: 1_500, duplicate: true });
    receiver?.respondWith(() => ({ delayMs: 900 }));
    const tx = newTransaction('acme');
    await commitWebhooks(theStore, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    await commitWebhooks(theStore, tx, [{ event: 'transaction.updated', status: 'PROCESSING_PAYMENT' }]);
    for (const role of roles) role.wake();
    await eventually(() => assert.equal((receiver?.requests ?? []).filter((request) => request.status_ === 'PROCESSING_PAYMENT').length >= 2, true), 30_000);
    // Stopping waits for every attempt in flight: a second sender of the same event would be one.
    for (const role of roles) await role.stop();
    const arrived = (receiver?.requests ?? []).filter((request) => request.transactionId === tx.transactionId).map((request) => request.status_);
    assert.deepEqual(arrived, ['AWAITING_PAYMENT', 'AWAITING_PAYMENT', 'PROCESSING_PAYMENT', 'PROCESSING_PAYMENT']);
  });
});
