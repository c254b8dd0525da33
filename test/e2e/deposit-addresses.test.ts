// Per-transaction deposit addresses on Solana and Celo, over real HTTP against the whole service
// (ROLE=all, sandbox chain and rail). With one shared deposit address, nothing tied a transfer to
// the transaction a partner named in POST /payments/notify: partner B could watch the chain, quote
// the exact amount partner A had just sent, and notify A's transfer for B's own transaction — B's
// recipient was paid with A's money, and A's transaction expired unfunded. Each transaction now
// has its own address, and a transfer funds a transaction only if it reached that address.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody, untilStatus, type CallOptions } from './support.ts';

const brebMobile = '3001234567';

describe('per-transaction deposit addresses (sandbox chain, over HTTP)', () => {
  let h: ServiceHarness;
  let keyA: string;
  let keyB: string;
  const api = (method: string, path: string, options: CallOptions = {}) => call(h.baseUrl, method, path, options);

  before(async () => {
    h = await startServiceHarness();
    keyA = h.apiKeys[testPartners.kycOff] ?? '';
    keyB = h.apiKeys[testPartners.kycOn] ?? '';
  });
  after(async () => {
    await h.stop();
  });

  async function accepted(key: string, quotePath: string, body: Record<string, unknown>, userId: string): Promise<{ id: string; context: Record<string, unknown> }> {
    const quoted = await api('POST', quotePath, { key, body });
    assert.equal(quoted.status, 200, quoted.text);
    const response = await api('POST', '/transaction', { key, body: { quote_id: quoted.json['quote_id'], user_id: userId, account_number: brebMobile } });
    assert.equal(response.status, 200, response.text);
    return { id: response.json['id'] as string, context: response.json['payment_context'] as Record<string, unknown> };
  }

  for (const network of ['SOLANA', 'CELO'] as const) {
    test(`${network}: another partner cannot claim a transfer by notifying it for its own transaction of the same amount`, async () => {
      // Partner A's transaction, funded at the address its payment_context gave.
      const a = await accepted(keyA, '/quote', { ...payoutQuoteBody, network }, `victim-${network}`);
      const deposit = await api('POST', '/sandbox/deposits', { key: keyA, body: { transaction_id: a.id } });
      assert.equal(deposit.status, 200, deposit.text);
      assert.equal(deposit.json['deposit_address'], a.context['depositAddress'], 'funded at A\'s own address');
      const transfer = deposit.json['on_chain_tx'] as string;

      // Partner B saw the transfer on chain and quotes exactly its amount.
      const b = await accepted(keyB, '/quote/reverse', {
        source_amount: a.context['amount'], crypto_currency: 'USDC', network, payment_method: 'BREB', target_currency: 'COP',
      }, `thief-${network}`);
      assert.equal(b.context['amount'], a.context['amount'], 'the same amount to send');
      assert.notEqual(b.context['depositAddress'], a.context['depositAddress'], 'each transaction has its own address');

      const stolen = await api('POST', '/payments/notify', { key: keyB, body: { blockchain: network, on_chain_tx: transfer, transaction_id: b.id } });
      assert.equal(stolen.status, 400, stolen.text);
      assert.equal(stolen.json['code'], 'invalid_request');
      assert.match(stolen.json['reason'] as string, /deposit address/);

      const own = await api('POST', '/payments/notify', { key: keyA, body: { blockchain: network, on_chain_tx: transfer, transaction_id: a.id } });
      assert.equal(own.status, 202, own.text);
      const done = await untilStatus(h.baseUrl, keyA, a.id, 'PAYMENT_COMPLETED');
      assert.equal(done['on_chain_tx_hash'], transfer);

      const untouched = await api('GET', `/transaction/${b.id}`, { key: keyB });
      assert.equal(untouched.json['status'], 'AWAITING_PAYMENT', 'B is not paid');
      assert.equal(untouched.json['on_chain_tx_hash'], null);
    });
  }
});
