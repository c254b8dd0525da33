// Pricing: the three quotes as a partner sees them — exact values per network and fee type,
// corridor bounds at and one minor unit past each edge, malformed amounts, the order in which
// rejections win, and seeded random properties over thousands of amounts, rates and fees.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { resolveRoute, type FeeConfig, type Route } from '../../src/domain/corridors.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { decimal, decimalFromExactString, toFixedString, type Decimal } from '../../src/domain/money.ts';
import {
  priceQuoteRequest,
  quoteOnramp,
  quotePayout,
  quoteReverse,
  quoteToJson,
  quoteTtlMsMax,
  type PricingInput,
  type QuoteContext,
  type QuoteRequest,
  type QuoteResult,
} from '../../src/domain/pricing.ts';
import { quoteValue, type Quote, type QuoteKind } from '../../src/domain/quote.ts';
import { quoteError, type QuoteErrorCode } from '../../src/domain/quote-errors.ts';
import { httpStatusOf } from '../../src/edge/errors.ts';

const config = loadDefaultCorridors();
const nowMs = 1_750_000_000_000;
const ttlMs = 1_800_000;
const rates = { COP: decimalFromExactString('3900.50'), BRL: decimalFromExactString('5.3510') };

const fees: Record<string, FeeConfig> = {
  none: fee('0', '0'),
  percentage: fee('0.01', '0'),
  fixed: fee('0', '0.5'),
  combined: fee('0.015', '0.25'),
};

function fee(percentage: string, fixed: string): FeeConfig {
  return { percentage: decimalFromExactString(percentage), fixed: decimalFromExactString(fixed) };
}

const methodOf = { COP: 'BREB', BRL: 'PIX' } as const;

function routeFor(kind: QuoteKind, network: string, crypto: string, currency: 'COP' | 'BRL'): Route {
  const result = resolveRoute(config, {
    direction: kind === 'onramp' ? 'onramp' : 'payout',
    cryptoCurrency: crypto,
    network,
    paymentMethod: methodOf[currency],
    targetCurrency: currency,
  });
  assert.ok(result.ok, result.ok ? '' : result.error.reason);
  return result.route;
}

const pricers = { payout: quotePayout, reverse: quoteReverse, onramp: quoteOnramp };

function price(kind: QuoteKind, route: Route, amount: unknown, extra: Partial<PricingInput> = {}): QuoteResult {
  return pricers[kind]({
    route,
    rate: rates[route.targetCurrency],
    amount,
    quoteId: 'quote-1',
    partnerId: 'partner-1',
    nowMs,
    ttlMs,
    ...extra,
  });
}

function ok(result: QuoteResult): Quote {
  assert.ok(result.ok, result.ok ? '' : `${result.error.code}: ${result.error.reason}`);
  return result.quote;
}

function rejected(result: QuoteResult, code: string, reason?: string): void {
  assert.ok(!result.ok, `expected ${code}`);
  assert.equal(result.error.code, code, result.error.reason);
  if (reason !== undefined) assert.equal(result.error.reason, reason);
}

