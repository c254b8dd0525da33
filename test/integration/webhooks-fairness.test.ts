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
import { PartnerDirectory, type Partner } from '../../src/service/partners.ts';
import { createWebhookServices, webhookReadModelIndexes, type WebhookOptions, type WebhookServices } from '../../src/webhooks/index.ts';
import { sendWebhook } from '../../src/webhooks/transport.ts';
import type { MetricFamily } from '../../src/service/role-metrics.ts';
import { eventually } from '../support/eventually.ts';
import { collectingLogger, commitWebhooks, newTransaction, startTarpit, startWebhookReceiver, type FedTransaction, type WebhookReceiver } from '../support/webhook-receiver.ts';

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

/** `promise`, or a failure once `boundMs` has passed (the bound the behaviour promises, not a timing). */
async function within<T>(boundMs: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${boundMs} ms`)), boundMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
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
  after(async () => {
    await receiver.close();
    for (const store of stores) await store.close();
    stores = [];
    rmSync(dir, { recursive: true, force: true });
  });

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
        5_000,
        sendWebhook(request, { sandbox: true }, { attemptTimeoutMs: 60_000, connectTimeoutMs: 60_000, firstByteTimeoutMs: 200, responseBytesMax: 4 * 1_024 }),
        'an attempt on a silent endpoint',
      );
      assert.deepEqual(slowAnswer.result, { kind: 'error', error: 'timeout' });
      // Over https the tarpit never finishes the TLS handshake: the connection never gets ready.
      const slowConnect = await within(
        5_000,
        sendWebhook({ ...request, url: tarpit.httpsUrl }, { sandbox: true }, { attemptTimeoutMs: 60_000, connectTimeoutMs: 200, firstByteTimeoutMs: 60_000, responseBytesMax: 4 * 1_024 }),
        'an attempt whose handshake hangs',
      );
      assert.deepEqual(slowConnect.result, { kind: 'error', error: 'timeout' });
      assert.equal(tarpit.connections(), 2, 'each attempt reached the endpoint once');
    } finally {
      await tarpit.close();
    }
  });
});
