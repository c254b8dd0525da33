// The quote endpoints' answer to the quote actor's reply: the quote as it is, or the refusal in the
// spec's quote error shape with the edge's status for its code; an unknown code is a server_error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quoteReplyResponse } from '../../src/edge/routes/quotes.ts';
import type { QuoteReply } from '../../src/actors/quote-actor.ts';

test('a created quote is answered 200 with the quote as the actor gave it', () => {
  const quote = { quote_id: 'q', value: 4000.5, expiration_time: 1_750_000_000, fee: { amount: 1 } };
  const response = quoteReplyResponse({ ok: true, quote } as unknown as QuoteReply);
  assert.equal(response.status, 200);
  assert.equal(response.body, JSON.stringify(quote));
  assert.equal(response.headers?.['content-type'], 'application/json; charset=utf-8');
});

test('a refused quote keeps the spec error shape; an unknown code becomes server_error', () => {
  const refused = quoteReplyResponse({ ok: false, error: { code: 'minimum', reason: 'too small', retryable: false } } as QuoteReply);
  assert.equal(refused.status, 400);
  assert.deepEqual(JSON.parse(String(refused.body)), { code: 'minimum', reason: 'too small', retryable: false });
  const unknown = quoteReplyResponse(JSON.parse(JSON.stringify({ ok: false, error: { code: 'made_up', reason: 'r', retryable: true } })) as QuoteReply);
  assert.equal(unknown.status, 500);
  assert.deepEqual(JSON.parse(String(unknown.body)), { code: 'server_error', reason: 'r', retryable: true });
});
