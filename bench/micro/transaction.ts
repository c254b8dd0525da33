// Transaction transitions: the pure state machine's `decide` + `evolve` for the payout happy path
// Create → DepositDetected → PayoutSucceeded (three decisions, each with its invariant checks).
// Baseline: JSON.parse + JSON.stringify of the resulting state (decimals as strings), i.e. what a
// snapshot round trip costs at the least.
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { decide, evolve, type TransactionCommand, type TransactionState } from '../../src/domain/transaction.ts';
import { jsonRoundTripCase, repeatedCase, type MicroSuite } from '../lib/micro.ts';

const t0 = 1_750_000_000_000;
const opsPerCall = 10;

const quote: Quote = {
  id: '5c1f7a1e-2b3c-4d5e-8f90-a1b2c3d4e5f6',
  partnerId: 'bench',
  kind: 'payout',
  direction: 'payout',
  network: 'STELLAR',
  cryptoCurrency: 'USDC',
  paymentMethod: 'BREB',
  targetCurrency: 'COP',
  tokenDecimals: 7,
  sourceAmount: decimal(129_470_581n, 7),
  targetAmount: decimal(5_000_000n, 2),
  fee: { amount: decimal(1_281_887n, 7), currency: 'USDC', type: 'percentage' },
  rate: decimal(390_050n, 2),
  createdAtMs: t0 - 1_000,
  expiresAtMs: t0 + 1_800_000,
};

const commands: readonly TransactionCommand[] = [
  {
    kind: 'Create',
    transactionId: '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f',
    partnerId: 'bench',
    userId: 'user-1',
    quote,
    accountNumber: '@bench1',
    qrCode: null,
    taxId: null,
    externalId: null,
  },
  { kind: 'DepositDetected', onChainId: 'a'.repeat(64), amount: quote.sourceAmount, network: 'STELLAR', asset: 'USDC', sender: 'GSENDER' },
  { kind: 'PayoutSucceeded', railReference: 'rail-1' },
];

/** decide + evolve every command in order; throws on a rejection (the fixture is a legal path). */
export function happyPath(): TransactionState {
  let state: TransactionState | null = null;
  for (const command of commands) {
    const decision = decide(state, command, { nowMs: t0 + 60_000 });
    if (!decision.ok) throw new Error(`transaction bench: ${decision.rejection.code}`);
    for (const event of decision.events) state = evolve(state, event);
  }
  if (state === null || state.status !== 'PAYMENT_COMPLETED') throw new Error('transaction bench: path did not complete');
  return state;
}

export function transactionSuite(): MicroSuite {
  const finalState = JSON.parse(JSON.stringify(happyPath(), (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value))) as unknown;
  return {
    group: 'transaction',
    baselineLabel: 'JSON.parse+stringify of the completed transaction state',
    baseline: jsonRoundTripCase('baseline: JSON round trip of the final state', finalState, opsPerCall),
    cases: [repeatedCase('decide+evolve Create → DepositDetected → PayoutSucceeded', opsPerCall, happyPath)],
  };
}
