// The sandbox's "the next deposit arrives short" (src/chains/sandbox-short-deposits.ts) as the
// sandbox driver spends it (src/chains/sandbox-driver.ts), on the embedded store: the mark is spent
// only by a deposit that was made. A deposit the sandbox chain fails to make (here a process whose
// sandbox chain does not run the network, as any failure of the transfer) keeps it, so the
// partner's retry still arrives short; once made, the next deposit is the full amount again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { transactionsCollection } from '../../src/actors/transaction-actor.ts';
import { resolveChainSetups, type ChainSetup } from '../../src/chains/config.ts';
import { SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { createSandboxDriver } from '../../src/chains/sandbox-driver.ts';
import { armShortDeposit } from '../../src/chains/sandbox-short-deposits.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { networks } from '../../src/domain/assets.ts';
import type { SandboxResult } from '../../src/ports/ports.ts';
import type { JsonValue } from '../../src/store/store.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { brebPayoutQuote } from '../support/quotes.ts';
import { teardown } from '../support/teardown.ts';

let dir: string | undefined;
let store: LmdbStore | undefined;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sandbox-short-deposits-'));
  store = new LmdbStore({ dir });
  await store.init();
});

after(() => teardown(() => store?.close(), () => dir !== undefined && rmSync(dir, { recursive: true, force: true })));

test('a short deposit that could not be made keeps the mark: the retry arrives short, the one after it in full', async () => {
  const theStore = store ?? assert.fail('the store is open');
  const clock = { nowMs: () => Date.now() };
  const setups = resolveChainSetups(null, { sandbox: true, corridors: loadDefaultCorridors() });
  const all = networks.map((network) => setups[network]).filter((setup): setup is ChainSetup => setup !== undefined);
  const quote = brebPayoutQuote(clock.nowMs()); // 25.5 USDC on Stellar
  const transactionId = randomUUID();
  await theStore.put(transactionsCollection, transactionId, { partnerId: 'acme', userId: 'u-1', createdAtMs: clock.nowMs(), direction: 'payout', status: 'AWAITING_PAYMENT', quote: toJsonValue(quote) });
  await armShortDeposit(theStore, transactionId, clock.nowMs());

  const failing = createSandboxDriver(theStore, setups, new SandboxChain({ store: theStore, clock, setups: all.filter((setup) => setup.network !== quote.network) }));
  await assert.rejects(failing.deposit({ partnerId: 'acme', transactionId, amount: null }));

  const driver = createSandboxDriver(theStore, setups, new SandboxChain({ store: theStore, clock, setups: all }));
  const amountOf = (result: SandboxResult): JsonValue | undefined => {
    assert.ok(result.ok, JSON.stringify(result));
    const body = result.body;
    return typeof body === 'object' && body !== null && !Array.isArray(body) ? body['amount'] : undefined;
  };
  assert.equal(amountOf(await driver.deposit({ partnerId: 'acme', transactionId, amount: null })), 22.95, '90 % of 25.5: the mark survived the failed deposit');
  assert.equal(amountOf(await driver.deposit({ partnerId: 'acme', transactionId, amount: null })), 25.5, 'spent by the deposit that was made');
});