describe('exact quotes per network and fee type', () => {
  // [kind, network, asset, fee type, currency, amount sent, value, fee.amount] — computed
  // independently with exact rationals; rates COP 3900.50 and BRL 5.3510.
  const rows: [QuoteKind, string, string, string, 'COP' | 'BRL', number, number, string][] = [
  ['payout', 'STELLAR', 'USDC', 'none', 'COP', 250000, 64.0943469, '0.0000000'],
  ['payout', 'STELLAR', 'USDC', 'none', 'BRL', 1234.56, 230.7157541, '0.0000000'],
  ['reverse', 'STELLAR', 'USDC', 'none', 'COP', 64.1234567, 250113.54, '0.0000000'],
  ['reverse', 'STELLAR', 'USDC', 'none', 'BRL', 64.1234567, 343.12, '0.0000000'],
  ['onramp', 'STELLAR', 'USDC', 'none', 'BRL', 500, 93.4404784, '0.0000000'],
  ['payout', 'STELLAR', 'USDC', 'percentage', 'COP', 250000, 64.7352904, '0.6409435'],
  ['payout', 'STELLAR', 'USDC', 'percentage', 'BRL', 1234.56, 233.0229117, '2.3071576'],
  ['reverse', 'STELLAR', 'USDC', 'percentage', 'COP', 64.1234567, 247637.17, '0.6348858'],
  ['reverse', 'STELLAR', 'USDC', 'percentage', 'BRL', 64.1234567, 339.72, '0.6348858'],
  ['onramp', 'STELLAR', 'USDC', 'percentage', 'BRL', 500, 92.5060736, '0.9344048'],
  ['payout', 'STELLAR', 'USDC', 'fixed', 'COP', 250000, 64.5943469, '0.5000000'],
  ['payout', 'STELLAR', 'USDC', 'fixed', 'BRL', 1234.56, 231.2157541, '0.5000000'],
  ['reverse', 'STELLAR', 'USDC', 'fixed', 'COP', 64.1234567, 248163.29, '0.5000000'],
  ['reverse', 'STELLAR', 'USDC', 'fixed', 'BRL', 64.1234567, 340.44, '0.5000000'],
  ['onramp', 'STELLAR', 'USDC', 'fixed', 'BRL', 500, 92.9404784, '0.5000000'],
  ['payout', 'STELLAR', 'USDC', 'combined', 'COP', 250000, 65.3057622, '1.2114153'],
  ['payout', 'STELLAR', 'USDC', 'combined', 'BRL', 1234.56, 234.4264905, '3.7107364'],
  ['reverse', 'STELLAR', 'USDC', 'combined', 'COP', 64.1234567, 245456.56, '1.1939428'],
  ['reverse', 'STELLAR', 'USDC', 'combined', 'BRL', 64.1234567, 336.73, '1.1939428'],
  ['onramp', 'STELLAR', 'USDC', 'combined', 'BRL', 500, 91.7888712, '1.6516072'],
  ['payout', 'SOLANA', 'USDC', 'none', 'COP', 250000, 64.094347, '0.000000'],
  ['payout', 'SOLANA', 'USDC', 'none', 'BRL', 1234.56, 230.715755, '0.000000'],
  ['reverse', 'SOLANA', 'USDC', 'none', 'COP', 64.123456, 250113.54, '0.000000'],
  ['reverse', 'SOLANA', 'USDC', 'none', 'BRL', 64.123456, 343.12, '0.000000'],
  ['onramp', 'SOLANA', 'USDC', 'none', 'BRL', 500, 93.440478, '0.000000'],
  ['payout', 'SOLANA', 'USDC', 'percentage', 'COP', 250000, 64.735291, '0.640944'],
  ['payout', 'SOLANA', 'USDC', 'percentage', 'BRL', 1234.56, 233.022913, '2.307158'],
  ['reverse', 'SOLANA', 'USDC', 'percentage', 'COP', 64.123456, 247637.16, '0.634886'],
  ['reverse', 'SOLANA', 'USDC', 'percentage', 'BRL', 64.123456, 339.72, '0.634886'],
  ['onramp', 'SOLANA', 'USDC', 'percentage', 'BRL', 500, 92.506073, '0.934405'],
  ['payout', 'SOLANA', 'USDC', 'fixed', 'COP', 250000, 64.594347, '0.500000'],
  ['payout', 'SOLANA', 'USDC', 'fixed', 'BRL', 1234.56, 231.215755, '0.500000'],
  ['reverse', 'SOLANA', 'USDC', 'fixed', 'COP', 64.123456, 248163.29, '0.500000'],
  ['reverse', 'SOLANA', 'USDC', 'fixed', 'BRL', 64.123456, 340.44, '0.500000'],
  ['onramp', 'SOLANA', 'USDC', 'fixed', 'BRL', 500, 92.940478, '0.500000'],
  ['payout', 'SOLANA', 'USDC', 'combined', 'COP', 250000, 65.305763, '1.211416'],
  ['payout', 'SOLANA', 'USDC', 'combined', 'BRL', 1234.56, 234.426492, '3.710737'],
  ['reverse', 'SOLANA', 'USDC', 'combined', 'COP', 64.123456, 245456.56, '1.193943'],
  ['reverse', 'SOLANA', 'USDC', 'combined', 'BRL', 64.123456, 336.73, '1.193943'],
  ['onramp', 'SOLANA', 'USDC', 'combined', 'BRL', 500, 91.788870, '1.651608'],
  ['payout', 'CELO', 'USDC', 'none', 'COP', 250000, 64.094347, '0.000000'],
  ['payout', 'CELO', 'USDC', 'none', 'BRL', 1234.56, 230.715755, '0.000000'],
  ['reverse', 'CELO', 'USDC', 'none', 'COP', 64.123456, 250113.54, '0.000000'],
  ['reverse', 'CELO', 'USDC', 'none', 'BRL', 64.123456, 343.12, '0.000000'],
  ['onramp', 'CELO', 'USDC', 'none', 'BRL', 500, 93.440478, '0.000000'],
  ['payout', 'CELO', 'USDC', 'percentage', 'COP', 250000, 64.735291, '0.640944'],
  ['payout', 'CELO', 'USDC', 'percentage', 'BRL', 1234.56, 233.022913, '2.307158'],
  ['reverse', 'CELO', 'USDC', 'percentage', 'COP', 64.123456, 247637.16, '0.634886'],
  ['reverse', 'CELO', 'USDC', 'percentage', 'BRL', 64.123456, 339.72, '0.634886'],
  ['onramp', 'CELO', 'USDC', 'percentage', 'BRL', 500, 92.506073, '0.934405'],
  ['payout', 'CELO', 'USDC', 'fixed', 'COP', 250000, 64.594347, '0.500000'],
  ['payout', 'CELO', 'USDC', 'fixed', 'BRL', 1234.56, 231.215755, '0.500000'],
  ['reverse', 'CELO', 'USDC', 'fixed', 'COP', 64.123456, 248163.29, '0.500000'],
  ['reverse', 'CELO', 'USDC', 'fixed', 'BRL', 64.123456, 340.44, '0.500000'],
  ['onramp', 'CELO', 'USDC', 'fixed', 'BRL', 500, 92.940478, '0.500000'],
  ['payout', 'CELO', 'USDC', 'combined', 'COP', 250000, 65.305763, '1.211416'],
  ['payout', 'CELO', 'USDC', 'combined', 'BRL', 1234.56, 234.426492, '3.710737'],
  ['reverse', 'CELO', 'USDC', 'combined', 'COP', 64.123456, 245456.56, '1.193943'],
  ['reverse', 'CELO', 'USDC', 'combined', 'BRL', 64.123456, 336.73, '1.193943'],
  ['onramp', 'CELO', 'USDC', 'combined', 'BRL', 500, 91.788870, '1.651608'],
  ['payout', 'CELO', 'USDT', 'none', 'COP', 250000, 64.094347, '0.000000'],
  ['payout', 'CELO', 'USDT', 'none', 'BRL', 1234.56, 230.715755, '0.000000'],
  ['reverse', 'CELO', 'USDT', 'none', 'COP', 64.123456, 250113.54, '0.000000'],
  ['reverse', 'CELO', 'USDT', 'none', 'BRL', 64.123456, 343.12, '0.000000'],
  ['payout', 'CELO', 'USDT', 'percentage', 'COP', 250000, 64.735291, '0.640944'],
  ['payout', 'CELO', 'USDT', 'percentage', 'BRL', 1234.56, 233.022913, '2.307158'],
  ['reverse', 'CELO', 'USDT', 'percentage', 'COP', 64.123456, 247637.16, '0.634886'],
  ['reverse', 'CELO', 'USDT', 'percentage', 'BRL', 64.123456, 339.72, '0.634886'],
  ['payout', 'CELO', 'USDT', 'fixed', 'COP', 250000, 64.594347, '0.500000'],
  ['payout', 'CELO', 'USDT', 'fixed', 'BRL', 1234.56, 231.215755, '0.500000'],
  ['reverse', 'CELO', 'USDT', 'fixed', 'COP', 64.123456, 248163.29, '0.500000'],
  ['reverse', 'CELO', 'USDT', 'fixed', 'BRL', 64.123456, 340.44, '0.500000'],
  ['payout', 'CELO', 'USDT', 'combined', 'COP', 250000, 65.305763, '1.211416'],
  ['payout', 'CELO', 'USDT', 'combined', 'BRL', 1234.56, 234.426492, '3.710737'],
  ['reverse', 'CELO', 'USDT', 'combined', 'COP', 64.123456, 245456.56, '1.193943'],
  ['reverse', 'CELO', 'USDT', 'combined', 'BRL', 64.123456, 336.73, '1.193943'],
  ];

  for (const [kind, network, asset, feeName, currency, amount, value, feeAmount] of rows) {
    test(`${kind} ${asset} on ${network} to ${currency}, fee ${feeName}: ${amount} → ${value}`, () => {
      const route = routeFor(kind, network, asset, currency);
      const quote = ok(price(kind, route, amount, { partnerFee: fees[feeName] ?? assert.fail(feeName) }));
      assert.deepEqual(quoteToJson(quote), {
        quote_id: 'quote-1',
        value,
        expiration_time: nowMs + ttlMs,
        fee: { amount: feeAmount, currency: asset, type: feeName },
      });
      assert.equal(quote.fee.amount.scale, network === 'STELLAR' ? 7 : 6);
      assert.equal(quote.direction, kind === 'onramp' ? 'onramp' : 'payout');
      assert.equal(quote.partnerId, 'partner-1');
    });
  }

  test('without a partner fee the corridor fee applies (1 % payout, 1.5 % onramp by default)', () => {
    const payout = ok(price('payout', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 250000));
    assert.deepEqual(quoteToJson(payout).fee, { amount: '0.6409435', currency: 'USDC', type: 'percentage' });
    assert.equal(quoteToJson(payout).value, 64.7352904);
    const onramp = ok(price('onramp', routeFor('onramp', 'SOLANA', 'USDC', 'BRL'), 500));
    assert.deepEqual(quoteToJson(onramp).fee, { amount: '1.401608', currency: 'USDC', type: 'percentage' });
    assert.equal(quoteToJson(onramp).value, 92.03887);
  });

  test('a per-network corridor fee replaces the method fee on that network only', () => {
    const celoFee = fee('0.02', '0.1');
    const withCelo = {
      ...config,
      terms: {
        ...config.terms,
        payout: { ...config.terms.payout, PIX: { ...(config.terms.payout.PIX ?? assert.fail('PIX')), feeByNetwork: { CELO: celoFee } } },
      },
    };
    const celo = resolveRoute(withCelo, { direction: 'payout', cryptoCurrency: 'USDC', network: 'CELO', paymentMethod: 'PIX', targetCurrency: 'BRL' });
    const solana = resolveRoute(withCelo, { direction: 'payout', cryptoCurrency: 'USDC', network: 'SOLANA', paymentMethod: 'PIX', targetCurrency: 'BRL' });
    assert.ok(celo.ok && solana.ok);
    assert.equal(ok(price('payout', celo.route, 1234.56)).fee.type, 'combined');
    assert.equal(toFixedString(ok(price('payout', celo.route, 1234.56)).fee.amount), '4.714316');
    assert.equal(ok(price('payout', solana.route, 1234.56)).fee.type, 'percentage');
  });

  test('a fee smaller than one token unit is charged as one unit, never as zero', () => {
    const quote = ok(price('payout', routeFor('payout', 'SOLANA', 'USDC', 'BRL'), 1, { partnerFee: fee('0.000001', '0') }));
    // net = ceil(1 / 5.3510) = 0.186881; exact fee 0.000000186881 → 0.000001
    assert.equal(toFixedString(quote.fee.amount), '0.000001');
    assert.equal(toFixedString(quote.sourceAmount), '0.186882');
  });
});

