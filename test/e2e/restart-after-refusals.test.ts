// A restart after ordinary use keeps the service answering (issue 19). Counters that answered
// without counting anything — the KYB counter of a partner without KYB approval asked for the
// first time, the KYC month counter of a user past the gate — were once written with no state, and
// that snapshot could not be read back: after a restart the first command for such a counter
// failed again and again, its shard stalled, and every partner's POST /quote answered 500.
// Over HTTP against the whole service on Redis, with a real restart (graceful stop, start on the
// same data and Redis).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, untilStatus, type CallOptions } from './support.ts';

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

/** A PIX payout quote that sends `usdc` (POST /quote/reverse on Stellar); returns its id. */
async function reverseQuote(partnerId: string, usdc: number): Promise<string> {
  const quoted = await api('POST', '/quote/reverse', {
    key: key(partnerId),
    body: { source_amount: usdc, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' },
  });
  assert.equal(quoted.status, 200, quoted.text);
  return quoted.json['quote_id'] as string;
}

async function accept(partnerId: string, quoteId: string, userId: string) {
  return api('POST', '/transaction', { key: key(partnerId), body: { quote_id: quoteId, user_id: userId, account_number: validCpf } });
}

test('after counters answered without counting (first KYB reservation, KYC gate) and a restart, quoting, funding and the caps all still work', { timeout: 180_000 }, async () => {
  // A partner without KYB approval accepts for the first time (its KYB counter is asked for the first time) …
  const funded = await accept(testPartners.kybPending, await reverseQuote(testPartners.kybPending, 20), `u-${randomUUID()}`);
  assert.equal(funded.status, 200, funded.text);
  const fundedId = funded.json['id'] as string;
  // … and a user of a KYC-gated partner goes past the 25 USDC a month allowed without KYC.
  const gatedUser = `gated-${randomUUID()}`;
  const gated = await accept(testPartners.kycOn, await reverseQuote(testPartners.kycOn, 30), gatedUser);
  assert.equal(gated.status, 200, gated.text);
  assert.equal(gated.json['kycRequired'], true);

  await h.restart();

  // Funding the first transaction completes it, which commits it to the partner's KYB counter.
  const deposit = await api('POST', '/sandbox/deposits', { key: key(testPartners.kybPending), body: { transaction_id: fundedId } });
  assert.equal(deposit.status, 200, deposit.text);
  await untilStatus(h.baseUrl, key(testPartners.kybPending), fundedId, 'PAYMENT_COMPLETED', 60_000);

  // Every other partner still quotes (enough quotes to land on every shard of the 8).
  for (let index = 0; index < 24; index += 1) {
    const quoted = await api('POST', '/quote/reverse', {
      key: key(testPartners.kycOff),
      body: { source_amount: 10 + index, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' },
    });
    assert.equal(quoted.status, 200, `quote ${index}: ${quoted.text}`);
  }
  // The gated user's counter answers again: 30 USDC this month already asked for nothing, so a
  // small acceptance passes (the refused 30 was never counted).
  const small = await accept(testPartners.kycOn, await reverseQuote(testPartners.kycOn, 10), gatedUser);
  assert.equal(small.status, 200, small.text);
  assert.equal(small.json['kycRequired'], false);
  // The KYB counter holds the completed 20 USDC: 20 + 81 is past the 100 allowed without KYB.
  const past = await accept(testPartners.kybPending, await reverseQuote(testPartners.kybPending, 81), `u-${randomUUID()}`);
  assert.equal(past.status, 400, past.text);
  assert.equal(past.json['code'], 'kyb_cap');
  assert.equal(past.json['reason'], 'Partner is limited to a total of 100 until KYB is approved');
  const within = await accept(testPartners.kybPending, await reverseQuote(testPartners.kybPending, 80), `u-${randomUUID()}`);
  assert.equal(within.status, 200, within.text);
});
