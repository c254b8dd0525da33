// Corridors: which routes a partner can quote and what GET /public/corridors lists, for every
// combination of the vocabulary, plus the configuration that switches routes on and off.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  corridorToJson,
  listCorridors,
  listRoutes,
  resolveRoute,
  type CorridorConfig,
  type RouteRequest,
} from '../../src/domain/corridors.ts';
import { defaultCorridorsPath, loadCorridorsFile, loadDefaultCorridors, parseCorridorConfig } from '../../src/config/corridors.ts';
import { toFixedString } from '../../src/domain/money.ts';
import type { Direction } from '../../src/domain/quote.ts';

type Json = Record<string, unknown>;

/** A fresh copy of the shipped default file, to edit per test. */
function defaultFile(): Json {
  return JSON.parse(readFileSync(defaultCorridorsPath, 'utf8')) as Json;
}

function configFrom(edit: (file: Json) => void): CorridorConfig {
  const file = defaultFile();
  edit(file);
  const result = parseCorridorConfig(file);
  assert.ok(result.ok, result.ok ? '' : result.errors.join('\n'));
  return result.config;
}

function at(value: unknown, ...path: string[]): Json {
  let node = value as Json;
  for (const key of path) node = node[key] as Json;
  return node;
}

const defaults = loadDefaultCorridors();

function request(direction: Direction, cryptoCurrency: string, network: string, paymentMethod: string, targetCurrency: string): RouteRequest {
  return { direction, cryptoCurrency, network, paymentMethod, targetCurrency };
}

