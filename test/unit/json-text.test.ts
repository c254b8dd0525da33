// Reading JSON text without decoding it (src/edge/json-text.ts), and the quote endpoints' use of it:
// a created quote is answered with the reply's `quote` text as it is, which must be byte for byte
// what decoding and re-encoding the reply gave.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonObjectEnd, lastObjectMemberText } from '../../src/edge/json-text.ts';
import { quoteReplyResponse } from '../../src/edge/routes/quotes.ts';

const prefix = '{"ok":true,"quote":';

/** A small deterministic generator (xorshift32) so failures are reproducible. */
function generator(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}

const awkwardStrings = ['', '}', '{', '"', '\\', '\\"}', ']', '[{"a":1}]', 'a\nb', '\u2028', '\ud800', 'é€😀', '{"ok":true,"quote":{}}'];

function randomValue(next: () => number, depth: number): unknown {
  const pick = next();
  if (depth > 3 || pick < 0.35) {
    const scalar = next();
    if (scalar < 0.2) return awkwardStrings[Math.floor(next() * awkwardStrings.length)];
    if (scalar < 0.4) return Math.round((next() - 0.5) * 1e6) / 100;
    if (scalar < 0.5) return next() < 0.5;
    if (scalar < 0.6) return null;
    return `s${Math.floor(next() * 1000)}`;
  }
  if (pick < 0.55) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  return randomObject(next, depth + 1);
}

function randomObject(next: () => number, depth: number): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  const size = Math.floor(next() * 5);
  for (let index = 0; index < size; index += 1) {
    const key = next() < 0.2 ? (awkwardStrings[Math.floor(next() * awkwardStrings.length)] ?? 'k') : `k${index}`;
    object[key] = randomValue(next, depth);
  }
  return object;
}

test('jsonObjectEnd finds the brace closing the object, skipping strings and their escapes', () => {
  const text = '{"a":"}","b":{"c":["]","\\"}"]},"d":"\\\\"}';
  assert.equal(jsonObjectEnd(text, 0), text.length - 1);
  assert.equal(jsonObjectEnd(`x${text}y`, 1), text.length);
  assert.equal(jsonObjectEnd(text, 13), text.indexOf('},"d"'));
  assert.equal(jsonObjectEnd('[1]', 0), -1, 'not an object');
  assert.equal(jsonObjectEnd('{"a":1', 0), -1, 'not closed');
  assert.equal(jsonObjectEnd('{"a":"}', 0), -1, 'unterminated string');
  assert.equal(jsonObjectEnd('{"a":[1}', 0), -1, 'closed by the wrong bracket');
});

test('the last object member comes out exactly as JSON.stringify of the decoded member', () => {
  const next = generator(20_261_123);
  for (let round = 0; round < 5_000; round += 1) {
    const quote = randomObject(next, 0);
    const text = JSON.stringify({ ok: true, quote });
    const member = lastObjectMemberText(text, prefix);
    assert.equal(member, JSON.stringify((JSON.parse(text) as { quote: unknown }).quote), text);
  }
});

test('anything but `<prefix><object>}` gives null: another member after it, another order, a non-object', () => {
  const next = generator(7);
  for (let round = 0; round < 2_000; round += 1) {
    const quote = randomObject(next, 0);
    const after = randomValue(next, 0);
    assert.equal(lastObjectMemberText(JSON.stringify({ ok: true, quote, after }), prefix), null);
    assert.equal(lastObjectMemberText(JSON.stringify({ quote, ok: true }), prefix), null);
  }
  for (const quote of [null, 1, 'x', [], [{}], true]) assert.equal(lastObjectMemberText(JSON.stringify({ ok: true, quote }), prefix), null);
  assert.equal(lastObjectMemberText('{"ok":true,"quote":{}} ', prefix), null);
  assert.equal(lastObjectMemberText('{"ok":true,"quote":{}', prefix), null);
  assert.equal(lastObjectMemberText('{"ok": true, "quote": {}}', prefix), null);
});

test('a quote reply becomes the same response whether its text is forwarded or decoded', () => {
  const next = generator(99);
  const decodedResponse = (text: string) => {
    const reply = JSON.parse(text) as { ok: true; quote: unknown };
    return { status: 200, body: JSON.stringify(reply.quote) };
  };
  for (let round = 0; round < 1_000; round += 1) {
    const text = JSON.stringify({ ok: true, quote: randomObject(next, 0) });
    const response = quoteReplyResponse(text);
    assert.deepEqual({ status: response.status, body: response.body }, decodedResponse(text));
    assert.equal(response.headers?.['content-type'], 'application/json; charset=utf-8');
  }
  // Other shapes are decoded as before.
  const reordered = quoteReplyResponse('{"quote":{"quote_id":"q"},"ok":true}');
  assert.deepEqual({ status: reordered.status, body: reordered.body }, { status: 200, body: '{"quote_id":"q"}' });
});

test('a refused quote keeps the spec error shape; an unknown code becomes server_error', () => {
  const refused = quoteReplyResponse(JSON.stringify({ ok: false, error: { code: 'minimum', reason: 'too small', retryable: false } }));
  assert.equal(refused.status, 400);
  assert.deepEqual(JSON.parse(String(refused.body)), { code: 'minimum', reason: 'too small', retryable: false });
  const unknown = quoteReplyResponse(JSON.stringify({ ok: false, error: { code: 'made_up', reason: 'r', retryable: true } }));
  assert.equal(unknown.status, 500);
  assert.deepEqual(JSON.parse(String(unknown.body)), { code: 'server_error', reason: 'r', retryable: true });
  assert.throws(() => quoteReplyResponse('not json'), SyntaxError);
});
