// The partner portal in a real browser (headless Chromium), against the whole service and a real
// local webhook receiver, as a partner's administrator uses it: sign in; stage, test (the
// receiver's answer, markup included, shown as text) and activate a destination; rotate the
// secret and see the next delivery carry the new one; make the receiver
// fail and watch the attempts appear; redeliver and see it delivered; look at a transaction and
// download a completed one's signed receipt; see the corridor health page;
// create and revoke an API key and see the API refuse it; sign out. Screenshots of each page go to
// PORTAL_SCREENSHOTS_DIR when set (docs/portal/ holds the ones docs/portal.md shows), else to a
// temp dir removed at the end.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { randomAddress } from '../../src/chains/sandbox-chain.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { demoPortalAdminEmail } from '../../src/portal/index.ts';
import { startServiceHarness, type ServiceHarness } from '../support/service-harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { startBrowser, type TestBrowser } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { call, payoutQuoteBody } from './support.ts';
import { verifyReceipt } from '../../clients/typescript/src/receipts.ts';

const password = 'demo-portal-password-for-the-browser-test';
const waitMs = 30_000;
let harness: ServiceHarness;
let receiver: WebhookReceiver;
let browser: TestBrowser;
let page: Page;
let shotsDir: string;
const ownShotsDir = process.env['PORTAL_SCREENSHOTS_DIR'] === undefined;

before(async () => {
  shotsDir = process.env['PORTAL_SCREENSHOTS_DIR'] ?? mkdtempSync(join(tmpdir(), 'portal-shots-'));
  receiver = await startWebhookReceiver();
  harness = await startServiceHarness({ env: { DEMO_PORTAL_PASSWORD: password } });
  browser = await startBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(waitMs);
});

after(() =>
  teardown(
    () => browser?.close(),
    () => harness?.stop(),
    () => receiver?.close(),
    () => (ownShotsDir && shotsDir !== undefined ? rmSync(shotsDir, { recursive: true, force: true }) : undefined),
  ),
);

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: true });
}

async function newTransaction(userId: string): Promise<string> {
  const quote = await call(harness.baseUrl, 'POST', '/quote', { key: harness.demoApiKey, body: payoutQuoteBody });
  assert.equal(quote.status, 200, quote.text);
  const accepted = await call(harness.baseUrl, 'POST', '/transaction', { key: harness.demoApiKey, body: { quote_id: quote.json['quote_id'], user_id: userId, account_number: '@maria.perez' } });
  assert.equal(accepted.status, 200, accepted.text);
  return String(accepted.json['id']);
}