describe('corridor bounds, at the edge and one minor unit past it', () => {
  const cop4000 = { rate: decimalFromExactString('4000'), partnerFee: fees.none };
  const onrampCapped = { ...routeFor('onramp', 'CELO', 'USDC', 'BRL'), maxAmount: decimal(100000n, 2) };
  const unbounded = { ...routeFor('payout', 'SOLANA', 'USDC', 'BRL'), minAmount: null, maxAmount: null };

  // [case, kind, route, amount, extra, expected: 'ok' or [code, reason]]
  const rows: [string, QuoteKind, Route, number, Partial<PricingInput>, 'ok' | [string, string]][] = [
    ['BREB payout at the minimum', 'payout', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 10000, {}, 'ok'],
    ['BREB payout one cent below', 'payout', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 9999.99, {}, ['minimum', 'Minimum amount is 10000.00 COP']],
    ['BREB payout at the maximum', 'payout', routeFor('payout', 'CELO', 'USDT', 'COP'), 5000000, {}, 'ok'],
    ['BREB payout one cent above', 'payout', routeFor('payout', 'CELO', 'USDT', 'COP'), 5000000.01, {}, ['maximum', 'Maximum amount is 5000000.00 COP']],
    ['PIX payout at the minimum', 'payout', routeFor('payout', 'SOLANA', 'USDC', 'BRL'), 1, {}, 'ok'],
    ['PIX payout one cent below', 'payout', routeFor('payout', 'SOLANA', 'USDC', 'BRL'), 0.99, {}, ['minimum', 'Minimum amount is 1.00 BRL']],
    ['PIX payout has no maximum', 'payout', routeFor('payout', 'SOLANA', 'USDC', 'BRL'), 50000000, {}, 'ok'],
    ['reverse (7 decimals) paying exactly the minimum', 'reverse', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 2.5, cop4000, 'ok'],
    ['reverse (7 decimals) one token unit short', 'reverse', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 2.4999999, cop4000, ['minimum', 'Minimum amount is 10000.00 COP']],
    ['reverse (7 decimals) paying exactly the maximum', 'reverse', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 1250, cop4000, 'ok'],
    ['reverse (7 decimals) one cent over', 'reverse', routeFor('payout', 'STELLAR', 'USDC', 'COP'), 1250.0000025, cop4000, ['maximum', 'Maximum amount is 5000000.00 COP']],
    ['reverse (6 decimals) one token unit short', 'reverse', routeFor('payout', 'SOLANA', 'USDC', 'COP'), 2.499999, cop4000, ['minimum', 'Minimum amount is 10000.00 COP']],
    ['reverse (6 decimals) one cent over', 'reverse', routeFor('payout', 'CELO', 'USDC', 'COP'), 1250.000003, cop4000, ['maximum', 'Maximum amount is 5000000.00 COP']],
    ['onramp at the minimum', 'onramp', onrampCapped, 10, {}, 'ok'],
    ['onramp one cent below', 'onramp', onrampCapped, 9.99, {}, ['minimum', 'Minimum amount is 10.00 BRL']],
    ['onramp at a configured maximum', 'onramp', onrampCapped, 1000, {}, 'ok'],
    ['onramp one cent above', 'onramp', onrampCapped, 1000.01, {}, ['maximum', 'Maximum amount is 1000.00 BRL']],
    ['no minimum: one cent is quotable', 'payout', unbounded, 0.01, {}, 'ok'],
    ['no minimum: a reverse worth less than a cent', 'reverse', unbounded, 0.000001, {}, ['minimum', 'Minimum amount is 0.01 BRL']],
    ['reverse equal to the fixed fee', 'reverse', routeFor('payout', 'SOLANA', 'USDC', 'BRL'), 0.5, { partnerFee: fees.fixed }, ['minimum', 'Minimum amount is 1.00 BRL']],
    ['reverse below the fixed fee', 'reverse', routeFor('payout', 'STELLAR', 'USDC', 'BRL'), 0.25, { partnerFee: fees.fixed }, ['minimum', 'Minimum amount is 1.00 BRL']],
    ['onramp eaten by the fee', 'onramp', onrampCapped, 10, { partnerFee: fee('0', '5') }, ['minimum', 'Minimum amount is 0.000001 USDC after fees']],
    ['payout worth over the service ceiling', 'payout', unbounded, 999999999999.99, {}, ['maximum', 'Maximum amount is 10000000 USDC']],
    ['reverse over the service ceiling', 'reverse', unbounded, 10000000.000001, {}, ['maximum', 'Maximum amount is 10000000 USDC']],
    ['reverse at the service ceiling', 'reverse', unbounded, 10000000, {}, 'ok'],
    ['onramp over the service ceiling', 'onramp', { ...onrampCapped, maxAmount: null }, 999999999999.99, {}, ['maximum', 'Maximum amount is 10000000 USDC']],
  ];

  for (const [name, kind, route, amount, extra, expected] of rows) {
    test(name, () => {
      const result = price(kind, route, amount, extra);
      if (expected === 'ok') {
        ok(result);
      } else {
        rejected(result, expected[0], expected[1]);
        assert.ok(!result.ok);
        assert.equal(result.error.retryable, false);
      }
    });
  }
});

