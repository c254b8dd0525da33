// The environment an operator sets: defaults, and a clear refusal of values out of range.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readEnv } from '../../src/config/env.ts';

test('webhook attempts: connect and first-byte timeouts default to 3 s and 5 s, within the 10 s attempt', () => {
  const defaults = readEnv({});
  assert.equal(defaults.WEBHOOK_CONNECT_TIMEOUT_MS, 3_000);
  assert.equal(defaults.WEBHOOK_FIRST_BYTE_TIMEOUT_MS, 5_000);
  assert.equal(readEnv({ WEBHOOK_FIRST_BYTE_TIMEOUT_MS: '2000' }).WEBHOOK_FIRST_BYTE_TIMEOUT_MS, 2_000);
  assert.throws(() => readEnv({ WEBHOOK_CONNECT_TIMEOUT_MS: '0' }), /WEBHOOK_CONNECT_TIMEOUT_MS/);
  assert.throws(() => readEnv({ WEBHOOK_FIRST_BYTE_TIMEOUT_MS: '60000' }), /WEBHOOK_FIRST_BYTE_TIMEOUT_MS/);
});

test('shard lease TTL and the edge ask timeout: 10 s by default; the ask timeout stays below the edge handler timeout', () => {
  const defaults = readEnv({});
  assert.deepEqual([defaults.SHARD_LEASE_TTL_MS, defaults.EDGE_ASK_TIMEOUT_MS], [10_000, 10_000]);
  const set = readEnv({ SHARD_LEASE_TTL_MS: '1500', EDGE_ASK_TIMEOUT_MS: '25000' });
  assert.deepEqual([set.SHARD_LEASE_TTL_MS, set.EDGE_ASK_TIMEOUT_MS], [1_500, 25_000]);
  assert.throws(() => readEnv({ SHARD_LEASE_TTL_MS: '500' }), /SHARD_LEASE_TTL_MS/);
  assert.throws(() => readEnv({ EDGE_ASK_TIMEOUT_MS: '30000' }), /EDGE_ASK_TIMEOUT_MS/);
});