describe('resolveRoute with the default configuration', () => {
  // [direction, crypto, network, method, currency, expected: 'ok' or a fragment of the reason]
  const rows: [Direction, string, string, string, string, string][] = [
    ['payout', 'USDC', 'STELLAR', 'BREB', 'COP', 'ok'],
    ['payout', 'USDC', 'STELLAR', 'PIX', 'BRL', 'ok'],
    ['payout', 'USDC', 'SOLANA', 'BREB', 'COP', 'ok'],
    ['payout', 'USDC', 'SOLANA', 'PIX', 'BRL', 'ok'],
    ['payout', 'USDC', 'CELO', 'BREB', 'COP', 'ok'],
    ['payout', 'USDC', 'CELO', 'PIX', 'BRL', 'ok'],
    ['payout', 'USDT', 'CELO', 'BREB', 'COP', 'ok'],
    ['payout', 'USDT', 'CELO', 'PIX', 'BRL', 'ok'],
    ['payout', 'USDT', 'STELLAR', 'BREB', 'COP', 'USDT on STELLAR via BREB is not a supported payout route'],
    ['payout', 'USDT', 'STELLAR', 'PIX', 'BRL', 'USDT on STELLAR via PIX is not a supported payout route'],
    ['payout', 'USDT', 'SOLANA', 'BREB', 'COP', 'USDT on SOLANA via BREB is not a supported payout route'],
    ['payout', 'USDT', 'SOLANA', 'PIX', 'BRL', 'USDT on SOLANA via PIX is not a supported payout route'],
    ['onramp', 'USDC', 'STELLAR', 'PIX', 'BRL', 'ok'],
    ['onramp', 'USDC', 'SOLANA', 'PIX', 'BRL', 'ok'],
    ['onramp', 'USDC', 'CELO', 'PIX', 'BRL', 'ok'],
    ['onramp', 'USDT', 'CELO', 'PIX', 'BRL', 'USDT on CELO via PIX is not a supported onramp route'],
    ['onramp', 'USDC', 'STELLAR', 'BREB', 'COP', 'USDC on STELLAR via BREB is not a supported onramp route'],
    // legacy and unknown payment methods (matching is exact, as the enum values are)
    ['payout', 'USDC', 'STELLAR', 'NEQUI', 'COP', 'Payment method "NEQUI" is not supported'],
    ['payout', 'USDC', 'STELLAR', 'MOVII', 'COP', 'Payment method "MOVII" is not supported'],
    ['payout', 'USDC', 'STELLAR', 'pix', 'BRL', 'Payment method "pix" is not supported'],
    ['payout', 'USDC', 'STELLAR', '', 'BRL', 'Payment method "" is not supported'],
    // planned currencies
    ['payout', 'USDC', 'STELLAR', 'PIX', 'ARS', 'ARS is not available yet'],
    ['payout', 'USDC', 'SOLANA', 'BREB', 'PEN', 'PEN is not available yet'],
    ['payout', 'USDC', 'CELO', 'PIX', 'PHP', 'PHP is not available yet'],
    ['payout', 'USDC', 'STELLAR', 'BREB', 'THB', 'THB is not available yet'],
    ['payout', 'USDC', 'STELLAR', 'PIX', 'VND', 'VND is not available yet'],
    ['onramp', 'USDC', 'STELLAR', 'PIX', 'ARS', 'ARS is not available yet'],
    ['payout', 'USDC', 'STELLAR', 'PIX', 'EUR', 'Currency "EUR" is not supported'],
    // method and currency must match
    ['payout', 'USDC', 'STELLAR', 'BREB', 'BRL', 'Payment method BREB pays in COP, not BRL'],
    ['payout', 'USDC', 'SOLANA', 'PIX', 'COP', 'Payment method PIX pays in BRL, not COP'],
    ['onramp', 'USDC', 'CELO', 'PIX', 'COP', 'Payment method PIX pays in BRL, not COP'],
    // unknown networks and assets
    ['payout', 'USDC', 'ETHEREUM', 'PIX', 'BRL', 'Network "ETHEREUM" is not supported'],
    ['payout', 'USDC', 'stellar', 'PIX', 'BRL', 'Network "stellar" is not supported'],
    ['payout', 'DAI', 'CELO', 'PIX', 'BRL', 'Crypto currency "DAI" is not supported'],
  ];

  for (const [direction, crypto, network, method, currency, expected] of rows) {
    test(`${direction} ${crypto} on ${network} via ${method} to ${currency}: ${expected === 'ok' ? 'offered' : 'corridor_unavailable'}`, () => {
      const result = resolveRoute(defaults, request(direction, crypto, network, method, currency));
      if (expected === 'ok') {
        assert.ok(result.ok, result.ok ? '' : result.error.reason);
        assert.equal(result.route.network, network);
        assert.equal(result.route.cryptoCurrency, crypto);
        assert.equal(result.route.targetCurrency, currency);
        assert.equal(result.route.settlementAsset, 'USDC');
      } else {
        assert.ok(!result.ok);
        assert.equal(result.error.code, 'corridor_unavailable');
        assert.equal(result.error.retryable, false);
        assert.ok(result.error.reason.includes(expected), `reason ${JSON.stringify(result.error.reason)}`);
      }
    });
  }

  test('the route carries the active mint, its decimals, bounds and fee', () => {
    const stellar = resolveRoute(defaults, request('payout', 'USDC', 'STELLAR', 'BREB', 'COP'));
    assert.ok(stellar.ok);
    assert.equal(stellar.route.tokenDecimals, 7);
    assert.equal(stellar.route.mint.identifier, 'GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN');
    assert.equal(stellar.route.chainId, 'stellar:pubnet');
    assert.equal(stellar.route.chainFamily, 'stellar');
    assert.equal(toFixedString(stellar.route.minAmount ?? assert.fail('min')), '10000.00');
    assert.equal(toFixedString(stellar.route.maxAmount ?? assert.fail('max')), '5000000.00');
    assert.equal(toFixedString(stellar.route.fee.percentage), '0.01');

    const usdt = resolveRoute(defaults, request('payout', 'USDT', 'CELO', 'PIX', 'BRL'));
    assert.ok(usdt.ok);
    assert.equal(usdt.route.tokenDecimals, 6);
    assert.equal(usdt.route.mint.identifier, '0x48065fbBE25f71C9282ddf5e1cD6D6A887483D5e');
    assert.equal(usdt.route.settlementAsset, 'USDC');
    assert.equal(usdt.route.chainId, 'eip155:42220');
    assert.equal(usdt.route.maxAmount, null);

    const onramp = resolveRoute(defaults, request('onramp', 'USDC', 'SOLANA', 'PIX', 'BRL'));
    assert.ok(onramp.ok);
    assert.equal(toFixedString(onramp.route.minAmount ?? assert.fail('min')), '10.00');
    assert.equal(toFixedString(onramp.route.fee.percentage), '0.015');
  });

  test('configured token decimals win over the defaults', () => {
    const config = configFrom((file) => {
      at(file, 'mints', 'SOLANA', 'USDC').decimals = 9;
    });
    const route = resolveRoute(config, request('payout', 'USDC', 'SOLANA', 'PIX', 'BRL'));
    assert.ok(route.ok);
    assert.equal(route.route.tokenDecimals, 9);
  });
});

