// Single use of a quote, the pure rules (src/domain/quote-use.ts): who may claim a quote, what a
// second acceptance hears while the first runs and after it created its transaction, and that a
// claim given back frees the quote. Every step is idempotent for the same transaction. And the
// quote actor's snapshot: one written before quotes were single-use still loads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quoteBehavior } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { claim, consume, releaseClaim, type QuoteUse } from '../../src/domain/quote-use.ts';
import { brebPayoutQuote } from '../support/quotes.ts';

test('an unclaimed quote is claimed by the first transaction; the same transaction may ask again', () => {
  const first = claim(null, 'tx-a');
  assert.deepEqual(first, { outcome: { ok: true }, use: { transactionId: 'tx-a', status: 'held' } });
  const again = claim(first.use, 'tx-a');
  assert.deepEqual(again.outcome, { ok: true });
  assert.equal(again.use, first.use, 'nothing changes');
});

test('while the first acceptance runs, another hears quote_in_use; once it created its transaction, quote_used naming it', () => {
  const held: QuoteUse = { transactionId: 'tx-a', status: 'held' };
  assert.deepEqual(claim(held, 'tx-b'), { outcome: { ok: false, rejection: { code: 'quote_in_use' } }, use: held });
  const used = consume(held, 'tx-a');
  assert.deepEqual(used, { transactionId: 'tx-a', status: 'used' });
  assert.deepEqual(claim(used, 'tx-b'), { outcome: { ok: false, rejection: { code: 'quote_used', transactionId: 'tx-a' } }, use: used });
  assert.deepEqual(claim(used, 'tx-a').outcome, { ok: true }, 'its own transaction, asked again, is answered as before');
});

test('a claim given back frees the quote; a used quote is never given back', () => {
  const held: QuoteUse = { transactionId: 'tx-a', status: 'held' };
  assert.equal(releaseClaim(held, 'tx-b'), held, 'only the holder gives it back');
  assert.equal(releaseClaim(held, 'tx-a'), null);
  assert.deepEqual(claim(releaseClaim(held, 'tx-a'), 'tx-b').outcome, { ok: true });
  const used = consume(held, 'tx-a');
  assert.equal(releaseClaim(used, 'tx-a'), used);
  assert.equal(consume(used, 'tx-a'), used, 'consumed once');
  assert.equal(consume(held, 'tx-b'), held, 'only the holder uses it');
  assert.equal(consume(null, 'tx-a'), null);
});

test('a quote snapshot written before quotes were single-use loads unclaimed, and an unclaimed quote is written as before', () => {
  const corridors = loadDefaultCorridors();
  const behavior = quoteBehavior({ corridors: () => corridors, rates: () => corridors.rates, partnerFee: () => undefined });
  const quote = brebPayoutQuote(1_700_000_000_000);
  const legacy = toJsonValue(quote); // what the previous version stored: the quote itself
  assert.deepEqual(behavior.decode(legacy), { quote, use: null });
  assert.deepEqual(behavior.encode({ quote, use: null }), legacy);
  const used = { quote, use: { transactionId: 'tx-a', status: 'used' as const } };
  assert.deepEqual(behavior.decode(behavior.encode(used)), used);
});
