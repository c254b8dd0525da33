// Sending from the Stellar hot wallet (refunds, onramp deliveries) and verifying hashes, against a
// local Horizon (test/support/fake-horizon.ts) that decodes the SDK-signed envelopes. What matters
// to a partner and to operations: one idempotency key moves money at most once — across repeated
// and concurrent calls, a crash between signing and submitting, a submission that timed out or was
// lost, an envelope that expired or whose sequence number was taken — and an unconfirmed hash is
// never reported as confirmed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Asset, Keypair, Networks, Operation } from '@stellar/stellar-sdk';
import { pino } from 'pino';
import type { SendRequest } from '../../src/chains/chains.ts';
import type { StellarChainConfig } from '../../src/chains/config.ts';
import { createStellarChain, type StellarChain, type StellarChainOptions } from '../../src/chains/stellar.ts';
import { decimal } from '../../src/domain/money.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { FakeHorizon } from '../support/fake-horizon.ts';
import { teardown } from '../support/teardown.ts';

const log = pino({ level: 'silent' });
let nowMs = Date.now();
const clock = { nowMs: () => nowMs };

let fake: FakeHorizon;
let store: LmdbStore;
let storeDir: string;
const issuer = Keypair.random();
const deposit = Keypair.random();
const partner = Keypair.random();
const usdc = new Asset('USDC', issuer.publicKey());

before(async () => {
  fake = await FakeHorizon.start({ networkPassphrase: Networks.TESTNET, nowMs: clock.nowMs });
  for (const account of [issuer, deposit, partner]) fake.createAccount(account.publicKey());
  storeDir = mkdtempSync(join(tmpdir(), 'stellar-send-'));
  store = new LmdbStore({ dir: storeDir });
  await store.init();
});

after(() => teardown(
  () => store?.close(),
  () => fake?.close(),
  () => { rmSync(storeDir, { recursive: true, force: true }); },
));

const config = (): StellarChainConfig => ({
  network: 'testnet',
  horizonUrl: fake.url,
  depositAddress: deposit.publicKey(),
  assets: { USDC: { issuer: issuer.publicKey(), decimals: 7 } },
  signerSecretEnv: 'STELLAR_TEST_SIGNER',
});

/** A fresh hot wallet per test: sequence numbers of one test never meet another's. */
function newHotWallet(): Keypair {
  const wallet = Keypair.random();
  fake.createAccount(wallet.publicKey());
  return wallet;
}

function chainWith(hotWallet: Keypair | null, send: StellarChainOptions['send'] = {}): StellarChain {
  return createStellarChain({
    config: config(),
    networkPassphrase: Networks.TESTNET,
    env: hotWallet === null ? {} : { STELLAR_TEST_SIGNER: hotWallet.secret() },
    store,
    log,
    clock,
    send,
  });
}

function refund(overrides: Partial<SendRequest> = {}): SendRequest {
  return {
    network: 'STELLAR',
    asset: 'USDC',
    amount: decimal(125_000_000n, 7), // 12.5
    destination: partner.publicKey(),
    idempotencyKey: `refund:${randomUUID()}`,
    memo: 'refund',
    ...overrides,
  };
}

/** Crashes the process "between sign and submit": the envelope is recorded, never broadcast. */
const crashAfterRecord = async (): Promise<void> => {
  throw new Error('simulated crash after recording the signed envelope');
};

function submissionsOf(hashes: readonly string[]): string[] {
  return fake.submissions.filter((entry) => entry.hash !== null && hashes.includes(entry.hash)).map((entry) => entry.outcome);
}

