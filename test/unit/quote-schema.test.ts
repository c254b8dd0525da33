// The quote body's route fields are checked directly in the common case (`parseQuoteRoute`) and by
// the zod schema otherwise. A partner must not be able to tell: for every body, both answer the
// same value or the same reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { enumTextCharsMax, parseQuoteRoute, parseWith, quoteBodySchema } from '../../src/edge/schemas.ts';

const valid = { crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
const longest = 'X'.repeat(enumTextCharsMax);
const tooLong = 'X'.repeat(enumTextCharsMax + 1);

const bodies: ReadonlyArray<Record<string, unknown>> = [
  valid,
  { ...valid, amount: 50_000, extra: { nested: true } },
  { ...valid, network: '' },
  { ...valid, network: longest },
  { ...valid, network: tooLong },
  { ...valid, network: 'ÉTOILE'.repeat(5) },
  { ...valid, crypto_currency: 7 },
  { ...valid, payment_method: null },
  { ...valid, target_currency: ['COP'] },
  { ...valid, target_currency: { code: 'COP' } },
  { network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' },
  { crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB' },
  {},
  { ...valid, crypto_currency: undefined },
  JSON.parse('{"__proto__": "x", "crypto_currency": "USDC", "network": "STELLAR", "payment_method": "PIX", "target_currency": "BRL"}') as Record<string, unknown>,
];

test('the direct check and the schema agree on every body', () => {
  for (const body of bodies) {
    assert.deepEqual(parseQuoteRoute(body), parseWith(quoteBodySchema, body), JSON.stringify(body));
  }
});

test('a valid body gives exactly the four route fields', () => {
  const parsed = parseQuoteRoute({ ...valid, amount: 1, bank_code: '007' });
  assert.deepEqual(parsed, { ok: true, value: valid });
});
