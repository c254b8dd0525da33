// The excerpt of a receiver's answer to a destination's test delivery, as the portal and the admin
// CLI show it: UTF-8 with invalid bytes replaced, control characters (terminal escapes, bidi
// overrides) stripped, line breaks as spaces, never more than the bytes read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { responseExcerpt, testExcerptBytesMax } from '../../src/webhooks/response-excerpt.ts';

test('a short JSON answer is shown as it is, on one line', () => {
  assert.equal(responseExcerpt(Buffer.from('{"received":true,\r\n\t"id":"evt_1"}\n'), false), '{"received":true, "id":"evt_1"} ');
});

test('invalid UTF-8 bytes become U+FFFD; valid non-ASCII text is kept', () => {
  assert.equal(responseExcerpt(Buffer.from([0x61, 0xff, 0x62, 0xc3, 0x28]), false), 'a\uFFFDb\uFFFD(');
  assert.equal(responseExcerpt(Buffer.from('ação recebida ✓', 'utf8'), false), 'ação recebida ✓');
});

test('control characters are stripped: terminal escapes, NUL, DEL, C1 controls, bidi overrides', () => {
  const hostile = 'ok\u001b[31mred\u001b[0m\u0000\u007f\u0085\u009b done \u202Egnp.exe\u2066x\u2069';
  assert.equal(responseExcerpt(Buffer.from(hostile, 'utf8'), false), 'ok[31mred[0m done gnp.exex');
});

test('markup is left as text (the page shows it with textContent)', () => {
  assert.equal(responseExcerpt(Buffer.from('<script>alert(1)</script>'), false), '<script>alert(1)</script>');
});

test(`never more than ${testExcerptBytesMax} bytes; a character we cut at the end is left out, one the receiver broke is replaced`, () => {
  assert.equal(responseExcerpt(Buffer.alloc(4_096, 'x'), true), 'x'.repeat(testExcerptBytesMax));
  // 511 ASCII bytes then "é" (2 bytes): byte 512 is half of it.
  const split = Buffer.concat([Buffer.alloc(511, 'a'), Buffer.from('é', 'utf8')]);
  assert.equal(responseExcerpt(split.subarray(0, 512), true), 'a'.repeat(511));
  assert.equal(responseExcerpt(split, false), 'a'.repeat(511), 'longer than the bound: cut by us');
  assert.equal(responseExcerpt(Buffer.from([0x61, 0xc3]), false), 'a\uFFFD', 'a whole answer ending in a broken character');
});
