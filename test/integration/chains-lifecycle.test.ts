// The crypto side end to end through the real actor runtime (in-process bus and Redis Streams, the
// embedded store in a temp dir): quote → accept → sandbox deposit on each network (Stellar found by
// the watcher from the memo; Solana/Celo reported by notify) → PROCESSING_PAYMENT → the payout
// worker pays → PAYMENT_COMPLETED. Then every way a deposit goes wrong and is refunded, the
// one-transfer-one-transaction rule, and each result of the ops reconcile.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActorClient } from '../../src/actors/client.ts';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { createChainServices, type ChainServices, type WatcherRole } from '../../src/chains/chain-services.ts';
import { RefundWorker } from '../../src/chains/refunds.ts';
import { chainRefundTopic } from '../../src/actors/deposit-actor.ts';
import { pino } from 'pino';
import { base58Encode } from '../../src/chains/config.ts';
import type { SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { defaultCorridorsPath } from '../../src/config/corridors.ts';
import { readEnv } from '../../src/config/env.ts';
import { acceptanceCounterKeys } from '../../src/domain/limits.ts';
import type { CryptoAsset, Network, PaymentMethod } from '../../src/domain/assets.ts';
import { add, decimal, decimalFromExactString, toFixedString } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import { createRailServices, type RunningPayoutRole } from '../../src/service/rail-services.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import type { JsonObject } from '../../src/store/store.ts';
import { eventually } from '../support/eventually.ts';
import { startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { teardown } from '../support/teardown.ts';

interface Stack {
  readonly service: RunningService;
  readonly chains: ChainServices;
  readonly sandboxChain: SandboxChain;
  readonly client: ActorClient;
  readonly watcher: WatcherRole | null;
  stop(): Promise<void>;
}

interface StackOptions {
  readonly dataDir: string;
  readonly redisUrl?: string;
  readonly clock?: { nowMs(): number };
  readonly corridorsFile?: string;
  /** Run the payout role (sandbox rail) so payouts complete. Default true. */
  readonly payouts?: boolean;
  /** Run the watcher role (Stellar watcher + refund worker). Default true. */
  readonly watcherRole?: boolean;
}

async function startStack(options: StackOptions): Promise<Stack> {
  const env = readEnv({
    DATA_DIR: options.dataDir,
    ROLE: 'shard', // this file builds the watcher and payout roles itself
    SANDBOX: '1',
    LOG_LEVEL: 'silent',
    SHARDS: '8',
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl, KEY_PREFIX: `t${randomUUID().slice(0, 8)}:` } : {}),
    ...(options.corridorsFile ? { CORRIDORS_FILE: options.corridorsFile } : {}),
  });
  const service = await startService(env, options.clock ? { clock: options.clock } : {});
  const chains = await createChainServices(service.ctx, {
    sandboxWatcherPollMs: 20,
    refunds: { tickMs: 20, retryDelayMsMin: 20, retryDelayMsMax: 200 },
    // One look at start, then none: here notify and reconcile are the first to claim a transfer
    // (the pollers have their own tests: test/integration/deposit-addresses.test.ts).
    depositPoller: { roundMs: 3_600_000 },
  });
  const rails = options.payouts === false ? null : createRailServices(service.ctx, { worker: { pollIntervalMs: 20, retryDelayMsMin: 20 } });
  const payout: RunningPayoutRole | null = rails ? await rails.startPayoutRole() : null;
  const watcher: WatcherRole | null = options.watcherRole === false ? null : await chains.startWatcherRole();
  const client = await service.ctx.actorClient('test');
  assert.ok(chains.sandboxChain);
  return {
    service,
    chains,
    sandboxChain: chains.sandboxChain,
    client,
    watcher,
    async stop() {
      await watcher?.stop();
      await payout?.stop();
      await rails?.close();
      await service.stop();
    },
  };
}

const routes: Record<Network, { asset: CryptoAsset; method: PaymentMethod; amount: number; account: () => string }> = {
  STELLAR: { asset: 'USDC', method: 'PIX', amount: 10, account: () => randomUUID() },
  SOLANA: { asset: 'USDC', method: 'BREB', amount: 10_000, account: () => '@recipient' },
  CELO: { asset: 'USDT', method: 'PIX', amount: 12.5, account: () => randomUUID() },
};

async function quoteOn(stack: Stack, network: Network): Promise<Quote> {
  const route = routes[network];
  const quoteId = randomUUID();
  const reply = await stack.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId: 'demo',
    request: { kind: 'payout', amount: route.amount, cryptoCurrency: route.asset, network, paymentMethod: route.method, targetCurrency: route.method === 'PIX' ? 'BRL' : 'COP' },
  });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  const quote = await loadQuote(stack.service.ctx.store, quoteId);
  assert.ok(quote);
  return quote;
}

