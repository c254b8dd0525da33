// The delivery policy as partners and operators see it: which answers are retried, the backoff
// schedule (about 2, 4, 8, 16 s with jitter, capped at 60 s, Retry-After honoured within the cap),
// checked as pure functions and then through a real dispatcher driven by an injected clock and an
// injected random source — no sleeping for backoff anywhere. Plus the destination URL policy.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes, type WebhookServices } from '../../src/webhooks/index.ts';
import type { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import {
  backoffSchedule,
  classify,
  defaultDeliveryPolicy,
  nextStep,
  parseRetryAfterMs,
  retryDelayMs,
  type AttemptResult,
} from '../../src/webhooks/policy.ts';
import { ipv6Bytes } from '../../src/webhooks/address-policy.ts';
import { checkDestinationUrl, isBlockedAddress } from '../../src/webhooks/url-policy.ts';
import { collectingLogger, commitWebhooks, newTransaction, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

const policy = defaultDeliveryPolicy;
const response = (httpStatus: number, retryAfter: string | null = null): AttemptResult => ({ kind: 'response', httpStatus, retryAfter });

describe('delivery policy (pure)', () => {
  test('2xx delivers; 408, 429 and 5xx retry; redirects and other 4xx fail at once', () => {
    const table: Array<[number, string]> = [
      [200, 'delivered'], [201, 'delivered'], [204, 'delivered'], [299, 'delivered'],
      [301, 'rejected'], [302, 'rejected'], [307, 'rejected'], [308, 'rejected'],
      [400, 'rejected'], [401, 'rejected'], [403, 'rejected'], [404, 'rejected'], [410, 'rejected'], [422, 'rejected'],
      [408, 'retryable'], [429, 'retryable'], [500, 'retryable'], [502, 'retryable'], [503, 'retryable'], [504, 'retryable'],
      [100, 'rejected'],
    ];
    for (const [status, outcome] of table) assert.equal(classify(response(status)).outcome, outcome, `HTTP ${status}`);
    assert.deepEqual(classify(response(302)), { outcome: 'rejected', error: 'redirect' });
    for (const error of ['timeout', 'connection_refused', 'connection_reset', 'dns_failure', 'tls_error', 'connection_error'] as const) {
      assert.equal(classify({ kind: 'error', error }).outcome, 'retryable', error);
    }
    for (const error of ['blocked_address', 'invalid_destination', 'no_destination', 'secret_unavailable'] as const) {
      assert.equal(classify({ kind: 'error', error }).outcome, 'rejected', error);
    }
  });

  test('backoff: about 2, 4, 8, 16 s, jitter within ±20 %, capped at 60 s', () => {
    assert.deepEqual(backoffSchedule(policy, [0.5]), [2_000, 4_000, 8_000, 16_000]);
    assert.deepEqual(backoffSchedule(policy, [0]), [1_600, 3_200, 6_400, 12_800]);
    const high = backoffSchedule(policy, [0.999_999]);
    assert.deepEqual(high.map((ms) => Math.round(ms / 10) * 10), [2_400, 4_800, 9_600, 19_200]);
    assert.equal(retryDelayMs(policy, 6, 0.5), 60_000, 'the cap');
    assert.equal(retryDelayMs(policy, 40, 0.999), 60_000);
    assert.throws(() => retryDelayMs(policy, 0, 0.5), RangeError);
    assert.throws(() => retryDelayMs(policy, 1, 1), RangeError);
  });

  test('Retry-After is honoured within the cap, never shortens the backoff', () => {
    const nowMs = Date.UTC(2025, 0, 1);
    assert.equal(parseRetryAfterMs('30', nowMs), 30_000);
    assert.equal(parseRetryAfterMs(new Date(nowMs + 45_000).toUTCString(), nowMs), 45_000);
    assert.equal(parseRetryAfterMs('soon', nowMs), null);
    assert.equal(parseRetryAfterMs('-5', nowMs), null);
    assert.equal(parseRetryAfterMs(null, nowMs), null);
    assert.equal(retryDelayMs(policy, 1, 0.5, 30_000), 30_000);
    assert.equal(retryDelayMs(policy, 1, 0.5, 600_000), 60_000, 'capped');
    assert.equal(retryDelayMs(policy, 3, 0.5, 1_000), 8_000, 'a shorter Retry-After does not shorten the backoff');
    assert.deepEqual(nextStep(policy, 1, response(429, '30'), nowMs, 0.5), { kind: 'retry', atMs: nowMs + 30_000, error: 'http_status' });
  });

  test('the fifth failed attempt gives up; a non-retryable failure gives up at once', () => {
    const nowMs = 1_000;
    assert.equal(nextStep(policy, 4, response(503), nowMs, 0.5).kind, 'retry');
    assert.deepEqual(nextStep(policy, 5, response(503), nowMs, 0.5), { kind: 'give_up', error: 'http_status' });
    assert.deepEqual(nextStep(policy, 1, response(401), nowMs, 0.5), { kind: 'give_up', error: 'http_status' });
    assert.deepEqual(nextStep(policy, 1, { kind: 'error', error: 'no_destination' }, nowMs, 0.5), { kind: 'give_up', error: 'no_destination' });
    assert.deepEqual(nextStep(policy, 1, response(200), nowMs, 0.5), { kind: 'delivered' });
  });
});

describe('the dispatcher follows the schedule of an injected clock', () => {
  let receiver: WebhookReceiver;
  let dir: string;
  let store: LmdbStore;
  const clock = { now: Date.UTC(2025, 5, 1, 12), nowMs: () => clock.now };
  let services: WebhookServices;
  const randoms = [0, 0.5, 0.75, 0.25, 0.5, 0.5, 0.5];
  let draws = 0;

  before(async () => {
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'webhooks-policy-'));
    store = new LmdbStore({ dir, readModelIndexes: [...defaultReadModelIndexes, ...webhookReadModelIndexes] });
    await store.init();
    const partners = new PartnerDirectory(createKeyRing());
    partners.set({ id: 'acme', name: 'Acme', apiKeySha256: [], kycEnabled: false, kybApproved: true, disabledUsers: new Set(), webhook: { url: receiver.url, secret: 'acme-webhook-secret-0123456789' }, fees: undefined });
    services = createWebhookServices(
      { env: { sandbox: true }, processId: 'test', clock, log: collectingLogger(), store, partners },
      { random: () => randoms[draws++ % randoms.length] ?? 0.5 },
    );
  });
  after(() => teardown(
    () => receiver?.close(),
    () => store?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  async function round(dispatcher: WebhookDispatcher): Promise<void> {
    await dispatcher.runRound();
    await dispatcher.idle();
  }

  test('five attempts at exactly the scheduled moments, then given up; nothing happens early', async () => {
    receiver.script([], { status: 503 });
    const dispatcher = services.createDispatcher();
    try {
      await commitWebhooks(store, newTransaction('acme'), [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      const startMs = clock.now;
      await round(dispatcher);
      assert.equal(receiver.requests.length, 1, 'first attempt at once');
      const expectedDelays = [0, 1, 2, 3].map((index) => retryDelayMs(policy, index + 1, randoms[index] ?? 0.5));
      let dueMs = startMs;
      for (const [index, delay] of expectedDelays.entries()) {
        dueMs += delay;
        clock.now = dueMs - 1;
        await round(dispatcher);
        await round(dispatcher);
        assert.equal(receiver.requests.length, index + 1, `attempt ${index + 2} not before its time`);
        clock.now = dueMs;
        await round(dispatcher);
        assert.equal(receiver.requests.length, index + 2, `attempt ${index + 2} when due`);
      }
      const [event] = (await services.events.list('acme', 0, 10)).events;
      assert.ok(event);
      const delivery = await services.deliveries.get('acme', event.id);
      assert.equal(delivery?.status, 'failed');
      const times = delivery?.attempts.map((attempt) => attempt.atMs - startMs);
      assert.deepEqual(times, [0, ...expectedDelays.map((_, index) => expectedDelays.slice(0, index + 1).reduce((a, b) => a + b, 0))]);
      clock.now += 3_600_000;
      await round(dispatcher);
      assert.equal(receiver.requests.length, 5, 'no sixth attempt');
    } finally {
      await dispatcher.stop();
    }
  });

  test('Retry-After: 30 moves the next attempt to 30 s; Retry-After beyond the cap waits 60 s', async () => {
    receiver.requests.length = 0;
    receiver.script([{ status: 429, headers: { 'retry-after': '30' } }, { status: 503, headers: { 'retry-after': '3600' } }], { status: 200 });
    const dispatcher = services.createDispatcher();
    try {
      const tx = newTransaction('acme');
      await commitWebhooks(store, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      const startMs = clock.now;
      await round(dispatcher);
      assert.equal(receiver.requests.length, 1);
      clock.now = startMs + 29_999;
      await round(dispatcher);
      assert.equal(receiver.requests.length, 1);
      clock.now = startMs + 30_000;
      await round(dispatcher);
      assert.equal(receiver.requests.length, 2);
      // The second wait (60 s) is longer than what the claim covers: the row is released and
      // re-claimed with a fresh claim; it still goes exactly when due.
      clock.now = startMs + 30_000 + 59_999;
      await round(dispatcher);
      await round(dispatcher);
      assert.equal(receiver.requests.length, 2);
      clock.now = startMs + 90_000;
      await round(dispatcher);
      await round(dispatcher);
      assert.equal(receiver.requests.length, 3);
      const events = (await services.events.list('acme', 0, 10)).events;
      const event = events.find((item) => item.data.id === tx.transactionId);
      assert.ok(event);
      const delivery = await services.deliveries.get('acme', event.id);
      assert.equal(delivery?.status, 'delivered');
      assert.deepEqual(delivery?.attempts.map((attempt) => attempt.atMs - startMs), [0, 30_000, 90_000]);
    } finally {
      await dispatcher.stop();
    }
  });
});

describe('destination URL policy', () => {
  test('non-public addresses are blocked in production', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fd00::1', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '64:ff9b::a00:1', 'not-an-ip']) {
      assert.equal(isBlockedAddress(address), true, address);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isBlockedAddress(address), false, address);
    }
  });

  // IPv6 spellings that carry an IPv4 address (or reach one through a tunnel or translator): each
  // hides loopback, private or metadata addresses behind a form a v6-only check lets through.
  const hiddenV4: ReadonlyArray<[string, string]> = [
    ['IPv4-compatible, dotted', '::127.0.0.1'],
    ['IPv4-compatible, hex', '::7f00:1'],
    ['IPv4-compatible, private', '::a00:1'],
    ['IPv4-compatible, public (deprecated form: refused whatever it embeds)', '::808:808'],
    ['IPv4-mapped, written out in full', '0:0:0:0:0:ffff:7f00:1'],
    ['IPv4-mapped, metadata', '::ffff:169.254.169.254'],
    ['IPv4-translated (SIIT), dotted', '::ffff:0:127.0.0.1'],
    ['IPv4-translated (SIIT), hex', '::ffff:0:a00:1'],
    ['NAT64 well-known prefix, dotted', '64:ff9b::127.0.0.1'],
    ['NAT64 well-known prefix, in full', '64:ff9b:0:0:0:0:a9fe:a9fe'],
    ['NAT64 local-use prefix', '64:ff9b:1::808:808'],
    ['6to4 of loopback', '2002:7f00:1::1'],
    ['6to4 of a private network', '2002:c0a8:101::1'],
    ['6to4 of the metadata address', '2002:a9fe:a9fe::'],
    ['Teredo hiding 127.0.0.1 as its client', '2001:0:4136:e378:8000:63bf:80ff:fffe'],
    ['Teredo with public server and client (refused: the whole prefix)', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['benchmarking', '2001:2::1'],
    ['ORCHIDv2', '2001:20::1'],
    ['documentation (3fff::/20)', '3fff::1'],
    ['SRv6 SIDs', '5f00::1'],
    ['dummy prefix', '100:0:0:1::1'],
    ['reserved (outside 2000::/3)', '4000::1'],
    ['link-local with a zone', 'fe80::1%eth0'],
  ];

  test('IPv6 forms that embed or reach a non-public IPv4 address are blocked, each form', () => {
    assert.deepEqual(ipv6Bytes('0:0:0:0:0:ffff:7f00:1'), ipv6Bytes('::ffff:127.0.0.1'), 'one address, two spellings, one decision');
    assert.equal(ipv6Bytes('1::2:3:4:5:6:7:8'), null);
    for (const [name, address] of hiddenV4) assert.equal(isBlockedAddress(address), true, `${name}: ${address}`);
    for (const address of ['2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '64:ff9b::8.8.4.4', '2002:808:808::1']) {
      assert.equal(isBlockedAddress(address), false, address);
    }
    const production = { sandbox: false };
    for (const [name, address] of hiddenV4) {
      if (address.includes('%')) continue; // a URL cannot carry a zone
      const checked = checkDestinationUrl(`https://[${address}]/hooks`, production);
      assert.equal(checked.ok, false, `${name}: ${address}`);
    }
  });

  test('outside sandbox the port is 443 (https\'s own); sandbox takes any port', () => {
    const production = { sandbox: false };
    assert.equal(checkDestinationUrl('https://hooks.acme.example:443/abroad', production).ok, true);
    for (const url of ['https://hooks.acme.example:8443/abroad', 'https://hooks.acme.example:22/', 'https://hooks.acme.example:6379/', 'https://8.8.8.8:25/']) {
      const checked = checkDestinationUrl(url, production);
      assert.equal(checked.ok, false, url);
      assert.match(checked.ok ? '' : checked.reason, /port 443/);
    }
    assert.equal(checkDestinationUrl('https://hooks.acme.example:8443/abroad', { sandbox: true }).ok, true);
  });

  test('only http(s), no credentials; https only and no private targets outside sandbox', () => {
    const production = { sandbox: false };
    const sandbox = { sandbox: true };
    assert.equal(checkDestinationUrl('https://hooks.acme.example/abroad', production).ok, true);
    assert.equal(checkDestinationUrl('http://hooks.acme.example/abroad', production).ok, false);
    assert.equal(checkDestinationUrl('http://127.0.0.1:9999/hooks', sandbox).ok, true);
    for (const url of ['ftp://hooks.acme.example/', 'file:///etc/passwd', 'javascript:alert(1)', 'https://user:pass@hooks.acme.example/', 'not a url', '', `https://a.example/${'x'.repeat(2_100)}`]) {
      assert.equal(checkDestinationUrl(url, sandbox).ok, false, url);
    }
    for (const url of ['https://localhost/hooks', 'https://api.localhost/hooks', 'https://127.0.0.1/hooks', 'https://[::1]/hooks', 'https://169.254.169.254/latest', 'https://10.0.0.5/hooks', 'https://[::ffff:10.0.0.5]/']) {
      assert.equal(checkDestinationUrl(url, production).ok, false, url);
    }
  });
});
