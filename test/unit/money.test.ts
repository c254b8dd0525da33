// Money: what a partner notices is which amounts are accepted, which are refused (and why), and
// that every amount we answer with is exactly the amount we computed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  add,
  amountTextLengthMax,
  compare,
  decimal,
  decimalFromExactString,
  decimalFromString,
  divide,
  divideRounded,
  fromBaseUnits,
  multiply,
  parseAmount,
  rescale,
  subtract,
  toBaseUnits,
  toFixedString,
  toJsonNumber,
  toPlainString,
} from '../../src/domain/money.ts';
import type { AmountParseError, Decimal, RoundingMode } from '../../src/domain/money.ts';

const COP = 2;
const STELLAR_USDC = 7;
const SOLANA_USDC = 6;

function accepted(input: unknown, scale: number, options: { allowZero?: boolean; allowNegative?: boolean } = {}): bigint {
  const result = parseAmount(input, scale, { label: 'amount', ...options });
  assert.ok(result.ok, `expected ${String(input)} to parse at scale ${scale}: ${result.ok ? '' : result.error.reason}`);
  assert.equal(result.value.scale, scale);
  return result.value.units;
}

function rejected(input: unknown, scale: number, options: { allowZero?: boolean; allowNegative?: boolean } = {}): AmountParseError {
  const result = parseAmount(input, scale, { label: 'amount', ...options });
  assert.ok(!result.ok, `expected ${String(input)} to be rejected at scale ${scale}`);
  return result.error;
}

describe('parseAmount accepts exact amounts', () => {
  const cases: { input: unknown; scale: number; units: bigint; note: string }[] = [
    { input: 12.5, scale: COP, units: 1250n, note: 'JSON number with fewer decimals than the scale' },
    { input: 5000000, scale: COP, units: 500000000n, note: 'integer' },
    { input: 5000000.01, scale: COP, units: 500000001n, note: 'one minor unit above a cap' },
    { input: 0.01, scale: COP, units: 1n, note: 'smallest COP amount' },
    { input: 0.0000001, scale: STELLAR_USDC, units: 1n, note: 'smallest Stellar amount (1e-7)' },
    { input: 0.000001, scale: SOLANA_USDC, units: 1n, note: 'smallest Solana amount' },
    { input: 25.0000001, scale: STELLAR_USDC, units: 250000001n, note: 'KYC threshold plus one Stellar unit' },
    { input: 999999999999999, scale: 0, units: 999999999999999n, note: '15 nines, largest integer accepted' },
    { input: 99999999999999.9, scale: 1, units: 999999999999999n, note: '15 significant digits with a fraction' },
    { input: 1e14, scale: COP, units: 10000000000000000n, note: 'exponent form of a large integer' },
    { input: '12.5', scale: COP, units: 1250n, note: 'decimal string' },
    { input: '12.50', scale: 1, units: 125n, note: 'trailing zero beyond the scale only pads' },
    { input: 12.5, scale: 1, units: 125n, note: 'the number 12.50 at scale 1' },
    { input: '12.500000', scale: COP, units: 1250n, note: 'many padding zeros' },
    { input: ' 7 ', scale: COP, units: 700n, note: 'string is trimmed' },
    { input: '007.10', scale: COP, units: 710n, note: 'leading zeros' },
    { input: '1e3', scale: 0, units: 1000n, note: 'string exponent' },
    { input: '1.5E2', scale: 0, units: 150n, note: 'upper-case exponent with fraction' },
    { input: '1e-2', scale: COP, units: 1n, note: 'negative exponent within the scale' },
    { input: 1e-7, scale: STELLAR_USDC, units: 1n, note: '1e-7 at Stellar scale' },
    { input: '2500e-2', scale: 0, units: 25n, note: 'exponent cancelling the fraction' },
  ];
  for (const { input, scale, units, note } of cases) {
    test(`${JSON.stringify(input)} at scale ${scale}: ${note}`, () => {
      assert.equal(accepted(input, scale), units);
    });
  }
});