describe('configuration switches routes off', () => {
  const key = (route: { network: string; cryptoCurrency: string; paymentMethod: string }): string =>
    `${route.cryptoCurrency}/${route.network}/${route.paymentMethod}`;

  const allPayout = [
    'USDC/STELLAR/BREB', 'USDC/STELLAR/PIX', 'USDC/SOLANA/BREB', 'USDC/SOLANA/PIX',
    'USDC/CELO/BREB', 'USDC/CELO/PIX', 'USDT/CELO/BREB', 'USDT/CELO/PIX',
  ];
  const allOnramp = ['USDC/STELLAR/PIX', 'USDC/SOLANA/PIX', 'USDC/CELO/PIX'];

  // [case, edit, listed payout corridors, offered onramp routes, a request that must be refused, reason fragment]
  const rows: [string, (file: Json) => void, string[], string[], RouteRequest | null, string][] = [
    ['defaults', () => undefined, allPayout, allOnramp, null, ''],
    [
      'mint inactive',
      (file) => { at(file, 'mints', 'SOLANA', 'USDC').active = false; },
      allPayout.filter((route) => !route.includes('SOLANA')),
      allOnramp.filter((route) => !route.includes('SOLANA')),
      request('payout', 'USDC', 'SOLANA', 'BREB', 'COP'),
      'USDC on SOLANA is currently unavailable',
    ],
    [
      'mint not configured',
      (file) => { delete at(file, 'mints', 'CELO').USDT; },
      allPayout.filter((route) => !route.startsWith('USDT')),
      allOnramp,
      request('payout', 'USDT', 'CELO', 'PIX', 'BRL'),
      'USDT on CELO is currently unavailable',
    ],
    [
      'network without mints',
      (file) => { delete at(file, 'mints').STELLAR; },
      allPayout.filter((route) => !route.includes('STELLAR')),
      allOnramp.filter((route) => !route.includes('STELLAR')),
      request('onramp', 'USDC', 'STELLAR', 'PIX', 'BRL'),
      'USDC on STELLAR is currently unavailable',
    ],
    [
      'payout flow disabled',
      (file) => { at(file, 'flows', 'payout').enabled = false; },
      [],
      allOnramp,
      request('payout', 'USDC', 'STELLAR', 'PIX', 'BRL'),
      'Payouts are currently disabled',
    ],
    [
      'onramp flow disabled',
      (file) => { at(file, 'flows', 'onramp').enabled = false; },
      allPayout,
      [],
      request('onramp', 'USDC', 'CELO', 'PIX', 'BRL'),
      'Onramps are currently disabled',
    ],
    [
      'route marked unsupported',
      (file) => { file.unsupported = [{ network: 'CELO', paymentMethod: 'PIX' }]; },
      allPayout.filter((route) => !(route.includes('CELO') && route.endsWith('PIX'))),
      allOnramp.filter((route) => !route.includes('CELO')),
      request('payout', 'USDT', 'CELO', 'PIX', 'BRL'),
      'USDT on CELO via PIX is currently unavailable',
    ],
    [
      'unsupported pattern limited to one direction',
      (file) => { file.unsupported = [{ direction: 'onramp', network: 'SOLANA' }]; },
      allPayout,
      allOnramp.filter((route) => !route.includes('SOLANA')),
      request('onramp', 'USDC', 'SOLANA', 'PIX', 'BRL'),
      'USDC on SOLANA via PIX is currently unavailable',
    ],
    [
      'method without terms',
      (file) => { delete at(file, 'corridors', 'payout').BREB; },
      allPayout.filter((route) => !route.endsWith('BREB')),
      allOnramp,
      request('payout', 'USDC', 'STELLAR', 'BREB', 'COP'),
      'BREB payout is not offered',
    ],
  ];

  for (const [name, edit, payout, onramp, refused, reason] of rows) {
    test(name, () => {
      const config = configFrom(edit);
      assert.deepEqual(listCorridors(config).map(key), payout);
      assert.deepEqual(listRoutes(config, 'onramp').map(key), onramp);
      if (refused !== null) {
        const result = resolveRoute(config, refused);
        assert.ok(!result.ok);
        assert.equal(result.error.code, 'corridor_unavailable');
        assert.ok(result.error.reason.includes(reason), result.error.reason);
      }
      // whatever is listed is quotable, and nothing else of the supported set is
      for (const route of listCorridors(config)) {
        const resolved = resolveRoute(config, request('payout', route.cryptoCurrency, route.network, route.paymentMethod, route.targetCurrency));
        assert.ok(resolved.ok);
      }
    });
  }
});