describe('malformed amounts are invalid_request', () => {
  // [kind, network, amount, reason]
  const rows: [QuoteKind, string, unknown, string][] = [
    ['payout', 'SOLANA', 100.001, 'amount has more than 2 decimal places'],
    ['reverse', 'SOLANA', 1.0000001, 'source_amount has more than 6 decimal places'],
    ['reverse', 'CELO', 1.0000001, 'source_amount has more than 6 decimal places'],
    ['reverse', 'STELLAR', 1.00000001, 'source_amount has more than 7 decimal places'],
    ['onramp', 'STELLAR', 10.001, 'fiat_amount has more than 2 decimal places'],
    ['payout', 'STELLAR', Number.NaN, 'amount must be a finite number'],
    ['payout', 'STELLAR', Number.POSITIVE_INFINITY, 'amount must be a finite number'],
    ['reverse', 'STELLAR', Number.NEGATIVE_INFINITY, 'source_amount must be a finite number'],
    ['payout', 'STELLAR', -100, 'amount must not be negative'],
    ['reverse', 'SOLANA', -0.5, 'source_amount must not be negative'],
    ['onramp', 'CELO', -10, 'fiat_amount must not be negative'],
    ['payout', 'STELLAR', 0, 'amount must be greater than 0'],
    ['reverse', 'STELLAR', -0, 'source_amount must be greater than 0'],
    ['onramp', 'STELLAR', 0, 'fiat_amount must be greater than 0'],
    ['payout', 'STELLAR', '100', 'amount must be a number'],
    ['payout', 'STELLAR', null, 'amount must be a number'],
    ['reverse', 'STELLAR', undefined, 'source_amount must be a number'],
    ['onramp', 'STELLAR', true, 'fiat_amount must be a number'],
    ['payout', 'STELLAR', 1e16, 'amount must be less than 10^15'],
  ];

  for (const [kind, network, amount, reason] of rows) {
    test(`${kind} on ${network} with ${String(amount)}${typeof amount === 'string' ? ' (a string)' : ''}`, () => {
      const currency = kind === 'payout' ? 'COP' : 'BRL';
      const result = price(kind, routeFor(kind, network, 'USDC', currency), amount);
      rejected(result, 'invalid_request', reason);
      assert.ok(!result.ok);
      assert.equal(result.error.retryable, false);
      assert.equal(httpStatusOf(result.error.code), 400);
    });
  }

  test('7 decimals are fine on Stellar', () => {
    ok(price('reverse', routeFor('reverse', 'STELLAR', 'USDC', 'BRL'), 1.0000001));
  });
});

