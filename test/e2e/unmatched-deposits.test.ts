// Unmatched deposits a partner can act on (docs/unmatched-deposits.md), over HTTP against the whole
// service on the sandbox chain and rail: an expired payout's late deposit shows up as the partner's
// unmatched deposit (404 for another partner); two concurrent refund calls refund it once, to its
// sender; another is applied to a fresh quote and the new transaction completes (the payout
// happens) with no new transfer; an open one nobody decides on is refunded when its hold ends.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { decimalFromExactString, toFixedString } from '../../src/domain/money.ts';
import { unmatchedHoldMsDefault } from '../../src/domain/unmatched-deposits.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody, untilStatus, type CallOptions } from './support.ts';

let h: ServiceHarness;
let key: string;
let otherKey: string;

before(async () => {
  h = await startServiceHarness();
  key = h.apiKeys[testPartners.kycOff] ?? '';
  otherKey = h.apiKeys[testPartners.kycOn] ?? '';
  await expirePayouts();
});

after(async () => {
  await h?.stop();
});

async function api(method: string, path: string, options: CallOptions = {}) {
  return call(h.baseUrl, method, path, { key, ...options });
}

function chain(): SandboxChain {
  return new SandboxChain({ store: h.ctx.store, clock: { nowMs: () => Date.now() }, setups: [] });
}

/** A Stellar payout of the partner, accepted; its id and its quote's expiry. */
async function acceptPayout(): Promise<{ id: string; expiresAtMs: number }> {
  await h.rail?.refreshLiquidity(); // the clock may have moved: a fresh liquidity reading for the acceptance
  const quote = await api('POST', '/quote', { body: payoutQuoteBody });
  assert.equal(quote.status, 200, quote.text);
  const accepted = await api('POST', '/transaction', { body: { quote_id: quote.json['quote_id'], user_id: `u-${randomUUID()}`, account_number: '3001234567' } });
  assert.equal(accepted.status, 200, accepted.text);
  return { id: String(accepted.json['id']), expiresAtMs: Number(quote.json['expiration_time']) };
}

/**
 * Three payouts of the partner expire unpaid: the clock moves past their quotes' expiry, and the
 * service restarts as an operator would, so their expiry timers are armed from the moved clock
 * (a timer already armed waits on a real timer from the clock it was armed with).
 */
let expired: string[] = [];
async function expirePayouts(): Promise<void> {
  const accepted = [await acceptPayout(), await acceptPayout(), await acceptPayout()];
  const latest = Math.max(...accepted.map((payout) => payout.expiresAtMs));
  h.advanceClockMs(Math.max(0, latest - h.ctx.clock.nowMs()) + 1_000);
  await h.restart();
  for (const { id } of accepted) await untilStatus(h.baseUrl, key, id, 'PAYMENT_EXPIRED');
  expired = accepted.map((payout) => payout.id);
}

/** Pays an expired payout late (sandbox chain, memo); its unmatched deposit once it shows. */
async function lateDeposit(): Promise<{ transactionId: string; deposit: Record<string, unknown>; sender: string; amount: string }> {
  const id = expired.shift();
  assert.ok(id !== undefined, 'an expired payout is left');
  const paid = await api('POST', '/sandbox/deposits', { body: { transaction_id: id } });
  assert.equal(paid.status, 200, paid.text);
  const deposit = await eventually(async () => {
    const listed = await api('GET', '/unmatched-deposits/list?state=open&network=STELLAR');
    assert.equal(listed.status, 200, listed.text);
    const found = (listed.json['unmatched_deposits'] as Array<Record<string, unknown>>).find((item) => item['transaction_id'] === id);
    assert.ok(found, 'the late deposit is listed');
    return found;
  }, 20_000);
  return { transactionId: id, deposit, sender: String(paid.json['sender']), amount: String(paid.json['amount']) };
}

