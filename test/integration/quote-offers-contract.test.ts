// One contract suite for the quote offers port (src/ports/quote-offers.ts), run unchanged against
// the in-process adapter (manual clock) and Redis (a private redis-server; expiry on Redis' own
// clock, so time passes for real). What a partner notices: a retried quote is the first one
// unchanged; another partner's quote does not exist; past its share of valid quotes a partner is
// refused until some expire; an expired quote is still found for the grace, then is gone.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../../src/bus/bus.ts';
import { MemoryOffers } from '../../src/bus/memory-offers.ts';
import { RedisOffers } from '../../src/bus/redis-offers.ts';
import type { OffersConfig } from '../../src/bus/offers.ts';
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { quoteOfferCodec, type QuoteOffers } from '../../src/ports/quote-offers.ts';
import { memoryContractAdapter, redisContractAdapter, withHarness, type ContractHarness } from '../support/contract-adapters.ts';
import { brebPayoutQuote } from '../support/quotes.ts';
import { randomKeyPrefix } from '../support/redis-server.ts';

interface Harness extends ContractHarness {
  /** Offers with a share of 3 valid quotes per partner and a 300 ms grace. */
  readonly offers: QuoteOffers;
  nowMs(): number;
  /** Lets `ms` pass: a manual clock moves, Redis needs a real wait. */
  passTime(ms: number): Promise<void>;
}

const config: OffersConfig = { perPartnerMax: 3, graceMs: 300 };

const adapters = [
  memoryContractAdapter((): Harness => {
    const clock = new ManualClock();
    const offers = new MemoryOffers({ ...config, codec: quoteOfferCodec, clock });
    return { offers, nowMs: () => clock.nowMs(), passTime: async (ms) => clock.advance(ms), close: () => offers.close() };
  }),
  redisContractAdapter((url): Harness => {
    const offers = new RedisOffers({ ...config, codec: quoteOfferCodec, redis: url, keyPrefix: randomKeyPrefix('offers') });
    // Kept: Redis expires keys by its own millisecond clock, which no test can move; a little extra
    // covers the granularity. (The memory adapter passes the same contract on a moved clock.)
    return { offers, nowMs: () => Date.now(), passTime: async (ms) => sleep(ms + 20), close: () => offers.close() };
  }),
];

/** A BREB payout quote of `partnerId`, valid for `validMs` from now. */
function quoteOf(h: Harness, partnerId: string, validMs = 60_000, id = randomUUID()): Quote {
  const nowMs = h.nowMs();
  return { ...brebPayoutQuote(nowMs), id, partnerId, createdAtMs: nowMs, expiresAtMs: nowMs + validMs };
}