/** Accepts as the edge does (payment_context from the chain services). */
async function acceptOn(stack: Stack, network: Network, userId = `user-${randomUUID()}`): Promise<{ id: string; quote: Quote; paymentContext: JsonObject }> {
  const quote = await quoteOn(stack, network);
  const transactionId = randomUUID();
  const paymentContext = stack.chains.paymentContexts.forPayout(quote, transactionId) as JsonObject;
  const payload = acceptPayload(quote, { partnerId: 'demo', userId, accountNumber: routes[network].account(), paymentContext });
  const reply = await stack.client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload), { timeoutMs: 20_000 });
  assert.ok(reply.ok && !reply.kycRequired, JSON.stringify(reply));
  return { id: transactionId, quote, paymentContext };
}

async function transaction(stack: Stack, id: string): Promise<JsonObject> {
  const doc = await stack.service.ctx.store.get('transactions', id);
  assert.ok(doc, `transaction ${id} exists`);
  return doc;
}

async function untilStatus(stack: Stack, id: string, status: string, timeoutMs = 10_000): Promise<JsonObject> {
  return eventually(async () => {
    const doc = await transaction(stack, id);
    assert.equal(doc.status, status);
    return doc;
  }, timeoutMs);
}

async function untilRefunded(stack: Stack, id: string): Promise<JsonObject> {
  return eventually(async () => {
    const doc = await transaction(stack, id);
    assert.equal(typeof doc.refundOnChainId, 'string', 'refundOnChainId is set');
    return doc;
  });
}

async function sandboxDeposit(stack: Stack, id: string, amount: number | null = null): Promise<{ onChainTx: string; sender: string }> {
  const result = await stack.chains.sandbox.deposit({
    partnerId: 'demo',
    transactionId: id,
    amount: amount === null ? null : decimalFromExactString(String(amount)),
  });
  assert.ok(result.ok, JSON.stringify(result));
  const body = result.body as { on_chain_tx: string; sender: string };
  return { onChainTx: body.on_chain_tx, sender: body.sender };
}

async function notify(stack: Stack, network: Network, transactionId: string, onChainTx: string, partnerId = 'demo') {
  return stack.chains.depositVerifier.notify({ partnerId, blockchain: network, onChainTx, transactionId });
}

/** The refund on the sandbox ledger: a send of exactly the deposit back to its sender. */
async function assertRefundOnLedger(stack: Stack, network: Network, refundOnChainId: string, deposit: { amount: string; sender: string; asset: CryptoAsset }): Promise<void> {
  const refund = await stack.sandboxChain.transfer(network, refundOnChainId);
  assert.ok(refund, 'the refund is on the chain');
  assert.equal(refund.kind, 'send');
  assert.equal(refund.destination, deposit.sender);
  assert.equal(refund.asset, deposit.asset);
  assert.equal(toFixedString(refund.amount), deposit.amount);
}

