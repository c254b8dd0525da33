// The sandbox chain on the embedded store, as the demo, the tests and a partner evaluating the API
// drive it: deposits and their verification, idempotent sends with their knobs, and the Stellar
// watcher's feed (order, cursor across restarts, retries, outages). Two SandboxChain objects on one
// store stand for two processes: they see one ledger.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ObservedTransfer } from '../../src/chains/chains.ts';
import { isOnChainIdOf, isSolanaAddress, resolveChainSetups, type ChainSetup } from '../../src/chains/config.ts';
import { randomAddress, SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { networks } from '../../src/domain/assets.ts';
import { decimalFromExactString, toFixedString } from '../../src/domain/money.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { eventually } from '../support/eventually.ts';

describe('sandbox chain', () => {
  let dir: string;
  let store: LmdbStore;
  let chain: SandboxChain;
  let otherProcess: SandboxChain;
  const clock = { nowMs: () => Date.now() };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sandbox-chain-'));
    store = new LmdbStore({ dir });
    await store.init();
    const setups = resolveChainSetups(null, { sandbox: true, corridors: loadDefaultCorridors() });
    const list = networks.map((network) => setups[network]).filter((setup): setup is ChainSetup => setup !== undefined);
    chain = new SandboxChain({ store, clock, setups: list });
    otherProcess = new SandboxChain({ store, clock, setups: list });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('deposits get well-formed ids and are verified by any process; others are not ours', async () => {
    for (const network of networks) {
      const deposit = await chain.deposit({ network, asset: 'USDC', amount: decimalFromExactString('12.5') });
      assert.ok(isOnChainIdOf(network, deposit.onChainId), `${network} id ${deposit.onChainId}`);
      assert.equal(deposit.destination, chain.depositAddress(network));
      const verified = await otherProcess.adapter(network).verify(deposit.onChainId);
      assert.equal(verified.status, 'found');
      assert.equal(verified.status === 'found' ? toFixedString(verified.transfers[0]!.amount) : null, network === 'STELLAR' ? '12.5000000' : '12.500000');
    }
    const failed = await chain.deposit({ network: 'CELO', asset: 'USDC', amount: decimalFromExactString('1'), failed: true });
    assert.deepEqual(await chain.verify('CELO', failed.onChainId), { status: 'invalid', reason: 'The transaction failed on chain' });
    const elsewhere = await chain.deposit({ network: 'SOLANA', asset: 'USDC', amount: decimalFromExactString('1'), destination: randomAddress('SOLANA') });
    assert.equal((await chain.verify('SOLANA', elsewhere.onChainId)).status, 'invalid');
    assert.equal((await chain.verify('SOLANA', '1'.repeat(88))).status, 'not_found');
    await assert.rejects(chain.deposit({ network: 'SOLANA', asset: 'USDC', amount: decimalFromExactString('0.1234567') }), /more decimals/);
  });

  test('send: at most once per idempotency key, a reused key with another request is refused', async () => {
    const destination = randomAddress('SOLANA');
    const request = { network: 'SOLANA' as const, asset: 'USDC' as const, amount: decimalFromExactString('3.000001'), destination, idempotencyKey: 'refund:t1:d1' };
    const [first, second] = await Promise.all([chain.send(request), otherProcess.send(request)]);
    assert.equal(first.status, 'confirmed');
    assert.deepEqual(second, first);
    const onChainId = first.status === 'confirmed' ? first.onChainId : '';
    assert.ok(isOnChainIdOf('SOLANA', onChainId));
    const sent = await chain.transfer('SOLANA', onChainId);
    assert.deepEqual([sent?.kind, sent?.destination, sent === null ? null : toFixedString(sent.amount)], ['send', destination, '3.000001']);
    const reused = await chain.send({ ...request, amount: decimalFromExactString('4') });
    assert.deepEqual(reused, { status: 'failed', reason: 'the idempotency key was used for another request', retryable: false });
    const badAddress = await chain.send({ ...request, idempotencyKey: 'refund:t2:d2', destination: 'nope' });
    assert.equal(badAddress.status === 'failed' && !badAddress.retryable, true);
    // Our own sends are not deposits.
    assert.equal((await chain.verify('SOLANA', onChainId)).status, 'invalid');
    assert.ok(isSolanaAddress(destination));
  });

  test('send knobs: outage is retryable, a rejection is not, pending lasts N polls', async () => {
    const base = { network: 'CELO' as const, asset: 'USDT' as const, amount: decimalFromExactString('1'), destination: randomAddress('CELO') };
    await chain.setKnobs('CELO', { sendOutage: true });
    assert.deepEqual(await otherProcess.send({ ...base, idempotencyKey: 'k-outage' }), { status: 'failed', reason: 'sandbox send outage', retryable: true });
    await chain.setKnobs('CELO', { sendOutage: false, sendRejects: true });
    assert.equal((await chain.send({ ...base, idempotencyKey: 'k-reject' })).status, 'failed');
    await chain.setKnobs('CELO', { sendRejects: false, sendPendingPolls: 2 });
    const polls = [];
    for (let poll = 0; poll < 3; poll += 1) polls.push((await chain.send({ ...base, idempotencyKey: 'k-pending' })).status);
    assert.deepEqual(polls, ['pending', 'pending', 'confirmed']);
    await chain.setKnobs('CELO', { sendPendingPolls: 0 });
    await assert.rejects(chain.setKnobs('CELO', { sendPendingPolls: -1 }));
  });

  test('the Stellar feed: concurrent deposits each appear once, in a gap-free order', async () => {
    const deposits = await Promise.all(
      Array.from({ length: 25 }, (_, index) => chain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString(String(index + 1)), memo: `m${index}` })),
    );
    const seen: string[] = [];
    for (let cursor = 0; ; cursor += 1) {
      const next = await otherProcess.nextInFeed('STELLAR', cursor);
      if (next === null) break;
      assert.equal(next.seq, cursor + 1);
      seen.push(next.transfer.onChainId);
    }
    for (const deposit of deposits) assert.equal(seen.filter((id) => id === deposit.onChainId).length, 1);
  });

  test('the watcher streams from its persisted cursor, retries a failing handler, and pauses in an outage', async (t) => {
    await chain.saveCursor('STELLAR', 0);
    const handled: ObservedTransfer[] = [];
    let failuresLeft = 2;
    const watcher = chain.watcher('STELLAR', { pollMs: 10, retryDelayMsMax: 20 });
    const restarted = otherProcess.watcher('STELLAR', { pollMs: 10 });
    t.after(async () => {
      await watcher.stop();
      await restarted.stop();
      await chain.setKnobs('STELLAR', { watcherOutage: false });
    });
    await watcher.start(async (transfer) => {
      if (transfer.memo === 'poison' && failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('store briefly unavailable');
      }
      handled.push(transfer);
    });
    const poison = await chain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('1'), memo: 'poison' });
    await eventually(() => assert.ok(handled.some((transfer) => transfer.onChainId === poison.onChainId), 'the poison transfer is handled'));
    assert.equal(failuresLeft, 0);
    assert.ok(watcher.status().reconnects >= 2, 'the failures are visible');
    assert.equal(handled.filter((transfer) => transfer.onChainId === poison.onChainId).length, 1, 'once, after the retries');
    await watcher.stop();
    assert.equal(watcher.status().state, 'stopped');

    // A new watcher (a restarted process) resumes after the last handled transfer.
    const later = await chain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('2'), memo: 'later' });
    await chain.setKnobs('STELLAR', { watcherOutage: true });
    const resumed: ObservedTransfer[] = [];
    await restarted.start(async (transfer) => {
      resumed.push(transfer);
    });
    await eventually(() => assert.equal(restarted.status().state, 'reconnecting'));
    assert.equal(resumed.length, 0, 'nothing streams during an outage');
    await chain.setKnobs('STELLAR', { watcherOutage: false });
    await eventually(() => assert.deepEqual(resumed.map((transfer) => transfer.onChainId), [later.onChainId]));
    assert.equal(restarted.status().state, 'streaming');
  });
});
