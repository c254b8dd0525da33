// A partner's whole onramp over real HTTP against the composition root (ROLE=all, sandbox chain and
// rail): quote/onramp → POST /transaction with the destination wallet → a PIX charge whose BR Code
// our own decoder reads → the payer pays (POST /sandbox/pix-payments) → PROCESSING_PAYMENT → USDC
// delivered on the quoted network → PAYMENT_COMPLETED with the delivery hash. Then everything that
// returns the BRL instead: short payment, late payment, a delivery the chain refuses; duplicate
// notices; the inventory and KYC checks at acceptance; and a restart between payment and delivery.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transactionsCollection } from '../../src/actors/transaction-actor.ts';
import { randomAddress, SandboxChain, sandboxChainCollection } from '../../src/chains/sandbox-chain.ts';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { decimalFromExactString, subtract, toFixedString, toPlainString } from '../../src/domain/money.ts';
import { deliveryIdempotencyKey } from '../../src/onramp/delivery-worker.ts';
import { PixNoticeIntake } from '../../src/onramp/intake.ts';
import { ActorOnrampInventory } from '../../src/onramp/inventory.ts';
import { sandboxRailCollection } from '../../src/rails/sandbox-rail.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { createEventLogReader, type PartnerEvent } from '../../src/webhooks/event-log.ts';
import { eventually } from '../support/eventually.ts';
import { checkedFetch } from '../support/openapi-validation.ts';
import { verifyReceipt } from '../../clients/typescript/src/receipts.ts';

const apiKey = `demo_${randomUUID().replaceAll('-', '')}`;
const opsKey = `ops_${randomUUID().replaceAll('-', '')}`;
const networksUnderTest: readonly Network[] = ['STELLAR', 'SOLANA', 'CELO'];