for (const adapter of adapters) {
  describe(`Quote offers contract: ${adapter.name}`, { timeout: 60_000 }, () => {
    before(() => adapter.setUp());
    after(() => adapter.tearDown());

    test('an offered quote is found by its partner, exact decimals and all', () =>
      withHarness(adapter, async (h) => {
        const quote = quoteOf(h, 'acme');
        assert.deepEqual(await h.offers.offer(quote), { ok: true, offer: quote });
        assert.deepEqual(await h.offers.find('acme', quote.id), quote);
        assert.equal((await h.offers.find('acme', quote.id))?.sourceAmount.units, quote.sourceAmount.units);
      }));

    test('a second offer under the same id (a retried request) keeps and returns the first, unchanged', () =>
      withHarness(adapter, async (h) => {
        const first = quoteOf(h, 'acme');
        await h.offers.offer(first);
        const repriced = { ...first, rate: decimal(9_999n, 0), targetAmount: decimal(1n, 2) };
        assert.deepEqual(await h.offers.offer(repriced), { ok: true, offer: first });
        assert.deepEqual(await h.offers.find('acme', first.id), first);
      }));

    test("another partner's quote, an unknown id and a malformed id all miss", () =>
      withHarness(adapter, async (h) => {
        const quote = quoteOf(h, 'acme');
        await h.offers.offer(quote);
        assert.equal(await h.offers.find('globex', quote.id), null);
        assert.equal(await h.offers.find('acme', randomUUID()), null);
        assert.equal(await h.offers.find('acme', '{acme}:x'), null);
        assert.equal(await h.offers.find('a{b}', quote.id), null);
      }));

    test("past its share of valid quotes a partner is refused, others are not, and a retry still gets its quote", () =>
      withHarness(adapter, async (h) => {
        const held = [quoteOf(h, 'acme'), quoteOf(h, 'acme'), quoteOf(h, 'acme')];
        for (const quote of held) assert.equal((await h.offers.offer(quote)).ok, true);
        const refused = quoteOf(h, 'acme');
        assert.deepEqual(await h.offers.offer(refused), { ok: false, reason: 'partner_full', perPartnerMax: 3 });
        assert.equal(await h.offers.find('acme', refused.id), null, 'nothing stored for the refused quote');
        assert.equal((await h.offers.offer(quoteOf(h, 'globex'))).ok, true, "another partner's share is its own");
        assert.deepEqual(await h.offers.offer(held[0] as Quote), { ok: true, offer: held[0] }, 'a retry of a stored quote is answered at the cap');
      }));

    test('quotes offered at once (one turn, one command on Redis) count exactly as one by one: a share is never overrun, a retry gets the first', () =>
      withHarness(adapter, async (h) => {
        const acme = [quoteOf(h, 'acme'), quoteOf(h, 'acme'), quoteOf(h, 'acme'), quoteOf(h, 'acme'), quoteOf(h, 'acme')];
        const first = acme[0] as Quote;
        const retry = { ...first, rate: decimal(9_999n, 0) };
        const globex = [quoteOf(h, 'globex'), quoteOf(h, 'globex')];
        const outcomes = await Promise.all([...acme, retry, ...globex].map((quote) => h.offers.offer(quote)));
        assert.deepEqual(
          outcomes.map((outcome) => outcome.ok),
          [true, true, true, false, false, true, true, true],
          'the first three of acme are kept, the next two refused, the retry answered, globex unaffected',
        );
        assert.deepEqual(outcomes[5], { ok: true, offer: first }, 'the retry in the same turn gets the first quote, unchanged');
        for (const quote of acme.slice(0, 3)) assert.deepEqual(await h.offers.find('acme', quote.id), quote);
        for (const quote of acme.slice(3)) assert.equal(await h.offers.find('acme', quote.id), null, 'nothing stored for a refused quote');
        for (const quote of globex) assert.deepEqual(await h.offers.find('globex', quote.id), quote);
      }));

    test('a malformed offer is a rejection, never a throw', () =>
      withHarness(adapter, async (h) => {
        await assert.rejects(h.offers.offer({ ...quoteOf(h, 'acme'), id: 'not{a}valid id' }), RangeError);
        await assert.rejects(h.offers.offer(quoteOf(h, 'a{b}')), RangeError);
      }));

    test('closing answers the quotes offered just before it (a shutdown never drops them), then refuses new ones', async () => {
      const h = adapter.open();
      const last = [quoteOf(h, 'acme'), quoteOf(h, 'globex')];
      const offered = last.map((quote) => h.offers.offer(quote));
      await h.close();
      assert.deepEqual(await Promise.all(offered), last.map((offer) => ({ ok: true, offer })), 'the offers made in the closing turn were stored and answered');
      await assert.rejects(h.offers.offer(quoteOf(h, 'acme')), 'an offer after close is refused');
    });

    test('an expired quote frees its share at once, is still found during the grace, then is gone', () =>
      withHarness(adapter, async (h) => {
        const short = [quoteOf(h, 'acme', 200), quoteOf(h, 'acme', 200), quoteOf(h, 'acme', 200)];
        for (const quote of short) assert.equal((await h.offers.offer(quote)).ok, true);
        assert.equal((await h.offers.offer(quoteOf(h, 'acme'))).ok, false, 'at the cap while they are valid');
        await h.passTime(250);
        assert.equal((await h.offers.offer(quoteOf(h, 'acme'))).ok, true, 'expired quotes no longer count');
        assert.deepEqual(await h.offers.find('acme', short[0]?.id ?? ''), short[0], 'found during the grace (acceptance answers quote_expired)');
        await h.passTime(300);
        assert.equal(await h.offers.find('acme', short[0]?.id ?? ''), null, 'gone after the grace');
      }));
  });
}
