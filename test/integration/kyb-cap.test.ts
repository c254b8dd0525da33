// The KYB cap holds under concurrency: a partner without KYB approval may have at most 100 (USDC,
// 1:1 USD) in completed plus in-flight transactions. The cap is reserved at acceptance in the
// partner's KYB counter (one actor, one writer), released when a transaction expires and kept when
// it completes. Real runtime on a private Redis (bus and leases), two shard workers, the embedded
// store; the actors' clock is injected so a quote's hour can pass without waiting for it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { AcceptReply, DomainReply } from '../../src/actors/transaction-actor.ts';
import { kybCounterKey } from '../../src/domain/limits.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { startActorHarness, type ActorHarness } from '../support/actor-harness.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { eventually } from '../support/eventually.ts';

const askTimeoutMs = 30_000;
let clockOffsetMs = 0;
let harness: ActorHarness;

before(async () => {
  harness = await startActorHarness({ busKind: 'redis', workers: 2, clock: { nowMs: () => Date.now() + clockOffsetMs } });
});

after(async () => {
  await harness.stop();
});

/** A PIX payout quote that sends exactly `usdc` (a reverse quote on Stellar). */
async function quoteUsdc(partnerId: string, usdc: number): Promise<Quote> {
  const quoteId = randomUUID();
  const reply = await harness.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId,
    request: { kind: 'reverse', amount: usdc, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'PIX', targetCurrency: 'BRL' },
  }, { timeoutMs: askTimeoutMs });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  const quote = await loadQuote(harness.store, quoteId);
  assert.ok(quote);
  return quote;
}

/** Accepts as the edge would for a partner without KYB approval (KYC off). */
async function accept(quote: Quote): Promise<{ id: string; reply: AcceptReply }> {
  const id = randomUUID();
  const payload = acceptPayload(quote, { userId: `u-${randomUUID()}`, accountNumber: '52998224725', kybApproved: false });
  const reply = await harness.client.ask<AcceptReply>('transaction', id, 'accept', toJsonValue(payload), { timeoutMs: askTimeoutMs });
  return { id, reply };
}

function ask(id: string, kind: string, payload: unknown): Promise<DomainReply> {
  return harness.client.ask<DomainReply>('transaction', id, kind, toJsonValue(payload), { timeoutMs: askTimeoutMs });
}

/** What the partner's KYB counter holds (open and completed), as last written. */
async function kybHeld(partnerId: string): Promise<string> {
  const snapshot = await harness.store.load(`counter/${kybCounterKey(partnerId)}`);
  const state = snapshot?.state as { reservedAmount?: { decimal__: string } } | null | undefined;
  return state?.reservedAmount?.decimal__ ?? 'nothing';
}

async function status(id: string): Promise<unknown> {
  return (await harness.store.get('transactions', id))?.['status'];
}

test('50 concurrent acceptances of 99 USDC without KYB approval: exactly one; expiry releases its 99, completion keeps it', { timeout: 180_000 }, async () => {
  const partnerId = `p-${randomUUID()}`;
  const quotes = await Promise.all(Array.from({ length: 50 }, () => quoteUsdc(partnerId, 99)));
  const results = await Promise.all(quotes.map((quote) => accept(quote)));
  const accepted = results.filter((result) => result.reply.ok && !result.reply.kycRequired);
  assert.equal(accepted.length, 1, 'one 99 fits under 100; two do not');
  for (const { reply } of results.filter((result) => !result.reply.ok)) {
    assert.ok(!reply.ok);
    assert.equal(reply.code, 'kyb_cap');
    assert.equal(reply.httpStatus, undefined, 'a reply carries no HTTP status: the edge maps the code');
    assert.equal(reply.reason, 'Partner is limited to a total of 100 until KYB is approved');
  }
  const [first] = accepted;
  assert.ok(first);
  await eventually(async () => assert.equal(await kybHeld(partnerId), '99.0000000'), 20_000);

  // Its quote's hour passes without a payment: the transaction expires and gives its 99 back.
  // (The workers re-arm timers on start: after the move, the expiry is due at once.)
  const quote = quotes[results.indexOf(first)];
  assert.ok(quote);
  clockOffsetMs += quote.expiresAtMs - Date.now() + 1_000;
  await harness.restartWorkers();
  await eventually(async () => assert.equal(await status(first.id), 'PAYMENT_EXPIRED'), 20_000);
  await eventually(async () => assert.equal(await kybHeld(partnerId), '0.0000000'), 20_000);

  // The room is back: another 99 is accepted, paid and paid out, and keeps its 99 for good.
  const secondQuote = await quoteUsdc(partnerId, 99);
  const second = await accept(secondQuote);
  assert.ok(second.reply.ok && !second.reply.kycRequired, JSON.stringify(second.reply));
  const refused = await accept(await quoteUsdc(partnerId, 99));
  assert.deepEqual(refused.reply, { ok: false, code: 'kyb_cap', reason: 'Partner is limited to a total of 100 until KYB is approved', retryable: false });
  const deposited = await ask(second.id, 'DepositDetected', {
    kind: 'DepositDetected', onChainId: `hash-${randomUUID()}`, amount: secondQuote.sourceAmount, network: 'STELLAR', asset: 'USDC', sender: 'GSENDER',
  });
  assert.deepEqual(deposited, { ok: true, status: 'PROCESSING_PAYMENT' });
  assert.deepEqual(await ask(second.id, 'PayoutSucceeded', { kind: 'PayoutSucceeded', railReference: 'rail-1' }), { ok: true, status: 'PAYMENT_COMPLETED' });

  clockOffsetMs += 2 * 3_600_000;
  await harness.restartWorkers();
  await eventually(async () => assert.equal(await kybHeld(partnerId), '99.0000000'), 20_000);
  const third = await accept(await quoteUsdc(partnerId, 2));
  assert.equal(third.reply.ok, false, 'the completed 99 still counts: 99 + 2 > 100');
  const fourth = await accept(await quoteUsdc(partnerId, 1));
  assert.ok(fourth.reply.ok && !fourth.reply.kycRequired, `99 + 1 = 100 is allowed: ${JSON.stringify(fourth.reply)}`);
  assert.equal(await status(second.id), 'PAYMENT_COMPLETED');
});