interface Response {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

interface Running {
  readonly service: RunningService;
  readonly port: number;
}

/** The composition root, as `npm start` runs it, on `dataDir` (kept across restarts). */
async function start(dataDir: string, clockOffsetMs: () => number): Promise<Running> {
  const env = readEnv({
    DATA_DIR: dataDir,
    ROLE: 'all',
    SANDBOX: '1',
    LOG_LEVEL: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug',
    PORT: '0',
    HOST: '127.0.0.1',
    GRPC_PORT: '0', ADMIN_TLS: 'off',
    PAYOUT_GRPC_PORT: '0',
    SHARDS: '8',
    DEMO_API_KEY: apiKey,
    OPS_API_KEY: opsKey,
  });
  const service = await startService(env, { clock: { nowMs: () => Date.now() + clockOffsetMs() } });
  if (service.port === null) throw new Error('the service started no edge');
  return { service, port: service.port };
}

function client(running: () => Running) {
  async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
    const response = await checkedFetch(`http://127.0.0.1:${running().port}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'X-API-Key': apiKey },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  async function quote(network: Network, fiatAmount: number): Promise<Record<string, unknown>> {
    const quoted = await call('POST', '/quote/onramp', { fiat_amount: fiatAmount, target_currency: 'BRL', crypto_currency: 'USDC', network, payment_method: 'PIX' });
    assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
    return quoted.body;
  }

  async function accept(network: Network, fiatAmount = 100): Promise<{ id: string; wallet: string; value: number; context: Record<string, unknown> }> {
    const quoted = await quote(network, fiatAmount);
    const wallet = randomAddress(network);
    const accepted = await call('POST', '/transaction', { quote_id: quoted.quote_id, user_id: `u-${randomUUID()}`, account_number: wallet });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    assert.equal(accepted.body.kycRequired, false);
    return { id: String(accepted.body.id), wallet, value: Number(quoted.value), context: accepted.body.payment_context as Record<string, unknown> };
  }

  async function untilStatus(id: string, status: string): Promise<Record<string, unknown>> {
    return eventually(async () => {
      const got = await call('GET', `/transaction/${id}`);
      assert.equal(got.body.status, status);
      return got.body;
    }, 20_000);
  }

  return { call, quote, accept, untilStatus };
}

/** The service's onramp inventory, as the delivery worker and operations reach it. */
async function inventoryOf(service: RunningService): Promise<ActorOnrampInventory> {
  return new ActorOnrampInventory({ store: service.ctx.store, actors: await service.ctx.actorClient(`test-inventory-${randomUUID()}`) });
}

/** The partner's webhook events for one transaction, in sequence order (GET /events reads the same log). */
async function eventsOf(service: RunningService, transactionId: string): Promise<PartnerEvent[]> {
  const reader = createEventLogReader(service.ctx.store);
  const found: PartnerEvent[] = [];
  for (let after = 0, pages = 0; pages < 100; pages += 1) {
    const page = await reader.list('demo', after, 500);
    found.push(...page.events.filter((event) => event.data.id === transactionId));
    if (page.events.length === 0) break;
    after = page.nextAfter;
  }
  return found;
}

function shape(events: readonly PartnerEvent[]): string[] {
  return events.map((event) => `${event.event}:${event.data.status}:${event.data.refundOnChainId === null ? 'no-refund' : 'refunded'}`);
}

async function sendRecord(service: RunningService, network: Network, transactionId: string): Promise<Record<string, unknown> | null> {
  const keyHash = createHash('sha256').update(deliveryIdempotencyKey(transactionId)).digest('hex');
  return service.ctx.store.get(sandboxChainCollection, `send:${network}:${keyHash}`);
}

describe('onramp lifecycle over HTTP (composition root, sandbox chain and rail)', () => {
  let dataDir: string;
  let running: Running;
  let clockOffsetMs = 0;
  const api = client(() => running);

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'e2e-onramp-'));
    running = await start(dataDir, () => clockOffsetMs);
  });

  after(async () => {
    await running.service.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  for (const network of networksUnderTest) {
    test(`${network}: PIX charge → pay → PROCESSING_PAYMENT → USDC delivered → PAYMENT_COMPLETED with the delivery hash`, async () => {
      const { id, wallet, value, context } = await api.accept(network);
      assert.equal(context.type, 'pix_charge');
      assert.equal(context.currency, 'BRL');
      assert.equal(context.amount, 100, 'the BRL the payer pays');
      assert.equal(context.cryptoAmount, value, 'the crypto the wallet receives is the quote value');
      assert.equal(context.blockchain, network);
      assert.equal(typeof context.expiresAt, 'number');
      assert.equal(context.depositAddress, undefined, 'an onramp has no deposit address');
      assert.equal(String(context.destination).toLowerCase(), wallet.toLowerCase());

      const decoded = await api.call('GET', `/qr-decoder/br?qrCode=${encodeURIComponent(String(context.brCode))}`);
      assert.equal(decoded.status, 200, JSON.stringify(decoded.body));
      const fields = decoded.body.decoded as Record<string, unknown>;
      assert.deepEqual([fields.amount, fields.currency], ['100.00', 'BRL']);
      assert.ok(String(fields.account).endsWith(String(context.chargeId).replaceAll('-', '')), 'the dynamic code points at this charge');

      const paid = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.status, 'PROCESSING_PAYMENT');

      const done = await api.untilStatus(id, 'PAYMENT_COMPLETED');
      const onChainId = String(done.on_chain_tx_hash);
      const transfer = await new SandboxChain({ store: running.service.ctx.store, clock: { nowMs: () => Date.now() }, setups: [] }).transfer(network, onChainId);
      assert.equal(transfer?.kind, 'send');
      assert.equal(transfer.destination.toLowerCase(), wallet.toLowerCase(), 'sent to the wallet named at acceptance');
      assert.equal(Number(toFixedString(transfer.amount)), value, 'exactly the quoted crypto amount');

      const events = await eventually(async () => {
        const found = await eventsOf(running.service, id);
        assert.equal(found.length, 3);
        return found;
      });
      assert.deepEqual(shape(events), ['transaction.created:AWAITING_PAYMENT:no-refund', 'transaction.updated:PROCESSING_PAYMENT:no-refund', 'transaction.updated:PAYMENT_COMPLETED:no-refund']);
      assert.equal(events[2]?.data.onChainId, onChainId);

      // The signed receipt names the PIX payment in and the crypto delivered out, and verifies.
      const signed = await api.call('GET', `/transaction/${id}/receipt`);
      assert.equal(signed.status, 200, JSON.stringify(signed.body));
      const jwks = await api.call('GET', '/.well-known/jwks.json');
      assert.ok(verifyReceipt(signed.body as { receipt: unknown; signature: string }, jwks.body as { keys: unknown[] }).ok);
      const receipt = signed.body.receipt as Record<string, Record<string, unknown>>;
      assert.deepEqual([receipt.deposit?.rail, receipt.deposit?.amount, receipt.deposit?.currency], ['pix', '100', 'BRL']);
      assert.deepEqual([receipt.settlement?.kind, receipt.settlement?.network, receipt.settlement?.hash], ['delivery', network, onChainId]);
    });
  }

  test('short payment: WRONG_AMOUNT, no crypto sent, the PIX payment is refunded (refundOnChainId = provider refund id)', async () => {
    const { id } = await api.accept('STELLAR');
    const paid = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id, amount: 99.99 });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, 'WRONG_AMOUNT');
    const events = await eventually(async () => {
      const found = await eventsOf(running.service, id);
      assert.equal(found.length, 3);
      return found;
    });
    assert.deepEqual(shape(events), ['transaction.created:AWAITING_PAYMENT:no-refund', 'transaction.updated:WRONG_AMOUNT:no-refund', 'transaction.updated:WRONG_AMOUNT:refunded']);
    assert.match(String(events[2]?.data.refundOnChainId), /^sbx-rf-/);
    assert.equal(await sendRecord(running.service, 'STELLAR', id), null, 'no crypto was sent');
    assert.equal((await api.call('GET', `/transaction/${id}`)).body.on_chain_tx_hash, null);
    // Refunded: the receipt says so and names the provider's refund id instead of a delivery.
    const signed = await api.call('GET', `/transaction/${id}/receipt`);
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    const receipt = signed.body.receipt as Record<string, unknown>;
    assert.equal(receipt.outcome, 'refunded');
    assert.equal(receipt.settlement, null);
    assert.equal((receipt.refund as Record<string, unknown>).refund_id, events[2]?.data.refundOnChainId);
  });

  test('a crypto delivery the chain refuses: PAYMENT_FAILED, the BRL is refunded, the inventory is given back', async () => {
    const chain = new SandboxChain({ store: running.service.ctx.store, clock: { nowMs: () => Date.now() }, setups: [] });
    const inventory = await inventoryOf(running.service);
    const before = await inventory.available('SOLANA', 'USDC');
    await chain.setKnobs('SOLANA', { sendRejects: true });
    try {
      const { id } = await api.accept('SOLANA');
      const paid = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id });
      assert.equal(paid.body.status, 'PROCESSING_PAYMENT');
      await api.untilStatus(id, 'PAYMENT_FAILED');
      const events = await eventually(async () => {
        const found = await eventsOf(running.service, id);
        assert.equal(found.length, 4);
        return found;
      }, 20_000);
      assert.deepEqual(shape(events), [
        'transaction.created:AWAITING_PAYMENT:no-refund',
        'transaction.updated:PROCESSING_PAYMENT:no-refund',
        'transaction.updated:PAYMENT_FAILED:no-refund',
        'transaction.updated:PAYMENT_FAILED:refunded',
      ]);
      assert.match(String(events[3]?.data.refundOnChainId), /^sbx-rf-/);
      assert.equal(events[3]?.data.onChainId, null, 'nothing was delivered');
      assert.deepEqual(await inventory.available('SOLANA', 'USDC'), before);
    } finally {
      await chain.setKnobs('SOLANA', { sendRejects: false });
    }
  });

  test('the same PIX notice twice is one transition; a second, different payment is returned', async () => {
    const { id } = await api.accept('CELO');
    const paid = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id });
    assert.equal(paid.body.status, 'PROCESSING_PAYMENT');
    // The provider delivers the same notice again (a webhook retry): same payment id.
    const intake = new PixNoticeIntake({ store: running.service.ctx.store, actors: await running.service.ctx.actorClient('test-notices'), clock: running.service.ctx.clock, log: running.service.ctx.log });
    const notice = { chargeId: String(paid.body.charge_id), providerPaymentId: String(paid.body.provider_payment_id), amount: decimalFromExactString('100.00') };
    const [first, second] = [await intake.receive(notice), await intake.receive(notice)];
    assert.equal(first.result, 'applied');
    assert.equal(second.result, 'applied');
    await api.untilStatus(id, 'PAYMENT_COMPLETED');
    // The payer pays the charge a second time: a stray payment, refunded; the status stays.
    const again = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id });
    assert.equal(again.body.status, 'PAYMENT_COMPLETED');
    await eventually(async () => {
      const refund = await running.service.ctx.store.get(sandboxRailCollection, `refund:refund:${id}:${String(again.body.provider_payment_id)}`);
      assert.ok(refund !== null, 'the second payment was refunded');
    });
    await eventually(async () => {
      const events = await eventsOf(running.service, id);
      assert.deepEqual(shape(events), ['transaction.created:AWAITING_PAYMENT:no-refund', 'transaction.updated:PROCESSING_PAYMENT:no-refund', 'transaction.updated:PAYMENT_COMPLETED:no-refund']);
    });
  });

  test('acceptance: the crypto inventory of the network bounds the quote (liquidity reason), and nothing is created', async () => {
    const inventory = await inventoryOf(running.service);
    const before = await inventory.available('CELO', 'USDC');
    await inventory.set('CELO', 'USDC', decimalFromExactString('1'));
    try {
      const quoted = await api.quote('CELO', 100);
      const refused = await api.call('POST', '/transaction', { quote_id: quoted.quote_id, user_id: `u-${randomUUID()}`, account_number: randomAddress('CELO') });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.code, 'liquidity_insufficient');
      assert.match(String(refused.body.reason), /liquidity is below the requested amount/);
    } finally {
      await inventory.set('CELO', 'USDC', before);
    }
  });

  test('acceptance: the destination must be a wallet of the quoted network', async () => {
    const quoted = await api.quote('SOLANA', 100);
    const refused = await api.call('POST', '/transaction', { quote_id: quoted.quote_id, user_id: `u-${randomUUID()}`, account_number: randomAddress('CELO') });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'account_unverifiable');
  });

  test('KYC: the monthly volume counts the USDC delivered; above 25 the answer is kycRequired and no charge is shown', async () => {
    // 200 BRL buys about 36.8 USDC (above the 25 threshold); the 100 BRL transactions above (about 18.4 USDC) passed.
    const quoted = await api.quote('STELLAR', 200);
    const answer = await api.call('POST', '/transaction', { quote_id: quoted.quote_id, user_id: `u-${randomUUID()}`, account_number: randomAddress('STELLAR') });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, { id: null, kycRequired: true, transaction_reference: null, payment_context: null });
  });

  // Last: it moves the service's clock past every quote made so far.
  test('late payment (after the charge expired): PAYMENT_EXPIRED, and the BRL is refunded', async () => {
    const { id } = await api.accept('SOLANA');
    clockOffsetMs += 31 * 60_000;
    const paid = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, 'PAYMENT_EXPIRED');
    const refunded = await eventually(async () => {
      const doc = await running.service.ctx.store.get(transactionsCollection, id);
      assert.match(String(doc?.refundOnChainId), /^sbx-rf-/);
      return doc;
    }, 20_000);
    assert.equal(refunded?.onChainId, null);
    assert.equal(await sendRecord(running.service, 'SOLANA', id), null, 'no crypto was sent');
  });
});

describe('onramp: a restart between the PIX payment and the delivery', () => {
  test('the delivery broadcast before the stop completes after the restart, exactly once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'e2e-onramp-restart-'));
    let running = await start(dataDir, () => 0);
    const api = client(() => running);
    try {
      const chain = (): SandboxChain => new SandboxChain({ store: running.service.ctx.store, clock: { nowMs: () => Date.now() }, setups: [] });
      // Sends stay pending for a few polls: the first attempt signs and records the transfer, then waits.
      await chain().setKnobs('STELLAR', { sendPendingPolls: 3 });
      const inventoryBefore = await (await inventoryOf(running.service)).available('STELLAR', 'USDC');
      const { id, wallet, value } = await api.accept('STELLAR');
      const paid = await api.call('POST', '/sandbox/pix-payments', { transaction_id: id });
      assert.equal(paid.body.status, 'PROCESSING_PAYMENT');
      const broadcast = await eventually(async () => {
        const record = await sendRecord(running.service, 'STELLAR', id);
        assert.ok(record !== null, 'the delivery was signed and recorded');
        return record;
      });
      assert.equal((await api.call('GET', `/transaction/${id}`)).body.status, 'PROCESSING_PAYMENT');

      await running.service.stop();
      running = await start(dataDir, () => 0);

      const done = await api.untilStatus(id, 'PAYMENT_COMPLETED');
      assert.equal(done.on_chain_tx_hash, broadcast.onChainId, 'the transfer signed before the restart is the one delivered');
      const sends = await running.service.ctx.store.list(sandboxChainCollection, { limit: 1_000 });
      const toWallet = sends.items.filter((item) => item.doc.kind === 'send' && item.doc.destination === wallet);
      assert.equal(toWallet.length, 1, 'one transfer to the wallet');
      const inventoryAfter = await (await inventoryOf(running.service)).available('STELLAR', 'USDC');
      assert.equal(toPlainString(subtract(inventoryBefore, inventoryAfter)), String(value), 'the inventory dropped once');
      await chain().setKnobs('STELLAR', { sendPendingPolls: 0 });
    } finally {
      await running.service.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
