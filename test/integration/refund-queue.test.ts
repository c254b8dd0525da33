// The chain refund queue keeps moving whatever one network does (the shared outbox job loop,
// src/store/outbox-jobs.ts): refunds a chain refuses are parked in the store until their next
// try instead of holding the worker's slots, a network whose node hangs gets a share of the slots
// and no more, and a parked refund waits for its time even across a restart. Real actor runtime
// (in-process bus), embedded store, sandbox chain; refunds are made by the deposit actor for
// unmatched deposits, exactly as the Stellar watcher has it record them; the workers run on a
// hand-moved clock.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { ActorClient } from '../../src/actors/client.ts';
import { chainRefundTopic, depositActorKey, depositActorType, depositsCollection, type DepositReply } from '../../src/actors/deposit-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { createChainServices, type ChainServices } from '../../src/chains/chain-services.ts';
import type { ChainAdapter } from '../../src/chains/chains.ts';
import { base58Encode } from '../../src/chains/config.ts';
import { RefundWorker, type RefundWorkerOptions } from '../../src/chains/refunds.ts';
import { randomAddress, type SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';

const silent = pino({ level: 'silent' });

describe('chain refunds: one network that refuses or hangs does not stop the others', () => {
  let dataDir: string;
  let service: RunningService;
  let chains: ChainServices;
  let chain: SandboxChain;
  let client: ActorClient;
  let nowMs = Date.now();
  const clock = { nowMs: () => nowMs };
  const workers: RefundWorker[] = [];

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'refund-queue-'));
    service = await startService(readEnv({ DATA_DIR: dataDir, ROLE: 'shard', SANDBOX: '1', LOG_LEVEL: 'silent', SHARDS: '8' }));
    chains = await createChainServices(service.ctx, {});
    chain = chains.sandboxChain ?? assert.fail('sandbox mode has a sandbox chain');
    client = await service.ctx.actorClient('refund-queue-test');
  });

  after(() => teardown(
    () => Promise.all(workers.map((worker) => worker.stop(1_000))),
    () => service?.stop(),
    () => { rmSync(dataDir, { recursive: true, force: true }); },
  ));

  function worker(owner: string, options: Partial<RefundWorkerOptions> = {}): RefundWorker {
    const created = new RefundWorker({ store: service.ctx.store, adapters: chains.adapters, actors: client, clock, log: silent, owner, ...options });
    workers.push(created);
    return created;
  }

  /** A transfer nobody can match, recorded by its deposit actor: a refund row for its sender. */
  async function unmatchedDeposit(network: Network): Promise<string> {
    const onChainId = network === 'SOLANA' ? base58Encode(randomBytes(64)) : network === 'CELO' ? `0x${randomBytes(32).toString('hex')}` : randomBytes(32).toString('hex');
    const transfer = { network, onChainId, asset: 'USDC', amount: decimalFromExactString('1.5'), sender: randomAddress(network), memo: null };
    const key = depositActorKey(network, onChainId);
    const reply = await client.ask<DepositReply>(depositActorType, key, 'unmatched', toJsonValue({ transfer, reason: 'memo_missing' }), { timeoutMs: 20_000 });
    assert.equal(reply.result, 'recorded');
    return key;
  }

  async function refundOf(key: string): Promise<unknown> {
    return (await service.ctx.store.get(depositsCollection, key))?.['refund'];
  }

  async function parkedRows(): Promise<number> {
    return (await service.ctx.store.outboxBacklog(chainRefundTopic, nowMs, 10_000)).parked;
  }

  test('300 refunds parked on a network that refuses them do not stop a new refund on another network', async () => {
    await chain.setKnobs('SOLANA', { sendRejects: true });
    try {
      for (let batch = 0; batch < 6; batch += 1) await Promise.all(Array.from({ length: 50 }, () => unmatchedDeposit('SOLANA')));
      const refunds = worker('jam');
      // 32 rows per round: ten rounds attempt every Solana refund once.
      for (let round = 0; round < 10; round += 1) await refunds.tick();
      const stellar = await unmatchedDeposit('STELLAR');
      await refunds.tick();
      assert.equal(await refundOf(stellar), 'settled', 'the Stellar refund went out at the next round');
      assert.equal(await parkedRows(), 300, 'every Solana refund was tried and parked');
      assert.equal(refunds.status().inFlight, 0, 'parked rows are not held');
      assert.equal(refunds.status().retrying.length, 300, 'the worker still reports them');
    } finally {
      await chain.setKnobs('SOLANA', { sendRejects: false });
      // Operations settle them by hand, so the next tests start from an empty queue.
      for (const row of await service.ctx.store.outboxWaiting(chainRefundTopic, 1_000)) await service.ctx.store.outboxResolve(chainRefundTopic, row.id, nowMs);
    }
  });

  test('a parked refund is not tried again before its time, not even by a worker started afterwards; then it is', async () => {
    await chain.setKnobs('CELO', { sendRejects: true });
    const key = await unmatchedDeposit('CELO');
    const first = worker('first');
    await first.tick();
    const [row] = (await service.ctx.store.outboxWaiting(chainRefundTopic, 1_000)).filter((candidate) => candidate.partitionKey === key);
    assert.ok(row, 'the refund waits in the store');
    assert.deepEqual(
      [row.parked, row.attempts, row.reason, row.notBeforeMs, row.claimOwner],
      [true, 1, 'sandbox send rejected (knob)', nowMs + 600_000, null],
      'parked for ten minutes, held by nobody',
    );
    await first.stop();
    await chain.setKnobs('CELO', { sendRejects: false });

    nowMs += 599_999;
    const second = worker('second');
    await second.tick();
    assert.equal(await refundOf(key), 'pending', 'not tried before its time');
    nowMs += 1;
    await second.tick();
    assert.equal(await refundOf(key), 'settled');
  });

  test('a network whose node hangs takes its share of the slots and no more: refunds on the others go on', async () => {
    const solana = chains.adapters.get('SOLANA') ?? assert.fail('a Solana adapter');
    let release: () => void = () => undefined;
    const unblocked = new Promise<void>((resolve) => { release = resolve; });
    let hanging = 0;
    // A node that accepts the connection and never answers, until the test lets it.
    const stuck: ChainAdapter = {
      ...solana,
      async send(request) {
        hanging += 1;
        await unblocked;
        return solana.send(request);
      },
    };
    const adapters = new Map(chains.adapters);
    adapters.set('SOLANA', stuck);
    const refunds = worker('budget', { adapters, inFlightMax: 8, claimBatchMax: 4, tickMs: 10 });
    try {
      const solanaKeys = await Promise.all(Array.from({ length: 6 }, () => unmatchedDeposit('SOLANA')));
      refunds.start();
      await eventually(() => assert.equal(hanging, 4, 'half of the 8 slots'));
      const stellar = await unmatchedDeposit('STELLAR');
      await eventually(async () => assert.equal(await refundOf(stellar), 'settled'));
      assert.equal(hanging, 4, 'no more Solana sends while the node hangs');
      nowMs += 61_000; // a whole claim lease: the hung sends are reported, and still held
      await eventually(() => assert.equal(refunds.health().report(Date.now(), 60_000).detail['attemptsOverdue'], 4));
      assert.equal(refunds.status().inFlight, 4);
      release();
      const settled = async (): Promise<number> => (await Promise.all(solanaKeys.map(refundOf))).filter((refund) => refund === 'settled').length;
      await eventually(async () => assert.equal(await settled(), 4, 'the four that hung'));
      nowMs += 60_000; // the two put back for want of a slot are due again
      await eventually(async () => assert.equal(await settled(), 6));
    } finally {
      release();
      await refunds.stop(5_000);
    }
  });
});