describe('corridorToJson', () => {
  test('list items have exactly the spec fields, with numbers for bounds and null for none', () => {
    const items = listCorridors(defaults).map(corridorToJson);
    assert.equal(items.length, 8);
    assert.deepEqual(items[0], {
      blockchain: 'STELLAR',
      chainFamily: 'stellar',
      chainId: 'stellar:pubnet',
      cryptoCurrency: 'USDC',
      paymentMethod: 'BREB',
      targetCurrency: 'COP',
      minAmount: 10000,
      maxAmount: 5000000,
      notify: { endpoint: null, required: false },
      walletSession: {
        chainId: 'stellar:pubnet',
        events: [],
        methods: ['stellar_signAndSubmitXDR', 'stellar_signXDR'],
        namespace: 'stellar',
      },
    });
    assert.deepEqual(items[3], {
      blockchain: 'SOLANA',
      chainFamily: 'solana',
      chainId: 'solana:mainnet',
      cryptoCurrency: 'USDC',
      paymentMethod: 'PIX',
      targetCurrency: 'BRL',
      minAmount: 1,
      maxAmount: null,
      notify: { endpoint: '/payments/notify', required: true },
      walletSession: {
        chainId: 'solana:mainnet',
        events: [],
        methods: ['solana_signTransaction', 'solana_signAndSendTransaction'],
        namespace: 'solana',
      },
    });
    assert.deepEqual(items[6], {
      blockchain: 'CELO',
      chainFamily: 'evm',
      chainId: 'eip155:42220',
      cryptoCurrency: 'USDT',
      paymentMethod: 'BREB',
      targetCurrency: 'COP',
      minAmount: 10000,
      maxAmount: 5000000,
      notify: { endpoint: '/payments/notify', required: true },
      walletSession: {
        chainId: 'eip155:42220',
        events: ['accountsChanged', 'chainChanged'],
        methods: ['eth_sendTransaction', 'eth_signTypedData_v4'],
        namespace: 'eip155',
      },
    });
    // survives JSON unchanged
    assert.deepEqual(JSON.parse(JSON.stringify(items)), items);
  });

  test('fractional bounds become exact JSON numbers', () => {
    const config = configFrom((file) => {
      Object.assign(at(file, 'corridors', 'payout', 'PIX'), { minAmount: '0.5', maxAmount: '123456.78' });
    });
    const pix = listCorridors(config).map(corridorToJson).filter((item) => item.paymentMethod === 'PIX');
    assert.equal(pix.length, 4);
    for (const item of pix) {
      assert.equal(item.minAmount, 0.5);
      assert.equal(item.maxAmount, 123456.78);
    }
  });
});

