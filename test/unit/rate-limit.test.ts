import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createNotifyBudget, notifyIsCharged } from '../../src/edge/notify-budget.ts';
import type { NotifyResult } from '../../src/ports/ports.ts';
import {
  createRateLimiter,
  defaultRateLimitConfig,
  returnToken,
  takeToken,
  type TokenBucketConfig,
  type TokenBucketState,
} from '../../src/edge/rate-limit.ts';

const config: TokenBucketConfig = { ratePerSecond: 10, burst: 20 };

function drain(state: TokenBucketState | undefined, nowMs: number, count: number): TokenBucketState | undefined {
  let current = state;
  for (let i = 0; i < count; i += 1) {
    const result = takeToken(current, nowMs, config);
    assert.equal(result.allowed, true, `token ${i} should be allowed`);
    current = result.state;
  }
  return current;
}

describe('takeToken (pure token bucket)', () => {
  test('a new key gets the full burst, then is refused', () => {
    const state = drain(undefined, 1_000, 20);
    const refused = takeToken(state, 1_000, config);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterSeconds, 1);
  });

  test('tokens refill at ratePerSecond and never beyond burst', () => {
    let state = drain(undefined, 0, 20);
    let result = takeToken(state, 99, config); // 0.99 tokens
    assert.equal(result.allowed, false);
    result = takeToken(result.state, 100, config); // exactly one token
    assert.equal(result.allowed, true);
    state = result.state;
    // After a long idle period the bucket is full again, but holds no more than burst.
    state = drain(state, 1_000_000, 20);
    assert.equal(takeToken(state, 1_000_000, config).allowed, false);
  });

  test('Retry-After is whole seconds, at least 1, enough for one token', () => {
    const slow: TokenBucketConfig = { ratePerSecond: 0.25, burst: 1 };
    const first = takeToken(undefined, 0, slow);
    assert.equal(first.allowed, true);
    const refused = takeToken(first.state, 0, slow);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterSeconds, 4);
    const later = takeToken(refused.state, 1_000, slow);
    assert.equal(later.retryAfterSeconds, 3);
    assert.equal(takeToken(later.state, 4_000, slow).allowed, true);
    // A fast bucket with a fraction of a second to wait still says 1.
    const fast = takeToken({ tokens: 0.5, updatedAtMs: 0 }, 0, { ratePerSecond: 1000, burst: 1 });
    assert.equal(fast.allowed, false);
    assert.equal(fast.retryAfterSeconds, 1);
  });

  test('a clock going backwards mints no tokens', () => {
    const state = drain(undefined, 10_000, 20);
    const back = takeToken(state, 5_000, config);
    assert.equal(back.allowed, false);
    assert.equal(back.state.updatedAtMs, 10_000);
    // Time is measured from the later timestamp: 100 ms after 10,000 gives one token.
    assert.equal(takeToken(back.state, 10_050, config).allowed, false);
    assert.equal(takeToken(back.state, 10_100, config).allowed, true);
  });

  test('is pure: the input state is not modified', () => {
    const state: TokenBucketState = Object.freeze({ tokens: 3, updatedAtMs: 0 });
    const result = takeToken(state, 0, config);
    assert.deepEqual(state, { tokens: 3, updatedAtMs: 0 });
    assert.deepEqual(result.state, { tokens: 2, updatedAtMs: 0 });
  });

  test('sustained rate over a minute matches ratePerSecond (+ burst)', () => {
    let state: TokenBucketState | undefined;
    let allowed = 0;
    for (let nowMs = 0; nowMs < 60_000; nowMs += 10) {
      const result = takeToken(state, nowMs, config);
      state = result.state;
      if (result.allowed) allowed += 1;
    }
    // 20 burst + 10/s × ~60 s
    assert.ok(allowed >= 20 + 599 && allowed <= 20 + 600, `allowed ${allowed}`);
  });
});

