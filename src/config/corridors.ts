// The corridor configuration: flows, token mints, per-route bounds and fees, fixed rates, quote
// validity and routes switched off. JSON, validated at start with strict objects (unknown fields
// are rejected) and turned into the plain `CorridorConfig` the pure domain reads. A bad file
// stops start-up with a message naming the field. Defaults: config/corridors.default.json.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { fiatDecimals, type CryptoAsset, type FiatCurrency, type Network, type PaymentMethod } from '../domain/assets.ts';
import type { CorridorConfig, CorridorTerms, FeeConfig, MintConfig, UnsupportedRoute } from '../domain/corridors.ts';
import { compare, decimalFromExactString, decimalFromString, type Decimal } from '../domain/money.ts';
import { quoteTtlMsMax } from '../domain/pricing.ts';

/** A quote shorter than this could not be funded in time on any chain. */
export const quoteTtlMsMin = 60_000;

const percentageText = z
  .string()
  .regex(/^0(\.\d{1,8})?$/, 'must be a decimal string in [0, 1) with at most 8 decimals, e.g. "0.01" for 1 %');
/** At most 6 decimals: the fewest any configured token has, so a fixed fee is exact on every chain. */
const fixedFeeText = z
  .string()
  .regex(/^\d{1,6}(\.\d{1,6})?$/, 'must be a non-negative decimal string with at most 6 decimals, e.g. "0.50"');
const rateText = z
  .string()
  .regex(/^\d{1,6}(\.\d{1,10})?$/, 'must be a decimal string with at most 6 integer digits and 10 decimals')
  .refine((text) => /[1-9]/.test(text), 'must be greater than 0');
const fiatBoundText = z
  .string()
  .regex(/^\d{1,13}(\.\d{1,2})?$/, 'must be a decimal string with at most 2 decimals, e.g. "10000.00"')
  .refine((text) => /[1-9]/.test(text), 'must be greater than 0');

export const feeSchema = z.strictObject({ percentage: percentageText, fixed: fixedFeeText });

const networkFeesSchema = z.strictObject({
  STELLAR: feeSchema.optional(),
  SOLANA: feeSchema.optional(),
  CELO: feeSchema.optional(),
});

const termsSchema = z
  .strictObject({
    minAmount: fiatBoundText.nullable(),
    maxAmount: fiatBoundText.nullable(),
    fee: feeSchema,
    feeByNetwork: networkFeesSchema.optional(),
  })
  .refine(
    (terms) =>
      terms.minAmount === null ||
      terms.maxAmount === null ||
      compare(decimalFromExactString(terms.minAmount), decimalFromExactString(terms.maxAmount)) <= 0,
    { message: 'minAmount must not exceed maxAmount', path: ['minAmount'] },
  );

const mintSchema = (identifier: z.ZodString, decimals: z.ZodType<number>) =>
  z.strictObject({ active: z.boolean(), identifier, decimals });

const tokenDecimals = z.number().int().min(0).max(18);
/** Stellar amounts always carry 7 decimal places (FACTS.md). */
const stellarDecimals = z.literal(7);
const stellarIssuer = z.string().regex(/^G[A-Z2-7]{55}$/, 'must be a Stellar issuer account (G…, 56 characters)');
const solanaMint = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 Solana mint address');
const evmContract = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte contract address');

const mintsSchema = z.strictObject({
  STELLAR: z.strictObject({ USDC: mintSchema(stellarIssuer, stellarDecimals).optional() }).optional(),
  SOLANA: z.strictObject({ USDC: mintSchema(solanaMint, tokenDecimals).optional() }).optional(),
  CELO: z
    .strictObject({
      USDC: mintSchema(evmContract, tokenDecimals).optional(),
      USDT: mintSchema(evmContract, tokenDecimals).optional(),
    })
    .optional(),
});

const unsupportedSchema = z
  .strictObject({
    direction: z.enum(['payout', 'onramp']).optional(),
    network: z.enum(['STELLAR', 'SOLANA', 'CELO']).optional(),
    cryptoCurrency: z.enum(['USDC', 'USDT']).optional(),
    paymentMethod: z.enum(['BREB', 'PIX']).optional(),
  })
  .refine((pattern) => Object.keys(pattern).length > 0, 'must name at least one of direction, network, cryptoCurrency, paymentMethod');

const flowSchema = z.strictObject({ enabled: z.boolean() });

export const corridorsFileSchema = z.strictObject({
  flows: z.strictObject({ payout: flowSchema, onramp: flowSchema }),
  mints: mintsSchema,
  corridors: z.strictObject({
    payout: z.strictObject({ BREB: termsSchema.optional(), PIX: termsSchema.optional() }),
    onramp: z.strictObject({ PIX: termsSchema.optional() }),
  }),
  rates: z.strictObject({ COP: rateText.optional(), BRL: rateText.optional() }),
  quoteTtlMs: z.number().int().min(quoteTtlMsMin).max(quoteTtlMsMax),
  unsupported: z.array(unsupportedSchema).max(1000).default([]),
});