/** Submits a signed envelope to Horizon directly, outside the sender (as another client would). */
function submitToHorizon(envelopeXdr: string): Promise<Response> {
  return fetch(`${fake.url}/transactions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `tx=${encodeURIComponent(envelopeXdr)}`,
  });
}

async function recordedAttempt(key: string, suffix = ''): Promise<{ hash: string; xdr: string }> {
  const doc = await store.get('chain_sends', `STELLAR:${key}${suffix}`);
  assert.ok(doc !== null && typeof doc.hash === 'string' && typeof doc.xdr === 'string', `journal record for ${key}${suffix}`);
  return { hash: doc.hash, xdr: doc.xdr };
}

test('a send is confirmed once; the same key again (in turn or concurrently) returns the same hash without a second submission', async () => {
  const wallet = newHotWallet();
  const chain = chainWith(wallet);
  const request = refund({ destination: newHotWallet().publicKey() });
  const first = await chain.adapter.send(request);
  assert.equal(first.status, 'confirmed');
  assert.ok(first.status === 'confirmed');
  assert.deepEqual(await chain.adapter.send(request), first);
  assert.deepEqual(submissionsOf([first.onChainId]), ['applied']);
  const credits = fake.creditsTo(request.destination);
  assert.equal(credits.length, 1);
  assert.equal(credits[0]?.amount, '12.5000000');
  assert.equal(credits[0]?.asset_issuer, issuer.publicKey());

  const concurrent = refund({ destination: request.destination });
  const [a, b] = await Promise.all([chain.adapter.send(concurrent), chainWith(wallet).adapter.send(concurrent)]);
  assert.equal(a.status, 'confirmed');
  assert.deepEqual(a, b);
  assert.equal(fake.creditsTo(request.destination).length, 2);
});

test('the same key with a different amount or destination is refused, nothing is sent', async () => {
  const chain = chainWith(newHotWallet());
  const request = refund();
  assert.equal((await chain.adapter.send(request)).status, 'confirmed');
  const before = fake.submissions.length;
  const changed = await chain.adapter.send({ ...request, amount: decimal(130_000_000n, 7) });
  assert.deepEqual(changed, { status: 'failed', reason: 'idempotency key reused for a different send', retryable: false });
  const redirected = await chain.adapter.send({ ...request, destination: issuer.publicKey() });
  assert.deepEqual(redirected, changed);
  assert.equal(fake.submissions.length, before);
});

test('two processes that signed with the same sequence number: the loser is told tx_bad_seq and sends with a new one', async () => {
  const wallet = newHotWallet();
  const destination = newHotWallet().publicKey();
  // Both record their envelope (same sequence number) before either submits.
  let arrived = 0;
  let release: () => void = () => undefined;
  const bothRecorded = new Promise<void>((resolve) => {
    release = resolve;
  });
  const barrier = async (): Promise<void> => {
    arrived += 1;
    if (arrived === 2) release();
    await bothRecorded;
  };
  const one = refund({ destination });
  const two = refund({ destination });
  const [firstA, firstB] = await Promise.all([chainWith(wallet, { afterRecord: barrier }).adapter.send(one), chainWith(wallet, { afterRecord: barrier }).adapter.send(two)]);
  // The loser's envelope is dead (its sequence number taken), but it is replaced only once it has
  // stayed unfound for the settling window (a lagging Horizon node could be hiding it): pending now.
  assert.deepEqual([firstA.status, firstB.status].sort(), ['confirmed', 'pending']);
  nowMs += 31_000;
  const [a, b] = [await chainWith(wallet).adapter.send(one), await chainWith(wallet).adapter.send(two)];
  assert.equal(a.status, 'confirmed');
  assert.equal(b.status, 'confirmed');
  assert.ok(a.status === 'confirmed' && b.status === 'confirmed');
  assert.notEqual(a.onChainId, b.onChainId);
  assert.equal(fake.creditsTo(destination).length, 2);
  const firstAttempts = [await recordedAttempt(one.idempotencyKey), await recordedAttempt(two.idempotencyKey)].map((attempt) => attempt.hash);
  assert.deepEqual(
    fake.submissions.filter((entry) => entry.hash !== null && firstAttempts.includes(entry.hash)).map((entry) => entry.code).sort(),
    ['tx_bad_seq', null].sort(),
  );
});

test('a crash between signing and submitting: the retry submits the recorded envelope, once', async () => {
  const wallet = newHotWallet();
  const request = refund({ destination: newHotWallet().publicKey() });
  await assert.rejects(chainWith(wallet, { afterRecord: crashAfterRecord }).adapter.send(request), /simulated crash/);
  const recorded = await recordedAttempt(request.idempotencyKey);
  assert.equal(fake.hasTransaction(recorded.hash), false);

  const retried = await chainWith(wallet).adapter.send(request);
  assert.deepEqual(retried, { status: 'confirmed', onChainId: recorded.hash });
  assert.deepEqual(submissionsOf([recorded.hash]), ['applied']);
  assert.equal(fake.creditsTo(request.destination).length, 1);
});

test('after a hot wallet rotation a recorded envelope still lands; a dead one is not replaced from the new wallet', async () => {
  const oldWallet = newHotWallet();
  const newWallet = newHotWallet();
  const destination = newHotWallet().publicKey();
  const live = refund({ destination });
  await assert.rejects(chainWith(oldWallet, { afterRecord: crashAfterRecord }).adapter.send(live), /simulated crash/);
  const recorded = await recordedAttempt(live.idempotencyKey);
  assert.deepEqual(await chainWith(newWallet).adapter.send(live), { status: 'confirmed', onChainId: recorded.hash });

  const dead = refund({ destination });
  await assert.rejects(chainWith(oldWallet, { afterRecord: crashAfterRecord }).adapter.send(dead), /simulated crash/);
  await chainWith(oldWallet).adapter.send(refund({ destination })); // takes the recorded sequence number
  assert.equal((await chainWith(newWallet).adapter.send(dead)).status, 'pending', 'within the settling window');
  nowMs += 31_000;
  const result = await chainWith(newWallet).adapter.send(dead);
  assert.deepEqual(result, { status: 'failed', reason: 'the hot wallet changed since this send was signed; resolve it by hand', retryable: false });
  assert.equal(fake.creditsTo(destination).length, 2);
});

test('a submission that timed out is pending (never confirmed) until Horizon shows the hash; no second transfer', async () => {
  const chain = chainWith(newHotWallet());
  const request = refund({ destination: newHotWallet().publicKey() });
  fake.scriptSubmissions({ kind: 'timeout_after_apply' });
  const first = await chain.adapter.send(request);
  assert.equal(first.status, 'pending');
  assert.ok(first.status === 'pending');
  const second = await chain.adapter.send(request);
  assert.deepEqual(second, { status: 'confirmed', onChainId: first.onChainId });
  assert.deepEqual(submissionsOf([first.onChainId]), ['timeout']); // found by lookup, not resubmitted
  assert.equal(fake.creditsTo(request.destination).length, 1);
});

test('a submission lost before the ledger is pending; the retry resubmits the same envelope', async () => {
  const chain = chainWith(newHotWallet());
  const request = refund({ destination: newHotWallet().publicKey() });
  fake.scriptSubmissions({ kind: 'drop_before_apply' });
  const first = await chain.adapter.send(request);
  assert.equal(first.status, 'pending');
  assert.ok(first.status === 'pending');
  assert.equal(fake.hasTransaction(first.onChainId), false);
  const second = await chain.adapter.send(request);
  assert.deepEqual(second, { status: 'confirmed', onChainId: first.onChainId });
  assert.deepEqual(submissionsOf([first.onChainId]), ['dropped', 'applied']);
  assert.equal(fake.creditsTo(request.destination).length, 1);
});

test('a recorded envelope whose sequence number another transaction took is replaced; the dead one can never land', async () => {
  const wallet = newHotWallet();
  const destination = newHotWallet().publicKey();
  const stuck = refund({ destination });
  await assert.rejects(chainWith(wallet, { afterRecord: crashAfterRecord }).adapter.send(stuck), /simulated crash/);
  const dead = await recordedAttempt(stuck.idempotencyKey);

  const chain = chainWith(wallet);
  assert.equal((await chain.adapter.send(refund({ destination }))).status, 'confirmed'); // takes the same sequence number
  // Not replaced at once: a lagging Horizon node could still be hiding the attempt (next test).
  assert.deepEqual(await chain.adapter.send(stuck), { status: 'pending', onChainId: dead.hash });
  nowMs += 31_000;
  const retried = await chain.adapter.send(stuck);
  assert.equal(retried.status, 'confirmed');
  assert.ok(retried.status === 'confirmed');
  assert.notEqual(retried.onChainId, dead.hash);
  assert.equal((await recordedAttempt(stuck.idempotencyKey, '#2')).hash, retried.onChainId);
  assert.equal(fake.hasTransaction(dead.hash), false);
  assert.equal(fake.creditsTo(destination).length, 2);

  assert.deepEqual(await chain.adapter.send(stuck), retried);
  assert.equal(fake.creditsTo(destination).length, 2);
});

test('an attempt that landed but that a lagging Horizon node does not show yet is not paid a second time', async () => {
  const wallet = newHotWallet();
  const request = refund({ destination: newHotWallet().publicKey() });
  await assert.rejects(chainWith(wallet, { afterRecord: crashAfterRecord }).adapter.send(request), /simulated crash/);
  const recorded = await recordedAttempt(request.idempotencyKey);
  // The envelope reaches the ledger by another way (a submission whose answer was lost).
  const landed = await submitToHorizon(recorded.xdr);
  assert.equal(landed.status, 200);
  assert.equal(fake.creditsTo(request.destination).length, 1);
  const first = { status: 'pending', onChainId: recorded.hash };
  const chain = chainWith(wallet);
  fake.setLaggingLookups([recorded.hash]);
  try {
    // The account shows the sequence number consumed; the lookup does not find the transaction.
    assert.deepEqual(await chain.adapter.send(request), first);
    nowMs += 10_000;
    assert.deepEqual(await chain.adapter.send(request), first, 'still within the settling window: no replacement');
  } finally {
    fake.setLaggingLookups([]);
  }
  nowMs += 60_000; // the lagging node has caught up by now
  assert.deepEqual(await chain.adapter.send(request), { status: 'confirmed', onChainId: first.onChainId });
  assert.equal(fake.creditsTo(request.destination).length, 1);
  assert.equal(await store.get('chain_sends', `STELLAR:${request.idempotencyKey}#2`), null, 'no second envelope was ever signed');
});