describe('createRateLimiter (registry)', () => {
  test('buckets are per key, and time comes from the injected clock', () => {
    let nowMs = 0;
    const limiter = createRateLimiter({ config: { ratePerSecond: 1, burst: 2 }, nowMs: () => nowMs });
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, false);
    assert.equal(limiter.take('b').allowed, true);
    nowMs = 1_000;
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, false);
  });

  test('is bounded: the least recently used key is dropped', () => {
    const nowMs = 0;
    const limiter = createRateLimiter({ config: { ratePerSecond: 1, burst: 1 }, keysMax: 3, nowMs: () => nowMs });
    for (const key of ['a', 'b', 'c']) assert.equal(limiter.take(key).allowed, true);
    assert.equal(limiter.take('a').allowed, false); // 'a' is now most recently used
    assert.equal(limiter.take('d').allowed, true); // evicts 'b'
    assert.equal(limiter.size(), 3);
    assert.equal(limiter.take('b').allowed, true, 'b was evicted, so it starts full');
    assert.equal(limiter.take('c').allowed, true, "c was evicted by b's return");
    assert.equal(limiter.take('d').allowed, false, 'd was kept, still empty');
  });

  test('rejects nonsensical configuration', () => {
    assert.throws(() => createRateLimiter({ config: { ratePerSecond: 0, burst: 1 } }), RangeError);
    assert.throws(() => createRateLimiter({ config: { ratePerSecond: 1, burst: 0.5 } }), RangeError);
    assert.throws(() => createRateLimiter({ keysMax: 0 }), RangeError);
    assert.deepEqual(defaultRateLimitConfig, { ratePerSecond: 200, burst: 400 });
  });
});

describe('notify budget (POST /payments/notify of deposits that cannot fund their transaction)', () => {
  test('charged: a deposit that cannot fund its transaction, or a transfer that does not validate; free: the rest', () => {
    const rows: Array<[string, NotifyResult, boolean]> = [
      ['AWAITING_PAYMENT', { result: 'enqueued', mismatched: false }, false], // its exact payment
      ['AWAITING_PAYMENT', { result: 'enqueued' }, false], // a watcher that does not say (older build)
      ['AWAITING_PAYMENT', { result: 'enqueued', mismatched: true }, true], // wrong amount, dust
      ['AWAITING_PAYMENT', { result: 'not_found', reason: 'not final' }, false], // the partner's retry loop
      ['AWAITING_PAYMENT', { result: 'unavailable', reason: 'link down' }, false], // our failure
      ['AWAITING_PAYMENT', { result: 'invalid', reason: 'reverted' }, true],
      ['PROCESSING_PAYMENT', { result: 'enqueued' }, true], // a stray (or the same hash again)
      ['PAYMENT_COMPLETED', { result: 'enqueued', mismatched: false }, true],
      ['PAYMENT_EXPIRED', { result: 'enqueued' }, true], // a late deposit
      ['WRONG_AMOUNT', { result: 'enqueued' }, true],
      ['PAYMENT_COMPLETED', { result: 'not_found', reason: 'not final' }, false],
    ];
    for (const [status, result, charged] of rows) assert.equal(notifyIsCharged(status, result), charged, `${status} ${JSON.stringify(result)}`);
  });

  test('a token is reserved before the work and given back when the outcome is free; refused with Retry-After once spent', () => {
    let nowMs = 0;
    const budget = createNotifyBudget({ perMinute: 2, burst: 3 }, () => nowMs);
    for (let index = 0; index < 10; index += 1) {
      assert.equal(budget.reserve('acme').allowed, true);
      budget.settle('acme', false);
    }
    for (let index = 0; index < 3; index += 1) {
      assert.equal(budget.reserve('acme').allowed, true);
      budget.settle('acme', true);
    }
    const refused = budget.reserve('acme');
    assert.deepEqual([refused.allowed, refused.retryAfterSeconds], [false, 30]);
    assert.equal(budget.reserve('other').allowed, true, 'per partner');
    nowMs += 30_000;
    assert.equal(budget.reserve('acme').allowed, true);
  });

  test('a given-back token never lifts the bucket above its burst', () => {
    const state = returnToken(undefined, 0, config);
    assert.equal(state.tokens, config.burst);
    const limiter = createRateLimiter({ config, nowMs: () => 0 });
    limiter.giveBack('never-seen');
    assert.equal(limiter.size(), 0);
  });
});
