// Key → shard routing must never change: every edge and worker computes it on its own, and a
// different answer would give one actor two owners. Known FNV-1a vectors pin the function; the
// ASCII fast path must agree with hashing the UTF-8 bytes for every key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fnv1a32, shardOf } from '../../src/bus/shards.ts';

/** The definition: FNV-1a over the UTF-8 bytes. */
function reference(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

test('fnv1a32: published test vectors', () => {
  assert.equal(fnv1a32(''), 0x811c9dc5);
  assert.equal(fnv1a32('a'), 0xe40c292c);
  assert.equal(fnv1a32('foobar'), 0xbf9cf968);
});

test('fnv1a32: ASCII and non-ASCII keys hash their UTF-8 bytes', () => {
  const keys = ['transaction/3f1c2b7e-0000-4000-8000-000000000001', 'counter/limits:method-day:BREB:2026-11-23', 'señal', 'ключ', '💸/x', 'a\u007f', 'a\u0080'];
  for (const key of keys) assert.equal(fnv1a32(key), reference(key), key);
  let seed = 7;
  for (let run = 0; run < 2_000; run += 1) {
    let key = '';
    for (let index = 0; index < 1 + (run % 40); index += 1) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      key += String.fromCharCode(seed % (run % 3 === 0 ? 0x2000 : 0x80));
    }
    assert.equal(fnv1a32(key), reference(key), JSON.stringify(key));
  }
});

test('shardOf: stable assignments (a change here re-routes live actors)', () => {
  assert.equal(shardOf('transaction/3f1c2b7e-0000-4000-8000-000000000001', 64), reference('transaction/3f1c2b7e-0000-4000-8000-000000000001') % 64);
  assert.equal(shardOf('foobar', 64), 0xbf9cf968 % 64);
});
