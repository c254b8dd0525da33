// A chain transfer's link and its notice to the transaction: the deposit actor records the link and
// relays `DepositDetected` once, fire and forget. If that notice is lost on its way, the transfer
// stays linked while its transaction waits, neither paid nor refunded. A later report of the same
// transfer (a watcher's re-report, a partner's notify, an operator's reconcile) re-tells the
// transaction, which acts on it once however often it hears it.
//
// The lost notice is played for real: the transfer is claimed for a transaction id before that
// transaction exists, so the relayed notice reaches no transaction and is dropped, as a notice
// trimmed from its stream would be.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { depositActorKey, depositActorType, type ClaimedTransfer, type DepositReply } from '../../src/actors/deposit-actor.ts';
import type { JsonValue } from '../../src/actors/envelope.ts';
import { outboxTopicCommandBatches, outboxTopicCommands } from '../../src/actors/runtime.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { outboxTopicPayouts, type AcceptReply, type DomainReply } from '../../src/actors/transaction-actor.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { startActorHarness, type ActorHarness, type BusKind } from '../support/actor-harness.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { createQuote, partnerId, transactionDoc } from '../support/payout-child.ts';

const askTimeoutMs = 20_000;
const waitMsMax = 10_000;

for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
  describe(`a linked deposit whose notice was lost (${busKind} bus)`, () => {
    let harness: ActorHarness;

    before(async () => {
      harness = await startActorHarness({ busKind });
    });

    after(async () => {
      await harness.stop();
    });

    function transferFor(quote: Quote): ClaimedTransfer {
      return { network: 'STELLAR', onChainId: randomUUID().replaceAll('-', '').repeat(2), asset: 'USDC', amount: quote.sourceAmount, sender: 'GSENDER', memo: null };
    }

    async function claim(transactionId: string, transfer: ClaimedTransfer): Promise<DepositReply> {
      const key = depositActorKey(transfer.network, transfer.onChainId);
      return harness.client.ask<DepositReply>(depositActorType, key, 'claim', toJsonValue({ transactionId, transfer }), { timeoutMs: askTimeoutMs });
    }

    /**
     * Resolves once every command relayed to `transactionId` so far has been applied (or dropped);
     * answers what a harmless probe after them got (`not_found` when there is no such transaction;
     * a refusal otherwise: it settles a refund of a deposit the transaction does not have). The probe
     * is a well-formed command: a malformed one is dropped on arrival, without waiting its turn.
     */
    async function relayedCommandsApplied(transactionId: string): Promise<DomainReply> {
      const deadlineMs = Date.now() + waitMsMax;
      const pendingFor = async (): Promise<number> => {
        const rows = [...(await harness.store.outboxPending(outboxTopicCommands, 1_000)), ...(await harness.store.outboxPending(outboxTopicCommandBatches, 1_000))];
        // A batch row holds several envelopes; a row of the older topic one.
        const envelopes = rows.flatMap((row) => (Array.isArray(row.payload) ? row.payload : [row.payload])) as Array<{ actorKey?: JsonValue }>;
        return envelopes.filter((envelope) => envelope.actorKey === transactionId).length;
      };
      while ((await pendingFor()) > 0) {
        assert.ok(Date.now() < deadlineMs, 'the relay did not pass the notice on');
        await new Promise((wake) => setTimeout(wake, 20));
      }
      // Commands to one actor are applied in stream order: once this ask is answered, the relayed
      // notice before it was handled.
      const probe = { kind: 'RefundSettled', depositId: 'probe', refundOnChainId: 'probe' };
      return harness.client.ask<DomainReply>('transaction', transactionId, 'RefundSettled', probe, { timeoutMs: askTimeoutMs });
    }

    async function statusBecomes(transactionId: string, unlike: string): Promise<string> {
      const deadlineMs = Date.now() + waitMsMax;
      for (;;) {
        const { status } = await transactionDoc(harness.store, transactionId);
        if (status !== unlike || Date.now() >= deadlineMs) return status;
        await new Promise((wake) => setTimeout(wake, 20));
      }
    }

    async function payoutRows(transactionId: string): Promise<number> {
      return (await harness.store.outboxPending(outboxTopicPayouts, 1_000)).filter((row) => row.partitionKey === transactionId).length;
    }

    test('claiming the transfer again tells the waiting transaction: it is paid out once', async () => {
      const quote = await createQuote(harness.client, harness.store, { kind: 'payout', amount: 100, paymentMethod: 'PIX' });
      const transactionId = randomUUID();
      const transfer = transferFor(quote);
      assert.deepEqual(await claim(transactionId, transfer), { result: 'enqueued', transactionId });
      assert.deepEqual(await relayedCommandsApplied(transactionId), { ok: false, code: 'not_found' }, 'the notice reached no transaction');

      const payload = acceptPayload(quote, { partnerId, userId: `user-${randomUUID()}`, accountNumber: randomUUID(), paymentContext: { depositAddress: 'GDEPOSIT' } });
      const accepted = await harness.client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(payload), { timeoutMs: askTimeoutMs });
      assert.equal(accepted.ok, true);
      assert.equal((await transactionDoc(harness.store, transactionId)).status, 'AWAITING_PAYMENT', 'the lost notice left it waiting');

      assert.deepEqual(await claim(transactionId, transfer), { result: 'alreadyProcessed', transactionId, differs: false });
      assert.equal(await statusBecomes(transactionId, 'AWAITING_PAYMENT'), 'PROCESSING_PAYMENT');
      assert.equal(await payoutRows(transactionId), 1);

      // Told again and again (every re-report now re-tells it): still one payout.
      assert.deepEqual(await claim(transactionId, transfer), { result: 'alreadyProcessed', transactionId, differs: false });
      assert.equal((await relayedCommandsApplied(transactionId)).ok, false, 'the probe changed nothing');
      const { status } = await transactionDoc(harness.store, transactionId);
      assert.equal(status, 'PROCESSING_PAYMENT');
      assert.equal(await payoutRows(transactionId), 1, 'a repeated notice is no second payout');
    });
  });
}
