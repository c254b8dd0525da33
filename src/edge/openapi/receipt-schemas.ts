// The settlement receipt and the JWKS as zod schemas (docs/receipts.md): response-schemas.ts lists
// them as components of the OpenAPI document. Amounts are decimal strings, times RFC 3339 UTC.
import { z } from 'zod';
import { cryptoAssets, fiatCurrencies, networks, paymentMethods } from '../../domain/assets.ts';
import { feeTypes } from '../../domain/quote.ts';
import { transactionStatuses } from '../../domain/transaction/types.ts';

const decimalText = z.string().regex(/^-?\d+(\.\d+)?$/).meta({ description: 'An exact decimal amount, as text.' });
const time = z.string().meta({ description: 'RFC 3339 UTC time with milliseconds.', examples: ['2026-11-25T22:00:00.000Z'] });

const chainDepositSchema = z.strictObject({
  rail: z.literal('chain'),
  network: z.enum(networks),
  asset: z.enum(cryptoAssets),
  hash: z.string().meta({ description: 'The deposit transfer’s hash (Stellar, Celo) or signature (Solana).' }),
  amount: decimalText,
  received_at: time,
});
const pixDepositSchema = z.strictObject({
  rail: z.literal('pix'),
  payment_id: z.string().meta({ description: 'The PIX provider’s payment id.' }),
  amount: decimalText,
  currency: z.literal('BRL'),
  received_at: time,
});

const payoutSchema = z.strictObject({
  kind: z.literal('payout'),
  rail: z.enum(paymentMethods),
  payment_id: z.string().meta({ description: 'The rail’s payment id of the payout.' }),
  amount: decimalText,
  currency: z.enum(fiatCurrencies),
  requested_at: time.nullable(),
  completed_at: time,
});
const deliverySchema = z.strictObject({
  kind: z.literal('delivery'),
  network: z.enum(networks),
  asset: z.enum(cryptoAssets),
  hash: z.string().meta({ description: 'The delivery transfer’s hash or signature.' }),
  amount: decimalText,
  requested_at: time.nullable(),
  completed_at: time,
});

export const receiptSchema = z.strictObject({
  receipt_version: z.literal(1),
  transaction_id: z.string(),
  transaction_reference: z.string(),
  user_id: z.string(),
  direction: z.enum(['payout', 'onramp']),
  status: z.enum(transactionStatuses),
  outcome: z.enum(['settled', 'refunded']).meta({ description: 'settled: paid out (or delivered) as quoted; refunded: the deposit went back.' }),
  quote: z.strictObject({
    id: z.string(),
    source_amount: decimalText,
    source_currency: z.string(),
    target_amount: decimalText,
    target_currency: z.string(),
    rate: decimalText.meta({ description: 'Fiat units per one crypto unit, as quoted.' }),
    fee: z.strictObject({ amount: decimalText, currency: z.enum(cryptoAssets), type: z.enum(feeTypes) }),
    created_at: time,
  }),
  deposit: z.discriminatedUnion('rail', [chainDepositSchema, pixDepositSchema]),
  settlement: z.discriminatedUnion('kind', [payoutSchema, deliverySchema]).nullable(),
  refund: z.strictObject({ refund_id: z.string(), requested_at: time.nullable(), settled_at: time.nullable() }).nullable(),
  created_at: time,
});

export const signedReceiptSchema = z.strictObject({
  receipt: receiptSchema,
  signature: z.string().meta({
    description:
      'Detached JWS (RFC 7515 appendix F, unencoded payload per RFC 7797): `<BASE64URL(header)>..<BASE64URL(Ed25519 signature)>` over `BASE64URL(header) || "." || RFC 8785 canonical JSON of receipt`. Header: {"alg":"EdDSA","b64":false,"crit":["b64"],"kid":…}.',
  }),
});

export const jwksSchema = z.strictObject({
  keys: z.array(
    z.strictObject({
      kty: z.literal('OKP'),
      crv: z.literal('Ed25519'),
      kid: z.string(),
      x: z.string().meta({ description: 'The public key, base64url.' }),
      alg: z.literal('EdDSA'),
      use: z.literal('sig'),
    }),
  ),
});
