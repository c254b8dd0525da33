// The Stellar deposit watcher against a local Horizon (test/support/fake-horizon.ts): payments are
// built and signed by the SDK, submitted over HTTP, streamed back over SSE. What a partner or an
// operator would notice: a memo deposit is detected with its exact amount; a restart neither skips
// nor repeats a deposit; look-alike assets are not deposits; path payments count; a dropped or
// silent stream and an outage are survived, with the health visible in status().
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Asset, Keypair, Networks, Operation } from '@stellar/stellar-sdk';
import { pino } from 'pino';
import type { ObservedTransfer } from '../../src/chains/chains.ts';
import type { StellarChainConfig } from '../../src/chains/config.ts';
import { createStellarChain, type StellarChain, type StellarChainOptions } from '../../src/chains/stellar.ts';
import { cursorCollection, unmatchedCollection } from '../../src/chains/stellar-watcher.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { eventually } from '../support/eventually.ts';
import { FakeHorizon } from '../support/fake-horizon.ts';
import { teardown } from '../support/teardown.ts';

const log = pino({ level: 'silent' });
const clock = { nowMs: () => Date.now() };

let fake: FakeHorizon;
let store: LmdbStore;
let storeDir: string;
const issuer = Keypair.random();
const lookAlikeIssuer = Keypair.random();
const deposit = Keypair.random();
const partner = Keypair.random();
const usdc = new Asset('USDC', issuer.publicKey());
const lookAlikeUsdc = new Asset('USDC', lookAlikeIssuer.publicKey());
const started: StellarChain[] = [];

before(async () => {
  fake = await FakeHorizon.start({ networkPassphrase: Networks.TESTNET });
  for (const account of [issuer, lookAlikeIssuer, deposit, partner]) fake.createAccount(account.publicKey());
  storeDir = mkdtempSync(join(tmpdir(), 'stellar-watcher-'));
  store = new LmdbStore({ dir: storeDir });
  await store.init();
});

afterEach(async () => {
  for (const chain of started.splice(0)) await chain.watcher.stop();
  fake.setDown(false);
  fake.setStreamsFrozen(false);
});

after(() => teardown(
  () => store?.close(),
  () => fake?.close(),
  () => { rmSync(storeDir, { recursive: true, force: true }); },
));

/** A fresh deposit account per test, so cursors and payments of one test never meet another's. */
function newDepositAccount(): Keypair {
  const account = Keypair.random();
  fake.createAccount(account.publicKey());
  return account;
}

function chainFor(account: Keypair, watcher: StellarChainOptions['watcher'] = {}): StellarChain {
  const config: StellarChainConfig = {
    network: 'testnet',
    horizonUrl: fake.url,
    depositAddress: account.publicKey(),
    assets: { USDC: { issuer: issuer.publicKey(), decimals: 7 } },
    signerSecretEnv: 'STELLAR_TEST_SIGNER',
  };
  const chain = createStellarChain({
    config,
    networkPassphrase: Networks.TESTNET,
    env: {},
    store,
    log,
    clock,
    watcher: { reconnectDelayMsMin: 20, reconnectDelayMsMax: 200, ...watcher },
  });
  started.push(chain);
  return chain;
}

async function watch(chain: StellarChain, onTransfer?: (transfer: ObservedTransfer) => Promise<void>): Promise<ObservedTransfer[]> {
  const seen: ObservedTransfer[] = [];
  await chain.watcher.start(async (transfer) => {
    if (onTransfer !== undefined) await onTransfer(transfer);
    seen.push(transfer);
  });
  return seen;
}

function pay(to: Keypair, amount: string, memo?: string, asset: Asset = usdc): Promise<string> {
  return fake.submitOperations(partner, [Operation.payment({ destination: to.publicKey(), asset, amount })], memo);
}

async function persistedCursor(account: Keypair): Promise<unknown> {
  return (await store.get(cursorCollection, `STELLAR:${account.publicKey()}`))?.cursor;
}