test('an envelope that expired unsubmitted is replaced with the same sequence number', async () => {
  const wallet = newHotWallet();
  const request = refund({ destination: newHotWallet().publicKey() });
  await assert.rejects(chainWith(wallet, { afterRecord: crashAfterRecord, validitySeconds: 60 }).adapter.send(request), /simulated crash/);
  const expired = await recordedAttempt(request.idempotencyKey);
  nowMs += 120_000;
  try {
    const retried = await chainWith(wallet, { validitySeconds: 60 }).adapter.send(request);
    assert.equal(retried.status, 'confirmed');
    assert.ok(retried.status === 'confirmed');
    assert.notEqual(retried.onChainId, expired.hash);
    const [firstDoc, secondDoc] = [await store.get('chain_sends', `STELLAR:${request.idempotencyKey}`), await store.get('chain_sends', `STELLAR:${request.idempotencyKey}#2`)];
    assert.equal(secondDoc?.hash, retried.onChainId);
    assert.equal(secondDoc?.sequence, firstDoc?.sequence); // at most one of the two could ever land
    assert.equal(fake.creditsTo(request.destination).length, 1);
    // The expired envelope is dead twice over: too late, and its sequence number is now used.
    const lateSubmission = await submitToHorizon(expired.xdr);
    assert.equal(lateSubmission.status, 400);
    assert.equal(fake.creditsTo(request.destination).length, 1);
  } finally {
    nowMs -= 120_000;
  }
});

