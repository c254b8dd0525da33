// The partner REST edge, discovery and request handling: corridors and health without a key, the
// three quote kinds and every quote error, Idempotency-Key replays, and bodies the edge refuses.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { kycForm, payoutQuoteBody, type CallOptions } from './support.ts';
import { describePartnerApi, uuidPattern, brebMobile, errorShape } from './partner-api-support.ts';

describePartnerApi('discovery, quotes, idempotency, bodies', (svc) => {
  const { api, quote, accept } = svc;

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
      const response = await api('GET', '/payments/banks', { key: svc.keyOff });
      assert.equal(response.status, 404);
      errorShape(response.json, 'not_found');
    });
  });

  describe('quotes', () => {
    test('the three quote kinds answer the quote object (X-API-Key and Bearer)', async () => {
      const payoutQuote = await api('POST', '/quote', { key: svc.keyOff, body: payoutQuoteBody });
      assert.equal(payoutQuote.status, 200, payoutQuote.text);
      assert.match(payoutQuote.json['quote_id'] as string, uuidPattern);
      assert.equal(payoutQuote.json['value'], 12.9470581);
      assert.ok((payoutQuote.json['expiration_time'] as number) > Date.now());
      assert.deepEqual(payoutQuote.json['fee'], { amount: '0.1281887', currency: 'USDC', type: 'percentage' });

      const reverse = await api('POST', '/quote/reverse', {
        bearer: svc.keyOff,
        body: { source_amount: 10, crypto_currency: 'USDC', network: 'SOLANA', payment_method: 'PIX', target_currency: 'BRL' },
      });
      assert.equal(reverse.status, 200, reverse.text);
      assert.equal(typeof reverse.json['value'], 'number');
      assert.equal((reverse.json['fee'] as Record<string, unknown>)['currency'], 'USDC');

      const onramp = await api('POST', '/quote/onramp', {
        key: svc.keyOff,
        body: { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network: 'CELO', payment_method: 'PIX' },
      });
      assert.equal(onramp.status, 200, onramp.text);
      assert.deepEqual(Object.keys(onramp.json).sort(), ['expiration_time', 'fee', 'quote_id', 'value']);
    });

    test('every quote error the edge can trigger has the quote error shape', async () => {
      const cases: Array<[string, CallOptions, number, string, RegExp?]> = [
        ['missing key', { body: payoutQuoteBody }, 401, 'authentication_failed'],
        ['unknown key', { key: 'not-a-key-0123456789', body: payoutQuoteBody }, 401, 'authentication_failed'],
        ['missing field', { key: svc.keyOff, body: { ...payoutQuoteBody, network: undefined } }, 400, 'invalid_request', /network is required/],
        ['wrong type', { key: svc.keyOff, body: { ...payoutQuoteBody, network: 7 } }, 400, 'invalid_request', /network must be a string/],
        ['amount as a string', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: '50000' } }, 400, 'invalid_request', /amount must be a number/],
        ['missing amount', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: undefined } }, 400, 'invalid_request', /amount is required/],
        ['negative amount', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: -5 } }, 400, 'invalid_request'],
        ['planned currency', { key: svc.keyOff, body: { ...payoutQuoteBody, target_currency: 'ARS' } }, 400, 'corridor_unavailable'],
        ['method/currency mismatch', { key: svc.keyOff, body: { ...payoutQuoteBody, target_currency: 'BRL' } }, 400, 'corridor_unavailable'],
        ['below the corridor minimum', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: 100 } }, 400, 'minimum', /10000\.00 COP/],
        ['above the corridor maximum', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: 6_000_000 } }, 400, 'maximum', /5000000\.00 COP/],
      ];
      for (const [name, options, status, code, reason] of cases) {
        const response = await api('POST', '/quote', options);
        assert.equal(response.status, status, `${name}: ${response.text}`);
        errorShape(response.json, code);
        if (reason !== undefined) assert.match(response.json['reason'] as string, reason, name);
      }
      const minimum = await api('POST', '/quote', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: 100 } });
      assert.equal(minimum.json['retryable'], false);
    });
  });

  describe('Idempotency-Key', () => {
    test('the same key and body replay the first response; another body is 422', async () => {
      const key = `idem-${randomBytes(6).toString('hex')}`;
      const quoteA = await api('POST', '/quote', { key: svc.keyOff, body: payoutQuoteBody, idempotencyKey: key });
      const quoteB = await api('POST', '/quote', { key: svc.keyOff, body: { ...payoutQuoteBody }, idempotencyKey: key });
      assert.equal(quoteB.status, 200);
      assert.equal(quoteB.json['quote_id'], quoteA.json['quote_id']);
      assert.equal(quoteB.headers.get('idempotent-replayed'), 'true');
      const conflict = await api('POST', '/quote', { key: svc.keyOff, body: { ...payoutQuoteBody, amount: 60_000 }, idempotencyKey: key });
      assert.equal(conflict.status, 422);
      errorShape(conflict.json, 'idempotency_conflict');

      const body = { quote_id: quoteA.json['quote_id'], user_id: 'gina', account_number: brebMobile };
      const first = await accept(svc.keyOff, body, `${key}-tx`);
      const again = await accept(svc.keyOff, { account_number: brebMobile, user_id: 'gina', quote_id: quoteA.json['quote_id'] }, `${key}-tx`);
      assert.equal(first.status, 200);
      assert.equal(again.status, 200);
      assert.equal(again.json['id'], first.json['id']);
      assert.equal(again.text, first.text);
      const listed = await api('GET', '/transactions/list?externalUserId=gina', { key: svc.keyOff });
      assert.equal(listed.json['total'], 1, 'one transaction for two requests');

      const otherPartner = await api('POST', '/quote', { key: svc.keyOn, body: { ...payoutQuoteBody, amount: 70_000 }, idempotencyKey: key });
      assert.equal(otherPartner.status, 200, 'keys are scoped per partner');

      const kycKey = `${key}-kyc`;
      const kycA = await api('POST', '/kyc', { key: svc.keyOn, rawBody: kycForm('idem-kyc'), idempotencyKey: kycKey });
      const kycB = await api('POST', '/kyc', { key: svc.keyOn, rawBody: kycForm('idem-kyc'), idempotencyKey: kycKey });
      assert.equal(kycA.status, 201);
      assert.equal(kycB.status, 201);
      assert.equal(kycB.headers.get('idempotent-replayed'), 'true');

      const malformed = await api('POST', '/quote', { key: svc.keyOff, body: payoutQuoteBody, idempotencyKey: ' ' });
      assert.equal(malformed.status, 400);
    });
  });

  describe('bodies', () => {
    test('413, 415 and malformed JSON are 4xx with a reason', async () => {
      const huge = await api('POST', '/transaction', { key: svc.keyOff, rawBody: JSON.stringify({ pad: 'x'.repeat(70 * 1024) }), headers: { 'content-type': 'application/json' } });
      assert.equal(huge.status, 413);
      errorShape(huge.json, 'payload_too_large');
      const text = await api('POST', '/transaction', { key: svc.keyOff, rawBody: '{}', headers: { 'content-type': 'text/plain' } });
      assert.equal(text.status, 415);
      errorShape(text.json, 'unsupported_media_type');
      const broken = await api('POST', '/quote', { key: svc.keyOff, rawBody: '{"amount":', headers: { 'content-type': 'application/json' } });
      assert.equal(broken.status, 400);
      assert.equal(broken.json['reason'], 'Malformed JSON body');
      const array = await api('POST', '/transaction', { key: svc.keyOff, body: [1, 2] });
      assert.equal(array.status, 400);
      assert.equal(array.json['reason'], 'Request body must be a JSON object');
    });
  });
});
