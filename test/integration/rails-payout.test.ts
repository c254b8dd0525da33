// The payout role end to end with the real actor runtime (in-process bus, embedded store, the
// service's composition): a funded transaction is paid out and completes; a provider failure ends in
// PAYMENT_FAILED with the crypto refund requested (and left to the chains worker); an outage or a
// pending provider is polled until the outcome is final (the row handed back to the store between
// attempts); an onramp payer's PIX payment paid in the
// wrong amount is returned through the rail and the partner sees the provider's refund id.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ActorClient } from '../../src/actors/client.ts';
import { fromJsonValue } from '../../src/actors/state-codec.ts';
import { outboxTopicPayouts, outboxTopicRefundsChain, outboxTopicRefundsPix } from '../../src/actors/transaction-actor.ts';
import { readEnv } from '../../src/config/env.ts';
import { decimalFromExactString, subtract, toFixedString } from '../../src/domain/money.ts';
import type { Deposit } from '../../src/domain/transaction.ts';
import { payoutIdempotencyKey, retryDelayMs } from '../../src/rails/payout-worker.ts';
import { createRailServices, type RailServices, type RunningPayoutRole } from '../../src/service/rail-services.ts';
import type { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually } from '../support/eventually.ts';
import { accept, createQuote, depositExact, pixPaymentReceived, transactionDoc } from '../support/payout-child.ts';
import { teardown } from '../support/teardown.ts';

let dir: string;
let service: RunningService;
let client: ActorClient;
let rails: RailServices;
let sandbox: SandboxRail;
let payoutRole: RunningPayoutRole;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rails-payout-'));
  service = await startService(readEnv({ DATA_DIR: dir, ROLE: 'shard', SHARDS: '8', LOG_LEVEL: 'silent' }));
  client = await service.ctx.actorClient('test');
  rails = createRailServices(service.ctx, {
    sandbox: { settingsCacheMs: 0 },
    worker: { pollIntervalMs: 50, retryDelayMsMin: 50, retryDelayMsMax: 400, leaseMs: 10_000, railCallTimeoutMs: 3_000, reportTimeoutMs: 3_000 },
  });
  assert.ok(rails.sandbox);
  sandbox = rails.sandbox;
  payoutRole = await rails.startPayoutRole();
});

