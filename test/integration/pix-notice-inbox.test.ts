// PIX provider notices go to an inbox before they are applied: a notice whose application fails on
// the way (the transport to the shard throws, as a dropped Redis connection would) is not lost: the
// inbox worker applies it later, and the payment moves its transaction exactly once. Real actor
// runtime (in-process bus), embedded store, the sandbox rail as the PIX provider, the real charges
// and inventory.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { outboxTopicDeliveries, outboxTopicWebhooks, type AcceptReply } from '../../src/actors/transaction-actor.ts';
import { resolveChainSetups } from '../../src/chains/config.ts';
import type { ActorAsker } from '../../src/chains/deposits.ts';
import { randomAddress } from '../../src/chains/sandbox-chain.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { OnrampCharges } from '../../src/onramp/charges.ts';
import { PixNoticeIntake, type PixPaymentNotice } from '../../src/onramp/intake.ts';
import { ActorOnrampInventory } from '../../src/onramp/inventory.ts';
import { NoticeWorker } from '../../src/onramp/notice-worker.ts';
import { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { sandboxDestinations } from '../support/sandbox-destinations.ts';
import { startActorHarness, type ActorHarness } from '../support/actor-harness.ts';
import { createQuote, partnerId, transactionDoc } from '../support/payout-child.ts';

const log = pino({ level: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug' });

describe('PIX notice inbox', () => {
  let harness: ActorHarness;
  let rail: SandboxRail;
  let charges: OnrampCharges;
  let nowMs = Date.now();
  const clock = { nowMs: () => nowMs };

  before(async () => {
    harness = await startActorHarness({ busKind: 'memory' });
    rail = new SandboxRail({ store: harness.store, clock });
    const setups = resolveChainSetups(null, { sandbox: true, corridors: loadDefaultCorridors() });
    const inventory = new ActorOnrampInventory({ store: harness.store, actors: harness.client });
    charges = new OnrampCharges({ store: harness.store, rail, inventory, destinations: sandboxDestinations(harness.store, setups, clock), setups: () => setups, clock, log });
  });

  after(async () => {
    await harness.stop();
  });

  /** An onramp transaction awaiting its PIX payment, and the notice of its exact payment. */
  async function paidAtTheProvider(): Promise<{ id: string; notice: PixPaymentNotice }> {
    const quote = await createQuote(harness.client, harness.store, { kind: 'onramp', amount: 100, paymentMethod: 'PIX' });
    const id = randomUUID();
    const wallet = randomAddress('STELLAR');
    const prepared = await charges.prepare({ partnerId, transactionId: id, quote, destination: wallet });
    assert.ok(prepared.ok, JSON.stringify(prepared));
    const payload = acceptPayload(quote, { partnerId, userId: `user-${randomUUID()}`, accountNumber: wallet, paymentContext: prepared.paymentContext });
    const accepted = await harness.client.ask<AcceptReply>('transaction', id, 'accept', toJsonValue(payload), { timeoutMs: 20_000 });
    assert.ok(accepted.ok && !accepted.kycRequired, JSON.stringify(accepted));
    const chargeId = String((prepared.paymentContext as Record<string, JsonValue>)['chargeId']);
    const payment = await rail.simulatePixPayment({ chargeId, amount: null });
    assert.ok(payment !== null);
    return { id, notice: { chargeId: payment.chargeId, providerPaymentId: payment.providerPaymentId, amount: payment.amount } };
  }

  /** The transport to the shards throws for the first `failures` payment notices (nothing is sent). */
  function failingTransport(failures: number): ActorAsker & { failed(): number } {
    let failed = 0;
    return {
      failed: () => failed,
      async ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, options?: { readonly commandId?: string; readonly timeoutMs?: number }): Promise<Reply> {
        if (kind === 'PixPaymentReceived' && failed < failures) {
          failed += 1;
          throw new Error('connection to the bus lost');
        }
        return harness.client.ask<Reply>(actorType, actorKey, kind, payload, options);
      },
    };
  }

  async function rowsOf(topic: string, id: string): Promise<number> {
    return (await harness.store.outboxPending(topic, 1_000)).filter((row) => row.partitionKey === id).length;
  }

  test('a notice whose application failed once is stored, then applied from the inbox, exactly once', async () => {
    const { id, notice } = await paidAtTheProvider();
    const transport = failingTransport(1);
    const intake = new PixNoticeIntake({ store: harness.store, actors: transport, clock, log, inbox: { firstRetryDelayMs: 5_000, retryDelayMsMin: 2_000 } });

    const first = await intake.receive(notice);
    assert.equal(transport.failed(), 1);
    assert.equal(first.result, 'queued', 'acknowledged: stored, to be applied later');
    assert.equal((await transactionDoc(harness.store, id)).status, 'AWAITING_PAYMENT');
    assert.equal((await intake.inbox.get(notice.providerPaymentId))?.state, 'pending');

    const worker = new NoticeWorker({ intake, clock, log });
    await worker.tick();
    assert.equal((await transactionDoc(harness.store, id)).status, 'AWAITING_PAYMENT', 'not before its next attempt is due');
    nowMs += 2_000;
    await worker.tick();
    assert.equal((await transactionDoc(harness.store, id)).status, 'PROCESSING_PAYMENT', 'applied from the inbox');
    assert.equal((await intake.inbox.get(notice.providerPaymentId))?.state, 'applied');
    assert.deepEqual(worker.stats(), { applied: 1, retried: 0, stuck: 0 });

    // The provider sends it again, and the worker looks again: nothing moves twice.
    assert.deepEqual(await intake.receive(notice), { result: 'applied', transactionId: id, status: 'PROCESSING_PAYMENT' });
    nowMs += 60_000;
    await worker.tick();
    assert.equal(await rowsOf(outboxTopicDeliveries, id), 1, 'one crypto delivery requested');
    assert.equal(await rowsOf(outboxTopicWebhooks, id), 2, 'created, then one PROCESSING_PAYMENT update');
  });

  test('a notice that keeps failing stays pending with its attempts counted, and is applied once the transport is back', async () => {
    const { id, notice } = await paidAtTheProvider();
    const transport = failingTransport(3);
    const intake = new PixNoticeIntake({ store: harness.store, actors: transport, clock, log, inbox: { firstRetryDelayMs: 1_000, retryDelayMsMin: 1_000, retryDelayMsMax: 4_000 } });
    const worker = new NoticeWorker({ intake, clock, log });
    assert.equal((await intake.receive(notice)).result, 'queued');
    for (let round = 0; round < 6 && (await transactionDoc(harness.store, id)).status === 'AWAITING_PAYMENT'; round += 1) {
      nowMs += 5_000;
      await worker.tick();
    }
    assert.equal(transport.failed(), 3);
    assert.equal((await transactionDoc(harness.store, id)).status, 'PROCESSING_PAYMENT');
    const stored = await intake.inbox.get(notice.providerPaymentId);
    assert.equal(stored?.state, 'applied');
    assert.equal(stored?.attempts, 4, 'three failed attempts, then the one that applied it');
    assert.equal(await rowsOf(outboxTopicDeliveries, id), 1);
  });

  test('a notice for a charge we never created is stored as unknown_charge and not retried; the same payment id with another amount is refused', async () => {
    const intake = new PixNoticeIntake({ store: harness.store, actors: harness.client, clock, log });
    const notice = { chargeId: `unknown-${randomUUID()}`, providerPaymentId: `pay-${randomUUID()}`, amount: decimalFromExactString('10.00') };
    assert.deepEqual(await intake.receive(notice), { result: 'unknown_charge' });
    assert.equal((await intake.inbox.get(notice.providerPaymentId))?.state, 'unknown_charge');
    assert.deepEqual(await intake.inbox.due(nowMs + 3_600_000, 100).then((due) => due.filter((entry) => entry.notice.providerPaymentId === notice.providerPaymentId)), []);
    const other = await intake.receive({ ...notice, amount: decimalFromExactString('11.00') });
    assert.equal(other.result, 'invalid');
    assert.equal((await intake.inbox.get(notice.providerPaymentId))?.notice.amount.units, 1000n, 'the first notice stands');
  });
});