describe('parseAmount rejects', () => {
  const cases: { input: unknown; scale: number; kind: AmountParseError['kind']; note: string }[] = [
    { input: Number.NaN, scale: COP, kind: 'not_finite', note: 'NaN' },
    { input: Number.POSITIVE_INFINITY, scale: COP, kind: 'not_finite', note: 'Infinity' },
    { input: Number.NEGATIVE_INFINITY, scale: COP, kind: 'not_finite', note: '-Infinity' },
    { input: -1, scale: COP, kind: 'negative', note: 'negative integer' },
    { input: -0.5, scale: COP, kind: 'negative', note: 'negative fraction' },
    { input: -1.001, scale: COP, kind: 'negative', note: 'negative wins over decimals' },
    { input: '-3', scale: COP, kind: 'negative', note: 'negative string' },
    { input: 0, scale: COP, kind: 'zero', note: 'zero where a positive amount is required' },
    { input: -0, scale: COP, kind: 'zero', note: 'negative zero' },
    { input: '0.00', scale: COP, kind: 'zero', note: 'zero string' },
    { input: 1.001, scale: COP, kind: 'too_many_decimals', note: '1.001 COP' },
    { input: 0.00000001, scale: STELLAR_USDC, kind: 'too_many_decimals', note: '8 decimals on Stellar (7)' },
    { input: 0.0000001, scale: SOLANA_USDC, kind: 'too_many_decimals', note: '7 decimals on Solana (6)' },
    { input: 1e-7, scale: SOLANA_USDC, kind: 'too_many_decimals', note: '1e-7 on Solana' },
    { input: 5e-324, scale: COP, kind: 'too_many_decimals', note: 'smallest double' },
    { input: 0.1 + 0.2, scale: COP, kind: 'too_many_decimals', note: 'float noise 0.30000000000000004' },
    { input: 1e21, scale: COP, kind: 'too_large', note: '1e21 (JSON text 1e+21)' },
    { input: 1e15, scale: 0, kind: 'too_large', note: '10^15, one past the integer bound' },
    { input: 1e60, scale: COP, kind: 'too_large', note: '1e60 (was an exception)' },
    { input: 1e300, scale: COP, kind: 'too_large', note: '1e300' },
    { input: Number.MAX_VALUE, scale: COP, kind: 'too_large', note: 'largest double' },
    { input: '1e99999999999999999999', scale: COP, kind: 'too_large', note: 'absurd exponent string' },
    { input: 1234567890123456, scale: 0, kind: 'too_large', note: '16-digit integer' },
    { input: 0.1234567890123456, scale: 18, kind: 'too_large', note: '16 significant digits' },
    { input: 0.1 + 0.2, scale: 18, kind: 'too_large', note: 'float noise with room for its decimals' },
    { input: `0.${'0'.repeat(amountTextLengthMax)}1`, scale: 18, kind: 'too_large', note: 'overlong text' },
    { input: 'abc', scale: COP, kind: 'not_a_number', note: 'letters' },
    { input: '', scale: COP, kind: 'not_a_number', note: 'empty string' },
    { input: '1.', scale: COP, kind: 'not_a_number', note: 'dangling point' },
    { input: '.5', scale: COP, kind: 'not_a_number', note: 'no integer digit' },
    { input: '+1', scale: COP, kind: 'not_a_number', note: 'explicit plus' },
    { input: '1,5', scale: COP, kind: 'not_a_number', note: 'comma' },
    { input: '0x10', scale: COP, kind: 'not_a_number', note: 'hex' },
    { input: 'Infinity', scale: COP, kind: 'not_a_number', note: 'Infinity as text' },
    { input: 'NaN', scale: COP, kind: 'not_a_number', note: 'NaN as text' },
    { input: null, scale: COP, kind: 'not_a_number', note: 'null' },
    { input: undefined, scale: COP, kind: 'not_a_number', note: 'undefined' },
    { input: true, scale: COP, kind: 'not_a_number', note: 'true' },
    { input: false, scale: COP, kind: 'not_a_number', note: 'false' },
    { input: {}, scale: COP, kind: 'not_a_number', note: 'object' },
    { input: { amount: 5 }, scale: COP, kind: 'not_a_number', note: 'wrapped number' },
    { input: [5], scale: COP, kind: 'not_a_number', note: 'array' },
    { input: 5n, scale: COP, kind: 'not_a_number', note: 'bigint' },
  ];
  for (const { input, scale, kind, note } of cases) {
    test(`${note} → ${kind}`, () => {
      const error = rejected(input, scale);
      assert.equal(error.kind, kind);
      assert.match(error.reason, /^amount /, 'the reason names the field');
    });
  }

  test('the reason text names the field and the scale', () => {
    const result = parseAmount(1.001, COP, { label: 'source_amount' });
    assert.deepEqual(result, {
      ok: false,
      error: { kind: 'too_many_decimals', reason: 'source_amount has more than 2 decimal places' },
    });
  });
});