describe('order of precedence (priceQuoteRequest)', () => {
  const context: QuoteContext = { rates, quoteId: 'q-2', partnerId: 'p-2', nowMs };
  const noRates: QuoteContext = { ...context, rates: {} };
  const body = (kind: QuoteKind, amount: unknown, overrides: Partial<QuoteRequest> = {}): QuoteRequest => ({
    kind,
    amount,
    cryptoCurrency: 'USDC',
    network: 'SOLANA',
    paymentMethod: kind === 'payout' ? 'BREB' : 'PIX',
    targetCurrency: kind === 'payout' ? 'COP' : 'BRL',
    ...overrides,
  });

  // [case, request, context, expected code]
  const rows: [string, QuoteRequest, QuoteContext, string][] = [
    ['NaN beats an unknown method', body('payout', Number.NaN, { paymentMethod: 'NEQUI' }), context, 'invalid_request'],
    ['a negative amount beats a planned currency', body('reverse', -1, { targetCurrency: 'ARS' }), context, 'invalid_request'],
    ['zero beats USDT on Stellar', body('payout', 0, { cryptoCurrency: 'USDT', network: 'STELLAR' }), context, 'invalid_request'],
    ['the corridor beats the decimals of its own currency', body('payout', 100.001, { paymentMethod: 'NEQUI' }), context, 'corridor_unavailable'],
    ['the corridor beats a missing rate', body('onramp', 100, { network: 'ETHEREUM' }), noRates, 'corridor_unavailable'],
    ['too many decimals beat a missing rate', body('reverse', 1.0000001), noRates, 'invalid_request'],
    ['a missing rate beats the minimum', body('payout', 1), noRates, 'quote_unavailable'],
    ['a missing rate beats the maximum', body('payout', 6000000), noRates, 'quote_unavailable'],
    ['the minimum last', body('payout', 1), context, 'minimum'],
    ['the maximum last', body('payout', 6000000), context, 'maximum'],
  ];

  for (const [name, request, quoteContext, code] of rows) {
    test(name, () => rejected(priceQuoteRequest(config, request, quoteContext), code));
  }

  test('quote_unavailable is retryable and names the currency', () => {
    const result = priceQuoteRequest(config, body('onramp', 100), noRates);
    rejected(result, 'quote_unavailable', 'No BRL rate is available right now; try again shortly');
    assert.ok(!result.ok);
    assert.equal(result.error.retryable, true);
    assert.equal(httpStatusOf(result.error.code), 400);
  });

  test('a successful request is priced with the configured validity', () => {
    const quote = ok(priceQuoteRequest(config, body('reverse', 64.123456, { cryptoCurrency: 'USDT', network: 'CELO', paymentMethod: 'PIX', targetCurrency: 'BRL' }), context));
    assert.deepEqual(quoteToJson(quote), {
      quote_id: 'q-2',
      value: 339.72,
      expiration_time: nowMs + config.quoteTtlMs,
      fee: { amount: '0.634886', currency: 'USDT', type: 'percentage' },
    });
    assert.equal(quote.kind, 'reverse');
    assert.equal(quote.partnerId, 'p-2');
  });
});