test('a USDC payment with a text memo is detected with its exact amount, sender, memo and hash', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account);
  const seen = await watch(chain);
  await eventually(() => assert.equal(chain.watcher.status().state, 'streaming'));

  const hash = await pay(account, '25.5', 'dGhlLXRyYW5zYWN0aW9uLWlk');
  const tiny = await pay(account, '0.0000001', 'tiny');
  const large = await pay(account, '900000000000.1234567', 'large');
  await eventually(() => assert.equal(seen.length, 3));

  assert.deepEqual(
    seen.map((transfer) => ({ ...transfer, observedAtMs: typeof transfer.observedAtMs })),
    [
      { network: 'STELLAR', onChainId: hash, asset: 'USDC', amount: { units: 255_000_000n, scale: 7 }, sender: partner.publicKey(), memo: 'dGhlLXRyYW5zYWN0aW9uLWlk', observedAtMs: 'number' },
      { network: 'STELLAR', onChainId: tiny, asset: 'USDC', amount: { units: 1n, scale: 7 }, sender: partner.publicKey(), memo: 'tiny', observedAtMs: 'number' },
      { network: 'STELLAR', onChainId: large, asset: 'USDC', amount: { units: 9_000_000_000_001_234_567n, scale: 7 }, sender: partner.publicKey(), memo: 'large', observedAtMs: 'number' },
    ],
  );
  const status = chain.watcher.status();
  assert.equal(status.network, 'STELLAR');
  assert.equal(status.state, 'streaming');
  assert.equal(status.reconnects, 0); // delivered by the live stream, not by a reconnect's catch-up
  assert.notEqual(status.lastEventAtMs, null);
  await eventually(async () => assert.equal(await persistedCursor(account), chain.watcher.status().cursor));
});

test('after a restart the watcher resumes from the persisted cursor: nothing skipped, nothing delivered twice', async () => {
  const account = newDepositAccount();
  const first = chainFor(account);
  const seenBefore = await watch(first);
  const a = await pay(account, '1', 'a');
  await eventually(() => assert.equal(seenBefore.length, 1));
  await first.watcher.stop();
  assert.equal(first.watcher.status().state, 'stopped');

  // While stopped: B, then C made of two payment operations in one transaction (one deposit of 3 + 4).
  const b = await pay(account, '2', 'b');
  const c = await fake.submitOperations(
    partner,
    [Operation.payment({ destination: account.publicKey(), asset: usdc, amount: '3' }), Operation.payment({ destination: account.publicKey(), asset: usdc, amount: '4' })],
    'c',
  );

  const second = chainFor(account);
  const seenAfter = await watch(second);
  await eventually(() => assert.equal(seenAfter.length, 2));
  const d = await pay(account, '5', 'd');
  await eventually(() => assert.equal(seenAfter.length, 3));

  assert.deepEqual(seenBefore.map((t) => t.onChainId), [a]);
  assert.deepEqual(
    seenAfter.map((t) => [t.onChainId, t.amount.units, t.memo]),
    [
      [b, 20_000_000n, 'b'],
      [c, 70_000_000n, 'c'],
      [d, 50_000_000n, 'd'],
    ],
  );
});

test('the same watcher stopped and started again (a watcher lease lost and taken back) resumes from the saved cursor, which another process may have moved', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account);
  const seenFirst = await watch(chain);
  const a = await pay(account, '1', 'a');
  await eventually(() => assert.equal(seenFirst.length, 1));
  await chain.watcher.stop();

  // Meanwhile another process's watcher delivered B and saved its cursor.
  const b = await pay(account, '2', 'b');
  const other = chainFor(account);
  const seenByOther = await watch(other);
  await eventually(() => assert.equal(seenByOther.length, 1));
  await eventually(async () => assert.equal(await persistedCursor(account), other.watcher.status().cursor));
  await other.watcher.stop();
  const c = await pay(account, '3', 'c');

  const seenAgain = await watch(chain);
  await eventually(() => assert.equal(seenAgain.length, 1));
  await eventually(() => assert.equal(chain.watcher.status().state, 'streaming'));
  assert.deepEqual([seenFirst, seenByOther, seenAgain].map((seen) => seen.map((transfer) => transfer.onChainId)), [[a], [b], [c]], 'B is not delivered again');
});

