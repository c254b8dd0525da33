// The onramp delivery worker against the real actor runtime (in-process bus and a private Redis),
// the embedded store and the sandbox chain, driven tick by tick with its own clock: what reaches the
// partner (status, delivery hash) and what reaches the wallet (one transfer, never a second) in the
// windows where things go wrong: a send still pending, a report the actor never got, a final failure
// recorded before the actor heard of it, an inventory that ran dry after acceptance.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { JsonValue } from '../../src/actors/envelope.ts';
import { outboxTopicDeliveries, outboxTopicRefundsPix, transactionsCollection } from '../../src/actors/transaction-actor.ts';
import { resolveChainSetups } from '../../src/chains/config.ts';
import type { ChainAdapter } from '../../src/chains/chains.ts';
import type { ActorAsker } from '../../src/chains/deposits.ts';
import { randomAddress, SandboxChain, sandboxChainCollection } from '../../src/chains/sandbox-chain.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { decimalFromExactString, subtract, toPlainString } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { DeliveryWorker, onrampDeliveriesCollection } from '../../src/onramp/delivery-worker.ts';
import { ActorOnrampInventory } from '../../src/onramp/inventory.ts';
import { markSandboxPixPayment, sandboxFunding } from '../../src/onramp/sandbox-funding.ts';
import type { Network } from '../../src/domain/assets.ts';
import { startActorHarness, type ActorHarness, type BusKind } from '../support/actor-harness.ts';
import { accept, createQuote, pixPaymentReceived } from '../support/payout-child.ts';
import { eventually } from '../support/eventually.ts';

