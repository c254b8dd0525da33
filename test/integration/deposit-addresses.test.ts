// Per-transaction deposit addresses on the sandbox chain, through the real actor runtime (embedded
// store in a temp dir, in-process bus): which transfers may fund which transaction (notify and the
// ops reconcile), the legacy shared-address rule, the watcher's deposit poller that finds deposits
// nobody notified (and late ones, which become the partner's unmatched deposits), and the sweep of a funded address to the
// hot wallet.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { ActorClient } from '../../src/actors/client.ts';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { depositActorKey, type DepositReply } from '../../src/actors/deposit-actor.ts';
import { createChainServices, type ChainServices, type WatcherRole } from '../../src/chains/chain-services.ts';
import { DepositPoller } from '../../src/chains/deposit-poller.ts';
import { sandboxTransactionAddress, type SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { defaultCorridorsPath } from '../../src/config/corridors.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { compare, decimalFromExactString, toFixedString } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { createRailServices, type RunningPayoutRole } from '../../src/service/rail-services.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import type { JsonObject } from '../../src/store/store.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { eventually } from '../support/eventually.ts';

type PerTransactionNetwork = 'SOLANA' | 'CELO';

interface Stack {
  readonly service: RunningService;
  readonly chains: ChainServices;
  readonly sandboxChain: SandboxChain;
  readonly client: ActorClient;
  readonly watcher: WatcherRole;
  stop(): Promise<void>;
}

/** The service's shard role, the payout role (sandbox rail) and the watcher role, on `clock`. */
async function startStack(dataDir: string, clock: { nowMs(): number }, pollRoundMs: number): Promise<Stack> {
  const corridors = JSON.parse(readFileSync(defaultCorridorsPath, 'utf8')) as Record<string, unknown>;
  const corridorsFile = join(dataDir, 'corridors.json');
  writeFileSync(corridorsFile, JSON.stringify({ ...corridors, quoteTtlMs: 60_000 }));
  const env = readEnv({ DATA_DIR: dataDir, ROLE: 'shard', SANDBOX: '1', LOG_LEVEL: 'silent', SHARDS: '8', CORRIDORS_FILE: corridorsFile });
  const service = await startService(env, { clock });
  const chains = await createChainServices(service.ctx, {
    refunds: { tickMs: 20, retryDelayMsMin: 20, retryDelayMsMax: 200 },
    sweeps: { tickMs: 20, retryDelayMsMin: 20, retryDelayMsMax: 200 },
    depositPoller: { roundMs: pollRoundMs },
  });
  const rails = createRailServices(service.ctx, { worker: { pollIntervalMs: 20, retryDelayMsMin: 20 } });
  const payout: RunningPayoutRole = await rails.startPayoutRole();
  const watcher = await chains.startWatcherRole();
  const client = await service.ctx.actorClient('test');
  assert.ok(chains.sandboxChain);
  return {
    service,
    chains,
    sandboxChain: chains.sandboxChain,
    client,
    watcher,
    async stop() {
      await watcher.stop();
      await payout.stop();
      await rails.close();
      await service.stop();
    },
  };
}

async function quoteOn(stack: Stack, network: Network, partnerId: string, amount = 10_000): Promise<Quote> {
  const quoteId = randomUUID();
  const reply = await stack.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId,
    request: { kind: 'payout', amount, cryptoCurrency: 'USDC', network, paymentMethod: 'BREB', targetCurrency: 'COP' },
  });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  const quote = await loadQuote(stack.service.ctx.store, quoteId);
  assert.ok(quote);
  return quote;
}

/**
 * Accepts as the edge does: payment_context from the chain services, or, for a transaction from
 * before per-transaction addresses, the network's shared address frozen in it.
 */
async function acceptOn(stack: Stack, network: PerTransactionNetwork, options: { partnerId?: string; legacy?: boolean } = {}): Promise<{ id: string; quote: Quote; address: string }> {
  const partnerId = options.partnerId ?? 'demo';
  const quote = await quoteOn(stack, network, partnerId);
  const id = randomUUID();
  const paymentContext = stack.chains.paymentContexts.forPayout(quote, id) as JsonObject;
  if (options.legacy === true) paymentContext.depositAddress = stack.sandboxChain.depositAddress(network);
  const payload = acceptPayload(quote, { partnerId, userId: `user-${randomUUID()}`, paymentContext });
  const reply = await stack.client.ask<AcceptReply>('transaction', id, 'accept', toJsonValue(payload), { timeoutMs: 20_000 });
  assert.ok(reply.ok && !reply.kycRequired, JSON.stringify(reply));
  return { id, quote, address: String(paymentContext.depositAddress) };
}