test('a stop that timed out on a hung hand-over leaves one loop: started again, it carries on and nothing is delivered twice', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account, { stopTimeoutMs: 100 });
  let release: (() => void) | null = null;
  const hung = new Promise<void>((resolve) => { release = resolve; });
  const seenFirst: string[] = [];
  await chain.watcher.start(async (transfer) => {
    seenFirst.push(transfer.onChainId);
    await hung; // the hand-over of the first transfer does not come back
  });
  const a = await pay(account, '1', 'a');
  await eventually(() => assert.deepEqual(seenFirst, [a]));
  await chain.watcher.stop(); // times out after 100 ms: the loop is still inside the hand-over

  const seenAgain: string[] = [];
  await chain.watcher.start(async (transfer) => {
    seenAgain.push(transfer.onChainId);
  });
  (release as (() => void) | null)?.();
  const b = await pay(account, '2', 'b');
  await eventually(() => assert.deepEqual(seenAgain, [b]));
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(seenAgain, [b], 'B once: one loop for the account');
  assert.deepEqual(seenFirst, [a]);
});

test('a transfer whose onTransfer rejects is delivered again (the cursor does not move past it)', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account);
  let failuresLeft = 1;
  const attempts: string[] = [];
  const seen = await watch(chain, async (transfer) => {
    attempts.push(transfer.memo ?? '');
    if (transfer.memo === 'b' && failuresLeft > 0) {
      failuresLeft -= 1;
      throw new Error('core unavailable');
    }
  });
  await pay(account, '1', 'a');
  await pay(account, '2', 'b');
  await pay(account, '3', 'c');
  await eventually(() => assert.equal(seen.length, 3));

  assert.deepEqual(attempts, ['a', 'b', 'b', 'c']);
  assert.deepEqual(seen.map((t) => t.memo), ['a', 'b', 'c']);
  const status = chain.watcher.status();
  assert.ok(status.reconnects >= 1);
  assert.equal(status.lastError, 'core unavailable');
});

test('USDC from another issuer, other assets and XLM are not deposits: recorded as unmatched, never delivered', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account);
  const seen = await watch(chain);
  const lookAlike = await pay(account, '10', 'dGhlLXRyYW5zYWN0aW9uLWlk', lookAlikeUsdc);
  await pay(account, '11', 'eurc', new Asset('EURC', issuer.publicKey()));
  await pay(account, '12', 'xlm', Asset.native());
  const real = await pay(account, '13', 'real');
  await eventually(() => assert.equal(seen.length, 1));

  assert.deepEqual(seen.map((t) => t.onChainId), [real]);
  const unmatched = await store.list(unmatchedCollection, { limit: 100 });
  const mine = unmatched.items.filter((item) => item.doc.account === account.publicKey()).map((item) => item.doc);
  assert.equal(mine.length, 3);
  const flagged = mine.find((doc) => doc.onChainId === lookAlike);
  assert.equal(flagged?.assetCode, 'USDC');
  assert.equal(flagged?.assetIssuer, lookAlikeIssuer.publicKey());
  assert.equal(flagged?.amount, '10.0000000');
  assert.equal(flagged?.sender, partner.publicKey());
  assert.match(String(flagged?.reason), /not the configured mint/);
  assert.equal(chain.watcher.accountStatuses()[0]?.unmatchedCredits, 3);
});

