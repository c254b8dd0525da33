// The partner portal's security, over real HTTP against the whole service: one partner's
// administrator cannot see or touch another partner's records (404 for every id), state-changing
// calls without the CSRF token are refused, the session cookie's flags, sign-in guessing is
// throttled per account and per address with 429 + Retry-After, wrong password and unknown
// account look the same, and no secret, password or password hash appears in any answer or log line.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createAdminClient } from '../../src/grpc/admin-client.ts';
import { sessionCookie } from '../../src/portal/requests.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { call, payoutQuoteBody } from './support.ts';
import { portalCall, portalLogin, portalSignIn, type PortalSession } from '../support/portal-client.ts';

const owner = { email: 'owner@kyc-off.example', password: 'owner-password-7f3a9c1e' };
const stranger = { email: 'stranger@kyb-pending.example', password: 'stranger-password-2b8d4e6f' };
const logLines: string[] = [];
let harness: ServiceHarness;
let receiver: WebhookReceiver;
let ownerSession: PortalSession;
let strangerSession: PortalSession;
let transactionId: string;
let eventId: string;
let keyId: string;
const secretsSeen: string[] = [];

before(async () => {
  receiver = await startWebhookReceiver();
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter((line) => line.length > 0));
      done();
    },
  });
  harness = await startServiceHarness({
    portalAdmins: { [testPartners.kycOff]: owner, [testPartners.kybPending]: stranger },
    log: pino({ level: 'debug' }, sink),
    // Few sign-in failures per address, so the per-address throttle is reached within the test.
    env: { AUTH_FAILURES_BURST: '30', AUTH_FAILURES_PER_MINUTE: '1' },
  });
  ownerSession = await portalSignIn(harness.baseUrl, owner.email, owner.password);
  strangerSession = await portalSignIn(harness.baseUrl, stranger.email, stranger.password);
  // The owner's records: a transaction (with its webhook event) and a key made in the portal.
  const key = harness.apiKeys[testPartners.kycOff] ?? '';
  const quote = await call(harness.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody });
  const accepted = await call(harness.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quote.json['quote_id'], user_id: 'portal-user-1', account_number: '@maria.perez' } });
  assert.equal(accepted.status, 200, accepted.text);
  transactionId = String(accepted.json['id']);
  const staged = await portalCall(harness.baseUrl, ownerSession, 'POST', '/portal/api/webhooks/draft', { body: { url: receiver.url } });
  secretsSeen.push(String(staged.json['testSecret']));
  const rotated = await portalCall(harness.baseUrl, ownerSession, 'POST', '/portal/api/webhooks/secret/rotate');
  secretsSeen.push(String(rotated.json['secret']));
  const created = await portalCall(harness.baseUrl, ownerSession, 'POST', '/portal/api/keys', { body: {} });
  assert.equal(created.status, 201, created.text);
  secretsSeen.push(String(created.json['apiKey']));
  keyId = String((created.json['key'] as { id: string }).id);
  eventId = await eventually(async () => {
    const page = await portalCall(harness.baseUrl, ownerSession, 'GET', `/portal/api/deliveries?transactionId=${transactionId}`);
    const deliveries = page.json['deliveries'] as Array<{ eventId: string }>;
    assert.equal(deliveries.length, 1, page.text);
    return deliveries[0]?.eventId ?? '';
  });
});

after(() => teardown(() => harness?.stop(), () => receiver?.close()));