function lifecycleSuite(busKind: 'memory' | 'redis'): void {
  describe(`payout lifecycle on the sandbox chain (${busKind} bus)`, () => {
    let stack: Stack;
    let dataDir: string;
    let redis: PrivateRedis | null = null;
    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'chains-'));
      if (busKind === 'redis') redis = await startRedis();
      stack = await startStack({ dataDir, ...(redis ? { redisUrl: redis.url } : {}) });
    });
    after(() => teardown(
      () => stack?.stop(),
      () => redis?.stop(),
      () => { rmSync(dataDir, { recursive: true, force: true }); },
    ));

    test('Stellar: the exact amount with the memo is detected without notify and paid out', async () => {
      const { id, paymentContext } = await acceptOn(stack, 'STELLAR');
      assert.equal(paymentContext.memo, transactionReference(id));
      const { onChainTx } = await sandboxDeposit(stack, id);
      const done = await untilStatus(stack, id, 'PAYMENT_COMPLETED');
      assert.equal(done.onChainId, onChainTx);
      assert.equal(done.refundOnChainId, null);
      const link = await stack.service.ctx.store.get('deposits', `STELLAR:${onChainTx}`);
      assert.equal(link?.transactionId, id);
    });

    for (const network of ['SOLANA', 'CELO'] as const) {
      test(`${network}: the deposit is reported with notify, verified and paid out`, async () => {
        const { id } = await acceptOn(stack, network);
        const { onChainTx } = await sandboxDeposit(stack, id);
        // The watcher's deposit poller may find it first (test/integration/deposit-addresses.test.ts);
        // the partner's notify is answered the same either way.
        assert.deepEqual(await notify(stack, network, id, onChainTx), { result: 'enqueued' });
        const done = await untilStatus(stack, id, 'PAYMENT_COMPLETED');
        assert.equal(done.onChainId, onChainTx);
      });
    }

    test('wrong amount: WRONG_AMOUNT, then the whole deposit goes back to its sender', async () => {
      const { id, quote } = await acceptOn(stack, 'SOLANA');
      const sent = add(quote.sourceAmount, decimal(1n, 6)); // one base unit too much
      const { onChainTx, sender } = await sandboxDeposit(stack, id, Number(toFixedString(sent)));
      assert.deepEqual(await notify(stack, 'SOLANA', id, onChainTx), { result: 'enqueued', mismatched: true });
      await untilStatus(stack, id, 'WRONG_AMOUNT');
      const refunded = await untilRefunded(stack, id);
      assert.equal(refunded.status, 'WRONG_AMOUNT', 'a refund has no status of its own');
      assert.equal(refunded.onChainId, onChainTx);
      await assertRefundOnLedger(stack, 'SOLANA', String(refunded.refundOnChainId), { amount: toFixedString(sent), sender, asset: 'USDC' });
    });

    test('the same hash notified twice, and for a second transaction, is linked once', async () => {
      const first = await acceptOn(stack, 'CELO');
      const second = await acceptOn(stack, 'CELO');
      const { onChainTx } = await sandboxDeposit(stack, first.id);
      const results = await Promise.all([notify(stack, 'CELO', first.id, onChainTx), notify(stack, 'CELO', first.id, onChainTx)]);
      assert.deepEqual(results, [{ result: 'enqueued' }, { result: 'enqueued' }]);
      const other = await notify(stack, 'CELO', second.id, onChainTx);
      assert.equal(other.result, 'invalid');
      await untilStatus(stack, first.id, 'PAYMENT_COMPLETED');
      const untouched = await transaction(stack, second.id);
      assert.equal(untouched.status, 'AWAITING_PAYMENT');
      assert.equal(untouched.onChainId, null);
      // Upper-case hex is the same Celo hash: still the same transfer.
      assert.equal((await notify(stack, 'CELO', second.id, onChainTx.toUpperCase().replace('0X', '0x'))).result, 'invalid');
    });

    test('notify answers: Stellar refused, nothing to our address 400, another partner 404, malformed 400, unknown hash 404', async () => {
      const { id } = await acceptOn(stack, 'SOLANA');
      const stellar = await acceptOn(stack, 'STELLAR');
      assert.equal((await notify(stack, 'STELLAR', stellar.id, 'a'.repeat(64))).result, 'invalid');
      const missing = await stack.sandboxChain.deposit({ network: 'SOLANA', asset: 'USDC', amount: decimal(1n, 0), destination: 'not-our-address' });
      assert.equal((await notify(stack, 'SOLANA', id, missing.onChainId)).result, 'invalid', 'moves nothing to our address');
      const { onChainTx } = await sandboxDeposit(stack, id);
      assert.equal((await notify(stack, 'SOLANA', id, onChainTx, 'someone-else')).result, 'not_found');
      assert.equal((await notify(stack, 'SOLANA', id, 'not-a-signature')).result, 'invalid');
      assert.equal((await notify(stack, 'CELO', id, `0x${'ab'.repeat(32)}`)).result, 'invalid', 'the transaction is funded on SOLANA');
      const unknownSignature = base58Encode(Uint8Array.from([1, ...randomBytes(63)]));
      assert.equal((await notify(stack, 'SOLANA', id, unknownSignature)).result, 'not_found', 'well-formed, not on chain');
    });

    test('an unmatched Stellar memo is recorded and refunded in full; a memo of no transaction too', async () => {
      const strangers = await Promise.all([
        stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('3.5'), memo: 'hello' }),
        stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('4.25'), memo: transactionReference(randomUUID()) }),
        stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('1'), memo: null }),
      ]);
      for (const transfer of strangers) {
        const record = await eventually(async () => {
          const doc = await stack.service.ctx.store.get('deposits', `STELLAR:${transfer.onChainId}`);
          assert.equal(doc?.refund, 'settled');
          return doc;
        });
        assert.equal(record.status, 'unmatched');
        assert.equal(record.transactionId, null);
        await assertRefundOnLedger(stack, 'STELLAR', String(record.refundOnChainId), { amount: toFixedString(transfer.amount), sender: transfer.sender, asset: 'USDC' });
      }
      const reasons = await Promise.all(strangers.map(async (transfer) => (await stack.service.ctx.store.get('deposits', `STELLAR:${transfer.onChainId}`))?.unmatchedReason));
      assert.deepEqual(reasons, ['memo_unknown', 'transaction_not_found', 'memo_missing']);
    });

    test('a Stellar memo of a Solana transaction is unmatched: refunded, the transaction still awaits', async () => {
      const { id } = await acceptOn(stack, 'SOLANA');
      const transfer = await stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('2'), memo: transactionReference(id) });
      const record = await eventually(async () => {
        const doc = await stack.service.ctx.store.get('deposits', `STELLAR:${transfer.onChainId}`);
        assert.equal(doc?.refund, 'settled');
        return doc;
      });
      assert.equal(record.unmatchedReason, 'wrong_network');
      assert.equal((await transaction(stack, id)).status, 'AWAITING_PAYMENT');
    });

    test('a refund that stays pending on chain is polled until it is confirmed', async () => {
      await stack.sandboxChain.setKnobs('CELO', { sendPendingPolls: 3 });
      try {
        const { id, quote } = await acceptOn(stack, 'CELO');
        const short = Number(toFixedString(quote.sourceAmount)) / 2;
        const { onChainTx } = await sandboxDeposit(stack, id, Number(short.toFixed(6)));
        assert.deepEqual(await notify(stack, 'CELO', id, onChainTx), { result: 'enqueued', mismatched: true });
        await untilStatus(stack, id, 'WRONG_AMOUNT');
        const refunded = await untilRefunded(stack, id);
        assert.equal(refunded.status, 'WRONG_AMOUNT');
      } finally {
        await stack.sandboxChain.setKnobs('CELO', { sendPendingPolls: 0 });
      }
    });

    test('reconcile-hash: every result value', async () => {
      const reconcile = (blockchain: Network, onChainTx: string, transactionId: string | null = null) =>
        stack.chains.reconciler.reconcile({ blockchain, onChainTx, transactionId });

      // enqueued: a Solana transfer nobody reported, with its transaction id.
      const pending = await acceptOn(stack, 'SOLANA');
      const { onChainTx } = await sandboxDeposit(stack, pending.id);
      // unresolved: a SOLANA hash without transaction_id (no heuristic matching).
      const unresolved = await reconcile('SOLANA', onChainTx);
      assert.equal(unresolved.result, 'unresolved');
      const enqueued = await reconcile('SOLANA', onChainTx, pending.id);
      assert.equal(enqueued.result, 'enqueued');
      assert.equal(enqueued.transactionId, pending.id);
      await untilStatus(stack, pending.id, 'PAYMENT_COMPLETED');
      // alreadyProcessed: the same hash again, with or without the id.
      const again = await reconcile('SOLANA', onChainTx);
      assert.deepEqual([again.result, again.transactionId, again.transactionStatus], ['alreadyProcessed', pending.id, 'PAYMENT_COMPLETED']);
      // invalid: a malformed hash; a transaction that failed on chain; the hash of another transaction.
      assert.equal((await reconcile('CELO', '0x1234')).result, 'invalid');
      const celo = await acceptOn(stack, 'CELO');
      const failed = await stack.sandboxChain.deposit({ network: 'CELO', asset: 'USDC', amount: decimal(1n, 0), failed: true, destination: String(celo.paymentContext.depositAddress) });
      const invalid = await reconcile('CELO', failed.onChainId, celo.id);
      assert.deepEqual([invalid.result, invalid.reason], ['invalid', 'The transaction failed on chain']);
      const other = await acceptOn(stack, 'SOLANA');
      assert.equal((await reconcile('SOLANA', onChainTx, other.id)).result, 'invalid');
      // notFound: a well-formed hash the chain does not know; a transaction that does not exist.
      assert.equal((await reconcile('CELO', `0x${'cd'.repeat(32)}`, celo.id)).result, 'notFound');
      const stray = await stack.sandboxChain.deposit({ network: 'SOLANA', asset: 'USDC', amount: decimal(1n, 0) });
      assert.equal((await reconcile('SOLANA', stray.onChainId, randomUUID())).result, 'notFound');
      // unresolved: a Stellar hash whose memo names no transaction (the watcher is held off).
      await stack.sandboxChain.setKnobs('STELLAR', { watcherOutage: true });
      try {
        const noMemo = await stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimal(1n, 0), memo: 'not ours' });
        const stellar = await reconcile('STELLAR', noMemo.onChainId);
        assert.equal(stellar.result, 'unresolved');
        // enqueued via the memo, no transaction_id needed on Stellar.
        const byMemo = await acceptOn(stack, 'STELLAR');
        const paid = await sandboxDeposit(stack, byMemo.id);
        const viaMemo = await reconcile('STELLAR', paid.onChainTx);
        assert.deepEqual([viaMemo.result, viaMemo.transactionId], ['enqueued', byMemo.id]);
        await untilStatus(stack, byMemo.id, 'PAYMENT_COMPLETED');
      } finally {
        await stack.sandboxChain.setKnobs('STELLAR', { watcherOutage: false });
      }
      // failed: the chain cannot be asked (outage) — logged, reported as failed.
      await stack.sandboxChain.setKnobs('CELO', { verifyOutage: true });
      try {
        const outage = await reconcile('CELO', `0x${'ef'.repeat(32)}`, celo.id);
        assert.deepEqual([outage.result, outage.reason], ['failed', 'Reconciliation failed unexpectedly; try again later']);
      } finally {
        await stack.sandboxChain.setKnobs('CELO', { verifyOutage: false });
      }
    });
  });
}