after(() => teardown(
  () => payoutRole?.stop(),
  () => rails?.close(),
  () => service?.stop(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

const store = () => service.ctx.store;

test('funded BREB payout: the rail pays once and the transaction completes with the rail reference', async () => {
  await sandbox.setLiquidity('BREB', decimalFromExactString('10000000.00'));
  const quote = await createQuote(client, store(), { kind: 'payout', amount: 250_000, paymentMethod: 'BREB' });
  const transactionId = await accept(client, quote, '@recipient');
  assert.deepEqual(await depositExact(client, transactionId, quote), { ok: true, status: 'PROCESSING_PAYMENT' });

  await eventually(async () => assert.equal((await transactionDoc(store(), transactionId)).status, 'PAYMENT_COMPLETED'), 10_000);
  const paid = await sandbox.ledgerEntry(payoutIdempotencyKey(transactionId));
  assert.ok(paid);
  assert.equal(paid.status, 'succeeded');
  assert.equal(toFixedString(paid.amount), '250000.00', 'the quoted fiat amount');
  const tx = await payoutRole.worker.loadTransaction(transactionId);
  assert.equal(tx?.settlement.reference, paid.railReference);
  assert.equal(toFixedString((await sandbox.liquidity('BREB')).amount), toFixedString(subtract(decimalFromExactString('10000000.00'), quote.targetAmount)));
  // The partner is told: a transaction.updated webhook with PAYMENT_COMPLETED is in the outbox.
  const webhooks = await store().outboxPending('webhooks', 1_000);
  assert.ok(webhooks.some((row) => JSON.stringify(row.payload).includes(transactionId) && JSON.stringify(row.payload).includes('PAYMENT_COMPLETED')));
  await eventually(async () => {
    const pending = await store().outboxPending(outboxTopicPayouts, 1_000);
    assert.ok(!pending.some((row) => JSON.stringify(row.payload).includes(transactionId)), 'the payout row is done');
  });
});

test('a provider failure: PAYMENT_FAILED, and the crypto refund is requested for the chains worker (not claimed here)', async () => {
  await sandbox.setFailureRate(1);
  try {
    const quote = await createQuote(client, store(), { kind: 'payout', amount: 40, paymentMethod: 'PIX' });
    const transactionId = await accept(client, quote, 'pix@example.com');
    await depositExact(client, transactionId, quote);
    await eventually(async () => assert.equal((await transactionDoc(store(), transactionId)).status, 'PAYMENT_FAILED'), 10_000);
    const refunds = await store().outboxPending(outboxTopicRefundsChain, 1_000);
    const row = refunds.find((candidate) => JSON.stringify(candidate.payload).includes(transactionId));
    assert.ok(row, 'a refund row for the chains worker');
    const payload = fromJsonValue<{ reason: string; deposit: Deposit }>(row.payload);
    assert.equal(payload.reason, 'payout_failed');
    assert.equal(payload.deposit.rail, 'chain');
    assert.equal(toFixedString(payload.deposit.amount), toFixedString(quote.sourceAmount));
    assert.equal(row.claimOwner, null, 'the payout worker leaves chain refunds alone');
    assert.equal((await transactionDoc(store(), transactionId)).refundOnChainId, null);
  } finally {
    await sandbox.setFailureRate(0);
  }
});

test('an outage: the payout is retried with backoff, nothing is paid meanwhile, and it completes when the rail is back', async () => {
  await sandbox.setOutage('PIX', true);
  const quote = await createQuote(client, store(), { kind: 'payout', amount: 75.5, paymentMethod: 'PIX' });
  const transactionId = await accept(client, quote, 'pix@example.com');
  try {
    await depositExact(client, transactionId, quote);
    await eventually(() => {
      const job = payoutRole.worker.jobOf(transactionId);
      assert.ok(job && job.attempts >= 3, 'polled several times');
      assert.match(job.lastOutcome ?? '', /^retry/);
    }, 10_000);
    assert.equal((await transactionDoc(store(), transactionId)).status, 'PROCESSING_PAYMENT');
    assert.equal(await sandbox.ledgerEntry(payoutIdempotencyKey(transactionId)), null);
    const status = await payoutRole.ops.status(transactionId);
    assert.equal(status.transactionStatus, 'PROCESSING_PAYMENT');
    assert.equal(status.heldHere, true);
    assert.equal(status.rail, null, 'the rail never saw the payout');
    assert.match(status.lastOutcome ?? '', /temporarily unavailable/);
  } finally {
    await sandbox.setOutage('PIX', false);
  }
  await eventually(async () => assert.equal((await transactionDoc(store(), transactionId)).status, 'PAYMENT_COMPLETED'), 10_000);
  assert.ok(payoutRole.worker.stats().notYet >= 3);
});

test('a payout waiting out an outage is handed back to the store between attempts: operations see it waiting, with its reason', async () => {
  await sandbox.setOutage('PIX', true);
  const quote = await createQuote(client, store(), { kind: 'payout', amount: 31, paymentMethod: 'PIX' });
  const transactionId = await accept(client, quote, 'pix@example.com');
  try {
    await depositExact(client, transactionId, quote);
    await eventually(async () => {
      const waiting = await store().outboxWaiting(outboxTopicPayouts, 1_000);
      const row = waiting.find((candidate) => fromJsonValue<{ transactionId?: string }>(candidate.payload).transactionId === transactionId);
      assert.ok(row, 'the row waits in the store, held by nobody');
      assert.ok((row.attempts ?? 0) >= 1);
      assert.match(row.reason ?? '', /temporarily unavailable/);
      assert.equal(row.parked, false, 'an outage is a passing failure, not a parked row');
    }, 10_000);
    assert.equal(await sandbox.ledgerEntry(payoutIdempotencyKey(transactionId)), null, 'nothing paid meanwhile');
  } finally {
    await sandbox.setOutage('PIX', false);
  }
  await eventually(async () => assert.equal((await transactionDoc(store(), transactionId)).status, 'PAYMENT_COMPLETED'), 10_000);
});

test('a pending provider is polled until the payout settles', async () => {
  await sandbox.setPendingMs(400);
  try {
    const quote = await createQuote(client, store(), { kind: 'payout', amount: 12, paymentMethod: 'PIX' });
    const transactionId = await accept(client, quote, 'pix@example.com');
    await depositExact(client, transactionId, quote);
    await eventually(() => assert.equal(payoutRole.worker.jobOf(transactionId)?.lastOutcome, 'pending'), 10_000);
    await eventually(async () => assert.equal((await transactionDoc(store(), transactionId)).status, 'PAYMENT_COMPLETED'), 10_000);
  } finally {
    await sandbox.setPendingMs(0);
  }
});

test('onramp paid in the wrong amount by PIX: refunded through the rail, the partner sees the provider refund id', async () => {
  const quote = await createQuote(client, store(), { kind: 'onramp', amount: 100, paymentMethod: 'PIX' });
  const transactionId = await accept(client, quote, 'GWALLETOFTHEUSER');
  const charge = await sandbox.createPixCharge({ amount: quote.sourceAmount, expiresAtMs: quote.expiresAtMs, idempotencyKey: `charge:${transactionId}`, description: 'onramp' });
  const payment = await sandbox.simulatePixPayment({ chargeId: charge.chargeId, amount: decimalFromExactString('99.00') });
  assert.ok(payment);
  assert.deepEqual(await pixPaymentReceived(client, transactionId, payment.providerPaymentId, payment.amount), { ok: true, status: 'WRONG_AMOUNT' });
  await eventually(async () => assert.match((await transactionDoc(store(), transactionId)).refundOnChainId ?? '', /^sbx-rf-/), 10_000);
  const doc = await transactionDoc(store(), transactionId);
  assert.equal(doc.status, 'WRONG_AMOUNT', 'a refund has no status of its own');
  await eventually(async () => {
    const pending = await store().outboxPending(outboxTopicRefundsPix, 1_000);
    assert.ok(!pending.some((row) => JSON.stringify(row.payload).includes(transactionId)), 'the refund row is done');
  });
  // The worker counts a settled refund once its row's done-mark returned, which the store shows a
  // moment before: waited on, not read once (it failed once in CI on that gap).
  await eventually(() => assert.ok(payoutRole.worker.stats().refundsSettled >= 1, 'a settled refund is counted'));
});

test('backoff doubles from the minimum and is capped', () => {
  assert.deepEqual([1, 2, 3, 4, 5, 9, 40].map((attempt) => retryDelayMs(attempt, 500, 60_000)), [500, 1_000, 2_000, 4_000, 8_000, 60_000, 60_000]);
});