export type CorridorsFile = z.input<typeof corridorsFileSchema>;
type FeeText = z.infer<typeof feeSchema>;
type TermsText = z.infer<typeof termsSchema>;

/** A fee as written in a file (corridor or partner) → exact decimals. */
export function feeFromText(fee: FeeText): FeeConfig {
  return { percentage: decimalFromExactString(fee.percentage), fixed: decimalFromExactString(fee.fixed) };
}

function termsFromText(terms: TermsText, currency: FiatCurrency): CorridorTerms {
  const bound = (text: string | null): Decimal | null => (text === null ? null : decimalFromString(text, fiatDecimals[currency]));
  const feeByNetwork: Partial<Record<Network, FeeConfig>> = {};
  for (const [network, fee] of Object.entries(terms.feeByNetwork ?? {}) as [Network, FeeText | undefined][]) {
    if (fee !== undefined) feeByNetwork[network] = feeFromText(fee);
  }
  return { minAmount: bound(terms.minAmount), maxAmount: bound(terms.maxAmount), fee: feeFromText(terms.fee), feeByNetwork };
}

function termsByMethod(
  byMethod: Partial<Record<PaymentMethod, TermsText | undefined>>,
): Partial<Record<PaymentMethod, CorridorTerms>> {
  const result: Partial<Record<PaymentMethod, CorridorTerms>> = {};
  const currencies: Record<PaymentMethod, FiatCurrency> = { BREB: 'COP', PIX: 'BRL' };
  for (const [method, terms] of Object.entries(byMethod) as [PaymentMethod, TermsText | undefined][]) {
    if (terms !== undefined) result[method] = termsFromText(terms, currencies[method]);
  }
  return result;
}

function mintsOf(byAsset: Partial<Record<CryptoAsset, MintConfig | undefined>> | undefined): Partial<Record<CryptoAsset, MintConfig>> {
  const result: Partial<Record<CryptoAsset, MintConfig>> = {};
  for (const [asset, mint] of Object.entries(byAsset ?? {}) as [CryptoAsset, MintConfig | undefined][]) {
    if (mint !== undefined) result[asset] = { active: mint.active, identifier: mint.identifier, decimals: mint.decimals };
  }
  return result;
}

function unsupportedOf(patterns: z.infer<typeof unsupportedSchema>[]): UnsupportedRoute[] {
  return patterns.map((pattern) => ({
    ...(pattern.direction === undefined ? {} : { direction: pattern.direction }),
    ...(pattern.network === undefined ? {} : { network: pattern.network }),
    ...(pattern.cryptoCurrency === undefined ? {} : { cryptoCurrency: pattern.cryptoCurrency }),
    ...(pattern.paymentMethod === undefined ? {} : { paymentMethod: pattern.paymentMethod }),
  }));
}

function ratesOf(rates: Partial<Record<FiatCurrency, string | undefined>>): Partial<Record<FiatCurrency, Decimal>> {
  const result: Partial<Record<FiatCurrency, Decimal>> = {};
  for (const [currency, text] of Object.entries(rates) as [FiatCurrency, string | undefined][]) {
    if (text !== undefined) result[currency] = decimalFromExactString(text);
  }
  return result;
}

export type CorridorConfigResult = { ok: true; config: CorridorConfig } | { ok: false; errors: string[] };

/** Validate a parsed JSON object; each error names the field path. */
export function parseCorridorConfig(json: unknown): CorridorConfigResult {
  const parsed = corridorsFileSchema.safeParse(json);
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`),
    };
  }
  const file = parsed.data;
  const config: CorridorConfig = {
    flows: { payout: { enabled: file.flows.payout.enabled }, onramp: { enabled: file.flows.onramp.enabled } },
    mints: { STELLAR: mintsOf(file.mints.STELLAR), SOLANA: mintsOf(file.mints.SOLANA), CELO: mintsOf(file.mints.CELO) },
    terms: { payout: termsByMethod(file.corridors.payout), onramp: termsByMethod(file.corridors.onramp) },
    rates: ratesOf(file.rates),
    quoteTtlMs: file.quoteTtlMs,
    unsupported: unsupportedOf(file.unsupported),
  };
  return { ok: true, config };
}

/** Read and validate a corridors file; throws with every problem, one per line, naming the field. */
export function loadCorridorsFile(path: string): CorridorConfig {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: cannot read corridors file: ${(error as Error).message}`);
  }
  const result = parseCorridorConfig(json);
  if (!result.ok) throw new Error(result.errors.map((line) => `${path}: ${line}`).join('\n'));
  return result.config;
}

export const defaultCorridorsPath = fileURLToPath(new URL('../../config/corridors.default.json', import.meta.url));

/** The shipped defaults (config/corridors.default.json). */
export function loadDefaultCorridors(): CorridorConfig {
  return loadCorridorsFile(defaultCorridorsPath);
}