test("an expired payout's late deposit is the partner's unmatched deposit (404 for another partner), refunded once by two concurrent calls", async () => {
  const { transactionId, deposit, sender, amount } = await lateDeposit();
  const id = String(deposit['id']);
  assert.equal(deposit['state'], 'open');
  assert.equal(deposit['reason'], 'deposit_late');
  assert.equal(deposit['sender'], sender);
  assert.equal(typeof deposit['hash'], 'string');
  assert.equal(decimalFromExactString(String(deposit['amount'])).units > 0n, true);
  assert.equal(Number(deposit['amount']), Number(amount));
  assert.equal(deposit['partner_id'], testPartners.kycOff);
  assert.equal(typeof deposit['hold_ends_at'], 'number');
  // The expired transaction is unchanged: it did not take or refund the deposit.
  assert.equal((await api('GET', `/transaction/${transactionId}`)).json['status'], 'PAYMENT_EXPIRED');

  // Another partner cannot see it, list it, refund it or apply it.
  assert.equal((await api('GET', `/unmatched-deposit/${id}`, { key: otherKey })).status, 404);
  assert.equal((await api('POST', `/unmatched-deposit/${id}/refund`, { key: otherKey })).status, 404);
  const theirs = await api('GET', '/unmatched-deposits/list', { key: otherKey });
  assert.ok(!(theirs.json['unmatched_deposits'] as Array<Record<string, unknown>>).some((item) => item['id'] === id));
  assert.equal((await api('GET', `/unmatched-deposit/${id}`)).json['state'], 'open');

  const [first, second] = await Promise.all([
    api('POST', `/unmatched-deposit/${id}/refund`, { idempotencyKey: randomUUID() }),
    api('POST', `/unmatched-deposit/${id}/refund`, { idempotencyKey: randomUUID() }),
  ]);
  assert.deepEqual([first.status, second.status], [200, 200], `${first.text} ${second.text}`);
  for (const answer of [first, second]) assert.ok(['refunding', 'refunded'].includes(String(answer.json['state'])), answer.text);
  const refunded = await eventually(async () => {
    const got = await api('GET', `/unmatched-deposit/${id}`);
    assert.equal(got.json['state'], 'refunded');
    return got.json;
  }, 20_000);
  assert.equal(typeof refunded['refund_hash'], 'string');
  // The whole deposit went back to its sender; a third call changes nothing. (That the two calls
  // wrote one refund row between them is the deposit actor's, test/unit/unmatched-deposits.test.ts.)
  const refund = await chain().transfer('STELLAR', String(refunded['refund_hash']));
  assert.equal(refund?.destination, sender, 'back to the sender');
  assert.equal(refund?.kind, 'send');
  assert.equal(toFixedString(refund.amount), toFixedString(decimalFromExactString(String(deposit['amount']))));
  const again = await api('POST', `/unmatched-deposit/${id}/refund`, { idempotencyKey: randomUUID() });
  assert.deepEqual([again.status, again.json['state'], again.json['refund_hash']], [200, 'refunded', refunded['refund_hash']]);
  // A refunded deposit cannot be applied.
  const quote = await api('POST', '/quote/reverse', { body: { ...reverseQuoteBody(String(deposit['amount'])) } });
  const applied = await api('POST', `/unmatched-deposit/${id}/apply`, { body: { quote_id: quote.json['quote_id'], user_id: 'u-late', account_number: '3001234567' } });
  assert.deepEqual([applied.status, applied.json['code']], [409, 'unmatched_deposit_not_open']);
});

function reverseQuoteBody(sourceAmount: string): Record<string, unknown> {
  const { amount: _amount, ...route } = payoutQuoteBody;
  return { ...route, source_amount: Number(sourceAmount) };
}

test('a late deposit applied to a fresh quote funds a new transaction that completes (payout made, no new transfer)', async () => {
  const { transactionId, deposit } = await lateDeposit();
  const id = String(deposit['id']);
  const user = `u-${randomUUID()}`;
  // A quote for another amount does not fit: the deposit must fund the transaction exactly.
  const other = await api('POST', '/quote/reverse', { body: reverseQuoteBody((Number(deposit['amount']) + 1).toString()) });
  assert.equal(other.status, 200, other.text);
  const mismatch = await api('POST', `/unmatched-deposit/${id}/apply`, { body: { quote_id: other.json['quote_id'], user_id: user, account_number: '3001234567' } });
  assert.deepEqual([mismatch.status, mismatch.json['code']], [400, 'deposit_quote_mismatch'], mismatch.text);
  // Another partner's quote is not found; the deposit stays open.
  const foreign = await api('POST', '/quote/reverse', { key: otherKey, body: reverseQuoteBody(String(deposit['amount'])) });
  const refused = await api('POST', `/unmatched-deposit/${id}/apply`, { body: { quote_id: foreign.json['quote_id'], user_id: user, account_number: '3001234567' } });
  assert.deepEqual([refused.status, refused.json['code']], [400, 'quote_not_found']);

  const quote = await api('POST', '/quote/reverse', { body: reverseQuoteBody(String(deposit['amount'])) });
  assert.equal(quote.status, 200, quote.text);
  const body = { quote_id: quote.json['quote_id'], user_id: user, account_number: '3001234567' };
  const idempotencyKey = randomUUID();
  const applied = await api('POST', `/unmatched-deposit/${id}/apply`, { body, idempotencyKey });
  assert.equal(applied.status, 200, applied.text);
  assert.equal(applied.json['state'], 'applied');
  const newId = String(applied.json['applied_to']);
  assert.notEqual(newId, transactionId);
  const done = await untilStatus(h.baseUrl, key, newId, 'PAYMENT_COMPLETED');
  assert.equal(done['on_chain_tx_hash'], deposit['hash'], 'funded by the late deposit itself');
  // A retry with the same key replays the answer; a refund now is refused; the quote is used.
  const replay = await api('POST', `/unmatched-deposit/${id}/apply`, { body, idempotencyKey });
  assert.deepEqual([replay.status, replay.json['applied_to']], [200, newId]);
  const refund = await api('POST', `/unmatched-deposit/${id}/refund`);
  assert.deepEqual([refund.status, refund.json['code']], [409, 'unmatched_deposit_not_open']);
  assert.equal((await api('GET', `/unmatched-deposits/list?state=applied`)).json['total'] as number >= 1, true);
});

test('an open deposit nobody decides on is refunded when its hold ends', async () => {
  const { deposit } = await lateDeposit();
  const id = String(deposit['id']);
  // As for the expiry: the hold's timer is armed from the moved clock once the service restarts.
  h.advanceClockMs(unmatchedHoldMsDefault + 1_000);
  await h.restart();
  const refunded = await eventually(async () => {
    const got = await api('GET', `/unmatched-deposit/${id}`);
    assert.equal(got.json['state'], 'refunded');
    return got.json;
  }, 30_000);
  assert.equal(typeof refunded['refund_hash'], 'string');
  assert.equal(refunded['hold_ends_at'], null);
});
