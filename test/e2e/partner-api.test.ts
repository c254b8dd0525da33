// The partner REST edge over real HTTP against the whole service as `npm start` wires it (ROLE=all:
// edge, shard workers, watcher, payout worker, webhooks, admin; sandbox chain and sandbox rail),
// once with the in-process bus and once with a private Redis: every endpoint's happy path, the
// whole payout on each network (quote → accept → fund on the sandbox chain → PAYMENT_COMPLETED),
// and every error row of the spec. Conditions come from the real knobs: the sandbox rail's
// liquidity and outages through the admin service, deposits through POST /sandbox/deposits.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Keypair as StellarKeypair } from '@stellar/stellar-sdk';
import { Keypair as SolanaKeypair } from '@solana/web3.js';
import { encodeBrCode } from '../../src/rails/brcode.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import { blockedUserId, startServiceHarness, testPartners, type BusKind, type ServiceHarness, type SandboxRailKnobs } from '../support/service-harness.ts';
import { base58Encode, call, kycForm, payoutQuoteBody, untilStatus, type CallOptions } from './support.ts';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const validCpf = '52998224725';
const brebMobile = '3001234567';
const celoAddress = '0xcebA9300f2b948710d2653dD7B07f33A8B32118C';
/** The sandbox rail's starting BREB liquidity (src/rails/sandbox-rail.ts), restored after a test changes it. */
const brebLiquidityDefault = '1000000000.00';
const liquidityReason = 'Cannot process because liquidity is below the requested amount; try a smaller amount or another method.';

function errorShape(json: Record<string, unknown>, code: string): void {
  assert.equal(json['code'], code, JSON.stringify(json));
  assert.equal(typeof json['reason'], 'string');
  assert.ok((json['reason'] as string).length > 0);
  assert.equal(typeof json['retryable'], 'boolean');
  assert.deepEqual(Object.keys(json).sort(), ['code', 'reason', 'retryable']);
}

