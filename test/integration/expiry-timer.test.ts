// A transaction's payment expiry through the real actor runtime (in-process bus, embedded store)
// with an injected clock. The worker arms the expiry timer on a real timer computed from that
// clock; when it fires, the transaction judges the expiry by the clock. A timer that fires while
// the clock still says "not yet" (clock skew between processes, a timer that fires early) is
// refused by the transaction (`not_yet_expired`), and must be armed again: otherwise an unpaid
// transaction stays AWAITING_PAYMENT forever (its reservations held, its webhook never sent).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomAddress } from '../../src/chains/sandbox-chain.ts';
import { startActorHarness } from '../support/actor-harness.ts';
import { eventually } from '../support/eventually.ts';
import { accept, createQuote, pixPaymentReceived, transactionDoc } from '../support/payout-child.ts';

interface LogLine {
  readonly message: string;
  readonly fields: Record<string, unknown> | undefined;
}

/** True once the worker logged that the actor refused a `timer` command. */
function timerRefused(lines: readonly LogLine[], transactionId: string): boolean {
  return lines.some((line) => line.fields?.['kind'] === 'timer' && line.fields['actorId'] === `transaction/${transactionId}`);
}

test('an expiry timer refused because it fired before the expiry is armed again: the transaction ends PAYMENT_EXPIRED', async () => {
  let nowMs = Date.now();
  const lines: LogLine[] = [];
  const harness = await startActorHarness({
    busKind: 'memory',
    clock: { nowMs: () => nowMs },
    quoteTtlMs: 300,
    log: (_level, message, fields) => lines.push({ message, fields }),
    timerRetryDelayMsMin: 50,
    timerRetryDelayMsMax: 400,
  });
  try {
    const quote = await createQuote(harness.client, harness.store, { kind: 'onramp', amount: 100, paymentMethod: 'PIX' });
    assert.equal(quote.expiresAtMs, nowMs + 300);
    const id = await accept(harness.client, quote, randomAddress('STELLAR'));
    // 300 ms of real time later the timer fires; the injected clock has not moved, so it is early.
    await eventually(() => assert.ok(timerRefused(lines, id), 'the transaction refused the early timer'), 5_000);
    assert.equal((await transactionDoc(harness.store, id)).status, 'AWAITING_PAYMENT');

    nowMs += 1_000; // now past the expiry: the next firing must expire it
    await eventually(async () => assert.equal((await transactionDoc(harness.store, id)).status, 'PAYMENT_EXPIRED'), 5_000);
  } finally {
    await harness.stop();
  }
});

test('a re-armed expiry timer does not expire a transaction paid meanwhile', async () => {
  let nowMs = Date.now();
  const lines: LogLine[] = [];
  const harness = await startActorHarness({
    busKind: 'memory',
    clock: { nowMs: () => nowMs },
    quoteTtlMs: 300,
    log: (_level, message, fields) => lines.push({ message, fields }),
    timerRetryDelayMsMin: 50,
    timerRetryDelayMsMax: 400,
  });
  try {
    const quote = await createQuote(harness.client, harness.store, { kind: 'onramp', amount: 100, paymentMethod: 'PIX' });
    const id = await accept(harness.client, quote, randomAddress('STELLAR'));
    await eventually(() => assert.ok(timerRefused(lines, id)), 5_000);
    assert.deepEqual(await pixPaymentReceived(harness.client, id, `pix-${id}`, quote.sourceAmount), { ok: true, status: 'PROCESSING_PAYMENT' });
    nowMs += 1_000;
    // The paid transaction no longer wants its timer: the write cleared it.
    await eventually(async () => {
      const timers = await harness.store.list('timers', { limit: 1_000 });
      assert.ok(timers.items.every((item) => item.id !== `transaction/${id}`), 'no expiry timer left for a paid transaction');
    });
    assert.equal((await transactionDoc(harness.store, id)).status, 'PROCESSING_PAYMENT');
  } finally {
    await harness.stop();
  }
});
