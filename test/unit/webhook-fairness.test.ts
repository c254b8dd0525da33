// The pure parts of fair webhook delivery (docs/webhooks.md, "Fairness"): the per-partner breaker's
// state machine, how the free slots of a round are shared out across partners, and which parked
// rows go back to the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  admission,
  attemptEnded,
  attemptStarted,
  breakerSignal,
  breakerView,
  closedBreaker,
  openMs,
  type BreakerPolicy,
  type BreakerState,
} from '../../src/webhooks/breaker.ts';
import { shareSlots } from '../../src/webhooks/fair-share.ts';
import { ParkedRows } from '../../src/webhooks/parked-rows.ts';

const policy: BreakerPolicy = { failuresMax: 3, openMsBase: 5_000, openMsMax: 60_000 };

test('breaker signal: retryable failures count against the endpoint, any other answer is a sign of life, a refusal before sending says nothing', () => {
  const table: Array<[Parameters<typeof breakerSignal>[0], string]> = [
    [{ kind: 'response', httpStatus: 200, retryAfter: null }, 'success'],
    [{ kind: 'response', httpStatus: 401, retryAfter: null }, 'success'],
    [{ kind: 'response', httpStatus: 302, retryAfter: null }, 'success'],
    [{ kind: 'response', httpStatus: 503, retryAfter: null }, 'failure'],
    [{ kind: 'response', httpStatus: 429, retryAfter: '30' }, 'failure'],
    [{ kind: 'response', httpStatus: 408, retryAfter: null }, 'failure'],
    [{ kind: 'error', error: 'timeout' }, 'failure'],
    [{ kind: 'error', error: 'connection_refused' }, 'failure'],
    [{ kind: 'error', error: 'tls_error' }, 'failure'],
    [{ kind: 'error', error: 'no_destination' }, 'neutral'],
    [{ kind: 'error', error: 'blocked_address' }, 'neutral'],
    [{ kind: 'error', error: 'secret_unavailable' }, 'neutral'],
  ];
  for (const [result, signal] of table) assert.equal(breakerSignal(result), signal, JSON.stringify(result));
});

test('breaker: opens after failuresMax consecutive failures; a success in between starts the count again', () => {
  let state: BreakerState = closedBreaker;
  state = attemptEnded(policy, state, 'failure', false, 0);
  state = attemptEnded(policy, state, 'failure', false, 0);
  state = attemptEnded(policy, state, 'success', false, 0);
  assert.deepEqual(state, closedBreaker, 'a success resets the count');
  state = attemptEnded(policy, state, 'failure', false, 0);
  state = attemptEnded(policy, state, 'neutral', false, 0);
  state = attemptEnded(policy, state, 'failure', false, 0);
  assert.deepEqual(state, { kind: 'closed', failures: 2 }, 'a neutral result changes nothing');
  state = attemptEnded(policy, state, 'failure', false, 1_000);
  assert.deepEqual(state, { kind: 'open', untilMs: 6_000, openings: 1 });
  assert.deepEqual(attemptEnded(policy, state, 'failure', false, 2_000), state, 'a late failure of an attempt started before the opening changes nothing');
});