test("another partner's administrator gets 404 for every id of this partner, and changes nothing", async () => {
  const base = harness.baseUrl;
  const reads = [`/portal/api/transactions/${transactionId}`, `/portal/api/deliveries/${eventId}`];
  for (const path of reads) {
    assert.equal((await portalCall(base, ownerSession, 'GET', path)).status, 200, `the owner sees ${path}`);
    const refused = await portalCall(base, strangerSession, 'GET', path);
    assert.equal(refused.status, 404, `${path}: ${refused.text}`);
    assert.equal(refused.json['code'], 'not_found');
  }
  const redeliver = await portalCall(base, strangerSession, 'POST', `/portal/api/deliveries/${eventId}/redeliver`, { body: { again: true } });
  assert.equal(redeliver.status, 404, redeliver.text);
  const revoke = await portalCall(base, strangerSession, 'POST', `/portal/api/keys/${keyId}/revoke`);
  assert.equal(revoke.status, 404, revoke.text);
  // Lists are the stranger's own: none of the owner's records appear.
  const transactions = await portalCall(base, strangerSession, 'GET', '/portal/api/transactions');
  assert.deepEqual(transactions.json['transactions'], []);
  const deliveries = await portalCall(base, strangerSession, 'GET', `/portal/api/deliveries?transactionId=${transactionId}`);
  assert.deepEqual(deliveries.json['deliveries'], []);
  const keys = await portalCall(base, strangerSession, 'GET', '/portal/api/keys');
  assert.ok(!(keys.json['keys'] as Array<{ id: string }>).some((key) => key.id === keyId));
  const webhooks = await portalCall(base, strangerSession, 'GET', '/portal/api/webhooks');
  assert.equal((webhooks.json['destination'] as { draft: unknown }).draft, null, "the owner's draft is not the stranger's");
  // The owner's key still works: the stranger's revoke did nothing.
  const ownerKeys = await portalCall(base, ownerSession, 'GET', '/portal/api/keys');
  assert.ok((ownerKeys.json['keys'] as Array<{ id: string }>).some((key) => key.id === keyId));
});

test('a state-changing call without the CSRF token, or with a wrong one, is refused with 403', async () => {
  const base = harness.baseUrl;
  for (const csrf of [null, 'not-the-token', strangerSession.csrfToken]) {
    const refused = await portalCall(base, ownerSession, 'POST', '/portal/api/keys', { body: {}, csrf });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json['code'], 'csrf_failed');
    assert.ok(String(refused.json['reason']).length > 0);
  }
  const signOut = await portalCall(base, ownerSession, 'POST', '/portal/api/logout', { csrf: null });
  assert.equal(signOut.status, 403, 'sign-out needs the token too');
  // Sign-in: without the portal's header, or from another origin.
  assert.equal((await portalLogin(base, owner.email, owner.password, {})).status, 403);
  const foreign = await portalLogin(base, owner.email, owner.password, { 'x-portal-request': '1', origin: 'https://evil.example' });
  assert.equal(foreign.status, 403);
  const keys = await portalCall(base, ownerSession, 'GET', '/portal/api/keys');
  assert.equal((keys.json['keys'] as unknown[]).length, 2, 'no key was created by the refused calls');
});

test('the session cookie is HttpOnly, SameSite=Strict, scoped to /portal, and Secure when served over TLS', async () => {
  const flags = ownerSession.setCookie.split(';').map((part) => part.trim());
  assert.ok(flags.includes('HttpOnly'), ownerSession.setCookie);
  assert.ok(flags.includes('SameSite=Strict'), ownerSession.setCookie);
  assert.ok(flags.includes('Path=/portal'), ownerSession.setCookie);
  assert.ok(flags.some((flag) => flag.startsWith('Max-Age=')), ownerSession.setCookie);
  // Sandbox mode over plain HTTP: no Secure (the browser would drop the cookie); outside it, Secure.
  assert.ok(!flags.includes('Secure'));
  assert.ok(sessionCookie('token', { secure: true, maxAgeSeconds: 60 }).split('; ').includes('Secure'));
  // Signing out ends the session on the server, not only in the browser.
  const session = await portalSignIn(harness.baseUrl, owner.email, owner.password);
  const out = await portalCall(harness.baseUrl, session, 'POST', '/portal/api/logout');
  assert.equal(out.status, 200);
  assert.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/);
  assert.equal((await portalCall(harness.baseUrl, session, 'GET', '/portal/api/session')).status, 401);
});