test('an administrator runs webhooks, deliveries, transactions and keys from the portal', async () => {
  // Sign in.
  await page.goto(`${harness.baseUrl}/portal`);
  await page.fill('#email', demoPortalAdminEmail);
  await page.fill('#password', 'a-wrong-password');
  await page.click('#sign-in');
  await page.locator('#signin-message .error').waitFor();
  assert.match(await page.locator('#signin-message').innerText(), /Wrong e-mail or password/);
  await page.fill('#password', password);
  await shot('sign-in');
  await page.click('#sign-in');
  await page.waitForURL('**/portal/webhooks');

  // Stage → test → activate a destination pointing at the local receiver.
  await page.fill('#draft-url', receiver.url);
  await page.click('#stage-draft');
  const testSecret = (await page.locator('#test-secret').innerText()).trim();
  assert.ok(testSecret.length >= 32);
  // The receiver answers the test with markup: the page shows the start of its answer as text.
  const hostileAnswer = '<script>window.portalPwned = 1</script><img src="x" onerror="window.portalPwned = 2"><b>thanks</b>';
  receiver.respondWith((request) => (request.event === 'webhook.test' ? { status: 200, body: hostileAnswer } : {}));
  await page.click('#test-draft');
  await page.locator('#draft-test .ok').waitFor();
  const testDelivery = receiver.requests.find((request) => request.event === 'webhook.test');
  assert.ok(testDelivery, 'the receiver got the test delivery');
  assert.equal(testDelivery.headers['x-service-webhook-secret'], testSecret);
  const excerpt = page.locator('#draft-test-excerpt');
  assert.equal(await excerpt.textContent(), hostileAnswer, "the receiver's answer is shown after the test");
  assert.equal(await page.locator('#draft-test script, #draft-test img, #draft-test b').count(), 0, 'shown as text, never parsed as HTML');
  assert.equal(await page.evaluate(() => (globalThis as { portalPwned?: number }).portalPwned), undefined, 'nothing of it ran');
  await shot('webhooks-test');
  receiver.respondWith(null);
  await page.click('#activate-draft');
  await page.locator('#live-url', { hasText: receiver.url }).waitFor();

  // Rotate the secret; from activation on, deliveries carry the new one.
  await page.click('#rotate-secret');
  const newSecret = (await page.locator('#new-secret').innerText()).trim();
  assert.ok(newSecret.length >= 32);
  await shot('webhooks-rotated');
  await page.click('#activate-secret');
  await page.locator('#signing-since').waitFor();
  await shot('webhooks');
  const signedTransaction = await newTransaction('portal-browser-1');
  const signed = await eventually(() => {
    const request = receiver.requests.find((candidate) => candidate.transactionId === signedTransaction);
    assert.ok(request, 'the transaction.created delivery arrived');
    return request;
  }, waitMs);
  assert.equal(signed.headers['x-service-webhook-secret'], newSecret, 'signed with the new secret');

  // The receiver fails: the attempts appear on the deliveries page while it is open.
  receiver.script([], { status: 500 });
  const failingTransaction = await newTransaction('portal-browser-2');
  await page.click('a[data-page=deliveries]');
  await page.waitForURL('**/portal/deliveries');
  const row = page.locator(`tr:has(a:text-is("${failingTransaction}"))`);
  await row.locator('[data-attempt="1.1"]', { hasText: 'HTTP 500' }).waitFor();
  // Past every retry (the service's clock moves; the page keeps polling): the event is given up.
  await eventually(async () => {
    harness.advanceClockMs(61_000);
    assert.equal(await row.getAttribute('data-state'), 'failed');
  }, waitMs, 500);
  assert.equal(await row.locator('[data-attempt]').count(), 5, 'five attempts, each shown');
  await shot('deliveries-failed');

  // Redeliver: the new attempt lands and the event is delivered.
  receiver.script([], { status: 200 });
  await row.locator('button[data-redeliver]').click();
  await row.locator('[data-attempt="2.1"]', { hasText: 'HTTP 200' }).waitFor();
  await eventually(async () => assert.equal(await row.getAttribute('data-state'), 'delivered'), waitMs);
  await shot('deliveries');

  // Transactions: the list and one transaction with its events.
  await page.click('a[data-page=transactions]');
  await page.locator(`tr[data-transaction="${failingTransaction}"]`).waitFor();
  await shot('transactions');
  await page.click(`a:text-is("${failingTransaction}")`);
  await page.locator('#tx-status', { hasText: 'AWAITING_PAYMENT' }).waitFor();
  await page.locator('#tx-events tr').first().waitFor();
  assert.match(await page.locator('#tx-events').innerText(), /transaction\.created/);
  await page.locator('#tx-receipt-pending').waitFor();
  await shot('transaction');

  // A completed transaction's page offers its signed receipt; the download verifies with the published keys.
  const deposited = await call(harness.baseUrl, 'POST', '/sandbox/deposits', { key: harness.demoApiKey, body: { transaction_id: signedTransaction } });
  assert.equal(deposited.status, 200, deposited.text);
  await eventually(async () => {
    const status = await call(harness.baseUrl, 'GET', `/transaction/${signedTransaction}`, { key: harness.demoApiKey });
    assert.equal(status.json['status'], 'PAYMENT_COMPLETED');
  }, waitMs);
  await page.goto(`${harness.baseUrl}/portal/transactions/${signedTransaction}`);
  const download = page.locator('#tx-receipt');
  await download.waitFor();
  const downloaded = await page.evaluate(async (href) => (await fetch(href, { credentials: 'same-origin' })).json() as Promise<{ receipt: unknown; signature: string }>, String(await download.getAttribute('href')));
  const keys = await call(harness.baseUrl, 'GET', '/.well-known/jwks.json');
  assert.ok(verifyReceipt(downloaded, keys.json as { keys: unknown[] }).ok, 'the downloaded receipt verifies');
  await shot('transaction-receipt');

  // Corridor health: the corridor's rail state, settlement times and liquidity level.
  await page.click('a[data-page=corridors]');
  const corridorRow = page.locator('#corridor-health tr[data-corridor="STELLAR-USDC-BREB-COP"]');
  await corridorRow.waitFor();
  // The state itself is the corridor-health e2e test's subject (a loaded machine can make a rail
  // probe late, and the state honest about it): here, that the page shows one, with its figures.
  assert.match(await corridorRow.innerText(), /\b(up|degraded|down)\b[\s\S]*\b(ok|low|exhausted|unknown)\b/);
  await shot('corridors');

  // API keys: a new key works at once; revoked, the API refuses it.
  await page.click('a[data-page=keys]');
  await page.click('#create-key');
  const apiKey = (await page.locator('#new-key').innerText()).trim();
  assert.match(apiKey, /^key_[0-9a-f]{48}$/);
  const listed = await call(harness.baseUrl, 'GET', '/transactions/list?externalUserId=portal-browser-1', { key: apiKey });
  assert.equal(listed.status, 200, listed.text);
  await shot('keys');
  const keyRow = page.locator('tr[data-key]', { hasText: apiKey.slice(0, 12) });
  await keyRow.locator('button[data-revoke]').click();
  await keyRow.locator('button[data-revoke]').click();
  await page.locator('p.notice', { hasText: 'revoked' }).waitFor();
  const refused = await call(harness.baseUrl, 'GET', '/transactions/list?externalUserId=portal-browser-1', { key: apiKey });
  assert.equal(refused.status, 401, refused.text);
  assert.equal((await call(harness.baseUrl, 'GET', '/transactions/list?externalUserId=portal-browser-1', { key: harness.demoApiKey })).status, 200, 'the other key still works');

  // Sign out: back to the sign-in page, and the pages need a new sign-in.
  await page.click('#sign-out');
  await page.waitForURL('**/portal');
  await page.locator('#signin-form').waitFor();
  await page.goto(`${harness.baseUrl}/portal/keys`);
  await page.waitForURL('**/portal');
  await page.locator('#signin-form').waitFor();
});