test('breaker: open → (time up) one probe → a failed probe opens it twice as long, up to the cap; a successful probe closes it', () => {
  let state: BreakerState = { kind: 'open', untilMs: 6_000, openings: 1 };
  assert.deepEqual(admission(state, 5_999), { kind: 'wait', untilMs: 6_000 });
  assert.equal(breakerView(state, 5_999), 'open');
  assert.deepEqual(admission(state, 6_000), { kind: 'probe' });
  assert.equal(breakerView(state, 6_000), 'half_open');
  state = attemptStarted(state, admission(state, 6_000));
  assert.deepEqual(state, { kind: 'half_open', openings: 1, probing: true });
  assert.deepEqual(admission(state, 6_001), { kind: 'wait', untilMs: null }, 'one probe at a time');
  assert.deepEqual(attemptEnded(policy, state, 'failure', false, 7_000), state, 'only the probe decides');
  state = attemptEnded(policy, state, 'failure', true, 7_000);
  assert.deepEqual(state, { kind: 'open', untilMs: 17_000, openings: 2 });
  assert.deepEqual([1, 2, 3, 4, 5, 6, 12].map((openings) => openMs(policy, openings)), [5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
  const probing = attemptStarted(state, admission(state, 17_000));
  assert.deepEqual(attemptEnded(policy, probing, 'neutral', true, 17_500), { kind: 'half_open', openings: 2, probing: false }, 'a probe that could not send lets the next attempt probe');
  assert.deepEqual(attemptEnded(policy, probing, 'success', true, 17_500), closedBreaker);
  assert.throws(() => attemptStarted(state, { kind: 'wait', untilMs: 17_000 }));
});

test('fair share: each slot goes to the partner with the fewest in flight, ties to the one served longest ago, never beyond what it can start', () => {
  // A has 400 events and 7 in flight; B has one event and nothing in flight: B first.
  assert.deepEqual(shareSlots([{ partnerId: 'a', inFlight: 7, ready: 1, lastServed: 9 }, { partnerId: 'b', inFlight: 0, ready: 1, lastServed: 0 }], 1), ['b']);
  // Equal load: round-robin, starting with the partner served longest ago.
  assert.deepEqual(
    shareSlots([{ partnerId: 'a', inFlight: 0, ready: 3, lastServed: 5 }, { partnerId: 'b', inFlight: 0, ready: 3, lastServed: 2 }, { partnerId: 'c', inFlight: 0, ready: 1, lastServed: 7 }], 6),
    ['b', 'a', 'c', 'b', 'a', 'b'],
  );
  // Water-filling: the busier partner waits until the others catch up.
  assert.deepEqual(shareSlots([{ partnerId: 'a', inFlight: 3, ready: 5, lastServed: 0 }, { partnerId: 'b', inFlight: 0, ready: 5, lastServed: 1 }], 5), ['b', 'b', 'b', 'a', 'b']);
  assert.deepEqual(shareSlots([{ partnerId: 'a', inFlight: 0, ready: 2, lastServed: 0 }], 5), ['a', 'a'], 'no more than it can start');
  assert.deepEqual(shareSlots([], 5), []);
  assert.deepEqual(shareSlots([{ partnerId: 'a', inFlight: 0, ready: 2, lastServed: 0 }], 0), []);
});

test('parked rows: handed back oldest first as their partner has room, or when their claim is about to run out; parking is bounded', () => {
  const parked = new ParkedRows(4);
  assert.equal(parked.park('a-3', { partnerId: 'a', seq: 3, claimExpiresAtMs: 60_000 }), true);
  assert.equal(parked.park('a-1', { partnerId: 'a', seq: 1, claimExpiresAtMs: 60_000 }), true);
  assert.equal(parked.park('a-2', { partnerId: 'a', seq: 2, claimExpiresAtMs: 60_000 }), true);
  assert.equal(parked.park('b-9', { partnerId: 'b', seq: 9, claimExpiresAtMs: 10_000 }), true);
  assert.equal(parked.park('c-1', { partnerId: 'c', seq: 10, claimExpiresAtMs: 60_000 }), false, 'full: the caller hands the row back');
  // Partner a can hold 2 more; b has no room but its claim runs out within the margin.
  assert.deepEqual(parked.takeReleasable(6_000, 5_000, (partnerId) => (partnerId === 'a' ? 2 : 0)), ['b-9', 'a-1', 'a-2']);
  assert.equal(parked.size, 1);
  assert.deepEqual(parked.takeReleasable(6_000, 5_000, () => 0), [], 'no room, claims still long: nothing goes back');
  parked.forget('a-3');
  assert.equal(parked.size, 0);
  assert.equal(parked.park('a-4', { partnerId: 'a', seq: 4, claimExpiresAtMs: 60_000 }), true);
  assert.deepEqual(parked.drain(), ['a-4']);
  assert.equal(parked.size, 0);
});