describe('corridors configuration file', () => {
  test('the shipped default file is valid', () => {
    assert.equal(defaults.quoteTtlMs, 1_800_000);
    assert.equal(toFixedString(defaults.rates.COP ?? assert.fail('COP rate')), '3900.50');
    assert.equal(toFixedString(defaults.rates.BRL ?? assert.fail('BRL rate')), '5.3510');
  });

  // [case, edit, fragment every error line must contain at least one of]
  const rows: [string, (file: Json) => void, string][] = [
    ['unknown top-level field', (file) => { file.extra = 1; }, '(root): Unrecognized key: "extra"'],
    ['unknown nested field', (file) => { at(file, 'flows', 'payout').enable = true; }, 'flows.payout: Unrecognized key: "enable"'],
    ['USDT on Stellar', (file) => { at(file, 'mints', 'STELLAR').USDT = at(file, 'mints', 'STELLAR', 'USDC'); }, 'mints.STELLAR: Unrecognized key: "USDT"'],
    ['onramp over BREB', (file) => { at(file, 'corridors', 'onramp').BREB = at(file, 'corridors', 'payout', 'BREB'); }, 'corridors.onramp: Unrecognized key: "BREB"'],
    ['quote validity over one hour', (file) => { file.quoteTtlMs = 3_600_001; }, 'quoteTtlMs'],
    ['quote validity not an integer', (file) => { file.quoteTtlMs = 90_000.5; }, 'quoteTtlMs'],
    ['quote validity missing', (file) => { delete file.quoteTtlMs; }, 'quoteTtlMs'],
    ['minimum above maximum', (file) => { at(file, 'corridors', 'payout', 'BREB').minAmount = '5000000.01'; }, 'corridors.payout.BREB.minAmount: minAmount must not exceed maxAmount'],
    ['bound with three decimals', (file) => { at(file, 'corridors', 'payout', 'PIX').minAmount = '1.001'; }, 'corridors.payout.PIX.minAmount'],
    ['bound of zero', (file) => { at(file, 'corridors', 'payout', 'PIX').minAmount = '0.00'; }, 'corridors.payout.PIX.minAmount: must be greater than 0'],
    ['bound as a number', (file) => { at(file, 'corridors', 'payout', 'PIX').minAmount = 1; }, 'corridors.payout.PIX.minAmount'],
    ['percentage of 100 %', (file) => { at(file, 'corridors', 'payout', 'PIX', 'fee').percentage = '1'; }, 'corridors.payout.PIX.fee.percentage'],
    ['negative fixed fee', (file) => { at(file, 'corridors', 'payout', 'PIX', 'fee').fixed = '-1'; }, 'corridors.payout.PIX.fee.fixed'],
    ['fixed fee with 7 decimals', (file) => { at(file, 'corridors', 'payout', 'PIX', 'fee').fixed = '0.0000001'; }, 'corridors.payout.PIX.fee.fixed'],
    ['rate of zero', (file) => { at(file, 'rates').COP = '0.00'; }, 'rates.COP: must be greater than 0'],
    ['rate as a number', (file) => { at(file, 'rates').BRL = 5.35; }, 'rates.BRL'],
    ['Stellar with 6 decimals', (file) => { at(file, 'mints', 'STELLAR', 'USDC').decimals = 6; }, 'mints.STELLAR.USDC.decimals'],
    ['Solana mint not base58', (file) => { at(file, 'mints', 'SOLANA', 'USDC').identifier = '0OIl'; }, 'mints.SOLANA.USDC.identifier'],
    ['Celo contract too short', (file) => { at(file, 'mints', 'CELO', 'USDT').identifier = '0x1234'; }, 'mints.CELO.USDT.identifier'],
    ['empty unsupported pattern', (file) => { file.unsupported = [{}]; }, 'unsupported.0: must name at least one'],
    ['unsupported pattern with an unknown network', (file) => { file.unsupported = [{ network: 'ETHEREUM' }]; }, 'unsupported.0.network'],
  ];

  for (const [name, edit, fragment] of rows) {
    test(`rejects ${name}, naming the field`, () => {
      const file = defaultFile();
      edit(file);
      const result = parseCorridorConfig(file);
      assert.ok(!result.ok, 'expected a rejection');
      assert.ok(result.errors.some((line) => line.includes(fragment)), result.errors.join('\n'));
    });
  }

  test('loadCorridorsFile names the file in its error', () => {
    assert.throws(() => loadCorridorsFile('/nonexistent/corridors.json'), /\/nonexistent\/corridors\.json: cannot read corridors file/);
  });
});