lifecycleSuite('memory');
lifecycleSuite('redis');

describe('time: expiry by the actor timer, and deposits after expiry', () => {
  // Quotes live 60 s here. The clock is manual; the shard worker arms a real timer for
  // dueAt − now, so an advanced clock fires a timer when it is (re)armed — which happens when a
  // worker takes a shard over. The test restarts the service after moving the clock.
  let dataDir: string;
  let nowMs = Date.now();
  const clock = { nowMs: () => nowMs };

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'chains-time-'));
  });
  after(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("an unpaid transaction expires by its timer, releases its reservations, and a late deposit becomes its partner's unmatched deposit, refunded on the partner's call", async () => {
    const corridors = JSON.parse(readFileSync(defaultCorridorsPath, 'utf8')) as Record<string, unknown>;
    const corridorsFile = join(dataDir, 'corridors.json');
    writeFileSync(corridorsFile, JSON.stringify({ ...corridors, quoteTtlMs: 60_000 }));

    let stack = await startStack({ dataDir, corridorsFile, clock, payouts: false });
    let expiring: { id: string; quote: Quote };
    const userId = `user-${randomUUID()}`;
    try {
      expiring = await acceptOn(stack, 'STELLAR', userId);
      assert.equal(expiring.quote.expiresAtMs, nowMs + 60_000);
      const reserved = await kycMonthReservations(stack, userId);
      assert.equal(reserved, 1);
    } finally {
      await stack.stop();
    }

    nowMs += 61_000;
    stack = await startStack({ dataDir, corridorsFile, clock, payouts: false });
    try {
      await untilStatus(stack, expiring.id, 'PAYMENT_EXPIRED');
      await eventually(async () => assert.equal(await kycMonthReservations(stack, userId), 0, 'the reservation is released'));

      // A deposit for the expired transaction: detected (Stellar memo), handed back as the
      // partner's unmatched deposit (held for its decision: docs/unmatched-deposits.md); the
      // transaction is unchanged. The partner's refund sends it back, once.
      const late = await sandboxDeposit(stack, expiring.id);
      const held = await unmatchedRecord(stack, 'STELLAR', late.onChainTx, 'held');
      assert.deepEqual([held.unmatchedReason, held.transactionId, held.partnerId], ['deposit_late', expiring.id, 'demo']);
      assert.deepEqual([(await transaction(stack, expiring.id)).status, (await transaction(stack, expiring.id)).onChainId], ['PAYMENT_EXPIRED', null]);
      const key = `STELLAR:${late.onChainTx}`;
      const decided = await stack.client.ask<{ result: string }>('deposit', key, 'refund', { partnerId: 'demo' }, { timeoutMs: 10_000 });
      assert.equal(decided.result, 'decided');
      const refunded = await unmatchedRecord(stack, 'STELLAR', late.onChainTx, 'settled');
      assert.equal(typeof refunded.refundOnChainId, 'string');

      // A deposit after expiresAt but before any timer fired: late all the same (handed back).
      const quick = await acceptOn(stack, 'CELO');
      nowMs += 61_000;
      const { onChainTx } = await sandboxDeposit(stack, quick.id);
      assert.deepEqual(await notify(stack, 'CELO', quick.id, onChainTx), { result: 'enqueued' });
      const quickHeld = await unmatchedRecord(stack, 'CELO', onChainTx, 'held');
      assert.deepEqual([quickHeld.unmatchedReason, quickHeld.transactionId], ['deposit_late', quick.id]);
      // The transaction took nothing (its own timer expires it when it fires).
      assert.equal((await transaction(stack, quick.id)).onChainId, null);
    } finally {
      await stack.stop();
    }
  });
});