test('a transaction that failed on chain for lack of funds is retryable and retried with a new envelope; other failures are final', async () => {
  const chain = chainWith(newHotWallet());
  const request = refund({ destination: newHotWallet().publicKey() });
  fake.scriptSubmissions({ kind: 'fail_on_chain', operationCode: 'op_underfunded' });
  const first = await chain.adapter.send(request);
  assert.equal(first.status, 'failed');
  assert.ok(first.status === 'failed');
  assert.equal(first.retryable, true);
  const second = await chain.adapter.send(request);
  assert.equal(second.status, 'confirmed');
  assert.equal(fake.creditsTo(request.destination).length, 1);

  const noTrust = refund({ destination: newHotWallet().publicKey() });
  fake.scriptSubmissions({ kind: 'fail_on_chain', operationCode: 'op_no_trust' });
  const final = await chain.adapter.send(noTrust);
  assert.deepEqual(final, { status: 'failed', reason: 'transaction failed on chain: tx_failed [op_no_trust]', retryable: false });
  const submitted = fake.submissions.length;
  assert.deepEqual(await chain.adapter.send(noTrust), final);
  assert.equal(fake.submissions.length, submitted);
  assert.equal(fake.creditsTo(noTrust.destination).length, 0);
});

test('requests that cannot be sent are refused before anything is signed', async () => {
  const chain = chainWith(newHotWallet());
  const memoRequired = Keypair.random().publicKey();
  fake.createAccount(memoRequired, { memoRequired: true });
  const cases: [Partial<SendRequest>, RegExp][] = [
    [{ amount: decimal(1n, 8) }, /at most 7 decimals/],
    [{ amount: decimal(0n, 7) }, /positive/],
    [{ destination: 'GNOTANACCOUNT' }, /not a Stellar account/],
    [{ memo: 'x'.repeat(29) }, /longer than 28 bytes/],
    [{ asset: 'USDT' }, /not configured/],
    [{ network: 'SOLANA' }, /cannot send on SOLANA/],
  ];
  for (const [overrides, reason] of cases) {
    const result = await chain.adapter.send(refund(overrides));
    assert.equal(result.status, 'failed');
    assert.ok(result.status === 'failed');
    assert.match(result.reason, reason);
    assert.equal(result.retryable, false);
  }
  const { memo: _memo, ...withoutMemo } = refund({ destination: memoRequired });
  const sep29 = await chain.adapter.send(withoutMemo);
  assert.deepEqual(sep29, { status: 'failed', reason: 'the destination requires a memo (SEP-29) and none was given', retryable: false });
  assert.equal(fake.creditsTo(memoRequired).length, 0);

  const unsigned = await chainWith(null).adapter.send(refund());
  assert.deepEqual(unsigned, { status: 'failed', reason: 'no Stellar hot wallet secret is configured', retryable: false });
});

