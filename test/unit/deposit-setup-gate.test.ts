// The deposit setup gate: a network's per-transaction addresses are handed out only once its setup
// is verified on chain. A chain that cannot answer at start leaves the network closed (503 at
// acceptance) and is asked again on demand, at most once per interval; a wrong setup stops start-up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/domain/assets.ts';
import { DepositSetupError, type PerTransactionDeposits } from '../../src/chains/deposit-addresses.ts';
import { DepositSetupGate } from '../../src/chains/deposit-setup-gate.ts';

const silent = { warn: () => undefined, info: () => undefined };

/** A Celo-like port whose check answers as `answer` says at the time it is asked. */
function port(answer: () => Promise<void>): PerTransactionDeposits & { checks: number } {
  const result = {
    network: 'CELO' as const,
    checks: 0,
    addressFor: () => '0x0000000000000000000000000000000000000001',
    verifyInto: () => Promise.reject(new Error('not used')),
    transfersInto: () => Promise.resolve([]),
    sweep: () => Promise.resolve({ status: 'nothing_to_sweep' as const }),
    verifySetup: () => {
      result.checks += 1;
      return answer();
    },
  };
  return result;
}

test('a wrong setup stops start-up with its reason', async () => {
  const celo = port(() => Promise.reject(new DepositSetupError('depositFactory 0x… has no code')));
  const gate = new DepositSetupGate(new Map<Network, PerTransactionDeposits>([['CELO', celo]]), { nowMs: () => 0, log: silent });
  await assert.rejects(gate.start(), /chains file: CELO: depositFactory 0x… has no code/);
});

test('a chain that cannot answer at start: closed, asked again on demand at most once per interval, open once verified', async () => {
  let up = false;
  let nowMs = 0;
  const celo = port(() => (up ? Promise.resolve() : Promise.reject(new Error('ECONNREFUSED'))));
  const gate = new DepositSetupGate(new Map<Network, PerTransactionDeposits>([['CELO', celo]]), { nowMs: () => nowMs, log: silent, recheckEveryMs: 10_000 });
  await gate.start();
  assert.equal(celo.checks, 1);
  assert.equal(gate.ready('CELO'), false, 'no address before the setup is verified');
  nowMs = 5_000;
  assert.equal(gate.ready('CELO'), false);
  assert.equal(celo.checks, 1, 'not asked again within the interval');
  up = true;
  nowMs = 10_000;
  assert.equal(gate.ready('CELO'), false, 'this request starts a check; it does not wait for it');
  assert.equal(celo.checks, 2);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(gate.ready('CELO'), true);
  assert.equal(gate.ready('SOLANA'), true, 'a network without a check is never held back');
});

test('a check slower than the start-up bound leaves the network closed until it answers', async () => {
  let release: () => void = () => undefined;
  const celo = port(() => new Promise<void>((resolve) => (release = resolve)));
  const gate = new DepositSetupGate(new Map<Network, PerTransactionDeposits>([['CELO', celo]]), { nowMs: () => 0, log: silent, startCheckMs: 1 });
  await gate.start();
  assert.equal(gate.ready('CELO'), false);
  release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(gate.ready('CELO'), true);
});