/** The `deposits` record of a transfer once its refund is `refund` (keyed by its own address too, hence the list). */
async function unmatchedRecord(stack: Stack, network: Network, onChainTx: string, refund: string): Promise<JsonObject> {
  return eventually(async () => {
    const page = await stack.service.ctx.store.list('deposits', { where: { network, onChainId: onChainTx }, orderBy: 'claimedAtMs', limit: 2 });
    const doc = page.items[0]?.doc;
    assert.ok(doc, 'the deposit is recorded');
    assert.deepEqual([doc.status, doc.refund], ['unmatched', refund]);
    return doc;
  }, 20_000);
}

/** Transactions the user's KYC-month counter holds reserved (PIX has no daily user cap). */
async function kycMonthReservations(stack: Stack, userId: string): Promise<number> {
  const keys = acceptanceCounterKeys(stack.service.ctx.config.limits(), { partnerId: 'demo', userId, method: 'PIX', nowMs: stack.service.ctx.clock.nowMs() });
  const key = keys.kycMonth;
  const snapshot = await stack.service.ctx.store.load(`counter/${key}`);
  assert.ok(snapshot, 'the counter exists');
  return (snapshot.state as { reservedCount: number }).reservedCount;
}

describe('chain refunds survive crashes and outages (outbox claims)', () => {
  // No watcher role here: the refund workers are built and ticked by hand, on a manual clock.
  let dataDir: string;
  let stack: Stack;
  let nowMs = Date.now();
  const clock = { nowMs: () => nowMs };
  const silent = pino({ level: 'silent' });
  const worker = (owner: string): RefundWorker =>
    new RefundWorker({ store: stack.service.ctx.store, adapters: stack.chains.adapters, actors: stack.client, clock, log: silent, owner, claimLeaseMs: 60_000, retryDelayMsMin: 1_000 });

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chains-refunds-'));
    stack = await startStack({ dataDir, payouts: false, watcherRole: false });
  });
  after(async () => {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function wrongAmountOnSolana(): Promise<{ id: string; sent: string }> {
    const { id, quote } = await acceptOn(stack, 'SOLANA');
    const sent = toFixedString(add(quote.sourceAmount, decimal(5n, 6)));
    const { onChainTx } = await sandboxDeposit(stack, id, Number(sent));
    assert.deepEqual(await notify(stack, 'SOLANA', id, onChainTx), { result: 'enqueued', mismatched: true });
    await untilStatus(stack, id, 'WRONG_AMOUNT');
    await eventually(async () => assert.ok((await stack.service.ctx.store.outboxPending(chainRefundTopic, 100)).some((row) => (row.payload as JsonObject).transactionId === id), 'the refund row is in the outbox'));
    return { id, sent };
  }

  test('a worker that dies after a failed refund attempt: another worker finishes it once it is due, sending once', async () => {
    const { id } = await wrongAmountOnSolana();
    await stack.sandboxChain.setKnobs('SOLANA', { sendOutage: true });
    const crashed = worker('crashed');
    await crashed.tick();
    assert.equal(crashed.status().retrying[0]?.lastError, 'sandbox send outage');
    await stack.sandboxChain.setKnobs('SOLANA', { sendOutage: false });

    const successor = worker('successor');
    await successor.tick();
    assert.equal(successor.status().inFlight, 0, 'the refund waits in the store for its retry time');
    assert.equal((await transaction(stack, id)).refundOnChainId, null);

    nowMs += 61_000; // past the retry time (and any claim the dead worker held)
    await successor.tick();
    const refunded = await untilRefunded(stack, id);
    assert.equal(refunded.status, 'WRONG_AMOUNT');
    assert.equal(successor.status().inFlight, 0);

    // The "dead" worker wakes up and retries its row: the idempotency key makes it the same send.
    await crashed.tick();
    assert.equal(crashed.status().inFlight, 0);
    assert.equal((await transaction(stack, id)).refundOnChainId, refunded.refundOnChainId);
    const rows = await stack.service.ctx.store.outboxPending(chainRefundTopic, 100);
    assert.ok(!rows.some((row) => (row.payload as JsonObject).transactionId === id), 'the row is done');
  });

  test('a refund the chain refuses is parked, logged, retried slowly, and completes once fixed', async () => {
    const { id, sent } = await wrongAmountOnSolana();
    await stack.sandboxChain.setKnobs('SOLANA', { sendRejects: true });
    const refunds = worker('parked');
    await refunds.tick();
    assert.equal(refunds.status().retrying[0]?.lastError, 'sandbox send rejected (knob)');
    nowMs += 5_000;
    await refunds.tick();
    assert.equal(refunds.status().retrying[0]?.attempts, 1, 'not hammered');
    await stack.sandboxChain.setKnobs('SOLANA', { sendRejects: false });
    nowMs += 600_000;
    await refunds.tick();
    const refunded = await untilRefunded(stack, id);
    const ledger = await stack.sandboxChain.transfer('SOLANA', String(refunded.refundOnChainId));
    assert.equal(ledger === null ? null : toFixedString(ledger.amount), sent);
    await refunds.stop();
  });

  test('a restarted service picks up refunds written before the restart', async () => {
    const { id } = await wrongAmountOnSolana();
    await stack.stop();
    stack = await startStack({ dataDir, payouts: false }); // with the watcher role this time
    await untilRefunded(stack, id);
  });
});

