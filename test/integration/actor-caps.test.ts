// Caps hold exactly under concurrency because each counter is one actor applying one command at a
// time: concurrent acceptances race through the real runtime (bus, shard worker, embedded store).
// Each acceptance has a quote of its own (a quote is accepted at most once).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadQuote } from '../../src/actors/quote-actor.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { decimalFromString } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { kycMonthCounterKey, methodDayCounterKey, methodDayKey, userDayCounterKey, utcMonthKey } from '../../src/domain/limits.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { startActorHarness, type ActorHarness, type BusKind } from '../support/actor-harness.ts';
import { eventually } from '../support/eventually.ts';
import { acceptPayload } from '../support/accept-payload.ts';

async function quoteBreb(harness: ActorHarness, partnerId: string, amountCop: number): Promise<Quote> {
  const quoteId = randomUUID();
  const reply = await harness.client.ask<{ ok: boolean }>('quote', quoteId, 'create', {
    partnerId,
    request: { kind: 'payout', amount: amountCop, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' },
  });
  assert.equal(reply.ok, true, JSON.stringify(reply));
  const quote = await loadQuote(harness.store, quoteId);
  assert.ok(quote, 'the quote is durable before its reply');
  return quote;
}

/** `count` quotes of `amountCop` each. */
function quotesBreb(harness: ActorHarness, partnerId: string, amountCop: number, count: number): Promise<Quote[]> {
  return Promise.all(Array.from({ length: count }, () => quoteBreb(harness, partnerId, amountCop)));
}

function accept(harness: ActorHarness, quote: Quote, userId: string): Promise<AcceptReply> {
  const payload = acceptPayload(quote, { userId });
  return harness.client.ask<AcceptReply>('transaction', randomUUID(), 'accept', toJsonValue(payload), { timeoutMs: 20_000 });
}

async function counterState(harness: ActorHarness, key: string): Promise<{ reservedCount: number; reservedAmount: string }> {
  const snapshot = await harness.store.load(`counter/${key}`);
  assert.ok(snapshot);
  const state = snapshot.state as { reservedCount: number; reservedAmount: { decimal__: string } };
  return { reservedCount: state.reservedCount, reservedAmount: state.reservedAmount.decimal__ };
}

for (const busKind of ['memory', 'redis'] as BusKind[]) {
  describe(`exact caps under concurrency (${busKind} bus)`, () => {
    let harness: ActorHarness;
    before(async () => {
      harness = await startActorHarness({ busKind, workers: 2 });
    });
    after(async () => {
      await harness.stop();
    });

    test('50 concurrent BREB acceptances for one user: exactly 15 accepted (the per-user daily count)', async () => {
      const partnerId = `p-${randomUUID()}`;
      const quotes = await quotesBreb(harness, partnerId, 10_000, 50);
      const replies = await Promise.all(quotes.map((quote) => accept(harness, quote, 'user-1')));
      const accepted = replies.filter((reply) => reply.ok && !reply.kycRequired);
      const refused = replies.filter((reply) => !reply.ok);
      assert.equal(accepted.length, 15);
      assert.equal(refused.length, 35);
      for (const reply of refused) {
        assert.ok(!reply.ok);
        assert.equal(reply.code, 'user_daily_count_cap');
        assert.equal(reply.httpStatus, undefined, 'a reply carries no HTTP status: the edge maps the code');
      }
      const nowMs = Date.now();
      const key = userDayCounterKey(partnerId, 'user-1', 'BREB', methodDayKey(defaultLimitsConfig, 'BREB', nowMs));
      // Refused acceptances released what they had reserved elsewhere; this counter holds 15.
      assert.equal((await counterState(harness, key)).reservedCount, 15);
    });

    test('the per-method daily cap is reached exactly, from many users at once', async () => {
      // Each partner run shares the method × day counter, so use a limits-wide fresh view: the
      // counter may already hold earlier tests' reservations; measure what is left.
      const nowMs = Date.now();
      const methodKey = methodDayCounterKey('BREB', methodDayKey(defaultLimitsConfig, 'BREB', nowMs));
      // Refused acceptances release their reservations asynchronously (commands between actors).
      await eventually(async () => {
        const usedBefore = (await counterState(harness, methodKey)).reservedAmount;
        assert.equal(usedBefore, '150000.00', 'the 15 accepted transactions of the previous test (10,000 COP each)');
      });
      // 25,000,000 − 150,000 = 24,850,000: four users at 5,000,000 and one at 4,850,000 reach the
      // cap exactly; ten more users race for it at the same time.
      const partnerId = `p-${randomUUID()}`;
      const full = await quotesBreb(harness, partnerId, 5_000_000, 12);
      const rest = await quoteBreb(harness, partnerId, 4_850_000);
      const attempts = [
        ...full.map((quote, index) => accept(harness, quote, `full-${index}`)),
        accept(harness, rest, 'rest-0'),
      ];
      const replies = await Promise.all(attempts);
      const acceptedFull = replies.slice(0, 12).filter((reply) => reply.ok).length;
      const acceptedRest = replies[12]?.ok === true ? 1 : 0;
      const expected = 150_000 + acceptedFull * 5_000_000 + acceptedRest * 4_850_000;
      await eventually(async () => {
        const usedAfter = (await counterState(harness, methodKey)).reservedAmount;
        assert.equal(decimalFromString(usedAfter, 2).units, BigInt(expected) * 100n);
      });
      assert.ok(expected <= 25_000_000, 'never above the cap');
      // Whatever the interleaving, the cap leaves no room for a 5,000,000 acceptance that was refused.
      assert.ok(25_000_000 - expected < 5_000_000, `cap not reached: ${expected}`);
      for (const reply of replies.filter((item) => !item.ok)) {
        assert.ok(!reply.ok);
        assert.equal(reply.code, 'method_daily_cap');
      }
      // The cap is reached exactly when the 4,850,000 one got in; then nothing more fits.
      if (acceptedRest === 1) assert.equal(expected, 25_000_000);
      const minimum = await quoteBreb(harness, partnerId, 10_000);
      const late = await accept(harness, minimum, 'late-user');
      assert.equal(late.ok, 25_000_000 - expected >= 10_000);
    });

    test('at the method cap a refusal holds nothing anywhere: the user\'s counters are given back what the one round reserved', async () => {
      const nowMs = Date.now();
      const dayKey = methodDayKey(defaultLimitsConfig, 'BREB', nowMs);
      const methodKey = methodDayCounterKey('BREB', dayKey);
      const partnerId = `p-${randomUUID()}`;
      // Fill what the previous test left (it always leaves less than 5,000,000, possibly nothing).
      const used = await counterState(harness, methodKey);
      const leftUnits = 25_000_000n * 100n - decimalFromString(used.reservedAmount, 2).units;
      if (leftUnits >= 1_000_000n) {
        const rest = await quoteBreb(harness, partnerId, Number(leftUnits / 100n));
        assert.equal((await accept(harness, rest, 'filler')).ok, true);
      }
      assert.equal((await counterState(harness, methodKey)).reservedAmount, '25000000.00', 'the cap is exactly full');
      const quotes = await quotesBreb(harness, partnerId, 10_000, 8);
      const replies = await Promise.all(quotes.map((quote, index) => accept(harness, quote, `refused-${index}`)));
      for (const reply of replies) {
        assert.ok(!reply.ok);
        assert.equal(reply.code, 'method_daily_cap');
      }
      // One round: the user's day and KYC month were asked with the method counter and granted;
      // the refusal gives them back (relayed after the answer), so each ends holding nothing.
      for (let index = 0; index < 8; index += 1) {
        const userId = `refused-${index}`;
        for (const key of [userDayCounterKey(partnerId, userId, 'BREB', dayKey), kycMonthCounterKey(partnerId, userId, utcMonthKey(nowMs))]) {
          await eventually(async () => {
            // Written (the round reserved there), then given back: no count, no amount (at the window's scale).
            const state = await counterState(harness, key);
            assert.equal(state.reservedCount, 0, `${key}: released`);
            assert.equal(Number(state.reservedAmount), 0, `${key}: released (${state.reservedAmount})`);
          });
        }
      }
      assert.equal((await counterState(harness, methodKey)).reservedAmount, '25000000.00');
    });

    test('every command relayed between actors is marked done: no relayed row is left in the outbox', async () => {
      // Rows are marked many relays per store write; a row left behind would be relayed again by
      // every sweep (harmless, receivers dedupe, but it would never leave the outbox).
      await eventually(async () => {
        assert.deepEqual(await harness.store.outboxPending('command-batches', 10), []);
        assert.deepEqual(await harness.store.outboxPending('commands', 10), []);
      });
    });
  });
}
