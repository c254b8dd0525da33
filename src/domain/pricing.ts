// Pricing: the three quotes as pure functions of a resolved route, a rate and a fee. Every amount
// is an exact decimal and every rounding is named; the rules (docs/decisions-pricing.md):
//   - fees are computed on the net crypto amount in every direction, so /quote and /quote/reverse
//     are inverse up to one fiat minor unit;
//   - we never pay out more than the crypto received is worth at the quoted rate (net amounts are
//     rounded in our favour: ceil for what we must receive, floor for what we give);
//   - a fee never exceeds its exact value by one token minor unit or more.
// Checks run in one documented order: invalid_request → corridor_unavailable → quote_unavailable
// → minimum/maximum (`priceQuoteRequest` runs the whole order).
import { fiatDecimals, type FiatCurrency } from './assets.ts';
import { resolveRoute, type CorridorConfig, type FeeConfig, type Route } from './corridors.ts';
import {
  add,
  compare,
  decimal,
  divide,
  isPositive,
  divideRounded,
  isZero,
  parseAmount,
  scaleMax,
  subtract,
  toFixedString,
  toJsonNumber,
  type Decimal,
  type RoundingMode,
} from './money.ts';
import { quoteValue, type FeeType, type Quote, type QuoteKind } from './quote.ts';
import { quoteError, type QuoteError } from './quote-errors.ts';

/** The spec: a quote is valid up to one hour. */
export const quoteTtlMsMax = 3_600_000;
/**
 * The largest crypto amount (value, net or gross) of any quote, in whole tokens. It keeps every
 * amount within the 15 significant digits that survive a JSON number (8 integer + 7 decimals).
 */
export const cryptoAmountMax: Decimal = decimal(10_000_000n, 0);
/** The largest fiat value of a reverse quote: 13 integer digits + 2 decimals. */
export const fiatAmountMax: Decimal = decimal(9_999_999_999_999_99n, 2);

export type QuoteResult = { ok: true; quote: Quote } | { ok: false; error: QuoteError };

export interface PricingInput {
  readonly route: Route;
  /** Fiat units per one crypto unit; null when no rate is available (→ quote_unavailable). */
  readonly rate: Decimal | null;
  /** The amount exactly as the partner sent it (a JSON number); parsed here at the right scale. */
  readonly amount: unknown;
  /** The partner's own fee, replacing the corridor's. */
  readonly partnerFee?: FeeConfig | undefined;
  readonly quoteId: string;
  readonly partnerId: string;
  readonly nowMs: number;
  readonly ttlMs: number;
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`pricing invariant violated: ${what}`);
}

export function feeType(fee: FeeConfig): FeeType {
  const hasPercentage = !isZero(fee.percentage);
  const hasFixed = !isZero(fee.fixed);
  if (hasPercentage && hasFixed) return 'combined';
  if (hasPercentage) return 'percentage';
  if (hasFixed) return 'fixed';
  return 'none';
}

const pow10 = (exponent: number): bigint => 10n ** BigInt(exponent);

/** units / 10^fromScale re-expressed at `scale`, rounded with `mode`; no cap on `fromScale`. */
function roundUnits(units: bigint, fromScale: number, scale: number, mode: RoundingMode): Decimal {
  if (scale >= fromScale) return decimal(units * pow10(scale - fromScale), scale);
  return decimal(divideRounded(units, pow10(fromScale - scale), mode), scale);
}

/**
 * a × b rounded to `scale`. Unlike money's `multiply`, the exact product may have more than 18
 * decimals (7-decimal tokens × rates or percentages with many digits); only the result is capped.
 */
function product(a: Decimal, b: Decimal, scale: number, mode: RoundingMode): Decimal {
  return roundUnits(a.units * b.units, a.scale + b.scale, scale, mode);
}