describe('a standby watcher process takes over when the active one stops (Redis leases)', () => {
  let stack: Stack;
  let dataDir: string;
  let redis: PrivateRedis;
  let standby: WatcherRole;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chains-standby-'));
    redis = await startRedis();
    stack = await startStack({ dataDir, redisUrl: redis.url });
    // A second watcher process on the same bus, store and lease store.
    const second = await createChainServices(stack.service.ctx, { sandboxWatcherPollMs: 20, watcherLeaseTtlMs: 900 });
    standby = await second.startWatcherRole();
  });
  after(() => teardown(
    () => standby?.stop(),
    () => stack?.stop(),
    () => redis?.stop(),
    () => { rmSync(dataDir, { recursive: true, force: true }); },
  ));

  test('deposits are found by the active process, then by the standby once the active one stopped', async () => {
    assert.equal(stack.watcher?.active(), true);
    assert.equal(standby.active(), false, 'one watcher process runs the watchers');
    // The Stellar watcher and the Solana and Celo deposit pollers, all standing by.
    assert.deepEqual(standby.watchers().map((status) => [status.network, status.state]), [['STELLAR', 'stopped'], ['SOLANA', 'stopped'], ['CELO', 'stopped']]);
    const first = await acceptOn(stack, 'STELLAR');
    await sandboxDeposit(stack, first.id);
    await untilStatus(stack, first.id, 'PAYMENT_COMPLETED');

    await stack.watcher?.stop();
    await eventually(() => assert.equal(standby.active(), true), 5_000, 50);
    const second = await acceptOn(stack, 'STELLAR');
    const { onChainTx } = await sandboxDeposit(stack, second.id);
    const done = await untilStatus(stack, second.id, 'PAYMENT_COMPLETED');
    assert.equal(done.onChainId, onChainTx, 'found by the process that took over');
  });
});