describe('parseAmount options', () => {
  test('allowZero accepts zero in every spelling', () => {
    for (const input of [0, -0, '0', '0.00', '0e5', '-0']) {
      assert.equal(accepted(input, COP, { allowZero: true }), 0n, String(input));
    }
  });
  test('allowZero still rejects negatives', () => {
    assert.equal(rejected(-0.01, COP, { allowZero: true }).kind, 'negative');
  });
  test('allowNegative keeps the sign and the other checks', () => {
    assert.equal(accepted(-1.25, COP, { allowNegative: true }), -125n);
    assert.equal(accepted('-0.0000001', STELLAR_USDC, { allowNegative: true }), -1n);
    assert.equal(rejected(-1.001, COP, { allowNegative: true }).kind, 'too_many_decimals');
    assert.equal(rejected(-1e21, COP, { allowNegative: true }).kind, 'too_large');
  });
  test('decimalFromString throws on what parseAmount rejects (service-written text only)', () => {
    assert.deepEqual(decimalFromString('-12.5', COP), decimal(-1250n, COP));
    assert.throws(() => decimalFromString('12.345', COP), /more than 2 decimal places/);
  });
  test('decimalFromExactString keeps the digits it is given', () => {
    assert.deepEqual(decimalFromExactString('0.0125'), decimal(125n, 4));
    assert.deepEqual(decimalFromExactString('100'), decimal(100n, 0));
    assert.throws(() => decimalFromExactString('1e3'));
  });
});

describe('rounding modes', () => {
  // dividend / 10 for each mode: every sign, below, at and above the half, and exact values.
  const cases: { tenths: bigint; floor: bigint; ceil: bigint; halfEven: bigint }[] = [
    { tenths: 24n, floor: 2n, ceil: 3n, halfEven: 2n },
    { tenths: 25n, floor: 2n, ceil: 3n, halfEven: 2n },
    { tenths: 26n, floor: 2n, ceil: 3n, halfEven: 3n },
    { tenths: 35n, floor: 3n, ceil: 4n, halfEven: 4n },
    { tenths: 5n, floor: 0n, ceil: 1n, halfEven: 0n },
    { tenths: 15n, floor: 1n, ceil: 2n, halfEven: 2n },
    { tenths: 20n, floor: 2n, ceil: 2n, halfEven: 2n },
    { tenths: 0n, floor: 0n, ceil: 0n, halfEven: 0n },
    { tenths: -24n, floor: -3n, ceil: -2n, halfEven: -2n },
    { tenths: -25n, floor: -3n, ceil: -2n, halfEven: -2n },
    { tenths: -26n, floor: -3n, ceil: -2n, halfEven: -3n },
    { tenths: -35n, floor: -4n, ceil: -3n, halfEven: -4n },
    { tenths: -5n, floor: -1n, ceil: 0n, halfEven: 0n },
    { tenths: -15n, floor: -2n, ceil: -1n, halfEven: -2n },
    { tenths: -20n, floor: -2n, ceil: -2n, halfEven: -2n },
  ];
  const modes: RoundingMode[] = ['floor', 'ceil', 'halfEven'];
  for (const row of cases) {
    for (const mode of modes) {
      test(`${row.tenths}/10 ${mode} → ${row[mode]}`, () => {
        assert.equal(divideRounded(row.tenths, 10n, mode), row[mode]);
        assert.deepEqual(rescale(decimal(row.tenths, 1), 0, mode), decimal(row[mode], 0));
      });
    }
  }
  test('halfEven on a non-decimal divisor: exact halves go to even, others to nearest', () => {
    assert.equal(divideRounded(7n, 2n, 'halfEven'), 4n); // 3.5
    assert.equal(divideRounded(5n, 2n, 'halfEven'), 2n); // 2.5
    assert.equal(divideRounded(-7n, 2n, 'halfEven'), -4n);
    assert.equal(divideRounded(2n, 3n, 'halfEven'), 1n); // 0.67
    assert.equal(divideRounded(-1n, 3n, 'halfEven'), 0n); // -0.33
  });
  test('a non-positive divisor is a bug', () => {
    assert.throws(() => divideRounded(1n, 0n, 'floor'), /invariant/);
    assert.throws(() => divideRounded(1n, -2n, 'floor'), /invariant/);
  });
});

