// Exact decimal money: a bigint count of the smallest unit plus a scale (value = units / 10^scale).
// Binary floats never hold money here. JSON numbers cross the boundary once, in `parseAmount`,
// which reads the shortest decimal text of the number (what the client typed, for any literal of
// at most 15 significant digits) and rejects anything that is not exactly representable at the
// currency's scale. Every rounding names its mode; the rules are listed in docs/decisions.md.

export interface Decimal {
  /** value = units / 10^scale */
  readonly units: bigint;
  /** digits after the decimal point, 0..18 */
  readonly scale: number;
}

/**
 * Named rounding modes. `floor`/`ceil` are toward −∞/+∞ (for the non-negative amounts we handle,
 * `floor` is "down" and `ceil` is "up"); `halfEven` is banker's rounding, used only for display of
 * rates, never for amounts that move.
 */
export type RoundingMode = 'floor' | 'ceil' | 'halfEven';

export const scaleMax = 18;
/** The largest integer part accepted from a client. */
export const integerDigitsMax = 15;
/**
 * Significant digits accepted from a client. A double holds any 15-digit decimal exactly (and its
 * shortest text gives those digits back), so amounts within this bound survive JSON both ways.
 */
export const significantDigitsMax = 15;
/** Longest amount text read (a JSON number's shortest text is at most 24 characters). */
export const amountTextLengthMax = 64;

export type AmountParseError =
  | { kind: 'not_a_number'; reason: string }
  | { kind: 'not_finite'; reason: string }
  | { kind: 'negative'; reason: string }
  | { kind: 'zero'; reason: string }
  | { kind: 'too_many_decimals'; reason: string }
  | { kind: 'too_large'; reason: string };

export type ParseResult = { ok: true; value: Decimal } | { ok: false; error: AmountParseError };

const decimalText = /^(-)?(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

const pow10Max = 2 * scaleMax + 20;
/** 10^0 … 10^pow10Max, built once: every amount parsed, rescaled or divided needs one. */
const powersOfTen: readonly bigint[] = Array.from({ length: pow10Max + 1 }, (_, exponent) => 10n ** BigInt(exponent));

function pow10(exponent: number): bigint {
  const power = powersOfTen[exponent];
  assert(power !== undefined, 'pow10 exponent');
  return power;
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`money invariant violated: ${what}`);
}

export function decimal(units: bigint, scale: number): Decimal {
  assert(Number.isInteger(scale) && scale >= 0 && scale <= scaleMax, `scale ${scale}`);
  return { units, scale };
}

export function zero(scale: number): Decimal {
  return decimal(0n, scale);
}

function fail(kind: AmountParseError['kind'], reason: string): ParseResult {
  return { ok: false, error: { kind, reason } };
}

/**
 * Parse a client-supplied amount (a JSON number, or a decimal string from configuration or
 * storage) at exactly `scale` decimals. `label` names the field in the reason text.
 */
export function parseAmount(
  input: unknown,
  scale: number,
  options: { label: string; allowZero?: boolean; allowNegative?: boolean },
): ParseResult {
  const { label } = options;
  let text: string;
  if (typeof input === 'number') {
    if (Number.isNaN(input)) return fail('not_finite', `${label} must be a finite number`);
    if (!Number.isFinite(input)) return fail('not_finite', `${label} must be a finite number`);
    text = String(input);
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    return fail('not_a_number', `${label} must be a number`);
  }
  if (text.length > amountTextLengthMax) return fail('too_large', `${label} has too many digits`);
  const match = decimalText.exec(text);
  if (!match) return fail('not_a_number', `${label} must be a number`);
  const [, sign, integerPart = '', fractionPart = '', exponentText] = match;
  // value = digits × 10^power, with no leading zeros and (below) no trailing zeros in `digits`,
  // so the checks are string arithmetic and no power of ten is built before the value is bounded
  // (1e300 is a valid JSON number and must be a rejection, not an exception).
  let digits = (integerPart + fractionPart).replace(/^0+/, '');
  if (digits === '') {
    if (options.allowZero !== true) return fail('zero', `${label} must be greater than 0`);
    return { ok: true, value: zero(scale) };
  }
  if (sign === '-' && options.allowNegative !== true) {
    return fail('negative', `${label} must not be negative`);
  }
  // |exponent| < 10^64 because the text is bounded, so `power` is a finite float at worst.
  let power = (exponentText === undefined ? 0 : Number(exponentText)) - fractionPart.length;
  const trailingZeros = /0*$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailingZeros);
  power += trailingZeros;
  if (-power > scale) {
    return fail('too_many_decimals', `${label} has more than ${scale} decimal places`);
  }
  if (digits.length + power > integerDigitsMax) {
    return fail('too_large', `${label} must be less than 10^${integerDigitsMax}`);
  }
  if (digits.length > significantDigitsMax) {
    return fail('too_large', `${label} has more than ${significantDigitsMax} significant digits`);
  }
  const magnitude = BigInt(digits) * pow10(power + scale);
  return { ok: true, value: decimal(sign === '-' ? -magnitude : magnitude, scale) };
}

/** Parse a decimal string that the service itself wrote (config, storage); throws on bad input. */
export function decimalFromString(text: string, scale: number): Decimal {
  const parsed = parseAmount(text, scale, { label: 'decimal', allowZero: true, allowNegative: true });
  if (!parsed.ok) throw new Error(`bad decimal ${JSON.stringify(text)} at scale ${scale}: ${parsed.error.reason}`);
  return parsed.value;
}

