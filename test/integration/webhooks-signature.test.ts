// The verification example partners copy from docs/webhooks.md, run as written: it is extracted
// from the document, compiled by tsx, and checked against a real delivery received by a real local
// receiver — it accepts the genuine one and rejects a tampered body, a wrong secret and a stale
// timestamp (a replay).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes } from '../../src/webhooks/index.ts';
import { collectingLogger, commitWebhooks, newTransaction, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

type VerifyWebhook = (
  rawBody: string,
  headers: Record<string, string | string[] | undefined>,
  secret: string,
  nowMs?: number,
  toleranceSeconds?: number,
) => { eventId: string; sequence: number | null; event: string; data: Record<string, unknown> } | null;

const secret = 'acme-webhook-secret-0123456789';
const docPath = fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url));

function extractExample(): string {
  const text = readFileSync(docPath, 'utf8');
  const match = /<!-- verify-example:start -->\s*```ts\n([\s\S]*?)```\s*<!-- verify-example:end -->/.exec(text);
  assert.ok(match?.[1], 'docs/webhooks.md has the verification example between its markers');
  return match[1];
}

describe('the documented verification example', () => {
  let receiver: WebhookReceiver;
  let dir: string;
  let store: LmdbStore;
  let verifyWebhook: VerifyWebhook;

  before(async () => {
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-signature-'));
    const examplePath = join(dir, 'verify-example.ts');
    writeFileSync(examplePath, extractExample());
    ({ verifyWebhook } = (await import(pathToFileURL(examplePath).href)) as { verifyWebhook: VerifyWebhook });
    store = new LmdbStore({ dir: join(dir, 'store'), readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
  });
  after(() => teardown(
    () => receiver?.close(),
    () => store?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  test('accepts a real delivery, rejects tampering, a wrong secret and a replay', async () => {
    const partners = new PartnerDirectory(createKeyRing());
    partners.set({ id: 'acme', name: 'Acme', apiKeySha256: [], kycEnabled: false, kybApproved: true, disabledUsers: new Set(), webhook: { url: receiver.url, secret }, fees: undefined });
    const services = createWebhookServices({ env: { sandbox: true }, processId: 'test', clock: { nowMs: () => Date.now() }, log: collectingLogger(), store, partners });
    const dispatcher = services.createDispatcher();
    const tx = newTransaction('acme');
    try {
      await commitWebhooks(store, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      await dispatcher.runRound();
      await dispatcher.idle();
    } finally {
      await dispatcher.stop();
    }
    const [delivery] = receiver.requests;
    assert.ok(delivery);
    const verified = verifyWebhook(delivery.body, delivery.headers, secret);
    assert.ok(verified, 'the genuine delivery verifies');
    assert.equal(verified.event, 'transaction.created');
    assert.equal(verified.sequence, 1);
    assert.equal(verified.data['id'], tx.transactionId);
    assert.match(verified.eventId, /^evt_[0-9a-f]{32}$/);

    assert.equal(verifyWebhook(delivery.body.replace('AWAITING_PAYMENT', 'PAYMENT_COMPLETED'), delivery.headers, secret), null, 'tampered body');
    assert.equal(verifyWebhook(delivery.body, delivery.headers, 'not-the-secret-0000000000'), null, 'wrong secret');
    assert.equal(verifyWebhook(delivery.body, delivery.headers, secret, Date.now() + 10 * 60_000), null, 'replayed 10 minutes later');
    assert.equal(verifyWebhook(delivery.body, { ...delivery.headers, 'x-service-signature': undefined }, secret), null, 'unsigned');
    assert.equal(verifyWebhook(delivery.body, { ...delivery.headers, 'x-service-timestamp': String(Number(delivery.headers['x-service-timestamp']) + 1) }, secret), null, 'timestamp altered');
  });
});
