// The partner REST edge, transactions: POST /transaction with every validation row of the spec,
// disabled users, liquidity and rail outages, expired quotes; reading a transaction and the
// paged list; KYC submissions and the KYC gate.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Keypair as StellarKeypair } from '@stellar/stellar-sdk';
import { Keypair as SolanaKeypair } from '@solana/web3.js';
import { encodeBrCode } from '../../src/rails/brcode.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import { blockedUserId } from '../support/service-harness.ts';
import { kycForm, payoutQuoteBody, type CallOptions } from './support.ts';
import { describePartnerApi, uuidPattern, validCpf, brebMobile, celoAddress, brebLiquidityDefault, liquidityReason, errorShape } from './partner-api-support.ts';

describePartnerApi('transactions and KYC', (svc) => {
  const { api, quote, accept, payout } = svc;

  describe('POST /transaction', () => {
    test('a BREB payout is accepted with deposit instructions and appears in status and list', async () => {
      const quoteId = await quote(svc.keyOff, '/quote', payoutQuoteBody);
      const response = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'alice', account_number: brebMobile, bank_code: '0007', tax_id: '1234567890' });
      assert.equal(response.status, 200, response.text);
      const id = response.json['id'] as string;
      assert.match(id, uuidPattern);
      assert.equal(response.json['kycRequired'], false);
      assert.equal(response.json['transaction_reference'], transactionReference(id));
      const context = response.json['payment_context'] as Record<string, unknown>;
      assert.match(context['depositAddress'] as string, /^G[A-Z2-7]{55}$/, 'a Stellar account');
      assert.deepEqual(context, {
        amount: 12.9470581,
        blockchain: 'STELLAR',
        chainFamily: 'stellar',
        chainId: 'stellar:pubnet',
        cryptoCurrency: 'USDC',
        decimals: 7,
        depositAddress: context['depositAddress'],
        memo: transactionReference(id),
        memoType: 'text',
        mintAddress: null,
        notify: { endpoint: null, required: false },
        rpcUrl: null,
      });

      const status = await api('GET', `/transaction/${id}`, { key: svc.keyOff });
      assert.equal(status.status, 200);
      assert.deepEqual(status.json, {
        id,
        status: 'AWAITING_PAYMENT',
        transaction_reference: transactionReference(id),
        on_chain_tx_hash: null,
        kycRequired: false,
        user_id: 'alice',
      });
      const upper = await api('GET', `/transaction/${id.toUpperCase()}`, { key: svc.keyOff });
      assert.equal(upper.status, 200);
    });

    test('PIX payouts accept a PIX key or a BR Code; the QR must decode', async () => {
      const pixQuote = { amount: 100, crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX', target_currency: 'BRL' };
      const byKey = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote', pixQuote), user_id: 'bruno', account_number: validCpf });
      assert.equal(byKey.status, 200, byKey.text);
      assert.deepEqual((byKey.json['payment_context'] as Record<string, unknown>)['notify'], { endpoint: '/payments/notify', required: true });

      const qr = encodeBrCode({ key: 'maria@example.com', merchantName: 'Maria', merchantCity: 'SAO PAULO' });
      assert.ok(qr.ok);
      const byQr = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote', pixQuote), user_id: 'bruno', qr_code: qr.payload });
      assert.equal(byQr.status, 200, byQr.text);

      const badQr = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote', pixQuote), user_id: 'bruno', qr_code: `${qr.payload.slice(0, -4)}0000` });
      assert.equal(badQr.status, 400);
      errorShape(badQr.json, 'account_unverifiable');

      const otherAmount = encodeBrCode({ key: 'maria@example.com', merchantName: 'Maria', merchantCity: 'SAO PAULO', amount: '99.00' });
      assert.ok(otherAmount.ok);
      const mismatch = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote', pixQuote), user_id: 'bruno', qr_code: otherAmount.payload });
      assert.equal(mismatch.status, 400);
      assert.match(mismatch.json['reason'] as string, /99\.00 BRL/);
    });

    test('onramp: account_number is the destination wallet, checked per network', async () => {
      const wallets: Record<string, [string, string]> = {
        STELLAR: [StellarKeypair.random().publicKey(), 'GABC'],
        SOLANA: [SolanaKeypair.generate().publicKey.toBase58(), '0OIl'],
        // A checksummed wallet (EIP-55's own example); the USDC contract with a broken checksum.
        CELO: ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', celoAddress.replace('ceb', 'CEB')],
      };
      for (const [network, [good, bad]] of Object.entries(wallets)) {
        const body = { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network, payment_method: 'PIX' };
        const accepted = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote/onramp', body), user_id: 'olga', account_number: good });
        assert.equal(accepted.status, 200, `${network}: ${accepted.text}`);
        const refused = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote/onramp', body), user_id: 'olga', account_number: bad });
        assert.equal(refused.status, 400, `${network}: ${refused.text}`);
        errorShape(refused.json, 'account_unverifiable');
        assert.match(refused.json['reason'] as string, /could not be verified/);
      }
    });

    test('the validation rows of the spec', async () => {
      const quoteId = await quote(svc.keyOff, '/quote', payoutQuoteBody);
      const neither = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'carol', account_number: '', qr_code: null });
      assert.equal(neither.status, 400);
      errorShape(neither.json, 'invalid_request');
      assert.match(neither.json['reason'] as string, /account_number or qr_code/);

      const noUser = await accept(svc.keyOff, { quote_id: quoteId, account_number: brebMobile });
      assert.equal(noUser.status, 400);
      assert.equal(noUser.json['reason'], 'user_id is required');

      const badKey = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'carol', account_number: 'not a key!' });
      assert.equal(badKey.status, 400);
      errorShape(badKey.json, 'account_unverifiable');

      const qrOnBreb = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'carol', qr_code: 'abc' });
      assert.equal(qrOnBreb.status, 400);
      assert.match(qrOnBreb.json['reason'] as string, /PIX/);

      const unknownQuote = await accept(svc.keyOff, { quote_id: '00000000-0000-4000-8000-000000000000', user_id: 'carol', account_number: brebMobile });
      assert.equal(unknownQuote.status, 400);
      errorShape(unknownQuote.json, 'quote_not_found');
      const garbageQuote = await accept(svc.keyOff, { quote_id: 'nope', user_id: 'carol', account_number: brebMobile });
      assert.equal(garbageQuote.status, 400);
      errorShape(garbageQuote.json, 'quote_not_found');

      const othersQuote = await accept(svc.keyOn, { quote_id: quoteId, user_id: 'carol', account_number: brebMobile });
      assert.equal(othersQuote.status, 400, 'another partner\'s quote is unknown to this partner');
      errorShape(othersQuote.json, 'quote_not_found');

      const tooLongUser = await accept(svc.keyOff, { quote_id: quoteId, user_id: '@'.repeat(120), account_number: brebMobile });
      assert.equal(tooLongUser.status, 400);
      assert.equal(tooLongUser.json['reason'], 'user_id is too long');
    });

    test('a disabled user gets 403 user_disabled, also on a retry', async () => {
      const quoteId = await quote(svc.keyOn, '/quote', payoutQuoteBody);
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const response = await accept(svc.keyOn, { quote_id: quoteId, user_id: blockedUserId, account_number: brebMobile });
        assert.equal(response.status, 403);
        errorShape(response.json, 'user_disabled');
        assert.equal(response.json['retryable'], false);
      }
    });

    test('liquidity below the quoted amount and a rail outage are 400 with the spec reasons', async () => {
      const quoteId = await quote(svc.keyOff, '/quote', payoutQuoteBody);
      // The sandbox rail holds less than the 50,000 COP quoted.
      await svc.rail.setLiquidity('BREB', '49999.99');
      try {
        const low = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'dave', account_number: brebMobile });
        assert.equal(low.status, 400, low.text);
        errorShape(low.json, 'liquidity_insufficient');
        assert.equal(low.json['reason'], liquidityReason);
        assert.equal(low.json['retryable'], true);
      } finally {
        await svc.rail.setLiquidity('BREB', brebLiquidityDefault);
      }
      await svc.rail.setOutage('BREB', true);
      try {
        const down = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'dave', account_number: brebMobile });
        assert.equal(down.status, 400, down.text);
        errorShape(down.json, 'rail_unavailable');
        assert.equal(down.json['reason'], 'Payments via BREB are temporarily unavailable');
        assert.equal(down.json['retryable'], true);
        const pix = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote', { amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' }), user_id: 'dave', account_number: validCpf });
        assert.equal(pix.status, 200, 'an outage of BREB leaves PIX open');
      } finally {
        await svc.rail.setOutage('BREB', false);
      }
      const fine = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'dave', account_number: brebMobile });
      assert.equal(fine.status, 200, 'the same quote is accepted once the rail is back');
    });

    test('an expired quote is 400 quote_expired', async () => {
      const quoteId = await quote(svc.keyOff, '/quote', payoutQuoteBody);
      svc.harness.advanceClockMs(31 * 60_000);
      try {
        const response = await accept(svc.keyOff, { quote_id: quoteId, user_id: 'erin', account_number: brebMobile });
        assert.equal(response.status, 400);
        errorShape(response.json, 'quote_expired');
      } finally {
        svc.harness.advanceClockMs(-31 * 60_000);
      }
    });
  });

  describe('reading transactions', () => {
    test('another partner\'s transaction, an unknown id and a malformed id are all 404', async () => {
      const id = await payout(svc.keyOff, 'frank');
      for (const [key, path] of [[svc.keyOn, `/transaction/${id}`], [svc.keyOff, '/transaction/00000000-0000-4000-8000-000000000000'], [svc.keyOff, '/transaction/not-a-uuid']] as const) {
        const response = await api('GET', path, { key });
        assert.equal(response.status, 404, path);
        errorShape(response.json, 'not_found');
      }
      assert.equal((await api('GET', `/transaction/${id}`)).status, 401);
    });

    test('GET /transactions/list pages newest first: page 1, 2, last, beyond; sizes 100 and 101', async () => {
      const user = `pager-${svc.busKind}`;
      const ids: string[] = [];
      for (let index = 0; index < 25; index += 1) ids.push(await payout(svc.keyOff, user, 'STELLAR', 'PIX'));
      const newestFirst = [...ids].reverse();
      const page = async (query: string) => api('GET', `/transactions/list?externalUserId=${user}${query}`, { key: svc.keyOff });

      const first = await page('&page=1&pageSize=10');
      assert.equal(first.status, 200);
      assert.equal(first.json['page'], 1);
      assert.equal(first.json['pageSize'], 10);
      assert.equal(first.json['total'], 25);
      const firstItems = first.json['transactions'] as Array<Record<string, unknown>>;
      assert.deepEqual(firstItems.map((item) => item['id']), newestFirst.slice(0, 10));
      const item = firstItems[0] ?? {};
      assert.deepEqual(Object.keys(item).sort(), ['accountNumber', 'id', 'onChainId', 'quote', 'status']);
      assert.equal(item['accountNumber'], validCpf);
      assert.equal(item['onChainId'], null);
      assert.deepEqual(Object.keys(item['quote'] as object).sort(), [
        'cryptoCurrency', 'id', 'network', 'paymentMethod', 'sourceAmount', 'targetAmount', 'targetCurrency',
      ]);
      assert.deepEqual(item['quote'], {
        id: (item['quote'] as Record<string, unknown>)['id'],
        cryptoCurrency: 'USDC',
        network: 'STELLAR',
        paymentMethod: 'PIX',
        sourceAmount: 18.8749767,
        targetAmount: 100,
        targetCurrency: 'BRL',
      });
      assert.ok(!first.text.includes('bankCode') && !first.text.includes('origin') && !first.text.includes('taxId'));

      const second = await page('&page=2&pageSize=10');
      assert.deepEqual((second.json['transactions'] as Array<Record<string, unknown>>).map((entry) => entry['id']), newestFirst.slice(10, 20));
      const last = await page('&page=3&pageSize=10');
      assert.deepEqual((last.json['transactions'] as Array<Record<string, unknown>>).map((entry) => entry['id']), newestFirst.slice(20));
      const beyond = await page('&page=4&pageSize=10');
      assert.deepEqual(beyond.json['transactions'], []);
      assert.equal(beyond.json['total'], 25);

      const defaults = await page('');
      assert.equal(defaults.json['page'], 1);
      assert.equal(defaults.json['pageSize'], 20);
      assert.equal((defaults.json['transactions'] as unknown[]).length, 20);
      const hundred = await page('&pageSize=100');
      assert.equal(hundred.status, 200);
      assert.equal((hundred.json['transactions'] as unknown[]).length, 25);

      for (const bad of ['&pageSize=101', '&pageSize=0', '&page=0', '&page=-1', '&pageSize=abc', '&page=1.5']) {
        const response = await page(bad);
        assert.equal(response.status, 400, bad);
        errorShape(response.json, 'invalid_request');
      }
      const missingUser = await api('GET', '/transactions/list', { key: svc.keyOff });
      assert.equal(missingUser.status, 400);
      assert.equal(missingUser.json['reason'], 'externalUserId is required');
      const otherPartner = await api('GET', `/transactions/list?externalUserId=${user}`, { key: svc.keyOn });
      assert.equal(otherPartner.json['total'], 0);
    });
  });

  describe('KYC', () => {
    test('POST /kyc approves a complete submission; GET /kyc/status reflects it', async () => {
      const user = `kyc-form-${svc.busKind}`;
      assert.deepEqual((await api('GET', `/kyc/status?userId=${user}`, { key: svc.keyOn })).json, { hasApproved: false, status: null });
      const submitted = await api('POST', '/kyc', { key: svc.keyOn, rawBody: kycForm(user) });
      assert.equal(submitted.status, 201, submitted.text);
      assert.deepEqual(submitted.json, { status: 'APPROVED' });
      assert.deepEqual((await api('GET', `/kyc/status?userId=${user}`, { key: svc.keyOn })).json, { hasApproved: true, status: 'APPROVED' });
      assert.deepEqual((await api('GET', `/kyc/status?userId=${user}`, { key: svc.keyOff })).json, { hasApproved: false, status: null });
    });

    test('field, document and media-type errors are 4xx naming the problem', async () => {
      const cases: Array<[string, CallOptions, number, RegExp]> = [
        ['bad e-mail', { rawBody: kycForm('k1', { email: 'not-an-email' }) }, 400, /email/],
        ['future birth date', { rawBody: kycForm('k1', { dateOfBirth: '2999-01-01' }) }, 400, /dateOfBirth/],
        ['missing full name', { rawBody: kycForm('k1', { fullName: null }) }, 400, /fullName is required/],
        ['missing userId', { rawBody: kycForm('k1', { userId: null }) }, 400, /userId is required/],
        ['unknown document type', { rawBody: kycForm('k1', { documentType: 'LIBRARY_CARD' }) }, 400, /documentType/],
        ['no document', { rawBody: kycForm('k1', {}, null) }, 400, /file part/],
        ['bytes that are not the declared type', { rawBody: kycForm('k1', {}, { bytes: new TextEncoder().encode('%PDF-1.7 fake'), type: 'image/png' }) }, 400, /document/],
        ['JSON instead of multipart', { body: { userId: 'k1' } }, 415, /multipart\/form-data/],
      ];
      for (const [name, options, status, reason] of cases) {
        const response = await api('POST', '/kyc', { key: svc.keyOn, ...options });
        assert.equal(response.status, status, `${name}: ${response.text}`);
        assert.match(response.json['reason'] as string, reason, name);
      }
      assert.equal((await api('GET', '/kyc/status?userId=k1', { key: svc.keyOn })).json['status'], null, 'nothing was stored');
    });

    test('KYC gate: past 25 USDC this month → kycRequired, no transaction; after POST /kyc a fresh quote is accepted', async () => {
      const user = `gated-${svc.busKind}`;
      const reverse = (amount: number) => ({ source_amount: amount, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' });
      const small = await accept(svc.keyOn, { quote_id: await quote(svc.keyOn, '/quote/reverse', reverse(10)), user_id: user, account_number: validCpf });
      assert.equal(small.status, 200, small.text);
      assert.equal(small.json['kycRequired'], false);

      const gated = await accept(svc.keyOn, { quote_id: await quote(svc.keyOn, '/quote/reverse', reverse(20)), user_id: user, account_number: validCpf });
      assert.equal(gated.status, 200, gated.text);
      assert.deepEqual(gated.json, { id: null, kycRequired: true, transaction_reference: null, payment_context: null });
      const listed = await api('GET', `/transactions/list?externalUserId=${user}`, { key: svc.keyOn });
      assert.equal(listed.json['total'], 1, 'no transaction was created for the gated request');

      const kyc = await api('POST', '/kyc', { key: svc.keyOn, rawBody: kycForm(user) });
      assert.equal(kyc.status, 201, kyc.text);
      const retried = await accept(svc.keyOn, { quote_id: await quote(svc.keyOn, '/quote/reverse', reverse(20)), user_id: user, account_number: validCpf });
      assert.equal(retried.status, 200, retried.text);
      assert.equal(retried.json['kycRequired'], false);
      assert.match(retried.json['id'] as string, uuidPattern);
    });

    test('a partner without KYC is never gated', async () => {
      const reverse = { source_amount: 40, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' };
      const response = await accept(svc.keyOff, { quote_id: await quote(svc.keyOff, '/quote/reverse', reverse), user_id: 'big-spender', account_number: validCpf });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.json['kycRequired'], false);
    });
  });
});