/** Parse a decimal string keeping exactly the digits it has (rates, percentages from config). */
export function decimalFromExactString(text: string): Decimal {
  const match = /^-?\d+(?:\.(\d+))?$/.exec(text.trim());
  if (!match) throw new Error(`bad decimal ${JSON.stringify(text)}`);
  return decimalFromString(text, (match[1] ?? '').length);
}

/** Divide with an explicit rounding mode; `divisor` must be positive. */
export function divideRounded(dividend: bigint, divisor: bigint, mode: RoundingMode): bigint {
  assert(divisor > 0n, 'divisor must be positive');
  const quotient = dividend / divisor; // truncates toward zero
  const remainder = dividend % divisor;
  if (remainder === 0n) return quotient;
  switch (mode) {
    case 'floor':
      return dividend < 0n ? quotient - 1n : quotient;
    case 'ceil':
      return dividend > 0n ? quotient + 1n : quotient;
    case 'halfEven': {
      const twice = 2n * (remainder < 0n ? -remainder : remainder);
      const away = dividend < 0n ? quotient - 1n : quotient + 1n;
      if (twice > divisor) return away;
      if (twice < divisor) return quotient;
      return quotient % 2n === 0n ? quotient : away;
    }
  }
}

/** Re-express `value` at `scale`, rounding with `mode` when digits are dropped. */
export function rescale(value: Decimal, scale: number, mode: RoundingMode): Decimal {
  if (scale === value.scale) return value;
  if (scale > value.scale) return decimal(value.units * pow10(scale - value.scale), scale);
  return decimal(divideRounded(value.units, pow10(value.scale - scale), mode), scale);
}

function aligned(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [rescale(a, scale, 'floor').units, rescale(b, scale, 'floor').units, scale];
}

/** Exact sum; the result has the larger of the two scales. */
export function add(a: Decimal, b: Decimal): Decimal {
  const [x, y, scale] = aligned(a, b);
  return decimal(x + y, scale);
}

/** Exact difference; the result has the larger of the two scales. */
export function subtract(a: Decimal, b: Decimal): Decimal {
  const [x, y, scale] = aligned(a, b);
  return decimal(x - y, scale);
}

/** −1, 0 or 1, comparing values (not representations): 1.50 equals 1.5. */
export function compare(a: Decimal, b: Decimal): -1 | 0 | 1 {
  const [x, y] = aligned(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function isZero(value: Decimal): boolean {
  return value.units === 0n;
}

export function isPositive(value: Decimal): boolean {
  return value.units > 0n;
}

export function max(a: Decimal, b: Decimal): Decimal {
  return compare(a, b) >= 0 ? a : b;
}

export function min(a: Decimal, b: Decimal): Decimal {
  return compare(a, b) <= 0 ? a : b;
}

/** a × b, rounded to `scale` with `mode` (the exact product has a.scale + b.scale digits). */
export function multiply(a: Decimal, b: Decimal, scale: number, mode: RoundingMode): Decimal {
  // The exact product's scale may exceed scaleMax (an 18-place rate times a 7-place amount), so
  // it is never built as a Decimal: round the raw product straight to `scale`.
  const productScale = a.scale + b.scale;
  const product = a.units * b.units;
  if (scale >= productScale) return decimal(product * pow10(scale - productScale), scale);
  return decimal(divideRounded(product, pow10(productScale - scale), mode), scale);
}

/** a ÷ b, rounded to `scale` with `mode`; b must be positive. */
export function divide(a: Decimal, b: Decimal, scale: number, mode: RoundingMode): Decimal {
  assert(b.units > 0n, 'division by a non-positive decimal');
  // a/b = (a.units / 10^a.scale) / (b.units / 10^b.scale); scale the numerator so that the
  // integer division lands exactly at `scale` digits before rounding.
  const shift = scale + b.scale - a.scale;
  const numerator = shift >= 0 ? a.units * pow10(shift) : a.units;
  const denominator = shift >= 0 ? b.units : b.units * pow10(-shift);
  return decimal(divideRounded(numerator, denominator, mode), scale);
}

/** Fixed-point text with exactly `scale` decimals: 1234.5 at scale 2 → "1234.50". */
export function toFixedString(value: Decimal): string {
  const negative = value.units < 0n;
  const digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, '0');
  const integerPart = digits.slice(0, digits.length - value.scale);
  const fractionPart = digits.slice(digits.length - value.scale);
  return `${negative ? '-' : ''}${integerPart}${value.scale > 0 ? `.${fractionPart}` : ''}`;
}

/** Shortest exact text, without trailing fractional zeros: 100 at scale 7 → "100", 12.50 → "12.5". */
export function toPlainString(value: Decimal): string {
  const fixed = toFixedString(value);
  return value.scale === 0 ? fixed : fixed.replace(/\.?0+$/, '');
}

/**
 * The JSON number for a response. Exact whenever the amount has at most `significantDigitsMax`
 * significant digits, which every bounded amount we produce has; the assertion turns any
 * violation into a loud bug instead of a silently different number.
 */
export function toJsonNumber(value: Decimal): number {
  const text = toFixedString(value);
  const number = Number(text);
  const back = parseAmount(number, value.scale, { label: 'amount', allowZero: true, allowNegative: true });
  assert(back.ok && back.value.units === value.units, `amount ${text} is not exact as a JSON number`);
  return number;
}

/** Base units of a token (the integer sent on chain) from a decimal at the token's scale. */
export function toBaseUnits(value: Decimal, decimals: number): bigint {
  assert(value.scale <= decimals, 'more decimals than the token has');
  return rescale(value, decimals, 'floor').units;
}

export function fromBaseUnits(units: bigint, decimals: number): Decimal {
  return decimal(units, decimals);
}
