// The environment an operator sets: defaults, and a clear refusal of values out of range.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readEnv } from '../../src/config/env.ts';

test('the store commits small batches on the event loop by default; the operator can turn it off', () => {
  assert.equal(readEnv({}).STORE_INLINE_COMMIT_WRITES, 4);
  assert.equal(readEnv({ STORE_INLINE_COMMIT_WRITES: '0' }).STORE_INLINE_COMMIT_WRITES, 0);
  assert.throws(() => readEnv({ STORE_INLINE_COMMIT_WRITES: '-1' }), /STORE_INLINE_COMMIT_WRITES/);
  assert.throws(() => readEnv({ STORE_INLINE_COMMIT_WRITES: 'many' }), /STORE_INLINE_COMMIT_WRITES/);
});