const log = pino({ level: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug' });

for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
  describe(`onramp delivery worker (${busKind} bus)`, () => {
    let harness: ActorHarness;
    let chain: SandboxChain;
    let nowMs = Date.now();
    const clock = { nowMs: () => nowMs };

    before(async () => {
      harness = await startActorHarness({ busKind });
      const setups = resolveChainSetups(null, { sandbox: true, corridors: loadDefaultCorridors() });
      chain = new SandboxChain({ store: harness.store, clock, setups: Object.values(setups).filter((setup) => setup !== undefined) });
    });

    after(async () => {
      await harness.stop();
    });

    /** `sandboxNetworks`: the networks the worker is told run on the sandbox chain (default STELLAR, which the adapter is). */
    function worker(options: { inventory?: ActorOnrampInventory; actors?: ActorAsker; stellar?: ChainAdapter; sandboxNetworks?: readonly Network[] } = {}): { worker: DeliveryWorker; inventory: ActorOnrampInventory } {
      const inventory = options.inventory ?? new ActorOnrampInventory({ store: harness.store, actors: harness.client });
      const created = new DeliveryWorker({
        store: harness.store,
        adapters: new Map([['STELLAR', options.stellar ?? chain.adapter('STELLAR')]]),
        actors: options.actors ?? harness.client,
        inventory,
        sandboxNetworks: new Set(options.sandboxNetworks ?? ['STELLAR']),
        funding: sandboxFunding(harness.store),
        clock,
        log,
        owner: `test-${randomUUID()}`,
        retryDelayMsMin: 1_000,
        retryDelayMsMax: 4_000,
        askTimeoutMs: 5_000,
      });
      return { worker: created, inventory };
    }

    /** An onramp transaction (Stellar, USDC) paid exactly: PROCESSING_PAYMENT with a delivery row. */
    async function paidTransaction(): Promise<{ id: string; quote: Quote; wallet: string }> {
      const quote = await createQuote(harness.client, harness.store, { kind: 'onramp', amount: 100, paymentMethod: 'PIX' });
      const wallet = randomAddress('STELLAR');
      const id = await accept(harness.client, quote, wallet);
      assert.deepEqual(await pixPaymentReceived(harness.client, id, `pix-${randomUUID()}`, quote.sourceAmount), { ok: true, status: 'PROCESSING_PAYMENT' });
      return { id, quote, wallet };
    }

    async function partnerView(id: string): Promise<{ status: unknown; onChainId: unknown }> {
      const doc = await harness.store.get(transactionsCollection, id);
      return { status: doc?.['status'], onChainId: doc?.['onChainId'] };
    }

    async function sendsTo(wallet: string): Promise<number> {
      const all = await harness.store.list(sandboxChainCollection, { limit: 1_000 });
      return all.items.filter((item) => item.doc['kind'] === 'send' && item.doc['destination'] === wallet).length;
    }

    async function pendingDeliveries(id: string): Promise<number> {
      return (await harness.store.outboxPending(outboxTopicDeliveries, 1_000)).filter((row) => row.partitionKey === id).length;
    }

    /** Ticks (moving the worker's clock past any backoff) until `done` holds; bounded. */
    async function tickUntil(target: DeliveryWorker, done: () => Promise<boolean>, ticksMax = 20): Promise<void> {
      for (let tick = 0; tick < ticksMax; tick += 1) {
        await target.tick();
        if (await done()) return;
        nowMs += 5_000;
      }
      assert.fail('the condition did not hold within the ticks allowed');
    }

    test('a send that stays pending is not reported until the chain confirms it; then PAYMENT_COMPLETED with that hash', async () => {
      await chain.setKnobs('STELLAR', { sendPendingPolls: 2 });
      try {
        const { id, quote, wallet } = await paidTransaction();
        const { worker: delivery, inventory } = worker();
        const inventoryBefore = await inventory.available('STELLAR', 'USDC');
        const holdsBefore = (await inventory.status('STELLAR', 'USDC')).openHolds;
        await delivery.tick();
        assert.equal((await inventory.status('STELLAR', 'USDC')).openHolds, holdsBefore + 1, 'held while on its way');
        assert.deepEqual(await partnerView(id), { status: 'PROCESSING_PAYMENT', onChainId: null }, 'an unconfirmed hash is not a delivery');
        await tickUntil(delivery, async () => (await partnerView(id)).status === 'PAYMENT_COMPLETED');
        const view = await partnerView(id);
        assert.equal((await chain.transfer('STELLAR', String(view.onChainId)))?.destination, wallet);
        assert.equal(await sendsTo(wallet), 1);
        assert.equal(await pendingDeliveries(id), 0, 'the row is done');
        assert.equal(toPlainString(subtract(inventoryBefore, await inventory.available('STELLAR', 'USDC'))), toPlainString(quote.targetAmount));
        assert.equal((await inventory.status('STELLAR', 'USDC')).openHolds, holdsBefore, 'the hold of a delivered transfer is closed');
        await delivery.stop();
      } finally {
        await chain.setKnobs('STELLAR', { sendPendingPolls: 0 });
      }
    });

    test('the actor never got the report: the row stays, the next attempt is the same transfer, completed once', async () => {
      const { id, wallet } = await paidTransaction();
      let lost = 0;
      const flaky: ActorAsker = {
        async ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, options?: { readonly commandId?: string; readonly timeoutMs?: number }): Promise<Reply> {
          if (kind === 'CryptoDelivered' && lost === 0) {
            lost += 1;
            throw new Error('no reply in time');
          }
          return harness.client.ask<Reply>(actorType, actorKey, kind, payload, options);
        },
      };
      const { worker: delivery } = worker({ actors: flaky });
      await delivery.tick();
      assert.equal(lost, 1);
      assert.equal((await partnerView(id)).status, 'PROCESSING_PAYMENT');
      assert.equal(await pendingDeliveries(id), 1, 'not done before the actor applied it');
      await tickUntil(delivery, async () => (await partnerView(id)).status === 'PAYMENT_COMPLETED');
      assert.equal(await sendsTo(wallet), 1, 'one transfer');
      assert.equal(await pendingDeliveries(id), 0);
      await delivery.stop();
    });

    test('a final failure recorded before the actor heard of it is never sent later, even once the chain would accept', async () => {
      const { id, wallet } = await paidTransaction();
      await chain.setKnobs('STELLAR', { sendRejects: true });
      const crashed: ActorAsker = {
        ask: () => Promise.reject(new Error('process died before the report')),
      };
      const first = worker({ actors: crashed });
      await first.worker.tick();
      assert.equal((await harness.store.get(onrampDeliveriesCollection, id))?.['outcome'], 'failed');
      await first.worker.stop(); // hands the row back, as a restart would
      await chain.setKnobs('STELLAR', { sendRejects: false });

      const second = worker();
      await tickUntil(second.worker, async () => (await partnerView(id)).status === 'PAYMENT_FAILED');
      assert.equal(await sendsTo(wallet), 0, 'nothing reached the wallet');
      const refunds = await harness.store.outboxPending(outboxTopicRefundsPix, 1_000);
      assert.equal(refunds.filter((row) => row.partitionKey === id).length, 1, 'the BRL refund is requested from the rails');
      await second.worker.stop();
    });

    // A delivery still pending while the figure runs dry (other deliveries, an operator's count):
    // its transfer is already on its way, so a retry must not ask the inventory again and fail it
    // for want of stock: the payer would get the USDC and the BRL refund.
    test('a send already on its way is never failed for want of inventory, even once the figure ran dry', async () => {
      const inventory = new ActorOnrampInventory({ store: harness.store, actors: harness.client });
      const before = await inventory.available('STELLAR', 'USDC');
      await chain.setKnobs('STELLAR', { sendPendingPolls: 2 });
      try {
        const { id, wallet } = await paidTransaction();
        const { worker: delivery } = worker({ inventory });
        await delivery.tick();
        assert.deepEqual(await partnerView(id), { status: 'PROCESSING_PAYMENT', onChainId: null }, 'the send is broadcast, not final yet');
        await inventory.set('STELLAR', 'USDC', decimalFromExactString('0'));
        await tickUntil(delivery, async () => (await partnerView(id)).status !== 'PROCESSING_PAYMENT');
        assert.equal((await partnerView(id)).status, 'PAYMENT_COMPLETED');
        assert.equal(await sendsTo(wallet), 1);
        const refunds = await harness.store.outboxPending(outboxTopicRefundsPix, 1_000);
        assert.equal(refunds.filter((row) => row.partitionKey === id).length, 0, 'no BRL refund for a delivered transfer');
        await delivery.stop();
      } finally {
        await chain.setKnobs('STELLAR', { sendPendingPolls: 0 });
        await inventory.set('STELLAR', 'USDC', before);
      }
    });

    // Two watcher processes run delivery workers. One that stalls in the middle of an attempt past
    // its claim (a long GC, a frozen VM, a node that does not answer) finds the row taken by the
    // other when it wakes: its late outcome must not be written back, and it must leave the row
    // instead of working it side by side (each send would then rest on the adapter's journal alone).
    test('a worker that lost its claim to another mid-attempt leaves the row to it; one transfer, delivered by the new holder', async () => {
      await chain.setKnobs('STELLAR', { sendPendingPolls: 3 });
      let wake: () => void = () => undefined;
      const woken = new Promise<void>((resolve) => { wake = resolve; });
      let sending = 0;
      const stellar = chain.adapter('STELLAR');
      const frozen: ChainAdapter = {
        ...stellar,
        async send(request) {
          sending += 1;
          await woken;
          return stellar.send(request);
        },
      };
      try {
        const { id, wallet } = await paidTransaction();
        const { worker: stalled } = worker({ stellar: frozen });
        const { worker: taker } = worker();
        const stalledTick = stalled.tick();
        await eventually(() => assert.equal(sending, 1, 'the stalled worker is in the middle of its send'));
        assert.equal(stalled.stats().inFlight, 1);
        nowMs += 61_000; // past the 60 s claim, while the stalled worker is frozen
        await taker.tick();
        assert.deepEqual([taker.stats().attempts, taker.stats().retrying.length], [1, 1], 'the lapsed row was claimed and tried by the other worker');
        wake();
        await stalledTick;
        assert.deepEqual([stalled.stats().inFlight, stalled.stats().retrying.length, stalled.stats().attempts], [0, 0, 1], 'the stalled worker forgot the row');
        await tickUntil(taker, async () => (await partnerView(id)).status === 'PAYMENT_COMPLETED');
        assert.equal(await sendsTo(wallet), 1);
        await stalled.stop();
        await taker.stop();
      } finally {
        wake();
        await chain.setKnobs('STELLAR', { sendPendingPolls: 0 });
      }
    });

    // Fake money never moves real money. The adapter is the sandbox chain's (so whatever it sends is
    // seen), and the worker is told STELLAR is live: a transaction the sandbox driver marked as paid
    // by it is failed without any send, also when an earlier attempt had recorded `sending`.
    test('a payment faked by the sandbox is never delivered on a live network: PAYMENT_FAILED without any send; on the sandbox chain it is delivered', async () => {
      const inventory = new ActorOnrampInventory({ store: harness.store, actors: harness.client });
      const holdsBefore = (await inventory.status('STELLAR', 'USDC')).openHolds;
      const fresh = await paidTransaction();
      const started = await paidTransaction();
      for (const { id } of [fresh, started]) await markSandboxPixPayment(harness.store, { transactionId: id, chargeId: `charge-${id}`, markedAtMs: nowMs });
      await harness.store.putIfAbsent(onrampDeliveriesCollection, started.id, { outcome: 'sending', atMs: nowMs });
      const { worker: live } = worker({ inventory, sandboxNetworks: [] });
      await tickUntil(live, async () => (await partnerView(fresh.id)).status === 'PAYMENT_FAILED' && (await partnerView(started.id)).status === 'PAYMENT_FAILED');
      const refunds = await harness.store.outboxPending(outboxTopicRefundsPix, 1_000);
      for (const { id, wallet } of [fresh, started]) {
        assert.equal(await sendsTo(wallet), 0, 'nothing reached the wallet');
        assert.equal((await harness.store.get(onrampDeliveriesCollection, id))?.['reason'], 'sandbox_payment_on_live_chain');
        assert.equal(refunds.filter((row) => row.partitionKey === id).length, 1, 'the (sandbox) BRL refund is requested');
      }
      assert.equal((await inventory.status('STELLAR', 'USDC')).openHolds, holdsBefore, 'no hold is left open');
      await live.stop();

      const onSandbox = await paidTransaction();
      await markSandboxPixPayment(harness.store, { transactionId: onSandbox.id, chargeId: `charge-${onSandbox.id}`, markedAtMs: nowMs });
      const { worker: sandbox } = worker({ inventory });
      await tickUntil(sandbox, async () => (await partnerView(onSandbox.id)).status === 'PAYMENT_COMPLETED');
      assert.equal(await sendsTo(onSandbox.wallet), 1);
      await sandbox.stop();
    });

    test('the inventory ran dry after acceptance: PAYMENT_FAILED without any send, the figure untouched', async () => {
      const inventory = new ActorOnrampInventory({ store: harness.store, actors: harness.client });
      const before = await inventory.available('STELLAR', 'USDC');
      const { id, wallet } = await paidTransaction();
      await inventory.set('STELLAR', 'USDC', decimalFromExactString('1'));
      try {
        const { worker: delivery } = worker({ inventory });
        await tickUntil(delivery, async () => (await partnerView(id)).status === 'PAYMENT_FAILED');
        assert.equal(await sendsTo(wallet), 0);
        assert.equal(toPlainString(await inventory.available('STELLAR', 'USDC')), '1');
        assert.equal((await harness.store.get(onrampDeliveriesCollection, id))?.['reason'], 'insufficient_inventory');
        await delivery.stop();
      } finally {
        await inventory.set('STELLAR', 'USDC', before);
      }
    });
  });
}
