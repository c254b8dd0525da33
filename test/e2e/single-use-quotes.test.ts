// A quote is accepted at most once. Over real HTTP against the whole service on Redis: a second
// acceptance of a quote (another Idempotency-Key, or none) is refused with a reason that says a new
// quote is needed, while a retry with the first key replays the first answer; acceptances of one
// quote racing each other create exactly one transaction; and an acceptance that creates nothing
// (kycRequired) leaves the quote usable.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, kycForm, payoutQuoteBody, type CallOptions } from './support.ts';

const brebMobile = '3001234567';
const validCpf = '52998224725';

let h: ServiceHarness;

before(async () => {
  h = await startServiceHarness({ busKind: 'redis' });
});

after(async () => {
  await h.stop();
});

function api(method: string, path: string, options: CallOptions = {}) {
  return call(h.baseUrl, method, path, options);
}

function key(partnerId: string): string {
  const value = h.apiKeys[partnerId];
  if (value === undefined) throw new Error(`no key for ${partnerId}`);
  return value;
}

async function quote(partnerId: string, path: string, body: Record<string, unknown>): Promise<string> {
  const quoted = await api('POST', path, { key: key(partnerId), body });
  assert.equal(quoted.status, 200, quoted.text);
  return quoted.json['quote_id'] as string;
}

function accept(partnerId: string, body: Record<string, unknown>, idempotencyKey?: string) {
  return api('POST', '/transaction', { key: key(partnerId), body, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) });
}

async function transactionsOf(partnerId: string, userId: string): Promise<number> {
  const listed = await api('GET', `/transactions/list?externalUserId=${encodeURIComponent(userId)}`, { key: key(partnerId) });
  assert.equal(listed.status, 200, listed.text);
  return listed.json['total'] as number;
}

function idemKey(): string {
  return `k-${randomBytes(8).toString('hex')}`;
}

describe('single-use quotes', () => {
  test('a second acceptance of a quote is refused (400, a new quote is needed); the first Idempotency-Key still replays', async () => {
    const user = `once-${randomUUID()}`;
    const quoteId = await quote(testPartners.kycOff, '/quote', payoutQuoteBody);
    const body = { quote_id: quoteId, user_id: user, account_number: brebMobile };
    const firstKey = idemKey();
    const first = await accept(testPartners.kycOff, body, firstKey);
    assert.equal(first.status, 200, first.text);
    const id = first.json['id'] as string;

    for (const [name, attempt] of [
      ['another Idempotency-Key', () => accept(testPartners.kycOff, body, idemKey())],
      ['no Idempotency-Key', () => accept(testPartners.kycOff, body)],
      ['another user and recipient', () => accept(testPartners.kycOff, { quote_id: quoteId, user_id: `${user}-2`, account_number: '3009876543' }, idemKey())],
    ] as const) {
      const again = await attempt();
      assert.equal(again.status, 400, `${name}: ${again.text}`);
      assert.deepEqual(Object.keys(again.json).sort(), ['code', 'reason', 'request_id', 'retryable']);
      assert.equal(again.json['code'], 'quote_used', name);
      assert.equal(again.json['retryable'], false, name);
      assert.equal(again.json['reason'], `The quote was already accepted (transaction ${id}); request a new quote`, name);
    }

    const replayed = await accept(testPartners.kycOff, body, firstKey);
    assert.equal(replayed.status, 200);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.equal(replayed.text, first.text, 'the first answer, byte for byte');
    assert.equal(await transactionsOf(testPartners.kycOff, user), 1);
    assert.equal(await transactionsOf(testPartners.kycOff, `${user}-2`), 0);
  });

  test('acceptances of one quote racing each other (different keys): exactly one transaction', async () => {
    for (let round = 0; round < 4; round += 1) {
      const user = `race-${round}-${randomUUID()}`;
      const quoteId = await quote(testPartners.kycOff, '/quote', { amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' });
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => accept(testPartners.kycOff, { quote_id: quoteId, user_id: user, account_number: validCpf }, idemKey())),
      );
      const accepted = answers.filter((answer) => answer.status === 200);
      assert.equal(accepted.length, 1, `round ${round}: ${answers.map((answer) => answer.text).join('\n')}`);
      for (const refused of answers.filter((answer) => answer.status !== 200)) {
        assert.equal(refused.status, 400, refused.text);
        // Refused while the winner's acceptance was still running, or after it created its transaction.
        assert.ok(['quote_used', 'quote_in_use'].includes(refused.json['code'] as string), refused.text);
        assert.match(refused.json['reason'] as string, /new quote/);
      }
      assert.equal(await transactionsOf(testPartners.kycOff, user), 1, `round ${round}`);
    }
  });

  test('an acceptance that creates no transaction (kycRequired) leaves the quote usable: after KYC the same quote is accepted once', async () => {
    const user = `kyc-${randomUUID()}`;
    const reverse = { source_amount: 30, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' };
    const quoteId = await quote(testPartners.kycOn, '/quote/reverse', reverse);
    const body = { quote_id: quoteId, user_id: user, account_number: validCpf };
    const gated = await accept(testPartners.kycOn, body, idemKey());
    assert.equal(gated.status, 200, gated.text);
    assert.deepEqual(gated.json, { id: null, kycRequired: true, transaction_reference: null, payment_context: null });

    const kyc = await api('POST', '/kyc', { key: key(testPartners.kycOn), rawBody: kycForm(user) });
    assert.equal(kyc.status, 201, kyc.text);
    const accepted = await accept(testPartners.kycOn, body, idemKey());
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.json['kycRequired'], false);
    const again = await accept(testPartners.kycOn, body, idemKey());
    assert.equal(again.status, 400, again.text);
    assert.equal(again.json['code'], 'quote_used');
    assert.equal(await transactionsOf(testPartners.kycOn, user), 1);
  });
});