describe('refund floor: dust never costs a refund; everything at or above the floor is refunded', () => {
  // Default floors (src/config/limits.ts): SOLANA 1 USDC. The quote here is ≈ 2.59 USDC (10,000 COP).
  let stack: Stack;
  let dataDir: string;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'chains-dust-'));
    stack = await startStack({ dataDir });
  });
  after(async () => {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Every send the sandbox chain made to one of `destinations` (refunds go to the depositor). */
  async function sendsTo(destinations: ReadonlySet<string>): Promise<JsonObject[]> {
    const sends: JsonObject[] = [];
    for (let offset = 0; ; offset += 1_000) {
      const page = await stack.service.ctx.store.list('sandbox_chain', { limit: 1_000, offset });
      for (const { doc } of page.items) {
        if (doc.kind === 'send' && typeof doc.destination === 'string' && destinations.has(doc.destination)) sends.push(doc);
      }
      if (page.items.length < 1_000) return sends;
    }
  }

  async function depositRecord(network: Network, onChainTx: string, check: (doc: JsonObject) => void): Promise<JsonObject> {
    return eventually(async () => {
      // Keyed by the transaction's own address too (one chain transaction may pay several).
      const page = await stack.service.ctx.store.list('deposits', { where: { network, onChainId: onChainTx }, orderBy: 'claimedAtMs', limit: 2 });
      assert.equal(page.items.length, 1, 'the deposit is recorded, once');
      const doc = page.items[0]?.doc;
      assert.ok(doc, 'the deposit is recorded');
      check(doc);
      return doc;
    });
  }

  async function notified(id: string, amount: number | null): Promise<{ onChainTx: string; sender: string }> {
    const deposit = await sandboxDeposit(stack, id, amount);
    assert.equal((await notify(stack, 'SOLANA', id, deposit.onChainTx)).result, 'enqueued');
    return deposit;
  }

  test('33 dust deposits to one transaction cost no refund: recorded as unmatched dust; the transaction still takes its exact payment', async () => {
    const { id } = await acceptOn(stack, 'SOLANA');
    const dust: Array<{ onChainTx: string; sender: string }> = [];
    // Before the payment: a dust deposit does not make the transaction WRONG_AMOUNT.
    dust.push(await notified(id, 0.01));
    await depositRecord('SOLANA', dust[0]?.onChainTx ?? '', (doc) => assert.equal(doc.status, 'unmatched'));
    assert.equal((await transaction(stack, id)).status, 'AWAITING_PAYMENT');
    const paid = await notified(id, null);
    await untilStatus(stack, id, 'PAYMENT_COMPLETED');
    // After it: 32 more (one beyond the transaction's 32 stray slots).
    for (let index = 0; index < 32; index += 1) dust.push(await notified(id, 0.01));
    for (const deposit of dust) {
      const record = await depositRecord('SOLANA', deposit.onChainTx, (doc) => assert.equal(doc.refund, 'withheld'));
      assert.equal(record.status, 'unmatched');
      assert.equal(record.unmatchedReason, 'below_refund_floor');
      assert.equal(record.refundFloor, '1.0000000');
      assert.equal(record.transactionId, id, 'operations see which transaction it was sent to');
    }
    const done = await transaction(stack, id);
    assert.deepEqual([done.status, done.onChainId, done.refundOnChainId], ['PAYMENT_COMPLETED', paid.onChainTx, null]);
    assert.deepEqual(await sendsTo(new Set(dust.map((deposit) => deposit.sender))), [], 'not one refund was sent');
    assert.equal((await stack.service.ctx.store.outboxPending(chainRefundTopic, 1_000)).filter((row) => JSON.stringify(row.payload).includes(id)).length, 0);
  });

  test('a deposit at the floor and one above it are refunded in full (wrong amount, stray)', async () => {
    const { id } = await acceptOn(stack, 'SOLANA');
    const atFloor = await notified(id, 1);
    await untilStatus(stack, id, 'WRONG_AMOUNT');
    const refunded = await untilRefunded(stack, id);
    await assertRefundOnLedger(stack, 'SOLANA', String(refunded.refundOnChainId), { amount: '1.000000', sender: atFloor.sender, asset: 'USDC' });
    const stray = await notified(id, 1.5);
    await eventually(async () => assert.equal((await sendsTo(new Set([stray.sender]))).length, 1));
    const [send] = await sendsTo(new Set([stray.sender]));
    assert.equal(send?.amount, '1.500000');
    assert.equal((await transaction(stack, id)).status, 'WRONG_AMOUNT');
  });

  test('an unmatched Stellar deposit below the floor (0.1) is recorded as dust, not refunded; at the floor it is refunded', async () => {
    const dust = await stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('0.0999999'), memo: 'hello' });
    const atFloor = await stack.sandboxChain.deposit({ network: 'STELLAR', asset: 'USDC', amount: decimalFromExactString('0.1'), memo: 'hello' });
    const refunded = await depositRecord('STELLAR', atFloor.onChainId, (doc) => assert.equal(doc.refund, 'settled'));
    await assertRefundOnLedger(stack, 'STELLAR', String(refunded.refundOnChainId), { amount: '0.1000000', sender: atFloor.sender, asset: 'USDC' });
    const record = await depositRecord('STELLAR', dust.onChainId, (doc) => assert.equal(doc.refund, 'withheld'));
    assert.deepEqual([record.status, record.unmatchedReason, record.refundFloor], ['unmatched', 'memo_unknown', '0.1000000']);
    assert.deepEqual(await sendsTo(new Set([dust.sender])), []);
  });

  test("a 34th deposit, beyond the 32 stray slots, is held for the partner and refunded on its call (above the floor); a dust one is not", async () => {
    const { id } = await acceptOn(stack, 'SOLANA');
    await notified(id, null);
    await untilStatus(stack, id, 'PAYMENT_COMPLETED');
    const strays: Array<{ onChainTx: string; sender: string }> = [];
    for (let index = 0; index < 32; index += 1) strays.push(await notified(id, 1.25));
    await eventually(async () => assert.equal((await sendsTo(new Set(strays.map((stray) => stray.sender)))).length, 32), 20_000);
    const beyond = await notified(id, 2);
    await depositRecord('SOLANA', beyond.onChainTx, (doc) => assert.equal(doc.refund, 'held'));
    const page = await stack.service.ctx.store.list('deposits', { where: { network: 'SOLANA', onChainId: beyond.onChainTx }, orderBy: 'claimedAtMs', limit: 1 });
    const decided = await stack.client.ask<{ result: string }>('deposit', page.items[0]?.id ?? '', 'refund', { partnerId: 'demo' }, { timeoutMs: 10_000 });
    assert.equal(decided.result, 'decided');
    const record = await depositRecord('SOLANA', beyond.onChainTx, (doc) => assert.equal(doc.refund, 'settled'));
    assert.deepEqual([record.status, record.unmatchedReason, record.transactionId], ['unmatched', 'too_many_deposits', id]);
    await assertRefundOnLedger(stack, 'SOLANA', String(record.refundOnChainId), { amount: '2.000000', sender: beyond.sender, asset: 'USDC' });
    const dustBeyond = await notified(id, 0.5);
    const dustRecord = await depositRecord('SOLANA', dustBeyond.onChainTx, (doc) => assert.equal(doc.refund, 'withheld'));
    assert.equal(dustRecord.unmatchedReason, 'below_refund_floor');
    assert.deepEqual(await sendsTo(new Set([dustBeyond.sender])), []);
    assert.equal((await transaction(stack, id)).status, 'PAYMENT_COMPLETED');
  });
});