test('an administrator sees the partner\'s unmatched deposits and refunds one from the portal', async () => {
  // A late deposit handed back by one of the demo partner's transactions (the deposit actor's own
  // commands, as the transaction sends them): open, waiting for the partner.
  const client = await harness.ctx.actorClient('portal-browser-unmatched');
  const onChainId = randomBytes(32).toString('hex');
  const transactionId = randomUUID();
  const transfer = toJsonValue({ network: 'STELLAR', onChainId, asset: 'USDC', amount: decimalFromExactString('3.25'), sender: randomAddress('STELLAR'), memo: null });
  assert.equal((await client.ask<{ result: string }>('deposit', `STELLAR:${onChainId}`, 'claim', { transactionId, transfer }, { timeoutMs: 10_000 })).result, 'enqueued');
  const handed = await client.ask<{ result: string }>('deposit', `STELLAR:${onChainId}`, 'handBack', { transactionId, reason: 'deposit_late', partnerId: 'demo' }, { timeoutMs: 10_000 });
  assert.equal(handed.result, 'recorded');

  // A session of its own, whatever the test before left (signed in, or stopped half-way).
  await page.context().clearCookies();
  await page.goto(`${harness.baseUrl}/portal`);
  await page.fill('#email', demoPortalAdminEmail);
  await page.fill('#password', password);
  await page.click('#sign-in');
  await page.waitForURL('**/portal/webhooks');
  await page.click('a[data-page=unmatched]');
  const row = page.locator('tr[data-deposit]', { hasText: onChainId });
  await row.waitFor();
  assert.match(await row.innerText(), /open[\s\S]*3\.25 USDC[\s\S]*STELLAR[\s\S]*deposit_late/);
  await shot('unmatched');
  await row.locator('button[data-refund]').click();
  await row.locator('button[data-refund]').click();
  await page.locator('p.notice', { hasText: 'refunding' }).waitFor();
  const id = await page.locator('tr[data-deposit]', { hasText: onChainId }).getAttribute('data-deposit');
  const got = await call(harness.baseUrl, 'GET', `/unmatched-deposit/${String(id)}`, { key: harness.demoApiKey });
  assert.equal(got.status, 200, got.text);
  assert.ok(['refunding', 'refunded'].includes(String(got.json['state'])), got.text);
  // Without the session's CSRF token the portal refuses the action.
  const forged = await page.evaluate(async (path) => (await fetch(path, { method: 'POST', headers: { 'x-portal-request': '1' } })).status, `/portal/api/unmatched-deposits/${String(id)}/refund`);
  assert.equal(forged, 403);
});