/** fee = ceil(base × percentage + fixed) at `decimals`: never below exact, over by < 1 unit. */
function feeOn(base: Decimal, fee: FeeConfig, decimals: number): Decimal {
  const productScale = base.scale + fee.percentage.scale;
  const exactScale = Math.max(productScale, fee.fixed.scale);
  const exactUnits =
    base.units * fee.percentage.units * pow10(exactScale - productScale) +
    fee.fixed.units * pow10(exactScale - fee.fixed.scale);
  return roundUnits(exactUnits, exactScale, decimals, 'ceil');
}

function assertFee(fee: FeeConfig): void {
  assert(fee.percentage.units >= 0n && compare(fee.percentage, decimal(1n, 0)) < 0, 'fee percentage in [0, 1)');
  assert(fee.fixed.units >= 0n, 'fixed fee not negative');
}

function assertTimes(nowMs: number, ttlMs: number): void {
  assert(Number.isSafeInteger(nowMs) && nowMs >= 0, 'nowMs is a non-negative integer');
  assert(Number.isSafeInteger(ttlMs) && ttlMs > 0 && ttlMs <= quoteTtlMsMax, 'ttlMs in (0, 1 h]');
}

function invalid(reason: string): QuoteResult {
  return { ok: false, error: quoteError('invalid_request', reason) };
}

/** Amounts arrive as JSON numbers; a string (which money's parser would accept) is refused. */
function parse(raw: unknown, scale: number, label: string): { ok: true; value: Decimal } | { ok: false; result: QuoteResult } {
  if (typeof raw !== 'number') return { ok: false, result: invalid(`${label} must be a number`) };
  const parsed = parseAmount(raw, scale, { label });
  return parsed.ok ? parsed : { ok: false, result: invalid(parsed.error.reason) };
}

function noRate(route: Route): QuoteResult {
  return {
    ok: false,
    error: quoteError('quote_unavailable', `No ${route.targetCurrency} rate is available right now; try again shortly`),
  };
}

function belowMinimum(bound: string): QuoteResult {
  return { ok: false, error: quoteError('minimum', `Minimum amount is ${bound}`) };
}

function aboveMaximum(bound: string): QuoteResult {
  return { ok: false, error: quoteError('maximum', `Maximum amount is ${bound}`) };
}

/** The corridor bounds applied to a fiat amount; a missing minimum means one fiat minor unit. */
function checkFiatBounds(route: Route, fiat: Decimal): QuoteResult | null {
  const currency = route.targetCurrency;
  const minimum = route.minAmount ?? decimal(1n, fiatDecimals[currency]);
  if (compare(fiat, minimum) < 0) return belowMinimum(`${toFixedString(minimum)} ${currency}`);
  if (route.maxAmount !== null && compare(fiat, route.maxAmount) > 0) {
    return aboveMaximum(`${toFixedString(route.maxAmount)} ${currency}`);
  }
  return null;
}

function checkCryptoCeiling(route: Route, amount: Decimal): QuoteResult | null {
  if (compare(amount, cryptoAmountMax) > 0) return aboveMaximum(`${toFixedString(cryptoAmountMax)} ${route.cryptoCurrency}`);
  return null;
}

interface Amounts {
  readonly sourceAmount: Decimal;
  readonly targetAmount: Decimal;
  readonly feeAmount: Decimal;
}

function buildQuote(kind: QuoteKind, input: PricingInput, rate: Decimal, fee: FeeConfig, amounts: Amounts): QuoteResult {
  const { route } = input;
  assert(amounts.sourceAmount.units > 0n && amounts.targetAmount.units > 0n, 'quote amounts positive');
  assert(amounts.feeAmount.units >= 0n && amounts.feeAmount.scale === route.tokenDecimals, 'fee at token decimals');
  const quote: Quote = {
    id: input.quoteId,
    partnerId: input.partnerId,
    kind,
    direction: route.direction,
    network: route.network,
    cryptoCurrency: route.cryptoCurrency,
    paymentMethod: route.paymentMethod,
    targetCurrency: route.targetCurrency,
    tokenDecimals: route.tokenDecimals,
    sourceAmount: amounts.sourceAmount,
    targetAmount: amounts.targetAmount,
    fee: { amount: amounts.feeAmount, currency: route.cryptoCurrency, type: feeType(fee) },
    rate,
    createdAtMs: input.nowMs,
    expiresAtMs: input.nowMs + input.ttlMs,
  };
  return { ok: true, quote };
}