describe('multiply, divide and rescale', () => {
  test('rescaling up is exact and ignores the mode', () => {
    for (const mode of ['floor', 'ceil', 'halfEven'] as const) {
      assert.deepEqual(rescale(decimal(1250n, 2), 7, mode), decimal(125000000n, 7));
    }
  });
  test('rescaling down an exactly representable value does not round', () => {
    for (const mode of ['floor', 'ceil', 'halfEven'] as const) {
      assert.deepEqual(rescale(decimal(125000000n, 7), 2, mode), decimal(1250n, 2));
    }
  });
  test('multiply keeps the exact product when the scale allows', () => {
    // 4012.37 COP/USDC × 12.3456789 USDC = 49535.431647993, exact at 9 places
    const product = multiply(decimal(401237n, 2), decimal(123456789n, 7), 9, 'floor');
    assert.deepEqual(product, decimal(49535431647993n, 9));
    assert.equal(toFixedString(product), '49535.431647993');
  });
  test('multiply rounds by the named mode', () => {
    const price = decimal(1005n, 3); // 1.005
    assert.deepEqual(multiply(price, decimal(3n, 0), 2, 'floor'), decimal(301n, 2)); // 3.015
    assert.deepEqual(multiply(price, decimal(3n, 0), 2, 'ceil'), decimal(302n, 2));
    assert.deepEqual(multiply(price, decimal(3n, 0), 2, 'halfEven'), decimal(302n, 2));
    assert.deepEqual(multiply(decimal(1n, 3), decimal(5n, 0), 2, 'halfEven'), decimal(0n, 2)); // 0.005
    assert.deepEqual(multiply(decimal(-1005n, 3), decimal(3n, 0), 2, 'floor'), decimal(-302n, 2));
  });
  test('multiply whose exact product has more than 18 places (was an exception)', () => {
    const rate = decimal(123456789012345678n, 18); // 0.123456789012345678
    const amount = decimal(250000000n, 7); // 25 USDC on Stellar
    assert.deepEqual(multiply(rate, amount, 7, 'floor'), decimal(30864197n, 7));
    assert.deepEqual(multiply(rate, amount, 7, 'ceil'), decimal(30864198n, 7));
    assert.deepEqual(multiply(decimal(1n, 18), decimal(1n, 7), 7, 'ceil'), decimal(1n, 7));
  });
  test('divide rounds by the named mode', () => {
    const ten = decimal(10n, 0);
    const three = decimal(3n, 0);
    assert.deepEqual(divide(ten, three, 2, 'floor'), decimal(333n, 2));
    assert.deepEqual(divide(ten, three, 2, 'ceil'), decimal(334n, 2));
    assert.deepEqual(divide(ten, three, 2, 'halfEven'), decimal(333n, 2));
    assert.deepEqual(divide(decimal(2n, 0), three, 2, 'halfEven'), decimal(67n, 2));
    assert.deepEqual(divide(decimal(-10n, 0), three, 2, 'floor'), decimal(-334n, 2));
  });
  test('divide is exact when the quotient fits, across scales', () => {
    // 50,000.00 COP at 4,000.0000 COP/USDC = 12.5 USDC
    assert.deepEqual(divide(decimal(5000000n, 2), decimal(40000000n, 4), 7, 'ceil'), decimal(125000000n, 7));
    // result scale below the dividend's scale
    assert.deepEqual(divide(decimal(1234567n, 7), decimal(1n, 0), 2, 'floor'), decimal(12n, 2));
    assert.deepEqual(divide(decimal(1234567n, 7), decimal(1n, 0), 2, 'ceil'), decimal(13n, 2));
  });
  test('dividing by zero or a negative is a bug', () => {
    assert.throws(() => divide(decimal(1n, 0), decimal(0n, 2), 2, 'floor'), /invariant/);
    assert.throws(() => divide(decimal(1n, 0), decimal(-1n, 2), 2, 'floor'), /invariant/);
  });
});

