// Destination management as an administrator uses it: stage a draft URL, test it (a real
// `webhook.test` delivery), activate or discard it; rotate the signing secret independently of the
// URL. Every change takes effect for the next delivery of a running dispatcher, without a restart,
// and secrets never appear in what the API returns (except a new one, once: the secret at rotation,
// the draft's test secret at staging). A draft is not trusted: its test never carries a live secret.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes, type RunningWebhooksRole, type WebhookServices } from '../../src/webhooks/index.ts';
import { verifySignature, webhookHeaders } from '../../src/webhooks/signing.ts';
import { eventually } from '../support/eventually.ts';
import { collectingLogger, commitWebhooks, newTransaction, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

const fileSecret = 'acme-file-secret-0123456789abc';

function verifies(request: ReceivedRequest | undefined, secret: string): boolean {
  return (
    request !== undefined &&
    request.headers[webhookHeaders.secret] === secret &&
    verifySignature({ secret, timestamp: request.headers[webhookHeaders.timestamp], signature: request.headers[webhookHeaders.signature], body: request.body, nowMs: Date.now() })
  );
}

describe('webhook destinations', () => {
  let receiver: WebhookReceiver;
  let dir: string;
  let store: LmdbStore;
  let services: WebhookServices;
  let role: RunningWebhooksRole;
  const log = collectingLogger();
  const draftStatuses: number[] = [];

  before(async () => {
    receiver = await startWebhookReceiver();
    // /draft answers with the statuses queued by the test (then 200); everything else 200.
    // /big answers 1 MB, /json a short JSON text with line breaks.
    receiver.respondWith((request) => {
      if (request.path === '/big') return { status: 200, bodyBytes: 1024 * 1024 };
      if (request.path === '/json') return { status: 202, body: '{"received":true,\n "note":"thanks"}' };
      return request.path === '/draft' ? { status: draftStatuses.shift() ?? 200 } : { status: 200 };
    });
    dir = mkdtempSync(join(tmpdir(), 'webhooks-destinations-'));
    store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    const partners = new PartnerDirectory(createKeyRing());
    partners.set({ id: 'acme', name: 'Acme', apiKeySha256: [], kycEnabled: false, kybApproved: true, disabledUsers: new Set(), webhook: { url: `${receiver.origin}/live`, secret: fileSecret }, fees: undefined });
    services = createWebhookServices(
      { env: { sandbox: true }, processId: 'test', clock: { nowMs: () => Date.now() }, log, store, partners },
      { limits: { pollIntervalMs: 20 }, transport: { attemptTimeoutMs: 2_000 } },
    );
    role = await services.startWebhooksRole();
  });
  after(() => teardown(
    () => role?.stop(),
    () => receiver?.close(),
    () => store?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  async function deliverOne(): Promise<ReceivedRequest> {
    const before = receiver.requests.length;
    const tx = newTransaction('acme');
    await commitWebhooks(store, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
    role.wake();
    await receiver.waitForRequests(before + 1);
    const request = receiver.requests.find((item) => item.transactionId === tx.transactionId);
    assert.ok(request);
    return request;
  }

  test('the partners file is the destination until an administrator changes it', async () => {
    const view = await services.destinations.get('acme');
    assert.ok(view.ok);
    assert.equal(view.destination.source, 'partners_file');
    assert.equal(view.destination.url, `${receiver.origin}/live`);
    assert.equal(view.destination.secretConfigured, true);
    const request = await deliverOne();
    assert.equal(request.path, '/live');
    assert.ok(verifies(request, fileSecret));
    assert.deepEqual(await services.destinations.get('nobody'), { ok: false, code: 'unknown_partner', reason: 'No such partner' });
  });

  test('stage → test (failing, then passing) → activate: the next delivery goes to the new URL', async () => {
    assert.equal((await services.destinations.stageDraft('acme', 'ftp://example.com/hook')).ok, false);
    assert.equal((await services.destinations.stageDraft('acme', 'https://user:pw@example.com/hook')).ok, false);
    const staged = await services.destinations.stageDraft('acme', `${receiver.origin}/draft`);
    assert.ok(staged.ok);
    assert.equal(staged.destination.source, 'store');
    assert.equal(staged.destination.url, `${receiver.origin}/live`, 'staging does not change the live URL');
    assert.equal(staged.destination.draft?.url, `${receiver.origin}/draft`);
    assert.deepEqual(await services.destinations.activateDraft('acme'), { ok: false, code: 'draft_not_tested', reason: 'The draft has no successful test delivery yet' });

    draftStatuses.push(500);
    const failing = await services.destinations.testDraft('acme');
    assert.ok(failing.ok);
    assert.equal(failing.test.ok, false);
    assert.equal(failing.test.httpStatus, 500);
    assert.equal((await services.destinations.activateDraft('acme')).ok, false, 'a failed test does not allow activation');

    const passing = await services.destinations.testDraft('acme');
    assert.ok(passing.ok);
    assert.equal(passing.test.ok, true);
    assert.equal(passing.test.httpStatus, 200);
    const testRequest = receiver.requestsTo('/draft').at(-1);
    assert.ok(testRequest);
    const testBody = JSON.parse(testRequest.body) as { event: string; data: { id: string } };
    assert.equal(testBody.event, 'webhook.test');
    assert.match(testBody.data.id, /^test_/);
    assert.equal(testRequest.headers[webhookHeaders.sequence], undefined, 'a test delivery is not in the event log');
    // The draft is not trusted yet: its test carries the draft's own test secret, never the live one.
    assert.match(staged.testSecret, /^whtest_[A-Za-z0-9_-]{43}$/);
    assert.ok(verifies(testRequest, staged.testSecret));
    assert.ok(!JSON.stringify(testRequest.headers).includes(fileSecret) && !testRequest.body.includes(fileSecret), 'the live secret does not reach the draft');
    assert.ok(!JSON.stringify(await services.destinations.get('acme')).includes(staged.testSecret), 'the test secret is shown once, at staging');

    // Still the old URL until activation.
    assert.equal((await deliverOne()).path, '/live');
    const activated = await services.destinations.activateDraft('acme');
    assert.ok(activated.ok);
    assert.equal(activated.destination.url, `${receiver.origin}/draft`);
    assert.equal(activated.destination.draft, null);
    assert.equal((await deliverOne()).path, '/draft', 'takes effect without a restart');
  });

  test("the test delivery keeps an excerpt of the receiver's answer: at most 512 bytes read, even of a 1 MB answer", async () => {
    assert.ok((await services.destinations.stageDraft('acme', `${receiver.origin}/big`)).ok);
    const big = await services.destinations.testDraft('acme');
    assert.ok(big.ok);
    assert.equal(big.test.httpStatus, 200);
    assert.equal(big.test.responseExcerpt, 'x'.repeat(512), 'the first 512 bytes, no more');
    assert.ok(big.test.durationMs < 2_000, `the attempt stops reading at the bound instead of waiting for 1 MB or the deadline (took ${big.test.durationMs} ms)`);
    const stored = await services.destinations.get('acme');
    assert.ok(stored.ok);
    assert.equal(stored.destination.draft?.test?.responseExcerpt, 'x'.repeat(512), 'kept with the draft');

    assert.ok((await services.destinations.stageDraft('acme', `${receiver.origin}/json`)).ok);
    const json = await services.destinations.testDraft('acme');
    assert.ok(json.ok);
    assert.deepEqual([json.test.httpStatus, json.test.responseExcerpt], [202, '{"received":true,  "note":"thanks"}']);
    const fresh = await services.destinations.stageDraft('acme', `${receiver.origin}/draft`);
    assert.ok(fresh.ok);
    assert.equal(fresh.destination.draft?.test, null, 'a new draft has no test result (nor excerpt) yet');
    assert.ok((await services.destinations.discardDraft('acme')).ok);
  });

  test('a test whose answer never ends is bounded by the attempt deadline and keeps what arrived', async () => {
    // Head and a few bytes, then nothing: the excerpt is what arrived, the attempt ends at its deadline.
    const sockets = new Set<import('node:net').Socket>();
    const dripping = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial answer\u0007');
    });
    dripping.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => dripping.listen(0, '127.0.0.1', resolve));
    try {
      const port = (dripping.address() as AddressInfo).port;
      assert.ok((await services.destinations.stageDraft('acme', `http://127.0.0.1:${port}/hook`)).ok);
      const tested = await services.destinations.testDraft('acme');
      assert.ok(tested.ok);
      assert.equal(tested.test.httpStatus, 200);
      assert.equal(tested.test.responseExcerpt, 'partial answer', 'what arrived, control characters stripped');
      assert.ok(tested.test.durationMs >= 1_900 && tested.test.durationMs < 4_000, `ended by the 2 s attempt deadline (took ${tested.test.durationMs} ms)`);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => dripping.close(() => resolve()));
      await services.destinations.discardDraft('acme');
    }
  });

  test('a staged draft can be discarded; the live URL stays', async () => {
    assert.ok((await services.destinations.stageDraft('acme', `${receiver.origin}/other`)).ok);
    const discarded = await services.destinations.discardDraft('acme');
    assert.ok(discarded.ok);
    assert.equal(discarded.destination.draft, null);
    assert.equal(discarded.destination.url, `${receiver.origin}/draft`);
    assert.deepEqual(await services.destinations.testDraft('acme'), { ok: false, code: 'no_draft', reason: 'No draft URL is staged' });
  });

  test('secret rotation: staged, shown once, used only after activation; discard keeps the live secret', async () => {
    const rotated = await services.destinations.rotateSecret('acme');
    assert.ok(rotated.ok);
    assert.match(rotated.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(rotated.secret, fileSecret);
    assert.ok(rotated.destination.pendingSecret !== null);
    assert.ok(verifies(await deliverOne(), fileSecret), 'the live secret still signs');

    // A draft tested while a secret is staged gets neither the staged secret (it becomes the live
    // one) nor the live one: only the draft's own test secret, new at every staging.
    const staged = await services.destinations.stageDraft('acme', `${receiver.origin}/draft`);
    assert.ok(staged.ok);
    assert.ok((await services.destinations.testDraft('acme')).ok);
    const draftTest = receiver.requestsTo('/draft').at(-1);
    assert.ok(verifies(draftTest, staged.testSecret));
    for (const secret of [rotated.secret, fileSecret]) assert.ok(!JSON.stringify(draftTest?.headers).includes(secret));
    const restaged = await services.destinations.stageDraft('acme', `${receiver.origin}/draft`);
    assert.ok(restaged.ok);
    assert.notEqual(restaged.testSecret, staged.testSecret, 'staging again draws a new test secret');
    assert.ok((await services.destinations.discardDraft('acme')).ok);

    const activated = await services.destinations.activateSecret('acme');
    assert.ok(activated.ok);
    assert.equal(activated.destination.pendingSecret, null);
    const signedWithNew = await deliverOne();
    assert.ok(verifies(signedWithNew, rotated.secret));
    assert.ok(!verifies(signedWithNew, fileSecret));

    const again = await services.destinations.rotateSecret('acme');
    assert.ok(again.ok);
    assert.ok((await services.destinations.discardSecret('acme')).ok);
    assert.deepEqual(await services.destinations.activateSecret('acme'), { ok: false, code: 'no_pending_secret', reason: 'No staged secret; rotate first' });
    assert.ok(verifies(await deliverOne(), rotated.secret), 'discarding the staged secret keeps the live one');

    const view = await services.destinations.get('acme');
    const shown = JSON.stringify(view);
    for (const secret of [fileSecret, rotated.secret, again.secret, staged.testSecret]) assert.ok(!shown.includes(secret), 'secrets are never returned by get');
    assert.ok(!log.lines.some((line) => [fileSecret, rotated.secret, again.secret, staged.testSecret].some((secret) => line.includes(secret))), 'secrets are never logged');
  });

  test('concurrent changes do not lose each other (compare-and-set)', async () => {
    const results = await Promise.all([
      services.destinations.stageDraft('acme', `${receiver.origin}/concurrent`),
      services.destinations.rotateSecret('acme'),
      services.destinations.stageDraft('acme', `${receiver.origin}/concurrent`),
      services.destinations.rotateSecret('acme'),
    ]);
    assert.ok(results.every((result) => result.ok));
    const view = await services.destinations.get('acme');
    assert.ok(view.ok);
    assert.equal(view.destination.draft?.url, `${receiver.origin}/concurrent`);
    assert.ok(view.destination.pendingSecret !== null);
    await services.destinations.discardDraft('acme');
    await services.destinations.discardSecret('acme');
    await eventually(async () => assert.equal((await services.deliveries.list('acme', { status: 'pending', limit: 10 })).total, 0));
  });
});
