// Request validation: the edge's zod schemas (src/edge/schemas.ts) on a /quote body and a
// /transaction body, through `parseWith` as the routes call it. The module is loaded dynamically:
// when it does not exist (yet), the suite is skipped with a message instead of failing the run.
// Baseline: JSON.parse + JSON.stringify of the same body.
import { jsonRoundTripCase, repeatedCase, type MicroSuiteLoad } from '../lib/micro.ts';

const opsPerCall = 20;

const quoteBody = { amount: 50_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
const transactionBody = {
  quote_id: '5c1f7a1e-2b3c-4d5e-8f90-a1b2c3d4e5f6',
  user_id: 'user-42',
  account_number: '@bench1',
  tax_id: '1020304050',
};

export async function schemasSuite(): Promise<MicroSuiteLoad> {
  let schemas: typeof import('../../src/edge/schemas.ts');
  try {
    schemas = await import('../../src/edge/schemas.ts');
  } catch (error) {
    return { ok: false, group: 'schemas', reason: `src/edge/schemas.ts could not be loaded (${error instanceof Error ? error.message : String(error)})` };
  }
  const { parseWith, quoteBodySchema, transactionBodySchema } = schemas;
  const quoteText = JSON.stringify(quoteBody);
  const expectOk = (result: { ok: boolean }): typeof result => {
    if (!result.ok) throw new Error('schemas bench: a valid body was refused');
    return result;
  };
  return {
    ok: true,
    suite: {
      group: 'schemas',
      baselineLabel: 'JSON.parse+stringify of the same body',
      baseline: jsonRoundTripCase('baseline: JSON round trip of the /quote body', quoteBody, opsPerCall),
      cases: [
        repeatedCase('parseWith(quoteBodySchema)', opsPerCall, () => expectOk(parseWith(quoteBodySchema, quoteBody))),
        repeatedCase('JSON.parse + parseWith(quoteBodySchema)', opsPerCall, () => expectOk(parseWith(quoteBodySchema, JSON.parse(quoteText)))),
        repeatedCase('parseWith(transactionBodySchema)', opsPerCall, () => expectOk(parseWith(transactionBodySchema, transactionBody))),
      ],
    },
  };
}