function prepare(input: PricingInput, direction: Route['direction']): FeeConfig {
  assert(input.route.direction === direction, `a ${direction} route`);
  assertTimes(input.nowMs, input.ttlMs);
  const fee = input.partnerFee ?? input.route.fee;
  assertFee(fee);
  if (input.rate !== null) assert(isPositive(input.rate), 'rate positive');
  return fee;
}

/**
 * `POST /quote`: the partner names the fiat F the recipient gets. We must receive at least F's
 * worth: net = ceil(F / rate), fee = ceil(net × pct + fixed), value = net + fee.
 */
export function quotePayout(input: PricingInput): QuoteResult {
  const fee = prepare(input, 'payout');
  const { route, rate } = input;
  const fiat = parse(input.amount, fiatDecimals[route.targetCurrency], 'amount');
  if (!fiat.ok) return fiat.result;
  if (rate === null) return noRate(route);
  const bounds = checkFiatBounds(route, fiat.value);
  if (bounds !== null) return bounds;
  const decimals = route.tokenDecimals;
  const net = divide(fiat.value, rate, decimals, 'ceil');
  const feeAmount = feeOn(net, fee, decimals);
  const value = add(net, feeAmount);
  const ceiling = checkCryptoCeiling(route, value);
  if (ceiling !== null) return ceiling;
  assert(net.units * rate.units * pow10(fiat.value.scale) >= fiat.value.units * pow10(net.scale + rate.scale), 'net covers the fiat');
  return buildQuote('payout', input, rate, fee, { sourceAmount: value, targetAmount: fiat.value, feeAmount });
}

/**
 * `POST /quote/reverse`: the partner names the crypto S it sends. net is the largest amount whose
 * /quote would cost at most S: net = floor((S − fixed) / (1 + pct)); fee = S − net;
 * value = floor(net × rate) in fiat.
 */
export function quoteReverse(input: PricingInput): QuoteResult {
  const fee = prepare(input, 'payout');
  const { route, rate } = input;
  const decimals = route.tokenDecimals;
  const source = parse(input.amount, decimals, 'source_amount');
  if (!source.ok) return source.result;
  if (rate === null) return noRate(route);
  const ceiling = checkCryptoCeiling(route, source.value);
  if (ceiling !== null) return ceiling;
  const afterFixed = subtract(source.value, fee.fixed);
  const net = isPositive(afterFixed) ? divide(afterFixed, add(decimal(1n, 0), fee.percentage), decimals, 'floor') : decimal(0n, decimals);
  const feeAmount = subtract(source.value, net);
  const fiat = product(net, rate, fiatDecimals[route.targetCurrency], 'floor');
  const bounds = checkFiatBounds(route, fiat);
  if (bounds !== null) return bounds;
  if (compare(fiat, fiatAmountMax) > 0) return aboveMaximum(`${toFixedString(fiatAmountMax)} ${route.targetCurrency}`);
  assert(compare(feeOn(net, fee, decimals), feeAmount) <= 0, 'reverse fee covers the fee on its net');
  return buildQuote('reverse', input, rate, fee, { sourceAmount: source.value, targetAmount: fiat, feeAmount });
}

/**
 * `POST /quote/onramp`: the user pays P in fiat. gross = floor(P / rate), fee = ceil(gross × pct +
 * fixed), value = gross − fee (the crypto delivered).
 */