test('verify: a deposit hash gives its transfers; unknown, malformed, failed and foreign hashes do not', async () => {
  const chain = chainWith(null);
  const hash = await fake.submitOperations(partner, [Operation.payment({ destination: deposit.publicKey(), asset: usdc, amount: '42.0000001' })], 'bWVtbw==');
  const found = await chain.adapter.verify(hash.toUpperCase());
  assert.equal(found.status, 'found');
  assert.ok(found.status === 'found');
  assert.equal(found.transfers.length, 1);
  assert.deepEqual({ ...found.transfers[0], observedAtMs: 0 }, {
    network: 'STELLAR',
    onChainId: hash,
    asset: 'USDC',
    amount: { units: 420_000_001n, scale: 7 },
    sender: partner.publicKey(),
    memo: 'bWVtbw==',
    observedAtMs: 0,
  });

  assert.equal((await chain.adapter.verify('ab'.repeat(32))).status, 'not_found');
  assert.equal((await chain.adapter.verify('not-a-hash')).status, 'invalid');

  const elsewhere = await fake.submitOperations(partner, [Operation.payment({ destination: issuer.publicKey(), asset: usdc, amount: '1' })]);
  assert.deepEqual(await chain.adapter.verify(elsewhere), { status: 'invalid', reason: 'the transaction pays nothing to our deposit address' });

  fake.scriptSubmissions({ kind: 'fail_on_chain', operationCode: 'op_underfunded' });
  await assert.rejects(fake.submitOperations(partner, [Operation.payment({ destination: deposit.publicKey(), asset: usdc, amount: '1' })]));
  const failedHash = fake.submissions.at(-1)?.hash;
  assert.ok(typeof failedHash === 'string');
  assert.deepEqual(await chain.adapter.verify(failedHash), { status: 'invalid', reason: 'the transaction failed on chain' });
});

test('the chains file\'s `network` picks the passphrase: a chain labelled testnet sends on a testnet Horizon; labelled mainnet, nothing lands there', async () => {
  // Built exactly as the composition root builds it (src/chains/live-chains.ts).
  const { liveChainFactories } = await import('../../src/chains/live-chains.ts');
  const factory = liveChainFactories.STELLAR;
  assert.ok(factory !== undefined);
  const signerEnv = 'STELLAR_TEST_SIGNER_LABELLED';
  const send = async (network: 'mainnet' | 'testnet'): Promise<{ status: string; destination: string }> => {
    process.env[signerEnv] = newHotWallet().secret();
    try {
      const built = factory(
        { mode: 'live', network: 'STELLAR', config: { ...config(), network, signerSecretEnv: signerEnv }, depositAddress: deposit.publicKey(), chainId: 'stellar:pubnet', publicRpcUrl: null, assets: {} },
        { store, log, clock } as unknown as ServiceContext,
      );
      const request = refund({ destination: newHotWallet().publicKey() });
      return { status: (await built.adapter.send(request)).status, destination: request.destination };
    } finally {
      delete process.env[signerEnv];
    }
  };
  const testnet = await send('testnet');
  assert.equal(testnet.status, 'confirmed');
  assert.equal(fake.creditsTo(testnet.destination).length, 1);
  const mainnet = await send('mainnet');
  assert.notEqual(mainnet.status, 'confirmed');
  assert.equal(fake.creditsTo(mainnet.destination).length, 0, 'signed for another network: refused by this Horizon');
});
