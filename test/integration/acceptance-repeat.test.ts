// A repeated acceptance gets the real answer. The acceptance saga answers later (once the limit
// counters have replied), so its first handling stores no reply; a repeat of the same command id
// (the edge retries an Idempotency-Key with the ids it drew the first time) used to be answered
// from that empty record: never. The partner saw 503 on every retry while the transaction existed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { transactionsCollection } from '../../src/actors/transaction-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { startActorHarness, type ActorHarness, type BusKind } from '../support/actor-harness.ts';
import { eventually } from '../support/eventually.ts';
import { acceptPayload } from '../support/accept-payload.ts';

async function quoteBreb(harness: ActorHarness, partnerId: string): Promise<Quote> {
  const quoteId = randomUUID();
  const reply = await harness.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId,
    request: { kind: 'payout', amount: 50_000, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' },
  });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  const quote = await loadQuote(harness.store, quoteId);
  assert.ok(quote);
  return quote;
}

function accept(harness: ActorHarness, transactionId: string, commandId: string, quote: Quote): Promise<AcceptReply> {
  return harness.client.ask<AcceptReply>('transaction', transactionId, 'accept', toJsonValue(acceptPayload(quote)), { commandId, timeoutMs: 20_000 });
}

function assertAccepted(reply: AcceptReply, transactionId: string): void {
  assert.ok(reply.ok && !reply.kycRequired, JSON.stringify(reply));
  assert.equal(reply.id, transactionId);
}

for (const busKind of ['memory', 'redis'] as BusKind[]) {
  describe(`a repeated acceptance gets the real answer (${busKind} bus)`, () => {
    let harness: ActorHarness;
    before(async () => {
      harness = await startActorHarness({ busKind });
    });
    after(async () => {
      await harness.stop();
    });

    test('a repeat after the first answer was lost returns the transaction the first one created', async () => {
      const quote = await quoteBreb(harness, `p-${randomUUID()}`);
      const transactionId = randomUUID();
      const commandId = randomUUID();
      // The first attempt's answer is lost (its edge timed out or died): sent with nobody to answer.
      await harness.client.tell('transaction', transactionId, 'accept', toJsonValue(acceptPayload(quote)), commandId);
      await eventually(async () => assert.ok(await harness.store.get(transactionsCollection, transactionId), 'the transaction was created'));
      assertAccepted(await accept(harness, transactionId, commandId, quote), transactionId);
    });

    test('repeats that arrive while the saga still runs all get the one answer', async () => {
      const quote = await quoteBreb(harness, `p-${randomUUID()}`);
      const transactionId = randomUUID();
      const commandId = randomUUID();
      const replies = await Promise.all([1, 2, 3].map(() => accept(harness, transactionId, commandId, quote)));
      for (const reply of replies) assertAccepted(reply, transactionId);
    });
  });
}
