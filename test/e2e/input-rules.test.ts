// Input rules a partner who is also an attacker probes (issue 20, items 6–8), over real HTTP
// against the whole service (ROLE=all, in-process bus; docs/security.md, "Input: one beneficiary,
// user ids, URLs, headers"):
// - one beneficiary: a PIX payout whose account_number and qr_code name different recipients is
//   refused; what the partner-facing records show as accountNumber is the key that is paid;
// - user ids are one user in any Unicode form (NFKC), and invisible or control characters are
//   refused, wherever an id keys something (disabled users, KYC gate and record, the list);
// - an Idempotency-Key replay does not count fields the endpoint ignores.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { encodeBrCode } from '../../src/rails/brcode.ts';
import { eventually } from '../support/eventually.ts';
import { blockedUserId, startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, kycForm, payoutQuoteBody, type CallOptions } from './support.ts';

const validCpf = '52998224725';
const formattedCpf = '529.982.247-25';
const otherCpf = '11144477735';
const brebMobile = '3001234567';
const pixQuoteBody = { amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' } as const;

function staticQr(key: string): string {
  const qr = encodeBrCode({ key, merchantName: 'Maria', merchantCity: 'SAO PAULO' });
  assert.ok(qr.ok);
  return qr.payload;
}

describe('input rules (one beneficiary, user ids, idempotent replays)', () => {
  let h: ServiceHarness;
  let keyOn: string;
  let keyOff: string;
  const api = (method: string, path: string, options: CallOptions = {}) => call(h.baseUrl, method, path, options);

  async function quote(key: string, path: string, body: Record<string, unknown>): Promise<string> {
    const response = await api('POST', path, { key, body });
    assert.equal(response.status, 200, response.text);
    return response.json['quote_id'] as string;
  }

  async function accept(key: string, body: Record<string, unknown>) {
    return api('POST', '/transaction', { key, body });
  }

  /** The partner's list item and webhook event data for a transaction of `user`. */
  async function partnerRecords(key: string, user: string, id: string): Promise<{ listed: Record<string, unknown>; event: Record<string, unknown> }> {
    const listed = await api('GET', `/transactions/list?externalUserId=${encodeURIComponent(user)}`, { key });
    assert.equal(listed.status, 200, listed.text);
    const item = (listed.json['transactions'] as Array<Record<string, unknown>>).find((entry) => entry['id'] === id);
    assert.ok(item, 'the transaction is listed');
    const event = await eventually(async () => {
      const events = await api('GET', '/events?limit=500', { key });
      assert.equal(events.status, 200, events.text);
      const found = (events.json['events'] as Array<{ data: Record<string, unknown> }>).find((entry) => entry.data['id'] === id);
      assert.ok(found, 'the transaction.created event is in the feed');
      return found.data;
    });
    return { listed: item, event };
  }

  before(async () => {
    h = await startServiceHarness();
    keyOn = h.apiKeys[testPartners.kycOn] ?? '';
    keyOff = h.apiKeys[testPartners.kycOff] ?? '';
  });
  after(async () => {
    await h.stop();
  });

  describe('one beneficiary (PIX)', () => {
    test('account_number and a qr_code that pays another key are refused with a reason; nothing is created', async () => {
      const user = 'one-beneficiary-mismatch';
      const response = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuoteBody), user_id: user, account_number: validCpf, qr_code: staticQr(otherCpf) });
      assert.equal(response.status, 400, response.text);
      assert.equal(response.json['code'], 'invalid_request');
      assert.match(response.json['reason'] as string, /different recipients/);
      assert.ok(!response.text.includes(otherCpf) && !response.text.includes(validCpf), 'the reason does not echo the keys');
      const listed = await api('GET', `/transactions/list?externalUserId=${user}`, { key: keyOff });
      assert.equal(listed.json['total'], 0);
    });

    test('the same key in both fields is accepted in any of its written forms, recorded in its normal form', async () => {
      const user = 'one-beneficiary-same';
      const response = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuoteBody), user_id: user, account_number: formattedCpf, qr_code: staticQr(validCpf) });
      assert.equal(response.status, 200, response.text);
      const email = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuoteBody), user_id: user, account_number: ' Maria@Example.COM ', qr_code: staticQr('maria@example.com') });
      assert.equal(email.status, 200, email.text);
      const { listed, event } = await partnerRecords(keyOff, user, response.json['id'] as string);
      assert.equal(listed['accountNumber'], validCpf);
      assert.equal(event['accountNumber'], validCpf);
    });

    test('a QR-only payout shows the key the QR pays as accountNumber in the list and the webhook data', async () => {
      const user = 'one-beneficiary-qr-only';
      const response = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuoteBody), user_id: user, qr_code: staticQr('Maria@Example.com') });
      assert.equal(response.status, 200, response.text);
      const { listed, event } = await partnerRecords(keyOff, user, response.json['id'] as string);
      assert.equal(listed['accountNumber'], 'maria@example.com');
      assert.equal(event['accountNumber'], 'maria@example.com');
    });

    test('a dynamic QR (payload URL) cannot be checked against account_number: refused together, accepted alone', async () => {
      const dynamic = encodeBrCode({ url: 'pix.example.com/qr/v2/9d36b84f', merchantName: 'Loja', merchantCity: 'RIO DE JANEIRO' });
      assert.ok(dynamic.ok);
      const user = 'one-beneficiary-dynamic';
      const both = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuoteBody), user_id: user, account_number: validCpf, qr_code: dynamic.payload });
      assert.equal(both.status, 400, both.text);
      assert.equal(both.json['code'], 'invalid_request');
      assert.match(both.json['reason'] as string, /dynamic/);
      const alone = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuoteBody), user_id: user, qr_code: dynamic.payload });
      assert.equal(alone.status, 200, alone.text);
      const { listed, event } = await partnerRecords(keyOff, user, alone.json['id'] as string);
      assert.equal(listed['accountNumber'], null, 'the key is named only by the charge behind the URL');
      assert.equal(event['accountNumber'], null);
    });
  });

  describe('user ids', () => {
    const invisible: ReadonlyArray<[string, string]> = [
      ['zero-width space', `${blockedUserId}\u200b`],
      ['soft hyphen', 'blocked\u00ad-user'],
      ['word joiner', `blocked\u2060-user`],
      ['right-to-left override', `\u202eresu-dekcolb`],
      ['byte order mark', `\ufeff${blockedUserId}`],
      ['control character', `${blockedUserId}\u0007`],
    ];

    test('invisible, format and control characters are refused with a reason on every route that reads a user id', async () => {
      const quoteId = await quote(keyOn, '/quote', payoutQuoteBody);
      for (const [name, user] of invisible) {
        const accepted = await accept(keyOn, { quote_id: quoteId, user_id: user, account_number: brebMobile });
        assert.equal(accepted.status, 400, `${name}: ${accepted.text}`);
        assert.equal(accepted.json['code'], 'invalid_request', name);
        assert.match(accepted.json['reason'] as string, /^user_id must not contain invisible, formatting or control characters/, name);
        const listed = await api('GET', `/transactions/list?externalUserId=${encodeURIComponent(user)}`, { key: keyOn });
        assert.equal(listed.status, 400, `${name}: ${listed.text}`);
        assert.match(listed.json['reason'] as string, /^externalUserId must not contain/, name);
        const status = await api('GET', `/kyc/status?userId=${encodeURIComponent(user)}`, { key: keyOn });
        assert.equal(status.status, 400, `${name}: ${status.text}`);
        assert.match(status.json['reason'] as string, /^userId must not contain/, name);
        const submitted = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(user) });
        assert.equal(submitted.status, 400, `${name}: ${submitted.text}`);
        assert.match(submitted.json['reason'] as string, /^userId must not contain/, name);
      }
    });

    test('a disabled user is disabled in every Unicode form of its id (NFKC)', async () => {
      const quoteId = await quote(keyOn, '/quote', payoutQuoteBody);
      // Full-width letters and a non-breaking hyphen's compatibility form fold to the ASCII id.
      for (const user of ['ｂｌｏｃｋｅｄ－ｕｓｅｒ', ` ${blockedUserId}\u3000`]) {
        const response = await accept(keyOn, { quote_id: quoteId, user_id: user, account_number: brebMobile });
        assert.equal(response.status, 403, `${JSON.stringify(user)}: ${response.text}`);
        assert.equal(response.json['code'], 'user_disabled');
      }
    });

    test('the KYC gate, the KYC record and the list see one user in NFC, NFD and compatibility forms', async () => {
      const nfc = `jos\u00e9-${randomBytes(3).toString('hex')}`;
      const nfd = nfc.normalize('NFD');
      const wide = nfc.replace('jos', 'ｊｏｓ');
      assert.notEqual(nfc, nfd);
      const reverse = (amount: number) => ({ source_amount: amount, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' });
      const small = await accept(keyOn, { quote_id: await quote(keyOn, '/quote/reverse', reverse(10)), user_id: nfc, account_number: validCpf });
      assert.equal(small.status, 200, small.text);
      assert.equal(small.json['kycRequired'], false);
      // 10 + 20 is past the 25 a month without KYC, whichever form the second request uses.
      const gated = await accept(keyOn, { quote_id: await quote(keyOn, '/quote/reverse', reverse(20)), user_id: nfd, account_number: validCpf });
      assert.equal(gated.status, 200, gated.text);
      assert.equal(gated.json['kycRequired'], true, 'the monthly KYC volume is one counter for every form of the id');

      const listed = await api('GET', `/transactions/list?externalUserId=${encodeURIComponent(wide)}`, { key: keyOn });
      assert.equal(listed.status, 200, listed.text);
      assert.equal(listed.json['total'], 1);
      const status = await api('GET', `/transaction/${small.json['id'] as string}`, { key: keyOn });
      assert.equal(status.json['user_id'], nfc, 'the id is stored and returned in its normal form');

      const kyc = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(nfd) });
      assert.equal(kyc.status, 201, kyc.text);
      assert.deepEqual((await api('GET', `/kyc/status?userId=${encodeURIComponent(wide)}`, { key: keyOn })).json, { hasApproved: true, status: 'APPROVED' });
      const afterKyc = await accept(keyOn, { quote_id: await quote(keyOn, '/quote/reverse', reverse(20)), user_id: wide, account_number: validCpf });
      assert.equal(afterKyc.status, 200, afterKyc.text);
      assert.equal(afterKyc.json['kycRequired'], false, 'the approval recorded under one form counts for the others');
    });
  });

  describe('Idempotency-Key replays ignore the fields the endpoint ignores', () => {
    test('POST /quote, /transaction, /kyc and /sandbox/deposits replay with an unknown field added; a changed known field is still 422', async () => {
      const key = `extra-${randomBytes(6).toString('hex')}`;
      const first = await api('POST', '/quote', { key: keyOff, body: payoutQuoteBody, idempotencyKey: `${key}-q` });
      assert.equal(first.status, 200, first.text);
      const replayed = await api('POST', '/quote', { key: keyOff, body: { ...payoutQuoteBody, client_ref: 'abc', nested: { any: [1, 2] } }, idempotencyKey: `${key}-q` });
      assert.equal(replayed.status, 200, replayed.text);
      assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
      assert.equal(replayed.json['quote_id'], first.json['quote_id']);
      const changed = await api('POST', '/quote', { key: keyOff, body: { ...payoutQuoteBody, amount: 60_000, client_ref: 'abc' }, idempotencyKey: `${key}-q` });
      assert.equal(changed.status, 422, changed.text);

      const user = `replay-${randomBytes(3).toString('hex')}`;
      const body = { quote_id: first.json['quote_id'], user_id: user, account_number: brebMobile };
      const accepted = await api('POST', '/transaction', { key: keyOff, body, idempotencyKey: `${key}-t` });
      assert.equal(accepted.status, 200, accepted.text);
      const acceptedAgain = await api('POST', '/transaction', { key: keyOff, body: { ...body, bank_code: '0007', client_ref: 'abc' }, idempotencyKey: `${key}-t` });
      assert.equal(acceptedAgain.status, 200, acceptedAgain.text);
      assert.equal(acceptedAgain.json['id'], accepted.json['id']);

      const deposit = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: accepted.json['id'] }, idempotencyKey: `${key}-d` });
      assert.equal(deposit.status, 200, deposit.text);
      const depositAgain = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: accepted.json['id'], note: 'x' }, idempotencyKey: `${key}-d` });
      assert.equal(depositAgain.status, 200, depositAgain.text);
      assert.equal(depositAgain.headers.get('idempotent-replayed'), 'true');

      const kycUser = `replay-kyc-${randomBytes(3).toString('hex')}`;
      const kyc = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(kycUser), idempotencyKey: `${key}-k` });
      assert.equal(kyc.status, 201, kyc.text);
      const kycAgain = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(kycUser, { referrer: 'campaign-7' }), idempotencyKey: `${key}-k` });
      assert.equal(kycAgain.status, 201, kycAgain.text);
      assert.equal(kycAgain.headers.get('idempotent-replayed'), 'true');
      const kycChanged = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(kycUser, { city: 'Recife' }), idempotencyKey: `${key}-k` });
      assert.equal(kycChanged.status, 422, kycChanged.text);
    });
  });
});