test('path payments (strict send and strict receive) that deliver USDC are deposits of the amount received', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account);
  const seen = await watch(chain);
  const strictSend = await fake.submitOperations(
    partner,
    [Operation.pathPaymentStrictSend({ sendAsset: Asset.native(), sendAmount: '100', destination: account.publicKey(), destAsset: usdc, destMin: '9.75', path: [] })],
    'send',
  );
  const strictReceive = await fake.submitOperations(
    partner,
    [Operation.pathPaymentStrictReceive({ sendAsset: Asset.native(), sendMax: '100', destination: account.publicKey(), destAsset: usdc, destAmount: '20.0000001', path: [] })],
    'receive',
  );
  await fake.submitOperations(
    partner,
    [Operation.pathPaymentStrictSend({ sendAsset: Asset.native(), sendAmount: '5', destination: account.publicKey(), destAsset: lookAlikeUsdc, destMin: '1', path: [] })],
    'fake',
  );
  await pay(account, '1', 'marker');
  await eventually(() => assert.equal(seen.length, 3));

  assert.deepEqual(
    seen.map((t) => [t.onChainId, t.amount.units, t.memo]),
    [
      [strictSend, 97_500_000n, 'send'],
      [strictReceive, 200_000_001n, 'receive'],
      [seen[2]?.onChainId, 10_000_000n, 'marker'],
    ],
  );
});

test('payments from the deposit account (our own sends) are skipped without a delivery', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account);
  const seen = await watch(chain);
  await fake.submitOperations(account, [Operation.payment({ destination: partner.publicKey(), asset: usdc, amount: '1' })]);
  const marker = await pay(account, '2', 'after');
  await eventually(() => assert.equal(seen.length, 1));
  assert.equal(seen[0]?.onChainId, marker);
});

test('a dropped stream reconnects and keeps delivering; an outage shows as reconnecting then stale, with bounded backoff', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account, { staleAfterMs: 400, probeIntervalMs: 50 });
  const seen = await watch(chain);
  await eventually(() => assert.equal(fake.openStreams() >= 1 && chain.watcher.status().state === 'streaming', true));

  assert.ok(fake.dropStreams() >= 1);
  const e = await pay(account, '1', 'e');
  await eventually(() => assert.deepEqual(seen.map((t) => t.onChainId), [e]));
  assert.ok(chain.watcher.status().reconnects >= 1);

  fake.setDown(true);
  await eventually(() => assert.equal(chain.watcher.status().state, 'stale'));
  // The delay doubles from 20 ms up to the 200 ms cap and stays there.
  await eventually(() => assert.equal(chain.watcher.accountStatuses()[0]?.nextReconnectDelayMs, 200));
  const reconnectsDuring = chain.watcher.status().reconnects;
  await eventually(() => assert.ok(chain.watcher.status().reconnects > reconnectsDuring));
  assert.equal(chain.watcher.accountStatuses()[0]?.nextReconnectDelayMs, 200);
  assert.equal(chain.watcher.status().state, 'stale');
  assert.notEqual(chain.watcher.status().lastError, null);

  fake.setDown(false);
  const f = await pay(account, '2', 'f');
  await eventually(() => assert.deepEqual(seen.map((t) => t.onChainId), [e, f]));
  await eventually(() => assert.equal(chain.watcher.status().state, 'streaming'));
});

test('a stream that goes silent while Horizon has newer payments is detected by the probe and caught up', async () => {
  const account = newDepositAccount();
  const chain = chainFor(account, { staleAfterMs: 200, probeIntervalMs: 50 });
  const seen = await watch(chain);
  await eventually(() => assert.equal(fake.openStreams() >= 1 && chain.watcher.status().state === 'streaming', true));
  fake.setStreamsFrozen(true);
  const g = await pay(account, '1', 'g');
  await eventually(() => assert.deepEqual(seen.map((t) => t.onChainId), [g]));
  assert.match(chain.watcher.status().lastError ?? '', /silent/);
});

test("with no persisted cursor, startCursor 'now' skips the account's history", async () => {
  const account = newDepositAccount();
  await pay(account, '1', 'old');
  const chain = chainFor(account, { startCursor: 'now' });
  const seen = await watch(chain);
  await eventually(() => assert.equal(chain.watcher.status().state, 'streaming'));
  const fresh = await pay(account, '2', 'new');
  await eventually(() => assert.equal(seen.length, 1));
  assert.equal(seen[0]?.onChainId, fresh);
});
