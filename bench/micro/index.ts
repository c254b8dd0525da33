// Every micro suite, in the order they run and print.
import type { MicroSuiteLoad } from '../lib/micro.ts';
import { brcodeSuite } from './brcode.ts';
import { limitsSuite } from './limits.ts';
import { pricingSuite } from './pricing.ts';
import { referenceSuite } from './reference.ts';
import { schemasSuite } from './schemas.ts';
import { transactionSuite } from './transaction.ts';

export async function microSuites(): Promise<MicroSuiteLoad[]> {
  return [
    { ok: true, suite: pricingSuite() },
    { ok: true, suite: limitsSuite() },
    { ok: true, suite: transactionSuite() },
    { ok: true, suite: brcodeSuite() },
    await schemasSuite(),
    { ok: true, suite: referenceSuite() },
  ];
}
