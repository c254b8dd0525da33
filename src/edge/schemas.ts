// Request schemas of the partner REST edge (zod 4), and the one place a schema failure becomes a
// 400 reason naming the field. Schemas check shapes only (types, presence, lengths); meaning
// (routes, amounts, account keys, ids) is checked by the domain and rail functions the routes call,
// so there is one definition of each rule. Unknown fields are ignored, not rejected: partners'
// clients often send extra fields, and the spec says a legacy `bank_code` is ignored.
import { z } from 'zod';
import { readUserId } from '../domain/user-ids.ts';

/** Longest value accepted for an enum-like text field (network, currency, …) before it is checked. */
export const enumTextCharsMax = 32;
/** `user_id`, `externalUserId`, `userId` (before and after normalising); the derived storage keys bound it further (see ids). */
export const userIdCharsMax = 128;
export const accountNumberCharsMax = 300;
export const qrCodeCharsMax = 512;
export const taxIdCharsMax = 64;
export const redirectUrlCharsMax = 2048;
export const onChainTxCharsMax = 128;

const controlCharacters = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function text(max: number) {
  return z.string().max(max);
}

/** Optional text: absent, null and "" all mean "not given". */
function optionalText(max: number) {
  return z
    .string()
    .max(max)
    .nullish()
    .transform((value) => (value === undefined || value === null || value.trim() === '' ? null : value.trim()));
}

/**
 * A partner's end-user id: NFKC-normalised and trimmed, refused with a reason naming the code
 * point when it holds an invisible, format or control character (src/domain/user-ids.ts). Every
 * route reads user ids through this, so the same id in any Unicode form keys one user.
 */
function userIdText(max: number) {
  return z
    .string()
    .max(max)
    .transform((value, context) => {
      const read = readUserId(value, max);
      if (read.ok) return read.value;
      context.addIssue({ code: 'custom', message: read.reason });
      return z.NEVER;
    });
}

/** The route fields of the three quote bodies; the amount field (`amount`, `source_amount` or
 * `fiat_amount`) is read as sent and checked by pricing (a JSON number, exactly). */
export const quoteBodySchema = z.object({
  crypto_currency: text(enumTextCharsMax),
  network: text(enumTextCharsMax),
  payment_method: text(enumTextCharsMax),
  target_currency: text(enumTextCharsMax),
});
export type QuoteRouteFields = z.infer<typeof quoteBodySchema>;

function isEnumText(value: unknown): value is string {
  return typeof value === 'string' && value.length <= enumTextCharsMax;
}

/**
 * `parseWith(quoteBodySchema, body)`, with the common case checked directly: every quote runs this,
 * and four short strings need no schema machinery. Anything else goes through the schema, which
 * names the first problem. Both paths accept exactly the same bodies and return the same value
 * (test/unit/quote-schema.test.ts).
 */
export function parseQuoteRoute(body: Readonly<Record<string, unknown>>): SchemaResult<QuoteRouteFields> {
  const { crypto_currency, network, payment_method, target_currency } = body;
  if (isEnumText(crypto_currency) && isEnumText(network) && isEnumText(payment_method) && isEnumText(target_currency)) {
    return { ok: true, value: { crypto_currency, network, payment_method, target_currency } };
  }
  return parseWith(quoteBodySchema, body);
}

export const transactionBodySchema = z.object({
  quote_id: text(64),
  user_id: userIdText(userIdCharsMax),
  account_number: optionalText(accountNumberCharsMax),
  qr_code: optionalText(qrCodeCharsMax),
  tax_id: optionalText(taxIdCharsMax).refine((value) => value === null || !controlCharacters.test(value), {
    message: 'must not contain control characters',
  }),
  redirectUrl: optionalText(redirectUrlCharsMax),
  // `bank_code` is no longer part of the contract: accepted with any value and ignored.
});
export type TransactionBody = z.infer<typeof transactionBodySchema>;

export const notifyBodySchema = z.object({
  blockchain: text(enumTextCharsMax),
  on_chain_tx: text(onChainTxCharsMax),
  transaction_id: text(64),
});

export const chainNotifyBodySchema = notifyBodySchema.omit({ blockchain: true });

export const reconcileBodySchema = z.object({
  blockchain: text(enumTextCharsMax),
  on_chain_tx: text(onChainTxCharsMax),
  transaction_id: text(64).nullish(),
});

export const sandboxBodySchema = z.object({
  transaction_id: text(64),
  amount: z.unknown().optional(),
});

export const listQuerySchema = z.object({
  externalUserId: userIdText(userIdCharsMax),
  page: z.string().optional(),
  pageSize: z.string().optional(),
});

/** GET /unmatched-deposits/list: every filter optional; values are checked by the route (a clear reason each). */
export const unmatchedListQuerySchema = z.object({
  state: text(enumTextCharsMax).optional(),
  network: text(enumTextCharsMax).optional(),
  created_from: text(16).optional(),
  created_to: text(16).optional(),
  page: z.string().optional(),
  pageSize: z.string().optional(),
});

export const userIdQuerySchema = z.object({ userId: userIdText(userIdCharsMax) });

export const qrDecoderQuerySchema = z.object({ qrCode: z.string().max(4096) });

export const liquidityQuerySchema = z.object({ paymentMethod: text(enumTextCharsMax).optional() });

/** The KYC form's text fields (the document is the file part). Values are checked by the domain. */
export const kycFormSchema = z.object({ userId: userIdText(userIdCharsMax) });

export type SchemaResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

function describeValue(expected: unknown): string {
  return expected === 'string' ? 'a string' : expected === 'number' ? 'a number' : expected === 'object' ? 'an object' : String(expected);
}

/**
 * The first issue as a sentence naming the field: `user_id is required`, `network must be a
 * string`, `tax_id must be at most 64 characters`. Never echoes the value.
 */
export function describeIssue(issue: z.core.$ZodIssue, input: unknown, noun: string): string {
  const field = issue.path.map(String).join('.') || noun;
  const top = issue.path[0];
  const given = typeof input === 'object' && input !== null && top !== undefined && (input as Record<PropertyKey, unknown>)[top] !== undefined;
  switch (issue.code) {
    case 'invalid_type':
      if (issue.path.length === 0) return `${noun} must be ${describeValue(issue.expected)}`;
      return given ? `${field} must be ${describeValue(issue.expected)}` : `${field} is required`;
    case 'too_big':
      return `${field} must be at most ${String(issue.maximum)} characters`;
    case 'too_small':
      return `${field} must not be empty`;
    default:
      return `${field} ${issue.message}`;
  }
}

/** Parses with a schema; a failure becomes the first issue's reason (see `describeIssue`). */
export function parseWith<T>(schema: z.ZodType<T>, input: unknown, noun = 'request body'): SchemaResult<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  return { ok: false, reason: issue === undefined ? `Invalid ${noun}` : describeIssue(issue, input, noun) };
}