async function transaction(stack: Stack, id: string): Promise<JsonObject> {
  const doc = await stack.service.ctx.store.get('transactions', id);
  assert.ok(doc, `transaction ${id} exists`);
  return doc;
}

async function untilStatus(stack: Stack, id: string, status: string): Promise<JsonObject> {
  return eventually(async () => {
    const doc = await transaction(stack, id);
    assert.equal(doc.status, status);
    return doc;
  });
}

/** A transfer of exactly the quoted amount into `destination`, made now. */
async function pay(stack: Stack, network: PerTransactionNetwork, quote: Quote, destination: string): Promise<string> {
  const transfer = await stack.sandboxChain.deposit({ network, asset: 'USDC', amount: quote.sourceAmount, destination });
  return transfer.onChainId;
}

describe('per-transaction deposit addresses (sandbox chain)', () => {
  let dataDir: string;
  let stack: Stack;
  let nowMs = Date.now();
  const clock = { nowMs: () => nowMs };

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'deposit-addresses-'));
    // The pollers look at start only; the tests below that need them run a poller by hand.
    stack = await startStack(dataDir, clock, 3_600_000);
  });
  after(async () => {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  for (const network of ['SOLANA', 'CELO'] as const) {
    test(`${network}: a transfer to one transaction's address cannot fund another of the same amount (notify, reconcile)`, async () => {
      const a = await acceptOn(stack, network, { partnerId: 'demo' });
      const b = await acceptOn(stack, network, { partnerId: 'kyc-off' });
      assert.notEqual(a.address, b.address);
      assert.equal(toFixedString(a.quote.sourceAmount), toFixedString(b.quote.sourceAmount), 'the same amount to send');
      const transfer = await pay(stack, network, a.quote, a.address);

      const stolen = await stack.chains.depositVerifier.notify({ partnerId: 'kyc-off', blockchain: network, onChainTx: transfer, transactionId: b.id });
      assert.equal(stolen.result, 'invalid');
      assert.match(stolen.result === 'invalid' ? stolen.reason : '', /this transaction's deposit address/);
      const reconciled = await stack.chains.reconciler.reconcile({ blockchain: network, onChainTx: transfer, transactionId: b.id });
      assert.equal(reconciled.result, 'invalid', 'an operator cannot bind it to the wrong transaction either');

      assert.deepEqual(await stack.chains.depositVerifier.notify({ partnerId: 'demo', blockchain: network, onChainTx: transfer, transactionId: a.id }), { result: 'enqueued' });
      await untilStatus(stack, a.id, 'PAYMENT_COMPLETED');
      const untouched = await transaction(stack, b.id);
      assert.deepEqual([untouched.status, untouched.onChainId], ['AWAITING_PAYMENT', null]);
    });
  }

  test('payment_context: each transaction its own address, the same in every process; the shared address is not it', async () => {
    const first = await acceptOn(stack, 'SOLANA');
    const second = await acceptOn(stack, 'SOLANA');
    assert.notEqual(first.address, second.address);
    assert.notEqual(first.address, stack.sandboxChain.depositAddress('SOLANA'));
    assert.equal(sandboxTransactionAddress('SOLANA', first.id), first.address, 'derived from the id, not stored');
    assert.equal((await transaction(stack, first.id)).depositAddress, first.address, 'frozen with the transaction');
  });

  test('a legacy transaction (shared address) is never funded by a transfer made before it existed; a later one still counts', async () => {
    const earlier = await pay(stack, 'SOLANA', await quoteOn(stack, 'SOLANA', 'demo'), stack.sandboxChain.depositAddress('SOLANA'));
    nowMs += 1_000; // the next second: block times have no finer resolution
    const legacy = await acceptOn(stack, 'SOLANA', { legacy: true });
    const refused = await stack.chains.depositVerifier.notify({ partnerId: 'demo', blockchain: 'SOLANA', onChainTx: earlier, transactionId: legacy.id });
    assert.equal(refused.result, 'invalid');
    assert.match(refused.result === 'invalid' ? refused.reason : '', /before this transaction was created/);
    const reconciled = await stack.chains.reconciler.reconcile({ blockchain: 'SOLANA', onChainTx: earlier, transactionId: legacy.id });
    assert.deepEqual([reconciled.result, reconciled.reason], ['invalid', 'The transfer was made before this transaction was created, so it cannot fund it']);
    assert.equal((await transaction(stack, legacy.id)).status, 'AWAITING_PAYMENT');

    const later = await pay(stack, 'SOLANA', legacy.quote, stack.sandboxChain.depositAddress('SOLANA'));
    assert.deepEqual(await stack.chains.depositVerifier.notify({ partnerId: 'demo', blockchain: 'SOLANA', onChainTx: later, transactionId: legacy.id }), { result: 'enqueued' });
    await untilStatus(stack, legacy.id, 'PAYMENT_COMPLETED');
    assert.equal(await stack.sandboxChain.balanceAt('SOLANA', stack.sandboxChain.depositAddress('SOLANA'), 'USDC').then((balance) => balance.units > 0n), true, 'a shared address is not swept');
  });

  test('a funded address is swept to the hot wallet once; a repeated sweep moves nothing', async () => {
    const { id, quote, address } = await acceptOn(stack, 'CELO');
    const transfer = await pay(stack, 'CELO', quote, address);
    assert.deepEqual(await stack.chains.depositVerifier.notify({ partnerId: 'demo', blockchain: 'CELO', onChainTx: transfer, transactionId: id }), { result: 'enqueued' });
    await untilStatus(stack, id, 'PAYMENT_COMPLETED');
    await eventually(async () => assert.equal((await stack.sandboxChain.balanceAt('CELO', address, 'USDC')).units, 0n, 'the address is empty'));
    const port = stack.chains.perTransaction.get('CELO');
    assert.ok(port);
    const key = `sweep:CELO:${transfer}@${address.toLowerCase()}`;
    const repeated = await port.sweep({ transactionId: id, asset: 'USDC', idempotencyKey: key });
    assert.equal(repeated.status, 'confirmed', 'the recorded sweep of this key');
    assert.equal(repeated.status === 'confirmed' ? (await stack.sandboxChain.transfer('CELO', repeated.onChainId))?.destination : null, stack.sandboxChain.depositAddress('CELO'), 'to the hot wallet');
    const swept = repeated.status === 'confirmed' ? await stack.sandboxChain.transfer('CELO', repeated.onChainId) : null;
    assert.equal(swept === null ? null : toFixedString(swept.amount), toFixedString(quote.sourceAmount), 'the whole deposit');
    assert.deepEqual(await port.sweep({ transactionId: id, asset: 'USDC', idempotencyKey: 'sweep:another-key' }), { status: 'nothing_to_sweep' });
    assert.equal((await stack.sandboxChain.balanceAt('CELO', address, 'USDC')).units, 0n, 'moved once');
  });

  test('one chain transaction paying two transactions\' own addresses funds each of them, and each address is swept', async () => {
    // A wallet's batch: the deposit actor keys each part by the address it reached.
    const first = await acceptOn(stack, 'SOLANA');
    const second = await acceptOn(stack, 'SOLANA');
    const hash = await pay(stack, 'SOLANA', first.quote, first.address);
    const claim = (target: { id: string; quote: Quote; address: string }) => stack.client.ask<DepositReply>(
      'deposit', depositActorKey('SOLANA', hash, target.address), 'claim',
      toJsonValue({ transactionId: target.id, transfer: { network: 'SOLANA', onChainId: hash, asset: 'USDC', amount: target.quote.sourceAmount, sender: 'batch-sender', memo: null, depositAddress: target.address } }),
      { timeoutMs: 20_000 },
    );
    assert.deepEqual(await claim(first), { result: 'enqueued', transactionId: first.id });
    assert.deepEqual(await claim(second), { result: 'enqueued', transactionId: second.id });
    await untilStatus(stack, first.id, 'PAYMENT_COMPLETED');
    await untilStatus(stack, second.id, 'PAYMENT_COMPLETED');
    const linked = await stack.service.ctx.store.get('deposits', depositActorKey('SOLANA', hash, second.address));
    assert.equal(linked?.transactionId, second.id);
    // Each link wrote its sweep; the watcher role's sweep worker empties the funded address and
    // finds nothing at the other (this sandbox transfer paid only the first address).
    await eventually(async () => {
      assert.equal((await stack.sandboxChain.balanceAt('SOLANA', first.address, 'USDC')).units, 0n);
      const pending = (await stack.service.ctx.store.outboxPending('sweeps.chain', 1_000)).filter((row) => [first.id, second.id].includes(String((row.payload as JsonObject).transactionId)));
      assert.deepEqual(pending, [], 'both sweeps are done');
    });
    // A reconcile without transaction_id cannot tell which one is meant.
    const reconciled = await stack.chains.reconciler.reconcile({ blockchain: 'SOLANA', onChainTx: hash, transactionId: null });
    assert.equal(reconciled.result, 'unresolved');
    const named = await stack.chains.reconciler.reconcile({ blockchain: 'SOLANA', onChainTx: hash, transactionId: second.id });
    assert.deepEqual([named.result, named.transactionId], ['alreadyProcessed', second.id]);
  });

  describe('the deposit poller', () => {
    const silent = pino({ level: 'silent' });
    const poller = (network: PerTransactionNetwork, lateWatchMs = 3_600_000): DepositPoller => {
      const port = stack.chains.perTransaction.get(network);
      assert.ok(port);
      return new DepositPoller({ port, store: stack.service.ctx.store, intake: stack.chains.intake, clock, log: silent, lateWatchMs, addressesPerRoundMax: 1_000 });
    };

    test('finds a deposit nobody notified, at its transaction\'s address: the transaction completes', async () => {
      const { id, quote, address } = await acceptOn(stack, 'SOLANA');
      const transfer = await pay(stack, 'SOLANA', quote, address);
      const round = await poller('SOLANA').round();
      assert.ok(round.claimed >= 1, JSON.stringify(round));
      const done = await untilStatus(stack, id, 'PAYMENT_COMPLETED');
      assert.equal(done.onChainId, transfer);
      assert.equal(await stack.service.ctx.store.get('deposit_watch', id), null, 'no longer watched');
    });

    test('a late deposit to an expired transaction\'s address is found and held for its partner (unmatched); past the late window it is not looked for', async () => {
      const late = await acceptOn(stack, 'CELO');
      const tooLate = await acceptOn(stack, 'CELO');
      nowMs += 61_000; // both quotes (60 s) have expired
      const transfer = await pay(stack, 'CELO', late.quote, late.address);
      await poller('CELO').round();
      // Handed back by the transaction (deposit_late): the partner's unmatched deposit, waiting for
      // its refund or apply (docs/unmatched-deposits.md); the transaction does not take it.
      const held = await eventually(async () => {
        const page = await stack.service.ctx.store.list('unmatched_deposits', { where: { owner: 'demo', network: 'CELO' }, orderBy: 'createdAtMs', direction: 'desc', limit: 50 });
        const doc = page.items.map((item) => item.doc).find((candidate) => candidate.hash === transfer);
        assert.ok(doc, 'the late deposit is an unmatched deposit');
        return doc;
      });
      assert.deepEqual([held.state, held.reason, held.transactionId], ['open', 'deposit_late', late.id]);
      assert.equal(compare(decimalFromExactString(String(held.amount)), late.quote.sourceAmount), 0, 'the whole deposit');
      assert.equal((await transaction(stack, late.id)).onChainId, null);

      nowMs += 10_000;
      await pay(stack, 'CELO', tooLate.quote, tooLate.address);
      await poller('CELO', 5_000).round(); // it expired 10 s ago: outside a 5 s late window
      assert.equal((await transaction(stack, tooLate.id)).onChainId, null, 'not looked for any more');
    });

    test('a transfer to the shared address is never claimed by the poller, even for a legacy transaction', async () => {
      const legacy = await acceptOn(stack, 'SOLANA', { legacy: true });
      await pay(stack, 'SOLANA', legacy.quote, stack.sandboxChain.depositAddress('SOLANA'));
      await poller('SOLANA').round();
      assert.equal((await transaction(stack, legacy.id)).onChainId, null);
    });

    test('the watcher role runs the pollers under its lease: a deposit nobody notified completes its transaction', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'deposit-addresses-role-'));
      const fast = await startStack(dir, { nowMs: () => Date.now() }, 50);
      try {
        assert.equal(fast.watcher.active(), true);
        const { id, quote, address } = await acceptOn(fast, 'CELO');
        const transfer = await pay(fast, 'CELO', quote, address);
        const done = await untilStatus(fast, id, 'PAYMENT_COMPLETED');
        assert.equal(done.onChainId, transfer);
        await eventually(async () => assert.equal((await fast.sandboxChain.balanceAt('CELO', address, 'USDC')).units, 0n, 'swept'));
        assert.deepEqual(fast.watcher.sweeps().retrying, []);
      } finally {
        await fast.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});

