// A partner's whole payout, over real HTTP against the edge, with the shard, watcher and payout
// roles running in this process on the sandbox chain and rail: quote → accept → fund on chain
// (Stellar by memo, detected by itself; Solana and Celo reported with /payments/notify) →
// PAYMENT_COMPLETED; a wrong amount comes back to its sender; ops reconcile a hash.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChainServices, type ChainServices, type WatcherRole } from '../../src/chains/chain-services.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import { createRailServices, type RailServices, type RunningPayoutRole } from '../../src/service/rail-services.ts';
import { startEdgeRole, type EdgeRole } from '../../src/service/edge-role.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { checkedFetch } from '../support/openapi-validation.ts';

const apiKey = `demo_${randomUUID().replaceAll('-', '')}`;
const opsKey = `ops_${randomUUID().replaceAll('-', '')}`;

interface Response {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

describe('payout lifecycle over HTTP (sandbox chain and rail)', () => {
  let dataDir: string;
  let service: RunningService;
  let chains: ChainServices;
  let rails: RailServices;
  let payout: RunningPayoutRole;
  let watcher: WatcherRole;
  let edge: EdgeRole;

  async function call(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = { 'X-API-Key': apiKey }): Promise<Response> {
    const response = await checkedFetch(`http://127.0.0.1:${edge.port}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-payout-'));
    const env = readEnv({ DATA_DIR: dataDir, ROLE: 'shard', SANDBOX: '1', LOG_LEVEL: 'silent', PORT: '0', DEMO_API_KEY: apiKey, OPS_API_KEY: opsKey });
    service = await startService(env);
    chains = await createChainServices(service.ctx, { sandboxWatcherPollMs: 20, refunds: { tickMs: 20, retryDelayMsMin: 20 } });
    rails = createRailServices(service.ctx, { worker: { pollIntervalMs: 20, retryDelayMsMin: 20 } });
    await rails.liquidity.start();
    payout = await rails.startPayoutRole();
    watcher = await chains.startWatcherRole();
    edge = await startEdgeRole(service.ctx, {
      liquidity: rails.liquidity,
      depositVerifier: chains.depositVerifier,
      reconciler: chains.reconciler,
      paymentContexts: chains.paymentContexts,
      chainAvailability: chains.chainAvailability,
      sandbox: chains.sandbox,
    });
  });

  after(() => teardown(
    () => edge?.stop(),
    () => watcher?.stop(),
    () => payout?.stop(),
    () => rails?.close(),
    () => service?.stop(),
    () => { rmSync(dataDir, { recursive: true, force: true }); },
  ));

  async function accept(network: Network): Promise<{ id: string; value: number; context: Record<string, unknown> }> {
    const quote = await call('POST', '/quote', { amount: 10, crypto_currency: 'USDC', network, payment_method: 'PIX', target_currency: 'BRL' });
    assert.equal(quote.status, 200, JSON.stringify(quote.body));
    const accepted = await call('POST', '/transaction', { quote_id: quote.body.quote_id, user_id: `u-${randomUUID()}`, account_number: randomUUID() });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    assert.equal(accepted.body.kycRequired, false);
    const context = accepted.body.payment_context as Record<string, unknown>;
    assert.equal(context.amount, quote.body.value, 'payment_context.amount is the quote value');
    return { id: String(accepted.body.id), value: Number(quote.body.value), context };
  }

  async function untilStatus(id: string, status: string): Promise<Record<string, unknown>> {
    return eventually(async () => {
      const got = await call('GET', `/transaction/${id}`);
      assert.equal(got.body.status, status);
      return got.body;
    }, 15_000);
  }

  test('the corridor list offers every sandbox network', async () => {
    const corridors = await call('GET', '/public/corridors', undefined, {});
    const offered = new Set((corridors.body.corridors as Array<{ blockchain: string }>).map((corridor) => corridor.blockchain));
    assert.deepEqual([...offered].sort(), ['CELO', 'SOLANA', 'STELLAR']);
  });

  test('Stellar: fund with the memo; no notify; PAYMENT_COMPLETED with the deposit hash', async () => {
    const { id, context } = await accept('STELLAR');
    assert.deepEqual([context.memo, context.memoType, context.mintAddress, context.notify], [transactionReference(id), 'text', null, { endpoint: null, required: false }]);
    const deposit = await call('POST', '/sandbox/deposits', { transaction_id: id });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    const done = await untilStatus(id, 'PAYMENT_COMPLETED');
    assert.equal(done.on_chain_tx_hash, deposit.body.on_chain_tx);
    assert.equal(done.transaction_reference, transactionReference(id));
  });

  for (const network of ['SOLANA', 'CELO'] as const) {
    test(`${network}: fund, notify (202), PAYMENT_COMPLETED; notifying again is harmless`, async () => {
      const { id, context } = await accept(network);
      assert.deepEqual(context.notify, { endpoint: '/payments/notify', required: true });
      const deposit = await call('POST', '/sandbox/deposits', { transaction_id: id });
      assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
      const body = { blockchain: network, on_chain_tx: deposit.body.on_chain_tx, transaction_id: id };
      const notified = await call('POST', '/payments/notify', body);
      assert.deepEqual([notified.status, notified.body], [202, { enqueued: true }]);
      await untilStatus(id, 'PAYMENT_COMPLETED');
      assert.equal((await call('POST', '/payments/notify', body)).status, 202);
    });
  }

  test('wrong amount: WRONG_AMOUNT, and the deposit is returned (refundOnChainId set)', async () => {
    const { id, value } = await accept('SOLANA');
    const deposit = await call('POST', '/sandbox/deposits', { transaction_id: id, amount: Number((value + 0.5).toFixed(6)) });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    const notified = await call('POST', '/payments/notify', { blockchain: 'SOLANA', on_chain_tx: deposit.body.on_chain_tx, transaction_id: id });
    assert.equal(notified.status, 202);
    await untilStatus(id, 'WRONG_AMOUNT');
    const record = await eventually(async () => {
      const doc = await service.ctx.store.get('transactions', id);
      assert.equal(typeof doc?.refundOnChainId, 'string', 'the refund settled');
      return doc;
    });
    const refund = await chains.sandboxChain?.transfer('SOLANA', String(record?.refundOnChainId));
    assert.equal(refund?.destination, deposit.body.sender, 'back to the sender');
  });

  test('notify errors: Stellar 400, a transfer the chain does not know 404, another transaction 400', async () => {
    const stellar = await accept('STELLAR');
    const refused = await call('POST', '/payments/notify', { blockchain: 'STELLAR', on_chain_tx: 'a'.repeat(64), transaction_id: stellar.id });
    assert.equal(refused.status, 400);
    const celo = await accept('CELO');
    const unknown = await call('POST', '/payments/notify', { blockchain: 'CELO', on_chain_tx: `0x${'12'.repeat(32)}`, transaction_id: celo.id });
    assert.equal(unknown.status, 404);
    const paid = await accept('CELO');
    const deposit = await call('POST', '/sandbox/deposits', { transaction_id: paid.id });
    assert.equal((await call('POST', '/payments/notify', { blockchain: 'CELO', on_chain_tx: deposit.body.on_chain_tx, transaction_id: paid.id })).status, 202);
    const stolen = await call('POST', '/payments/notify', { blockchain: 'CELO', on_chain_tx: deposit.body.on_chain_tx, transaction_id: celo.id });
    assert.equal(stolen.status, 400, JSON.stringify(stolen.body));
  });

  test('ops reconcile-hash: a processed hash is alreadyProcessed; an unreported one is enqueued', async () => {
    const ops = { 'X-OPS-API-KEY': opsKey };
    const { id } = await accept('SOLANA');
    const deposit = await call('POST', '/sandbox/deposits', { transaction_id: id });
    const first = await call('POST', '/ops/transactions/reconcile-hash', { blockchain: 'SOLANA', on_chain_tx: deposit.body.on_chain_tx, transaction_id: id }, ops);
    assert.deepEqual([first.status, first.body.result, first.body.transaction_id], [200, 'enqueued', id]);
    await untilStatus(id, 'PAYMENT_COMPLETED');
    const again = await call('POST', '/ops/transactions/reconcile-hash', { blockchain: 'SOLANA', on_chain_tx: deposit.body.on_chain_tx }, ops);
    assert.deepEqual([again.body.result, again.body.transaction_id, again.body.transaction_status, again.body.reason], ['alreadyProcessed', id, 'PAYMENT_COMPLETED', null]);
    assert.equal((await call('POST', '/ops/transactions/reconcile-hash', { blockchain: 'SOLANA', on_chain_tx: deposit.body.on_chain_tx })).status, 401, 'the partner key is not an ops key');
  });
});