test('sign-in: wrong password and unknown account look the same; guessing gets 429 + Retry-After per account, then per address', async () => {
  const base = harness.baseUrl;
  const wrong = await portalLogin(base, stranger.email, 'not-the-password');
  const unknown = await portalLogin(base, 'nobody@nowhere.example', 'not-the-password');
  assert.equal(wrong.status, 401);
  assert.equal(unknown.status, 401);
  // The same answer but for the request's own id, which every error body carries.
  const withoutRequestId = (body: unknown): unknown => ({ ...(body as Record<string, unknown>), request_id: undefined });
  assert.deepEqual(withoutRequestId(wrong.json), withoutRequestId(unknown.json));
  // Per account: 10 failures in a burst, then 429, even with the right password.
  let accountRefusal = wrong;
  for (let attempt = 0; attempt < 12 && accountRefusal.status !== 429; attempt += 1) accountRefusal = await portalLogin(base, stranger.email, `guess-${attempt}`);
  assert.equal(accountRefusal.status, 429, accountRefusal.text);
  assert.match(accountRefusal.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  assert.equal((await portalLogin(base, stranger.email, stranger.password)).status, 429, 'a throttled account is refused even with its password');
  // Another account from the same address still signs in, until the address has failed too often.
  assert.equal((await portalLogin(base, owner.email, owner.password)).status, 200);
  let addressRefusal = unknown;
  for (let attempt = 0; attempt < 40 && addressRefusal.status !== 429; attempt += 1) addressRefusal = await portalLogin(base, `user-${attempt}@nowhere.example`, 'guess');
  assert.equal(addressRefusal.status, 429, addressRefusal.text);
  assert.match(addressRefusal.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  const blocked = await portalLogin(base, owner.email, owner.password);
  assert.equal(blocked.status, 429, 'a throttled address is refused even with the right password');
  // The same per-address bucket as the API keys: a wrong API key from this address is throttled too.
  const apiRefusal = await call(base, 'GET', '/transactions/list?externalUserId=x', { key: 'key_wrong_0000000000000000000000000000' });
  assert.equal(apiRefusal.status, 429);
});

test('no secret, password or password hash appears in any answer or log line', async () => {
  const answers: string[] = [];
  for (const path of ['/portal/api/webhooks', '/portal/api/keys', '/portal/api/session', `/portal/api/transactions/${transactionId}`, '/portal/api/deliveries']) {
    answers.push((await portalCall(harness.baseUrl, ownerSession, 'GET', path)).text);
  }
  const log = logLines.join('\n');
  assert.ok(logLines.length > 10, 'the log was captured');
  const forbidden = [...secretsSeen, owner.password, stranger.password, 'scrypt$', ownerSession.cookie.split('=')[1] ?? 'x', ownerSession.csrfToken];
  for (const secret of forbidden) {
    assert.ok(secret.length >= 7, `checking ${secret.slice(0, 3)}…`);
    assert.ok(!log.includes(secret), `the log holds ${secret.slice(0, 6)}…`);
    assert.ok(!answers.some((text) => text.includes(secret)) || secret === ownerSession.csrfToken, `an answer holds ${secret.slice(0, 6)}…`);
  }
});

test('the admin gRPC commands and the portal act on the same records and see each other\'s changes', async () => {
  const admin = createAdminClient(`127.0.0.1:${harness.adminPort}`, harness.opsApiKey, { transport: { kind: 'plaintext' } });
  try {
    const base = harness.baseUrl;
    const operatorUrl = `${receiver.origin}/operator-staged`;
    const staged = await admin.call('StageDestination', { partner_id: testPartners.kycOff, url: operatorUrl });
    assert.equal(staged['ok'], true, JSON.stringify(staged));
    const seen = await portalCall(base, ownerSession, 'GET', '/portal/api/webhooks');
    assert.equal((seen.json['destination'] as { draft: { url: string } }).draft.url, operatorUrl, 'the portal shows the draft an operator staged');
    const discarded = await portalCall(base, ownerSession, 'POST', '/portal/api/webhooks/draft/discard');
    assert.equal(discarded.status, 200);
    const tested = await admin.call('TestDestination', { partner_id: testPartners.kycOff });
    assert.equal(tested['ok'], false, 'the operator sees the draft the portal discarded is gone');
    // An operator's key rotation replaces every key, the portal's included.
    const rotated = await admin.call('RotateApiKey', { partner_id: testPartners.kycOff });
    const keys = await portalCall(base, ownerSession, 'GET', '/portal/api/keys');
    const listed = keys.json['keys'] as Array<{ id: string }>;
    assert.equal(listed.length, 1);
    assert.ok(!listed.some((key) => key.id === keyId));
    assert.equal((await call(base, 'GET', '/transactions/list?externalUserId=x', { key: String(rotated['api_key']) })).status, 200);
  } finally {
    admin.close();
  }
});