describe('add, subtract and compare across scales', () => {
  test('compare compares values, not representations', () => {
    const table: { a: Decimal; b: Decimal; expected: -1 | 0 | 1 }[] = [
      { a: decimal(15n, 1), b: decimal(150n, 2), expected: 0 },
      { a: decimal(151n, 2), b: decimal(15n, 1), expected: 1 },
      { a: decimal(15n, 1), b: decimal(151n, 2), expected: -1 },
      { a: decimal(250000001n, 7), b: decimal(25n, 0), expected: 1 },
      { a: decimal(25000000n, 6), b: decimal(250000000n, 7), expected: 0 },
      { a: decimal(-1n, 0), b: decimal(0n, 7), expected: -1 },
      { a: decimal(0n, 0), b: decimal(0n, 18), expected: 0 },
    ];
    for (const { a, b, expected } of table) {
      assert.equal(compare(a, b), expected, `${toFixedString(a)} vs ${toFixedString(b)}`);
    }
  });
  test('add and subtract are exact at the larger scale', () => {
    assert.deepEqual(add(decimal(25n, 0), decimal(1n, 7)), decimal(250000001n, 7));
    assert.deepEqual(add(decimal(1n, 6), decimal(1n, 7)), decimal(11n, 7));
    assert.deepEqual(subtract(decimal(100n, 0), decimal(1n, 2)), decimal(9999n, 2));
    assert.deepEqual(subtract(decimal(1n, 2), decimal(100n, 0)), decimal(-9999n, 2));
  });
});

describe('text and JSON output', () => {
  const fixed: { value: Decimal; text: string; plain: string }[] = [
    { value: decimal(0n, 0), text: '0', plain: '0' },
    { value: decimal(0n, 2), text: '0.00', plain: '0' },
    { value: decimal(5n, 2), text: '0.05', plain: '0.05' },
    { value: decimal(-5n, 2), text: '-0.05', plain: '-0.05' },
    { value: decimal(123450n, 2), text: '1234.50', plain: '1234.5' },
    { value: decimal(1n, 7), text: '0.0000001', plain: '0.0000001' },
    { value: decimal(1000000000n, 7), text: '100.0000000', plain: '100' },
    { value: decimal(100n, 0), text: '100', plain: '100' },
    { value: decimal(500000000n, 2), text: '5000000.00', plain: '5000000' },
    { value: decimal(-123456789n, 3), text: '-123456.789', plain: '-123456.789' },
  ];
  for (const { value, text, plain } of fixed) {
    test(`toFixedString ${text}, toPlainString ${plain}`, () => {
      assert.equal(toFixedString(value), text);
      assert.equal(toPlainString(value), plain);
    });
  }

  test('toJsonNumber survives JSON both ways for a sweep of values', () => {
    // A deterministic sweep: fixed edge values plus seeded pseudo-random ones of 1..15 digits.
    let seed = 0x2545f491n;
    const next = (): bigint => {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
      return seed;
    };
    const edges = [1n, 5n, 9n, 10n, 99n, 100n, 12345n, 999999999999999n, 100000000000000n, 250000001n];
    for (const scale of [0, 2, 6, 7]) {
      const values = [...edges];
      for (let i = 0; i < 500; i += 1) {
        const digits = Number(next() % 15n) + 1;
        values.push(next() % 10n ** BigInt(digits));
      }
      for (const units of values) {
        for (const signed of [units, -units]) {
          const value = decimal(signed, scale);
          const wire = JSON.parse(JSON.stringify({ amount: toJsonNumber(value) })) as { amount: unknown };
          const back = parseAmount(wire.amount, scale, { label: 'amount', allowZero: true, allowNegative: true });
          assert.ok(back.ok, `${toFixedString(value)} did not parse back`);
          assert.equal(back.value.units, signed, `${toFixedString(value)} changed on the wire`);
          assert.equal(wire.amount, Number(toFixedString(value)));
        }
      }
    }
  });

  test('toJsonNumber refuses an amount a double cannot carry exactly', () => {
    assert.throws(() => toJsonNumber(decimal(1234567890123456n, 2)), /not exact/);
    assert.throws(() => toJsonNumber(decimal(10n ** 17n, 2)), /not exact/);
  });
});

describe('token base units', () => {
  test('converts to the integer sent on chain', () => {
    assert.equal(toBaseUnits(decimal(1250n, 2), 7), 125000000n);
    assert.equal(toBaseUnits(decimal(12500000n, 6), 6), 12500000n);
    assert.deepEqual(fromBaseUnits(125000000n, 7), decimal(125000000n, 7));
  });
  test('an amount with more decimals than the token is a bug', () => {
    assert.throws(() => toBaseUnits(decimal(1n, 7), 6), /invariant/);
  });
});
