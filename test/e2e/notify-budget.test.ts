// POST /payments/notify of deposits that cannot fund their transaction is rate-limited per partner
// (docs/api.md, "Notify budget"): a partner cannot make us verify and refund without bound. Here the
// budget is 3 (NOTIFY_MISMATCH_BURST) refilled at 1 a minute, over the whole service as `npm start`
// wires it, with the sandbox chain; time moves with the service's injected clock.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { base58Encode, call, payoutQuoteBody, untilStatus, type CallOptions } from './support.ts';

let h: ServiceHarness;
let key: string;
let otherKey: string;

before(async () => {
  h = await startServiceHarness({ env: { NOTIFY_MISMATCH_BURST: '3', NOTIFY_MISMATCH_PER_MINUTE: '1' }, extraPartners: 1 });
  key = h.apiKeys[testPartners.kycOff] ?? '';
  otherKey = h.apiKeys[testPartners.kycOn] ?? '';
});

after(async () => {
  await h.stop();
});

async function api(method: string, path: string, options: CallOptions = {}) {
  return call(h.baseUrl, method, path, options);
}

/** A SOLANA payout of `partnerKey`, accepted; returns its id. */
async function solanaPayout(partnerKey: string): Promise<string> {
  const quote = await api('POST', '/quote', { key: partnerKey, body: { ...payoutQuoteBody, network: 'SOLANA' } });
  assert.equal(quote.status, 200, quote.text);
  const accepted = await api('POST', '/transaction', { key: partnerKey, body: { quote_id: quote.json['quote_id'], user_id: `u-${randomBytes(4).toString('hex')}`, account_number: '3001234567' } });
  assert.equal(accepted.status, 200, accepted.text);
  return accepted.json['id'] as string;
}

/** A sandbox transfer to the transaction's deposit address (`amount` or the quoted one); its signature. */
async function transfer(partnerKey: string, id: string, amount?: number): Promise<string> {
  const deposit = await api('POST', '/sandbox/deposits', { key: partnerKey, body: { transaction_id: id, ...(amount === undefined ? {} : { amount }) } });
  assert.equal(deposit.status, 200, deposit.text);
  return deposit.json['on_chain_tx'] as string;
}

async function notify(partnerKey: string, id: string, onChainTx: string) {
  return api('POST', '/payments/notify', { key: partnerKey, body: { blockchain: 'SOLANA', on_chain_tx: onChainTx, transaction_id: id } });
}

test('a notify flood of deposits that cannot fund their transaction gets 429 with Retry-After; nothing is lost, the paying path stays free', async () => {
  const id = await solanaPayout(key);
  // Not final yet / not on chain: the normal retry loop of a partner costs nothing.
  for (let index = 0; index < 5; index += 1) assert.equal((await notify(key, id, base58Encode(randomBytes(64)))).status, 404);
  // The exact payment of an awaiting transaction costs nothing either.
  assert.equal((await notify(key, id, await transfer(key, id))).status, 202);
  await untilStatus(h.baseUrl, key, id, 'PAYMENT_COMPLETED');

  // Strays on a paid transaction: each costs one of the 3.
  for (let index = 0; index < 3; index += 1) assert.equal((await notify(key, id, await transfer(key, id, 1.5))).status, 202);
  const flood = await transfer(key, id, 1.5);
  const refused = await notify(key, id, flood);
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.json['code'], 'rate_limited');
  assert.equal(refused.json['retryable'], true);
  assert.match(String(refused.json['reason']), /notif/i);
  const retryAfterSeconds = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfterSeconds >= 1 && retryAfterSeconds <= 60, `Retry-After ${refused.headers.get('retry-after')}`);
  // Refused before any verification: the transfer is not linked to anything.
  assert.equal(await h.ctx.store.get('deposits', `SOLANA:${flood}`), null);
  // Even a paying notify of this partner waits now (nothing is verified while the budget is spent).
  const second = await solanaPayout(key);
  const payment = await transfer(key, second);
  assert.equal((await notify(key, second, payment)).status, 429);

  // Another partner has its own budget.
  const theirs = await solanaPayout(otherKey);
  assert.equal((await notify(otherKey, theirs, await transfer(otherKey, theirs))).status, 202);

  // Once the delay has passed, the same notifications go through: the deposits were never lost.
  h.advanceClockMs(retryAfterSeconds * 1000);
  assert.equal((await notify(key, second, payment)).status, 202);
  await untilStatus(h.baseUrl, key, second, 'PAYMENT_COMPLETED');
  h.advanceClockMs(60_000);
  assert.equal((await notify(key, id, flood)).status, 202);
});

test('dust and wrong amounts notified for an awaiting transaction are charged too (dust does not end the transaction)', async () => {
  const partnerKey = h.apiKeys[h.extraPartnerIds[0] ?? ''] ?? '';
  await h.rail?.refreshLiquidity(); // the clock moved: a fresh liquidity reading for the acceptance
  const id = await solanaPayout(partnerKey);
  // Below the Solana refund floor: each is recorded as dust and the transaction keeps awaiting.
  for (let index = 0; index < 2; index += 1) assert.equal((await notify(partnerKey, id, await transfer(partnerKey, id, 0.01))).status, 202);
  assert.equal((await api('GET', `/transaction/${id}`, { key: partnerKey })).json['status'], 'AWAITING_PAYMENT');
  // A wrong amount above the floor: WRONG_AMOUNT and a refund, charged too.
  assert.equal((await notify(partnerKey, id, await transfer(partnerKey, id, 1.5))).status, 202);
  await untilStatus(h.baseUrl, partnerKey, id, 'WRONG_AMOUNT');
  const refused = await notify(partnerKey, id, await transfer(partnerKey, id, 0.01));
  assert.equal(refused.status, 429, refused.text);
});