for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
  describe(`partner REST edge (${busKind} bus)`, () => {
    let h: ServiceHarness;
    let rail: SandboxRailKnobs;
    let keyOn: string;
    let keyOff: string;
    const api = (method: string, path: string, options: CallOptions = {}) => call(h.baseUrl, method, path, options);

    async function quote(key: string, path: string, body: Record<string, unknown>): Promise<string> {
      const response = await api('POST', path, { key, body });
      assert.equal(response.status, 200, response.text);
      return response.json['quote_id'] as string;
    }

    async function accept(key: string, body: Record<string, unknown>, idempotencyKey?: string) {
      return api('POST', '/transaction', { key, body, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) });
    }

    /** A payout accepted for `userId` (BREB by default; PIX has no daily caps); returns its id. */
    async function payout(key: string, userId: string, network = 'STELLAR', method: 'BREB' | 'PIX' = 'BREB'): Promise<string> {
      const body = method === 'BREB' ? { ...payoutQuoteBody, network } : { amount: 100, crypto_currency: 'USDC', network, payment_method: 'PIX', target_currency: 'BRL' };
      const quoteId = await quote(key, '/quote', body);
      const response = await accept(key, { quote_id: quoteId, user_id: userId, account_number: method === 'BREB' ? brebMobile : validCpf });
      assert.equal(response.status, 200, response.text);
      return response.json['id'] as string;
    }

    /** Funds a payout on the sandbox chain (and notifies, where the network needs it); returns the deposit body. */
    async function fund(key: string, id: string, network: string, amount?: number): Promise<Record<string, unknown>> {
      const deposit = await api('POST', '/sandbox/deposits', { key, body: { transaction_id: id, ...(amount === undefined ? {} : { amount }) } });
      assert.equal(deposit.status, 200, deposit.text);
      if (network !== 'STELLAR') {
        const notified = await api('POST', '/payments/notify', { key, body: { blockchain: network, on_chain_tx: deposit.json['on_chain_tx'], transaction_id: id } });
        assert.equal(notified.status, 202, notified.text);
        assert.deepEqual(notified.json, { enqueued: true });
      }
      return deposit.json;
    }

    before(async () => {
      h = await startServiceHarness({ busKind });
      if (h.rail === null) throw new Error('the service runs no sandbox rail');
      rail = h.rail;
      keyOn = h.apiKeys[testPartners.kycOn] ?? '';
      keyOff = h.apiKeys[testPartners.kycOff] ?? '';
    });
    after(async () => {
      await h.stop();
    });

    describe('discovery and health', () => {
      test('GET /public/corridors needs no key and lists every field of the spec', async () => {
        const response = await api('GET', '/public/corridors');
        assert.equal(response.status, 200);
        const corridors = response.json['corridors'] as Array<Record<string, unknown>>;
        assert.equal(corridors.length, 8);
        for (const corridor of corridors) {
          assert.deepEqual(Object.keys(corridor).sort(), [
            'blockchain', 'chainFamily', 'chainId', 'cryptoCurrency', 'maxAmount', 'minAmount', 'notify', 'paymentMethod', 'targetCurrency', 'walletSession',
          ]);
        }
        const breb = corridors.find((item) => item['blockchain'] === 'STELLAR' && item['paymentMethod'] === 'BREB');
        assert.deepEqual(breb?.['notify'], { endpoint: null, required: false });
        assert.equal(breb?.['minAmount'], 10000);
        assert.equal(breb?.['maxAmount'], 5000000);
      });

      test('GET /healthz and /readyz answer without a key', async () => {
        assert.deepEqual((await api('GET', '/healthz')).json, { status: 'ok' });
        const ready = await api('GET', '/readyz');
        assert.equal(ready.status, 200);
        assert.deepEqual(ready.json, { status: 'ready', store: 'ok', bus: 'ok', shards: 'ok' });
      });

      test('GET /payments/banks no longer exists', async () => {
        const response = await api('GET', '/payments/banks', { key: keyOff });
        assert.equal(response.status, 404);
        errorShape(response.json, 'not_found');
      });
    });

    describe('quotes', () => {
      test('the three quote kinds answer the quote object (X-API-Key and Bearer)', async () => {
        const payoutQuote = await api('POST', '/quote', { key: keyOff, body: payoutQuoteBody });
        assert.equal(payoutQuote.status, 200, payoutQuote.text);
        assert.match(payoutQuote.json['quote_id'] as string, uuidPattern);
        assert.equal(payoutQuote.json['value'], 12.9470581);
        assert.ok((payoutQuote.json['expiration_time'] as number) > Date.now());
        assert.deepEqual(payoutQuote.json['fee'], { amount: '0.1281887', currency: 'USDC', type: 'percentage' });

        const reverse = await api('POST', '/quote/reverse', {
          bearer: keyOff,
          body: { source_amount: 10, crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX', target_currency: 'BRL' },
        });
        assert.equal(reverse.status, 200, reverse.text);
        assert.equal(typeof reverse.json['value'], 'number');
        assert.equal((reverse.json['fee'] as Record<string, unknown>)['currency'], 'USDC');

        const onramp = await api('POST', '/quote/onramp', {
          key: keyOff,
          body: { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network: 'CELO', payment_method: 'PIX' },
        });
        assert.equal(onramp.status, 200, onramp.text);
        assert.deepEqual(Object.keys(onramp.json).sort(), ['expiration_time', 'fee', 'quote_id', 'value']);
      });

      test('every quote error the edge can trigger has the quote error shape', async () => {
        const cases: Array<[string, CallOptions, number, string, RegExp?]> = [
          ['missing key', { body: payoutQuoteBody }, 401, 'authentication_failed'],
          ['unknown key', { key: 'not-a-key-0123456789', body: payoutQuoteBody }, 401, 'authentication_failed'],
          ['missing field', { key: keyOff, body: { ...payoutQuoteBody, network: undefined } }, 400, 'invalid_request', /network is required/],
          ['wrong type', { key: keyOff, body: { ...payoutQuoteBody, network: 7 } }, 400, 'invalid_request', /network must be a string/],
          ['amount as a string', { key: keyOff, body: { ...payoutQuoteBody, amount: '50000' } }, 400, 'invalid_request', /amount must be a number/],
          ['missing amount', { key: keyOff, body: { ...payoutQuoteBody, amount: undefined } }, 400, 'invalid_request', /amount is required/],
          ['negative amount', { key: keyOff, body: { ...payoutQuoteBody, amount: -5 } }, 400, 'invalid_request'],
          ['planned currency', { key: keyOff, body: { ...payoutQuoteBody, target_currency: 'ARS' } }, 400, 'corridor_unavailable'],
          ['method/currency mismatch', { key: keyOff, body: { ...payoutQuoteBody, target_currency: 'BRL' } }, 400, 'corridor_unavailable'],
          ['below the corridor minimum', { key: keyOff, body: { ...payoutQuoteBody, amount: 100 } }, 400, 'minimum', /10000\.00 COP/],
          ['above the corridor maximum', { key: keyOff, body: { ...payoutQuoteBody, amount: 6_000_000 } }, 400, 'maximum', /5000000\.00 COP/],
        ];
        for (const [name, options, status, code, reason] of cases) {
          const response = await api('POST', '/quote', options);
          assert.equal(response.status, status, `${name}: ${response.text}`);
          errorShape(response.json, code);
          if (reason !== undefined) assert.match(response.json['reason'] as string, reason, name);
        }
        const minimum = await api('POST', '/quote', { key: keyOff, body: { ...payoutQuoteBody, amount: 100 } });
        assert.equal(minimum.json['retryable'], false);
      });
    });

    describe('POST /transaction', () => {
      test('a BREB payout is accepted with deposit instructions and appears in status and list', async () => {
        const quoteId = await quote(keyOff, '/quote', payoutQuoteBody);
        const response = await accept(keyOff, { quote_id: quoteId, user_id: 'alice', account_number: brebMobile, bank_code: '0007', tax_id: '1234567890' });
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

        const status = await api('GET', `/transaction/${id}`, { key: keyOff });
        assert.equal(status.status, 200);
        assert.deepEqual(status.json, {
          id,
          status: 'AWAITING_PAYMENT',
          transaction_reference: transactionReference(id),
          on_chain_tx_hash: null,
          kycRequired: false,
          user_id: 'alice',
        });
        const upper = await api('GET', `/transaction/${id.toUpperCase()}`, { key: keyOff });
        assert.equal(upper.status, 200);
      });

      test('PIX payouts accept a PIX key or a BR Code; the QR must decode', async () => {
        const pixQuote = { amount: 100, crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX', target_currency: 'BRL' };
        const byKey = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuote), user_id: 'bruno', account_number: validCpf });
        assert.equal(byKey.status, 200, byKey.text);
        assert.deepEqual((byKey.json['payment_context'] as Record<string, unknown>)['notify'], { endpoint: '/payments/notify', required: true });

        const qr = encodeBrCode({ key: 'maria@example.com', merchantName: 'Maria', merchantCity: 'SAO PAULO' });
        assert.ok(qr.ok);
        const byQr = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuote), user_id: 'bruno', qr_code: qr.payload });
        assert.equal(byQr.status, 200, byQr.text);

        const badQr = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuote), user_id: 'bruno', qr_code: `${qr.payload.slice(0, -4)}0000` });
        assert.equal(badQr.status, 400);
        errorShape(badQr.json, 'account_unverifiable');

        const otherAmount = encodeBrCode({ key: 'maria@example.com', merchantName: 'Maria', merchantCity: 'SAO PAULO', amount: '99.00' });
        assert.ok(otherAmount.ok);
        const mismatch = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', pixQuote), user_id: 'bruno', qr_code: otherAmount.payload });
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
          const accepted = await accept(keyOff, { quote_id: await quote(keyOff, '/quote/onramp', body), user_id: 'olga', account_number: good });
          assert.equal(accepted.status, 200, `${network}: ${accepted.text}`);
          const refused = await accept(keyOff, { quote_id: await quote(keyOff, '/quote/onramp', body), user_id: 'olga', account_number: bad });
          assert.equal(refused.status, 400, `${network}: ${refused.text}`);
          errorShape(refused.json, 'account_unverifiable');
          assert.match(refused.json['reason'] as string, /could not be verified/);
        }
      });

      test('the validation rows of the spec', async () => {
        const quoteId = await quote(keyOff, '/quote', payoutQuoteBody);
        const neither = await accept(keyOff, { quote_id: quoteId, user_id: 'carol', account_number: '', qr_code: null });
        assert.equal(neither.status, 400);
        errorShape(neither.json, 'invalid_request');
        assert.match(neither.json['reason'] as string, /account_number or qr_code/);

        const noUser = await accept(keyOff, { quote_id: quoteId, account_number: brebMobile });
        assert.equal(noUser.status, 400);
        assert.equal(noUser.json['reason'], 'user_id is required');

        const badKey = await accept(keyOff, { quote_id: quoteId, user_id: 'carol', account_number: 'not a key!' });
        assert.equal(badKey.status, 400);
        errorShape(badKey.json, 'account_unverifiable');

        const qrOnBreb = await accept(keyOff, { quote_id: quoteId, user_id: 'carol', qr_code: 'abc' });
        assert.equal(qrOnBreb.status, 400);
        assert.match(qrOnBreb.json['reason'] as string, /PIX/);

        const unknownQuote = await accept(keyOff, { quote_id: '00000000-0000-4000-8000-000000000000', user_id: 'carol', account_number: brebMobile });
        assert.equal(unknownQuote.status, 400);
        errorShape(unknownQuote.json, 'quote_not_found');
        const garbageQuote = await accept(keyOff, { quote_id: 'nope', user_id: 'carol', account_number: brebMobile });
        assert.equal(garbageQuote.status, 400);
        errorShape(garbageQuote.json, 'quote_not_found');

        const othersQuote = await accept(keyOn, { quote_id: quoteId, user_id: 'carol', account_number: brebMobile });
        assert.equal(othersQuote.status, 400, 'another partner\'s quote is unknown to this partner');
        errorShape(othersQuote.json, 'quote_not_found');

        const tooLongUser = await accept(keyOff, { quote_id: quoteId, user_id: '@'.repeat(120), account_number: brebMobile });
        assert.equal(tooLongUser.status, 400);
        assert.equal(tooLongUser.json['reason'], 'user_id is too long');
      });

      test('a disabled user gets 403 user_disabled, also on a retry', async () => {
        const quoteId = await quote(keyOn, '/quote', payoutQuoteBody);
        for (let attempt = 0; attempt < 2; attempt += 1) {
          const response = await accept(keyOn, { quote_id: quoteId, user_id: blockedUserId, account_number: brebMobile });
          assert.equal(response.status, 403);
          errorShape(response.json, 'user_disabled');
          assert.equal(response.json['retryable'], false);
        }
      });

      test('liquidity below the quoted amount and a rail outage are 400 with the spec reasons', async () => {
        const quoteId = await quote(keyOff, '/quote', payoutQuoteBody);
        // The sandbox rail holds less than the 50,000 COP quoted.
        await rail.setLiquidity('BREB', '49999.99');
        try {
          const low = await accept(keyOff, { quote_id: quoteId, user_id: 'dave', account_number: brebMobile });
          assert.equal(low.status, 400, low.text);
          errorShape(low.json, 'liquidity_insufficient');
          assert.equal(low.json['reason'], liquidityReason);
          assert.equal(low.json['retryable'], true);
        } finally {
          await rail.setLiquidity('BREB', brebLiquidityDefault);
        }
        await rail.setOutage('BREB', true);
        try {
          const down = await accept(keyOff, { quote_id: quoteId, user_id: 'dave', account_number: brebMobile });
          assert.equal(down.status, 400, down.text);
          errorShape(down.json, 'rail_unavailable');
          assert.equal(down.json['reason'], 'Payments via BREB are temporarily unavailable');
          assert.equal(down.json['retryable'], true);
          const pix = await accept(keyOff, { quote_id: await quote(keyOff, '/quote', { amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' }), user_id: 'dave', account_number: validCpf });
          assert.equal(pix.status, 200, 'an outage of BREB leaves PIX open');
        } finally {
          await rail.setOutage('BREB', false);
        }
        const fine = await accept(keyOff, { quote_id: quoteId, user_id: 'dave', account_number: brebMobile });
        assert.equal(fine.status, 200, 'the same quote is accepted once the rail is back');
      });

      test('an expired quote is 400 quote_expired', async () => {
        const quoteId = await quote(keyOff, '/quote', payoutQuoteBody);
        h.advanceClockMs(31 * 60_000);
        try {
          const response = await accept(keyOff, { quote_id: quoteId, user_id: 'erin', account_number: brebMobile });
          assert.equal(response.status, 400);
          errorShape(response.json, 'quote_expired');
        } finally {
          h.advanceClockMs(-31 * 60_000);
        }
      });
    });

    describe('the whole payout on each network', () => {
      const cases = [
        { network: 'STELLAR', method: 'BREB', body: payoutQuoteBody, account: brebMobile },
        { network: 'SOLANA', method: 'PIX', body: { amount: 100, crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX', target_currency: 'BRL' }, account: validCpf },
        { network: 'CELO', method: 'BREB', body: { ...payoutQuoteBody, network: 'CELO' }, account: brebMobile },
      ] as const;
      for (const { network, method, body, account } of cases) {
        test(`${network} (${method}): quote → accept → fund${network === 'STELLAR' ? '' : ' → notify'} → PAYMENT_COMPLETED, listed`, async () => {
          const user = `whole-${network.toLowerCase()}-${busKind}`;
          const quoted = await api('POST', '/quote', { key: keyOff, body });
          assert.equal(quoted.status, 200, quoted.text);
          const accepted = await accept(keyOff, { quote_id: quoted.json['quote_id'], user_id: user, account_number: account });
          assert.equal(accepted.status, 200, accepted.text);
          const id = accepted.json['id'] as string;
          const context = accepted.json['payment_context'] as Record<string, unknown>;
          assert.equal(context['amount'], quoted.json['value'], 'payment_context.amount is the quote value');
          assert.equal(context['blockchain'], network);
          assert.deepEqual(context['notify'], network === 'STELLAR' ? { endpoint: null, required: false } : { endpoint: '/payments/notify', required: true });
          assert.equal((await api('GET', `/transaction/${id}`, { key: keyOff })).json['status'], 'AWAITING_PAYMENT');

          const deposit = await fund(keyOff, id, network);
          assert.equal(deposit['deposit_address'], context['depositAddress'], 'funded at the address payment_context gave');
          assert.equal(deposit['amount'], context['amount']);
          const done = await untilStatus(h.baseUrl, keyOff, id, 'PAYMENT_COMPLETED');
          assert.equal(done['on_chain_tx_hash'], deposit['on_chain_tx']);

          const listed = await api('GET', `/transactions/list?externalUserId=${user}`, { key: keyOff });
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

    describe('reading transactions', () => {
      test('another partner\'s transaction, an unknown id and a malformed id are all 404', async () => {
        const id = await payout(keyOff, 'frank');
        for (const [key, path] of [[keyOn, `/transaction/${id}`], [keyOff, '/transaction/00000000-0000-4000-8000-000000000000'], [keyOff, '/transaction/not-a-uuid']] as const) {
          const response = await api('GET', path, { key });
          assert.equal(response.status, 404, path);
          errorShape(response.json, 'not_found');
        }
        assert.equal((await api('GET', `/transaction/${id}`)).status, 401);
      });

      test('GET /transactions/list pages newest first: page 1, 2, last, beyond; sizes 100 and 101', async () => {
        const user = `pager-${busKind}`;
        const ids: string[] = [];
        for (let index = 0; index < 25; index += 1) ids.push(await payout(keyOff, user, 'STELLAR', 'PIX'));
        const newestFirst = [...ids].reverse();
        const page = async (query: string) => api('GET', `/transactions/list?externalUserId=${user}${query}`, { key: keyOff });

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
        const missingUser = await api('GET', '/transactions/list', { key: keyOff });
        assert.equal(missingUser.status, 400);
        assert.equal(missingUser.json['reason'], 'externalUserId is required');
        const otherPartner = await api('GET', `/transactions/list?externalUserId=${user}`, { key: keyOn });
        assert.equal(otherPartner.json['total'], 0);
      });
    });

    describe('KYC', () => {
      test('POST /kyc approves a complete submission; GET /kyc/status reflects it', async () => {
        const user = `kyc-form-${busKind}`;
        assert.deepEqual((await api('GET', `/kyc/status?userId=${user}`, { key: keyOn })).json, { hasApproved: false, status: null });
        const submitted = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(user) });
        assert.equal(submitted.status, 201, submitted.text);
        assert.deepEqual(submitted.json, { status: 'APPROVED' });
        assert.deepEqual((await api('GET', `/kyc/status?userId=${user}`, { key: keyOn })).json, { hasApproved: true, status: 'APPROVED' });
        assert.deepEqual((await api('GET', `/kyc/status?userId=${user}`, { key: keyOff })).json, { hasApproved: false, status: null });
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
          const response = await api('POST', '/kyc', { key: keyOn, ...options });
          assert.equal(response.status, status, `${name}: ${response.text}`);
          assert.match(response.json['reason'] as string, reason, name);
        }
        assert.equal((await api('GET', '/kyc/status?userId=k1', { key: keyOn })).json['status'], null, 'nothing was stored');
      });

      test('KYC gate: past 25 USDC this month → kycRequired, no transaction; after POST /kyc a fresh quote is accepted', async () => {
        const user = `gated-${busKind}`;
        const reverse = (amount: number) => ({ source_amount: amount, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' });
        const small = await accept(keyOn, { quote_id: await quote(keyOn, '/quote/reverse', reverse(10)), user_id: user, account_number: validCpf });
        assert.equal(small.status, 200, small.text);
        assert.equal(small.json['kycRequired'], false);

        const gated = await accept(keyOn, { quote_id: await quote(keyOn, '/quote/reverse', reverse(20)), user_id: user, account_number: validCpf });
        assert.equal(gated.status, 200, gated.text);
        assert.deepEqual(gated.json, { id: null, kycRequired: true, transaction_reference: null, payment_context: null });
        const listed = await api('GET', `/transactions/list?externalUserId=${user}`, { key: keyOn });
        assert.equal(listed.json['total'], 1, 'no transaction was created for the gated request');

        const kyc = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm(user) });
        assert.equal(kyc.status, 201, kyc.text);
        const retried = await accept(keyOn, { quote_id: await quote(keyOn, '/quote/reverse', reverse(20)), user_id: user, account_number: validCpf });
        assert.equal(retried.status, 200, retried.text);
        assert.equal(retried.json['kycRequired'], false);
        assert.match(retried.json['id'] as string, uuidPattern);
      });

      test('a partner without KYC is never gated', async () => {
        const reverse = { source_amount: 40, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' };
        const response = await accept(keyOff, { quote_id: await quote(keyOff, '/quote/reverse', reverse), user_id: 'big-spender', account_number: validCpf });
        assert.equal(response.status, 200, response.text);
        assert.equal(response.json['kycRequired'], false);
      });
    });

    describe('Idempotency-Key', () => {
      test('the same key and body replay the first response; another body is 422', async () => {
        const key = `idem-${randomBytes(6).toString('hex')}`;
        const quoteA = await api('POST', '/quote', { key: keyOff, body: payoutQuoteBody, idempotencyKey: key });
        const quoteB = await api('POST', '/quote', { key: keyOff, body: { ...payoutQuoteBody }, idempotencyKey: key });
        assert.equal(quoteB.status, 200);
        assert.equal(quoteB.json['quote_id'], quoteA.json['quote_id']);
        assert.equal(quoteB.headers.get('idempotent-replayed'), 'true');
        const conflict = await api('POST', '/quote', { key: keyOff, body: { ...payoutQuoteBody, amount: 60_000 }, idempotencyKey: key });
        assert.equal(conflict.status, 422);
        errorShape(conflict.json, 'idempotency_conflict');

        const body = { quote_id: quoteA.json['quote_id'], user_id: 'gina', account_number: brebMobile };
        const first = await accept(keyOff, body, `${key}-tx`);
        const again = await accept(keyOff, { account_number: brebMobile, user_id: 'gina', quote_id: quoteA.json['quote_id'] }, `${key}-tx`);
        assert.equal(first.status, 200);
        assert.equal(again.status, 200);
        assert.equal(again.json['id'], first.json['id']);
        assert.equal(again.text, first.text);
        const listed = await api('GET', '/transactions/list?externalUserId=gina', { key: keyOff });
        assert.equal(listed.json['total'], 1, 'one transaction for two requests');

        const otherPartner = await api('POST', '/quote', { key: keyOn, body: { ...payoutQuoteBody, amount: 70_000 }, idempotencyKey: key });
        assert.equal(otherPartner.status, 200, 'keys are scoped per partner');

        const kycKey = `${key}-kyc`;
        const kycA = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm('idem-kyc'), idempotencyKey: kycKey });
        const kycB = await api('POST', '/kyc', { key: keyOn, rawBody: kycForm('idem-kyc'), idempotencyKey: kycKey });
        assert.equal(kycA.status, 201);
        assert.equal(kycB.status, 201);
        assert.equal(kycB.headers.get('idempotent-replayed'), 'true');

        const malformed = await api('POST', '/quote', { key: keyOff, body: payoutQuoteBody, idempotencyKey: ' ' });
        assert.equal(malformed.status, 400);
      });
    });

    describe('bodies', () => {
      test('413, 415 and malformed JSON are 4xx with a reason', async () => {
        const huge = await api('POST', '/transaction', { key: keyOff, rawBody: JSON.stringify({ pad: 'x'.repeat(70 * 1024) }), headers: { 'content-type': 'application/json' } });
        assert.equal(huge.status, 413);
        errorShape(huge.json, 'payload_too_large');
        const text = await api('POST', '/transaction', { key: keyOff, rawBody: '{}', headers: { 'content-type': 'text/plain' } });
        assert.equal(text.status, 415);
        errorShape(text.json, 'unsupported_media_type');
        const broken = await api('POST', '/quote', { key: keyOff, rawBody: '{"amount":', headers: { 'content-type': 'application/json' } });
        assert.equal(broken.status, 400);
        assert.equal(broken.json['reason'], 'Malformed JSON body');
        const array = await api('POST', '/transaction', { key: keyOff, body: [1, 2] });
        assert.equal(array.status, 400);
        assert.equal(array.json['reason'], 'Request body must be a JSON object');
      });
    });

    describe('payments', () => {
      test('GET /qr-decoder/br decodes a BR Code; garbage is 400', async () => {
        const qr = encodeBrCode({ key: validCpf, merchantName: 'Fulano de Tal', merchantCity: 'BRASILIA', amount: '12.34' });
        assert.ok(qr.ok);
        const decoded = await api('GET', `/qr-decoder/br?qrCode=${encodeURIComponent(qr.payload)}`, { key: keyOff });
        assert.equal(decoded.status, 200);
        assert.deepEqual(decoded.json, { decoded: { account: validCpf, amount: '12.34', currency: 'BRL', name: 'Fulano de Tal', taxId: validCpf } });
        const bad = await api('GET', '/qr-decoder/br?qrCode=hello', { key: keyOff });
        assert.equal(bad.status, 400);
        errorShape(bad.json, 'invalid_request');
        assert.equal((await api('GET', '/qr-decoder/br', { key: keyOff })).status, 400);
        assert.equal((await api('GET', `/qr-decoder/br?qrCode=${encodeURIComponent(qr.payload)}`)).status, 401);
      });

      test('POST /payments/notify: 202 for a Solana or Celo transfer of the partner\'s transaction; the error rows', async () => {
        const solanaTx = await payout(keyOff, 'nina', 'SOLANA');
        const celoTx = await payout(keyOff, 'nina', 'CELO');
        const solanaDeposit = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: solanaTx } });
        assert.equal(solanaDeposit.status, 200, solanaDeposit.text);
        const signature = solanaDeposit.json['on_chain_tx'] as string;
        const notified = await api('POST', '/payments/notify', { key: keyOff, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: solanaTx } });
        assert.equal(notified.status, 202, notified.text);
        assert.deepEqual(notified.json, { enqueued: true });
        const celoDeposit = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: celoTx } });
        assert.equal(celoDeposit.status, 200, celoDeposit.text);
        const hash = celoDeposit.json['on_chain_tx'] as string;
        const perChain = await api('POST', '/celo/payments/notify', { key: keyOff, body: { on_chain_tx: hash, transaction_id: celoTx } });
        assert.equal(perChain.status, 202, perChain.text);
        const solanaDone = await untilStatus(h.baseUrl, keyOff, solanaTx, 'PAYMENT_COMPLETED');
        assert.equal(solanaDone['on_chain_tx_hash'], signature);
        assert.equal((await untilStatus(h.baseUrl, keyOff, celoTx, 'PAYMENT_COMPLETED'))['on_chain_tx_hash'], hash);
        const again = await api('POST', '/payments/notify', { key: keyOff, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: solanaTx } });
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
          const response = await api('POST', '/payments/notify', { key: keyOff, ...options });
          assert.equal(response.status, status, `${name}: ${response.text}`);
          errorShape(response.json, code);
        }
        const othersTx = await api('POST', '/payments/notify', { key: keyOn, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: solanaTx } });
        assert.equal(othersTx.status, 404);

        // A signature the chain has never seen: 404, retryable (it may not be final yet).
        const unpaid = await payout(keyOff, 'nina', 'SOLANA');
        const missing = await api('POST', '/payments/notify', { key: keyOff, body: { blockchain: 'SOLANA', on_chain_tx: base58Encode(randomBytes(64)), transaction_id: unpaid } });
        assert.equal(missing.status, 404, missing.text);
        errorShape(missing.json, 'not_found');
        assert.match(missing.json['reason'] as string, /not found on chain/);
        assert.equal(missing.json['retryable'], true);
        // A real transfer that paid another transaction (at that transaction's own address): 400
        // with the chain's reason.
        const stolen = await api('POST', '/payments/notify', { key: keyOff, body: { blockchain: 'SOLANA', on_chain_tx: signature, transaction_id: unpaid } });
        assert.equal(stolen.status, 400, stolen.text);
        errorShape(stolen.json, 'invalid_request');
        assert.equal(stolen.json['reason'], 'The transaction moves no funds to this transaction\'s deposit address');
        // A real transfer of another amount is accepted for verification (202) and the transaction
        // ends WRONG_AMOUNT (the deposit goes back to its sender).
        const deposit = await fund(keyOff, unpaid, 'SOLANA', 1);
        assert.equal(deposit['amount'], 1);
        await untilStatus(h.baseUrl, keyOff, unpaid, 'WRONG_AMOUNT');
      });

      test('GET /payments/liquidity needs paymentMethod and answers the latest reading', async () => {
        await rail.setLiquidity('BREB', '10000000.00');
        try {
          const breb = await api('GET', '/payments/liquidity?paymentMethod=BREB', { key: keyOff });
          assert.equal(breb.status, 200);
          assert.equal(breb.json['liquidity'], 10_000_000);
          assert.equal(breb.json['success'], true);
          assert.equal(typeof breb.json['message'], 'string');
        } finally {
          await rail.setLiquidity('BREB', brebLiquidityDefault);
        }
        const missing = await api('GET', '/payments/liquidity', { key: keyOff });
        assert.equal(missing.status, 400);
        assert.match(missing.json['reason'] as string, /paymentMethod is required/);
        assert.equal((await api('GET', '/payments/liquidity?paymentMethod=SWIFT', { key: keyOff })).status, 400);

        await rail.setOutage('PIX', true);
        try {
          const down = await api('GET', '/payments/liquidity?paymentMethod=PIX', { key: keyOff });
          assert.equal(down.json['success'], true);
          assert.match(down.json['message'] as string, /Payments via PIX are temporarily unavailable/);
        } finally {
          await rail.setOutage('PIX', false);
        }

        // The edge trusts a reading for 60 s. With the clock moved past that, it has none until the
        // next read. A background read may land between the move and the request; then move again.
        let advancedMs = 0;
        try {
          let none = await api('GET', '/payments/liquidity?paymentMethod=PIX', { key: keyOff });
          for (let attempt = 0; attempt < 3 && none.json['success'] !== false; attempt += 1) {
            h.advanceClockMs(61_000);
            advancedMs += 61_000;
            none = await api('GET', '/payments/liquidity?paymentMethod=PIX', { key: keyOff });
          }
          assert.deepEqual(none.json, { liquidity: 0, message: 'No PIX liquidity reading is available yet', success: false });
        } finally {
          h.advanceClockMs(-advancedMs);
          await rail.refreshLiquidity();
        }
      });

      test('sandbox helpers act on the sandbox chain for the partner\'s own transactions', async () => {
        const id = await payout(keyOff, 'sandy');
        const deposit = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: id, amount: 12.9470581 } });
        assert.equal(deposit.status, 200, deposit.text);
        assert.equal(deposit.json['blockchain'], 'STELLAR');
        assert.equal(deposit.json['amount'], 12.9470581);
        assert.equal(deposit.json['crypto_currency'], 'USDC');
        assert.equal(deposit.json['memo'], transactionReference(id));
        assert.deepEqual(deposit.json['notify'], { endpoint: null, required: false });
        const done = await untilStatus(h.baseUrl, keyOff, id, 'PAYMENT_COMPLETED');
        assert.equal(done['on_chain_tx_hash'], deposit.json['on_chain_tx'], 'the watcher found the memo payment by itself');
        const pix = await api('POST', '/sandbox/pix-payments', { key: keyOff, body: { transaction_id: id } });
        assert.equal(pix.status, 404, pix.text);
        errorShape(pix.json, 'not_found');
        const others = await api('POST', '/sandbox/deposits', { key: keyOn, body: { transaction_id: id } });
        assert.equal(others.status, 404);
        const tooPrecise = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: id, amount: 1.123456789 } });
        assert.equal(tooPrecise.status, 400);
      });
    });

    describe('operations', () => {
      test('POST /ops/transactions/reconcile-hash takes X-OPS-API-KEY only and answers the spec fields', async () => {
        const id = await payout(keyOff, 'oscar');
        const body = { blockchain: 'STELLAR', on_chain_tx: 'ab'.repeat(32), transaction_id: id };
        assert.equal((await api('POST', '/ops/transactions/reconcile-hash', { body })).status, 401);
        assert.equal((await api('POST', '/ops/transactions/reconcile-hash', { key: keyOff, body })).status, 401);
        assert.equal((await api('POST', '/ops/transactions/reconcile-hash', { ops: keyOff, body })).status, 401);
        const unknown = await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, body });
        assert.equal(unknown.status, 200, unknown.text);
        assert.deepEqual(unknown.json, {
          blockchain: 'STELLAR',
          on_chain_tx: 'ab'.repeat(32),
          result: 'notFound',
          transaction_id: id,
          transaction_status: 'AWAITING_PAYMENT',
          reason: unknown.json['reason'],
        });
        assert.match(unknown.json['reason'] as string, /not found on chain/);

        // A Celo transfer the partner never reported: ops link it, the payout runs, and a second
        // reconcile says it is already processed.
        const celoTx = await payout(keyOff, 'oscar', 'CELO');
        const deposit = await api('POST', '/sandbox/deposits', { key: keyOff, body: { transaction_id: celoTx } });
        assert.equal(deposit.status, 200, deposit.text);
        const hash = deposit.json['on_chain_tx'] as string;
        const unresolved = await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, body: { blockchain: 'CELO', on_chain_tx: hash } });
        assert.equal(unresolved.json['result'], 'unresolved', unresolved.text);
        assert.equal(unresolved.json['transaction_id'], null);
        const enqueued = await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, body: { blockchain: 'CELO', on_chain_tx: hash, transaction_id: celoTx } });
        assert.equal(enqueued.status, 200, enqueued.text);
        assert.deepEqual([enqueued.json['result'], enqueued.json['transaction_id'], enqueued.json['reason']], ['enqueued', celoTx, null]);
        await untilStatus(h.baseUrl, keyOff, celoTx, 'PAYMENT_COMPLETED');
        const again = await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, body: { blockchain: 'CELO', on_chain_tx: hash } });
        assert.deepEqual(again.json, { blockchain: 'CELO', on_chain_tx: hash, result: 'alreadyProcessed', transaction_id: celoTx, transaction_status: 'PAYMENT_COMPLETED', reason: null });

        // A payload that does not validate: the spec's `invalid` result, as a 400 with the error fields.
        const invalid = await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, body: { blockchain: 'BITCOIN', on_chain_tx: 'x' } });
        assert.equal(invalid.status, 400);
        assert.deepEqual(
          { ...invalid.json, reason: typeof invalid.json['reason'] },
          { code: 'invalid_request', reason: 'string', retryable: false, blockchain: 'BITCOIN', on_chain_tx: 'x', result: 'invalid', transaction_id: null, transaction_status: null },
        );
        const badHash = await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, body: { blockchain: 'STELLAR', on_chain_tx: 'not-a-hash', transaction_id: 'nope' } });
        assert.deepEqual([badHash.status, badHash.json['result'], badHash.json['transaction_id']], [400, 'invalid', 'nope']);
        errorShape((await api('POST', '/ops/transactions/reconcile-hash', { ops: h.opsApiKey, rawBody: '[1]', headers: { 'content-type': 'application/json' } })).json, 'invalid_request');
      });

      test('GET /metrics (ops key) exposes request counts, latency buckets and gauges', async () => {
        assert.equal((await api('GET', '/metrics')).status, 401);
        assert.equal((await api('GET', '/metrics', { key: keyOff })).status, 401);
        const metrics = await api('GET', '/metrics', { ops: h.opsApiKey });
        assert.equal(metrics.status, 200);
        assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
        assert.match(metrics.text, /edge_http_requests_total\{route="\/quote",method="POST",status="200"\} \d+/);
        assert.match(metrics.text, /edge_http_requests_total\{route="\/quote",method="POST",status="401"\} \d+/);
        assert.match(metrics.text, /edge_http_request_duration_seconds_bucket\{route="\/transaction",le="\+Inf"\} \d+/);
        assert.match(metrics.text, /edge_http_requests_in_flight \d+/);
        assert.match(metrics.text, /edge_actor_requests_pending 0/);
        assert.ok(!metrics.text.includes(keyOff), 'no key in the metrics');
      });
    });

    describe('the method daily cap, on a fresh service (the cap is shared by every partner and test)', () => {
      let fresh: ServiceHarness;
      before(async () => {
        fresh = await startServiceHarness({ busKind });
      });
      after(async () => {
        await fresh.stop();
      });

      test('BREB: five 5,000,000 COP payouts of five users fill the day\'s 25,000,000 COP; the sixth gets the spec reason', async () => {
        const key = fresh.apiKeys[testPartners.kycOff] ?? '';
        const attempt = async (user: string, body: Record<string, unknown>, account: string) => {
          const quoted = await call(fresh.baseUrl, 'POST', '/quote', { key, body });
          assert.equal(quoted.status, 200, quoted.text);
          return call(fresh.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quoted.json['quote_id'], user_id: user, account_number: account } });
        };
        const atMaximum = { ...payoutQuoteBody, amount: 5_000_000 };
        for (let index = 0; index < 5; index += 1) {
          const accepted = await attempt(`cap-${index}`, atMaximum, brebMobile);
          assert.equal(accepted.status, 200, `payout ${index + 1}: ${accepted.text}`);
        }
        const sixth = await attempt('cap-5', atMaximum, brebMobile);
        assert.equal(sixth.status, 400, sixth.text);
        errorShape(sixth.json, 'method_daily_cap');
        assert.equal(sixth.json['reason'], 'BREB reached today\'s payout limit');
        assert.equal(sixth.json['retryable'], false);
        const smallest = await attempt('cap-6', { ...payoutQuoteBody, amount: 10_000 }, brebMobile);
        assert.equal(smallest.status, 400, 'the cap is reached: even the corridor minimum is refused');
        errorShape(smallest.json, 'method_daily_cap');
        const pix = await attempt('cap-7', { amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' }, validCpf);
        assert.equal(pix.status, 200, 'PIX has no internal daily cap');
      });
    });
  });
}