describe('quote validity and the error catalogue', () => {
  test('expiration_time is now + ttl, and a ttl over one hour is a bug', () => {
    const route = routeFor('payout', 'STELLAR', 'USDC', 'BRL');
    assert.equal(ok(price('payout', route, 10, { ttlMs: quoteTtlMsMax })).expiresAtMs, nowMs + 3_600_000);
    assert.throws(() => price('payout', route, 10, { ttlMs: quoteTtlMsMax + 1 }), /invariant/);
    assert.throws(() => price('payout', route, 10, { ttlMs: 0 }), /invariant/);
  });

  test('a payout route priced as onramp is a bug', () => {
    assert.throws(() => price('onramp', routeFor('payout', 'STELLAR', 'USDC', 'BRL'), 10), /invariant/);
  });

  test('HTTP status (the edge\'s) and retryable (the domain\'s) per code', () => {
    const expected: [string, number, boolean][] = [
      ['authentication_failed', 401, false],
      ['invalid_request', 400, false],
      ['corridor_unavailable', 400, false],
      ['minimum', 400, false],
      ['maximum', 400, false],
      ['quote_unavailable', 400, true],
      ['server_error', 500, true],
    ];
    for (const [code, status, retryable] of expected) {
      const typed = code as QuoteErrorCode;
      assert.equal(httpStatusOf(typed), status, code);
      assert.equal(quoteError(typed, 'x').retryable, retryable, code);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Seeded random properties, checked with exact rational arithmetic (bigint cross-multiplication).

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An exact rational n/d with d > 0. */
interface Ratio {
  n: bigint;
  d: bigint;
}
const ratio = (value: Decimal): Ratio => ({ n: value.units, d: 10n ** BigInt(value.scale) });
const plus = (a: Ratio, b: Ratio): Ratio => ({ n: a.n * b.d + b.n * a.d, d: a.d * b.d });
const minus = (a: Ratio, b: Ratio): Ratio => ({ n: a.n * b.d - b.n * a.d, d: a.d * b.d });
const times = (a: Ratio, b: Ratio): Ratio => ({ n: a.n * b.n, d: a.d * b.d });
const over = (a: Ratio, b: Ratio): Ratio => ({ n: a.n * b.d, d: a.d * b.n });
const cmp = (a: Ratio, b: Ratio): number => {
  const left = a.n * b.d;
  const right = b.n * a.d;
  return left < right ? -1 : left > right ? 1 : 0;
};
const one: Ratio = { n: 1n, d: 1n };

interface Scenario {
  route: Route;
  rate: Decimal;
  fee: FeeConfig;
}

const networksAndAssets: [string, string][] = [['STELLAR', 'USDC'], ['SOLANA', 'USDC'], ['CELO', 'USDC'], ['CELO', 'USDT']];

function randomInt(random: () => number, lowest: number, highest: number): number {
  return lowest + Math.floor(random() * (highest - lowest + 1));
}

/** A random unbounded route, a rate in [1, 9999.9999] and a fee of any type. */
function scenario(random: () => number, kind: QuoteKind): Scenario {
  const [network, asset] = networksAndAssets[randomInt(random, 0, kind === 'onramp' ? 2 : 3)] ?? assert.fail('pair');
  const currency = kind === 'onramp' || random() < 0.5 ? 'BRL' : 'COP';
  const route = { ...routeFor(kind, network, asset, currency), minAmount: null, maxAmount: null };
  // log-uniform rate with up to 4 decimals: covers BRL-like (≈5) and COP-like (≈4000) rates
  const rateUnits = BigInt(Math.max(10_000, Math.floor(10 ** (4 + random() * 4))));
  const rate = decimal(rateUnits, 4);
  const percentage = random() < 0.3 ? decimal(0n, 0) : decimal(BigInt(randomInt(random, 1, 500)), 4);
  const fixed = random() < 0.3 ? decimal(0n, 0) : decimal(BigInt(randomInt(random, 1, 2_000_000)), 6);
  return { route, rate, fee: { percentage, fixed } };
}

/** A log-uniform positive amount with `scale` decimals, at most 10^digits. */
function randomAmount(random: () => number, scale: number, digits: number): number {
  const units = Math.max(1, Math.floor(10 ** (random() * (digits + scale))));
  return Number(toFixedString(decimal(BigInt(units), scale)));
}

const cases = 2500;

function run(kind: QuoteKind, s: Scenario, amount: number): QuoteResult {
  return pricers[kind]({ route: s.route, rate: s.rate, amount, partnerFee: s.fee, quoteId: 'q', partnerId: 'p', nowMs, ttlMs });
}

function tokenUnit(route: Route): Ratio {
  return { n: 1n, d: 10n ** BigInt(route.tokenDecimals) };
}

describe('seeded random properties', () => {
  test('(a) /quote: the net covers the fiat at the rate; the fee is exact or over by less than one token unit', () => {
    const random = mulberry32(0xc0ffee);
    for (let index = 0; index < cases; index += 1) {
      const s = scenario(random, 'payout');
      const fiat = randomAmount(random, 2, 6);
      const quote = ok(run('payout', s, fiat));
      const value = ratio(quoteValue(quote));
      const feeAmount = ratio(quote.fee.amount);
      const net = minus(value, feeAmount);
      const context = `case ${index}: F=${fiat} rate=${toFixedString(s.rate)} value=${toFixedString(quote.sourceAmount)}`;
      assert.ok(cmp(times(net, ratio(s.rate)), ratio(quote.targetAmount)) >= 0, context);
      assert.equal(toFixedString(quote.targetAmount), toFixedString(decimalFromExactString(fiat.toFixed(2))), context);
      const exactFee = plus(times(net, ratio(s.fee.percentage)), ratio(s.fee.fixed));
      assert.ok(cmp(feeAmount, exactFee) >= 0, `${context}: fee below exact`);
      assert.ok(cmp(feeAmount, plus(exactFee, tokenUnit(s.route))) < 0, `${context}: fee over by a unit`);
      // and the net is the smallest that covers F: one unit less would not
      assert.ok(cmp(times(minus(net, tokenUnit(s.route)), ratio(s.rate)), ratio(quote.targetAmount)) < 0, context);
    }
  });

  test('(b) /quote/reverse: never pays out more than the net received is worth; the fee is over its exact value by less than one unit', () => {
    const random = mulberry32(0xbadcafe);
    let priced = 0;
    for (let index = 0; index < cases; index += 1) {
      const s = scenario(random, 'reverse');
      const source = randomAmount(random, s.route.tokenDecimals, 5);
      const result = run('reverse', s, source);
      if (!result.ok) {
        // only a source that cannot cover the fee and one fiat cent is refused
        assert.equal(result.error.code, 'minimum', result.error.reason);
        const afterFixed = minus(ratio(decimalFromExactString(source.toFixed(s.route.tokenDecimals))), ratio(s.fee.fixed));
        const exactFiat = times(over(afterFixed, plus(one, ratio(s.fee.percentage))), ratio(s.rate));
        // floor(net) > exact net − 1 unit, so a refusal means exact net × rate < 1 cent + 1 unit × rate
        const slack = plus({ n: 1n, d: 100n }, times(tokenUnit(s.route), ratio(s.rate)));
        assert.ok(cmp(exactFiat, slack) < 0, `case ${index}: S=${source} refused`);
        continue;
      }
      priced += 1;
      const quote = result.quote;
      const sent = ratio(quote.sourceAmount);
      const feeAmount = ratio(quote.fee.amount);
      const context = `case ${index}: S=${source} rate=${toFixedString(s.rate)} fiat=${toFixedString(quote.targetAmount)}`;
      assert.equal(toFixedString(quote.sourceAmount), toFixedString(decimalFromExactString(source.toFixed(s.route.tokenDecimals))), context);
      assert.ok(cmp(ratio(quote.targetAmount), times(minus(sent, feeAmount), ratio(s.rate))) <= 0, context);
      // the fiat is floor(net × rate): one cent more would exceed the net's worth
      assert.ok(cmp(plus(ratio(quote.targetAmount), { n: 1n, d: 100n }), times(minus(sent, feeAmount), ratio(s.rate))) > 0, context);
      const exactFee = minus(sent, over(minus(sent, ratio(s.fee.fixed)), plus(one, ratio(s.fee.percentage))));
      assert.ok(cmp(feeAmount, exactFee) >= 0, `${context}: fee below exact`);
      assert.ok(cmp(feeAmount, plus(exactFee, tokenUnit(s.route))) < 0, `${context}: fee over by a unit`);
    }
    assert.ok(priced > cases / 2, `only ${priced} priced`);
  });

  test('(c) reverse of a /quote value pays F within one cent and charges the same fee', () => {
    const random = mulberry32(20_251_006);
    for (let index = 0; index < cases; index += 1) {
      const s = scenario(random, 'payout');
      const fiat = randomAmount(random, 2, 6);
      const quote = ok(run('payout', s, fiat));
      const reverse = ok(run('reverse', s, quoteToJson(quote).value));
      const context = `case ${index}: F=${fiat} rate=${toFixedString(s.rate)} value=${toFixedString(quote.sourceAmount)}`;
      const paid = ratio(reverse.targetAmount);
      const cent: Ratio = { n: 1n, d: 100n };
      assert.ok(cmp(paid, minus(ratio(quote.targetAmount), cent)) >= 0, `${context}: paid ${toFixedString(reverse.targetAmount)}`);
      assert.ok(cmp(paid, plus(ratio(quote.targetAmount), cent)) <= 0, `${context}: paid ${toFixedString(reverse.targetAmount)}`);
      assert.equal(toFixedString(reverse.fee.amount), toFixedString(quote.fee.amount), context);
      assert.equal(reverse.fee.type, quote.fee.type, context);
    }
  });

  test('(d) /quote/onramp: crypto delivered plus fee never exceeds what the fiat buys at the rate', () => {
    const random = mulberry32(42);
    let priced = 0;
    for (let index = 0; index < cases; index += 1) {
      const s = scenario(random, 'onramp');
      const paid = randomAmount(random, 2, 6);
      const result = run('onramp', s, paid);
      if (!result.ok) {
        assert.equal(result.error.code, 'minimum', result.error.reason);
        continue;
      }
      priced += 1;
      const quote = result.quote;
      const context = `case ${index}: P=${paid} rate=${toFixedString(s.rate)} value=${toFixedString(quote.targetAmount)}`;
      const delivered = plus(ratio(quote.targetAmount), ratio(quote.fee.amount));
      assert.ok(cmp(delivered, over(ratio(quote.sourceAmount), ratio(s.rate))) <= 0, context);
      assert.ok(cmp(plus(delivered, tokenUnit(s.route)), over(ratio(quote.sourceAmount), ratio(s.rate))) > 0, `${context}: gross not floored`);
      const exactFee = plus(times(delivered, ratio(s.fee.percentage)), ratio(s.fee.fixed));
      assert.ok(cmp(ratio(quote.fee.amount), exactFee) >= 0 && cmp(ratio(quote.fee.amount), plus(exactFee, tokenUnit(s.route))) < 0, context);
    }
    assert.ok(priced > cases / 2, `only ${priced} priced`);
  });
});