export function quoteOnramp(input: PricingInput): QuoteResult {
  const fee = prepare(input, 'onramp');
  const { route, rate } = input;
  const decimals = route.tokenDecimals;
  const paid = parse(input.amount, fiatDecimals[route.targetCurrency], 'fiat_amount');
  if (!paid.ok) return paid.result;
  if (rate === null) return noRate(route);
  const bounds = checkFiatBounds(route, paid.value);
  if (bounds !== null) return bounds;
  const gross = divide(paid.value, rate, decimals, 'floor');
  const ceiling = checkCryptoCeiling(route, gross);
  if (ceiling !== null) return ceiling;
  const feeAmount = feeOn(gross, fee, decimals);
  const value = subtract(gross, feeAmount);
  if (!isPositive(value)) {
    return belowMinimum(`${toFixedString(decimal(1n, decimals))} ${route.cryptoCurrency} after fees`);
  }
  return buildQuote('onramp', input, rate, fee, { sourceAmount: paid.value, targetAmount: value, feeAmount });
}

// ---------------------------------------------------------------------------------------------
// The whole request, in the documented order of precedence

export interface QuoteRequest {
  readonly kind: QuoteKind;
  /** `amount`, `source_amount` or `fiat_amount`, as sent. */
  readonly amount: unknown;
  readonly cryptoCurrency: string;
  readonly network: string;
  readonly paymentMethod: string;
  readonly targetCurrency: string;
}

export interface QuoteContext {
  readonly rates: Readonly<Partial<Record<FiatCurrency, Decimal>>>;
  readonly partnerFee?: FeeConfig | undefined;
  readonly quoteId: string;
  readonly partnerId: string;
  readonly nowMs: number;
}

const amountLabels: Readonly<Record<QuoteKind, string>> = {
  payout: 'amount',
  reverse: 'source_amount',
  onramp: 'fiat_amount',
};

const pricers: Readonly<Record<QuoteKind, (input: PricingInput) => QuoteResult>> = {
  payout: quotePayout,
  reverse: quoteReverse,
  onramp: quoteOnramp,
};

/**
 * One quote request end to end: (1) the amount is a positive finite number of at most 15
 * significant digits → else invalid_request; (2) the route is offered → else corridor_unavailable;
 * (3) the amount has no more decimals than its currency on that route → else invalid_request;
 * (4) a rate exists → else quote_unavailable; (5) corridor bounds → minimum / maximum.
 */
export function priceQuoteRequest(config: CorridorConfig, request: QuoteRequest, context: QuoteContext): QuoteResult {
  const label = amountLabels[request.kind];
  if (typeof request.amount !== 'number') return invalid(`${label} must be a number`);
  const shape = parseAmount(request.amount, scaleMax, { label });
  if (!shape.ok && shape.error.kind !== 'too_many_decimals') return invalid(shape.error.reason);
  const resolved = resolveRoute(config, {
    direction: request.kind === 'onramp' ? 'onramp' : 'payout',
    cryptoCurrency: request.cryptoCurrency,
    network: request.network,
    paymentMethod: request.paymentMethod,
    targetCurrency: request.targetCurrency,
  });
  if (!resolved.ok) return resolved;
  const { route } = resolved;
  return pricers[request.kind]({
    route,
    rate: context.rates[route.targetCurrency] ?? null,
    amount: request.amount,
    partnerFee: context.partnerFee,
    quoteId: context.quoteId,
    partnerId: context.partnerId,
    nowMs: context.nowMs,
    ttlMs: config.quoteTtlMs,
  });
}

export interface QuoteJson {
  quote_id: string;
  value: number;
  expiration_time: number;
  fee: { amount: string; currency: string; type: FeeType };
}

/** The response body of the three quote endpoints. */
export function quoteToJson(quote: Quote): QuoteJson {
  return {
    quote_id: quote.id,
    value: toJsonNumber(quoteValue(quote)),
    expiration_time: quote.expiresAtMs,
    fee: { amount: toFixedString(quote.fee.amount), currency: quote.fee.currency, type: quote.fee.type },
  };
}
