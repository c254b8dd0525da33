// Single use of a quote, the pure rules (src/domain/quote-use.ts): who may claim a quote, what a
// second acceptance hears while the first runs and after it created its transaction, and that a
// claim given back frees the quote. Every step is idempotent for the same transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { claim, consume, releaseClaim, type QuoteUse } from '../../src/domain/quote-use.ts';

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
