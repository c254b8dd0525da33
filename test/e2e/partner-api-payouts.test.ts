// The partner REST edge, money moving: the whole payout on each network (quote → accept → fund on
// the sandbox chain → PAYMENT_COMPLETED), BR Code decoding, POST /payments/notify and its error
// rows, the liquidity reading, and the sandbox helpers.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { encodeBrCode } from '../../src/rails/brcode.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import { base58Encode, payoutQuoteBody, untilStatus, type CallOptions } from './support.ts';
import { describePartnerApi, validCpf, brebMobile, brebLiquidityDefault, errorShape } from './partner-api-support.ts';

describePartnerApi('payouts and payments', (svc) => {
  const { api, quote, accept, payout, fund } = svc;

  describe('the whole payout on each network', () => {
    const cases = [
      { network: 'STELLAR', method: 'BREB', body: payoutQuoteBody, account: brebMobile },
      { network: 'SOLANA', method: 'PIX', body: { amount: 100, crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX', target_currency: 'BRL' }, account: validCpf },
      { network: 'CELO', method: 'BREB', body: { ...payoutQuoteBody, network: 'CELO' }, account: brebMobile },
    ] as const;
    for (const { network, method, body, account } of cases) {
      test(`${network} (${method}): quote → accept → fund${network === 'STELLAR' ? '' : ' → notify'} → PAYMENT_COMPLETED, listed`, async () => {
        const user = `whole-${network.toLowerCase()}-${svc.busKind}`;
        const quoted = await api('POST', '/quote', { key: svc.keyOff, body });
        assert.equal(quoted.status, 200, quoted.text);
        const accepted = await accept(svc.keyOff, { quote_id: quoted.json['quote_id'], user_id: user, account_number: account });
        assert.equal(accepted.status, 200, accepted.text);
        const id = accepted.json['id'] as string;
        const context = accepted.json['payment_context'] as Record<string, unknown>;
        assert.equal(context['amount'], quoted.json['value'], 'payment_context.amount is the quote value');
        assert.equal(context['blockchain'], network);
        assert.deepEqual(context['notify'], network === 'STELLAR' ? { endpoint: null, required: false } : { endpoint: '/payments/notify', required: true });
        assert.equal((await api('GET', `/transaction/${id}`, { key: svc.keyOff })).json['status'], 'AWAITING_PAYMENT');

        const deposit = await fund(svc.keyOff, id, network);
        assert.equal(deposit['deposit_address'], context['depositAddress'], 'funded at the address payment_context gave');
        assert.equal(deposit['amount'], context['amount']);
        const done = await untilStatus(svc.harness.baseUrl, svc.keyOff, id, 'PAYMENT_COMPLETED');
        assert.equal(done['on_chain_tx_hash'], deposit['on_chain_tx']);

        const listed = await api('GET', `/transactions/list?externalUserId=${user}`, { key: svc.keyOff });
        assert.equal(listed.status, 200);
        assert.equal(listed.json['total'], 1);
        const [item] = listed.json['transactions'] as Array<Record<string, unknown>>;
        assert.equal(item?.['id'], id);
        assert.equal(item?.['status'], 'PAYMENT_COMPLETED');
        assert.equal(item?.['onChainId'], deposit['on_chain_tx']);
        assert.equal((item?.['quote'] as Record<string, unknown>)['network'], network);
      });
    }
  });

  describe('payments', () => {
    test('GET /qr-decoder/br decodes a BR Code; garbage is 400', async () => {
      const qr = encodeBrCode({ key: validCpf, merchantName: 'Fulano de Tal', merchantCity: 'BRASILIA', amount: '12.34' });
      assert.ok(qr.ok);
      const decoded = await api('GET', `/qr-decoder/br?qrCode=${encodeURIComponent(qr.payload)}`, { key: svc.keyOff });
      assert.equal(decoded.status, 200);
      assert.deepEqual(decoded.json, { decoded: { account: validCpf, amount: '12.34', currency: 'BRL', name: 'Fulano de Tal', taxId: validCpf } });
      const bad = await api('GET', '/qr-decoder/br?qrCode=hello', { key: svc.keyOff });
      assert.equal(bad.status, 400);
      errorShape(bad.json, 'invalid_request');
      assert.equal((await api('GET', '/qr-decoder/br', { key: svc.keyOff })).status, 400);
      assert.equal((await api('GET', `/qr-decoder/br?qrCode=${encodeURIComponent(qr.payload)}`)).status, 401);
    });

    test('POST /payments/notify: 202 for a Solana or Celo transfer of the partner\'s transaction; the error rows', async () => {
      const solanaTx = await payout(svc.keyOff, 'nina', 'SOLANA');
      const celoTx = await payout(svc.keyOff, 'nina', 'CELO');
      const solanaDeposit = await api('POST', '/sandbox/deposits', { key: svc.keyOff, body: { transaction_id: solanaTx } });
      assert.equal(solanaDeposit.status, 200, solanaDeposit.text);
      const signature = solanaDeposit.json['on_chain_tx'] as string;
      const notified = await api('POST', '/payments/notify', { key: svc.keyOff, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: solanaTx } });
      assert.equal(notified.status, 202, notified.text);
      assert.deepEqual(notified.json, { enqueued: true });
      const celoDeposit = await api('POST', '/sandbox/deposits', { key: svc.keyOff, body: { transaction_id: celoTx } });
      assert.equal(celoDeposit.status, 200, celoDeposit.text);
      const hash = celoDeposit.json['on_chain_tx'] as string;
      const perChain = await api('POST', '/celo/payments/notify', { key: svc.keyOff, body: { on_chain_tx: hash, transaction_id: celoTx } });
      assert.equal(perChain.status, 202, perChain.text);
      const solanaDone = await untilStatus(svc.harness.baseUrl, svc.keyOff, solanaTx, 'PAYMENT_COMPLETED');
      assert.equal(solanaDone['on_chain_tx_hash'], signature);
      assert.equal((await untilStatus(svc.harness.baseUrl, svc.keyOff, celoTx, 'PAYMENT_COMPLETED'))['on_chain_tx_hash'], hash);
      const again = await api('POST', '/payments/notify', { key: svc.keyOff, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: solanaTx } });
      assert.equal(again.status, 202, 'notifying a processed transfer again is harmless');

      const rows: Array<[string, CallOptions, number, string]> = [
        ['Stellar', { body: { blockchain: 'STELLAR', on_chain_tx: 'a'.repeat(64), transaction_id: solanaTx } }, 400, 'invalid_request'],
        ['bad signature', { body: { blockchain: 'SOLANA', on_chain_tx: 'xyz', transaction_id: solanaTx } }, 400, 'invalid_request'],
        ['bad hash', { body: { blockchain: 'CELO', on_chain_tx: '0x1234', transaction_id: celoTx } }, 400, 'invalid_request'],
        ['other network', { body: { blockchain: 'CELO', on_chain_tx: hash, transaction_id: solanaTx } }, 400, 'invalid_request'],
        ['unknown transaction', { body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: '00000000-0000-4000-8000-000000000000' } }, 404, 'not_found'],
        ['missing field', { body: { blockchain: 'SOLANA', transaction_id: solanaTx } }, 400, 'invalid_request'],
      ];
      for (const [name, options, status, code] of rows) {
        const response = await api('POST', '/payments/notify', { key: svc.keyOff, ...options });
        assert.equal(response.status, status, `${name}: ${response.text}`);
        errorShape(response.json, code);
      }
      const othersTx = await api('POST', '/payments/notify', { key: svc.keyOn, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: solanaTx } });
      assert.equal(othersTx.status, 404);

      // A signature the chain has never seen: 404, retryable (it may not be final yet).
      const unpaid = await payout(svc.keyOff, 'nina', 'SOLANA');
      const missing = await api('POST', '/payments/notify', { key: svc.keyOff, body: { blockchain: 'SOLANA', on_chain_tx: base58Encode(randomBytes(64)), transaction_id: unpaid } });
      assert.equal(missing.status, 404, missing.text);
      errorShape(missing.json, 'not_found');
      assert.match(missing.json['reason'] as string, /not found on chain/);
      assert.equal(missing.json['retryable'], true);
      // A real transfer that paid another transaction (at that transaction's own address): 400
      // with the chain's reason.
      const stolen = await api('POST', '/payments/notify', { key: svc.keyOff, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: unpaid } });
      assert.equal(stolen.status, 400, stolen.text);
      errorShape(stolen.json, 'invalid_request');
      assert.equal(stolen.json['reason'], 'The transaction moves no funds to this transaction\'s deposit address');
      // A real transfer of another amount is accepted for verification (202) and the transaction
      // ends WRONG_AMOUNT (the deposit goes back to its sender).
      const deposit = await fund(svc.keyOff, unpaid, 'SOLANA', 1);
      assert.equal(deposit['amount'], 1);
      await untilStatus(svc.harness.baseUrl, svc.keyOff, unpaid, 'WRONG_AMOUNT');
    });

    test('GET /payments/liquidity needs paymentMethod and answers the latest reading', async () => {
      await svc.rail.setLiquidity('BREB', '10000000.00');
      try {
        const breb = await api('GET', '/payments/liquidity?paymentMethod=BREB', { key: svc.keyOff });
        assert.equal(breb.status, 200);
        assert.equal(breb.json['liquidity'], 10_000_000);
        assert.equal(breb.json['success'], true);
        assert.equal(typeof breb.json['message'], 'string');
      } finally {
        await svc.rail.setLiquidity('BREB', brebLiquidityDefault);
      }
      const missing = await api('GET', '/payments/liquidity', { key: svc.keyOff });
      assert.equal(missing.status, 400);
      assert.match(missing.json['reason'] as string, /paymentMethod is required/);
      assert.equal((await api('GET', '/payments/liquidity?paymentMethod=SWIFT', { key: svc.keyOff })).status, 400);

      await svc.rail.setOutage('PIX', true);
      try {
        const down = await api('GET', '/payments/liquidity?paymentMethod=PIX', { key: svc.keyOff });
        assert.equal(down.json['success'], true);
        assert.match(down.json['message'] as string, /Payments via PIX are temporarily unavailable/);
      } finally {
        await svc.rail.setOutage('PIX', false);
      }

      // The edge trusts a reading for 60 s. With the clock moved past that, it has none until the
      // next read. A background read may land between the move and the request; then move again.
      let advancedMs = 0;
      try {
        let none = await api('GET', '/payments/liquidity?paymentMethod=PIX', { key: svc.keyOff });
        for (let attempt = 0; attempt < 3 && none.json['success'] !== false; attempt += 1) {
          svc.harness.advanceClockMs(61_000);
          advancedMs += 61_000;
          none = await api('GET', '/payments/liquidity?paymentMethod=PIX', { key: svc.keyOff });
        }
        assert.deepEqual(none.json, { liquidity: 0, message: 'No PIX liquidity reading is available yet', success: false });
      } finally {
        svc.harness.advanceClockMs(-advancedMs);
        await svc.rail.refreshLiquidity();
      }
    });

    test('sandbox helpers act on the sandbox chain for the partner\'s own transactions', async () => {
      const id = await payout(svc.keyOff, 'sandy');
      const deposit = await api('POST', '/sandbox/deposits', { key: svc.keyOff, body: { transaction_id: id, amount: 12.9470581 } });
      assert.equal(deposit.status, 200, deposit.text);
      assert.equal(deposit.json['blockchain'], 'STELLAR');
      assert.equal(deposit.json['amount'], 12.9470581);
      assert.equal(deposit.json['crypto_currency'], 'USDC');
      assert.equal(deposit.json['memo'], transactionReference(id));
      assert.deepEqual(deposit.json['notify'], { endpoint: null, required: false });
      const done = await untilStatus(svc.harness.baseUrl, svc.keyOff, id, 'PAYMENT_COMPLETED');
      assert.equal(done['on_chain_tx_hash'], deposit.json['on_chain_tx'], 'the watcher found the memo payment by itself');
      const pix = await api('POST', '/sandbox/pix-payments', { key: svc.keyOff, body: { transaction_id: id } });
      assert.equal(pix.status, 404, pix.text);
      errorShape(pix.json, 'not_found');
      const others = await api('POST', '/sandbox/deposits', { key: svc.keyOn, body: { transaction_id: id } });
      assert.equal(others.status, 404);
      const tooPrecise = await api('POST', '/sandbox/deposits', { key: svc.keyOff, body: { transaction_id: id, amount: 1.123456789 } });
      assert.equal(tooPrecise.status, 400);
    });
  });
});
