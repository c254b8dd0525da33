// The circuit breaker of one partner's destination, as pure functions (docs/webhooks.md,
// "Fairness"). No clock, no I/O: `nowMs` comes in as a parameter.
//
//   closed ──(failuresMax consecutive failures)──▶ open ──(openMs passed)──▶ half-open
//      ▲                                             ▲                          │ one probe
//      └──────────────(any success)──────────────────┴──(the probe fails)───────┘
//
// While the breaker is open the partner's whole queue waits: no event is attempted, so no event
// spends an attempt. Half-open lets exactly one attempt through (the probe: a real delivery of the
// partner's oldest due event, which spends one attempt of that event because it is made). Each
// failed probe doubles the next opening, up to `openMsMax`.
//
// What counts: a retryable failure (timeout, connection error, 408/429/5xx) is a failure; any
// other answer from the endpoint (2xx, and also 3xx/4xx: the endpoint is up, the event is refused)
// is a success; a failure found before anything was sent (no destination, refused address, no
// secret) says nothing about the endpoint and changes nothing.
import { classify, type AttemptResult } from './policy.ts';

export interface BreakerPolicy {
  /** Consecutive failed attempts to a partner's destination that open its breaker. */
  readonly failuresMax: number;
  /** How long the first opening lasts; each failed probe doubles it. */
  readonly openMsBase: number;
  /** No opening lasts longer than this. */
  readonly openMsMax: number;
}

export const defaultBreakerPolicy: BreakerPolicy = { failuresMax: 5, openMsBase: 5_000, openMsMax: 60_000 };

export type BreakerState =
  | { readonly kind: 'closed'; readonly failures: number }
  /** `openings`: openings in a row without a success in between (the backoff exponent). */
  | { readonly kind: 'open'; readonly untilMs: number; readonly openings: number }
  | { readonly kind: 'half_open'; readonly openings: number; readonly probing: boolean };

export const closedBreaker: BreakerState = { kind: 'closed', failures: 0 };

/** What an attempt's result says about the endpoint. */
export type BreakerSignal = 'success' | 'failure' | 'neutral';

/** Whether another attempt may start now: freely, only as the probe, or not before `untilMs` (null: when the probe ends). */
export type Admission = { readonly kind: 'free' } | { readonly kind: 'probe' } | { readonly kind: 'wait'; readonly untilMs: number | null };

/** The state names as operators see them (an open breaker whose time is up is half-open). */
export type BreakerView = 'closed' | 'open' | 'half_open';
export const breakerViews: readonly BreakerView[] = ['closed', 'open', 'half_open'];

export function checkBreakerPolicy(policy: BreakerPolicy): void {
  for (const [name, value] of Object.entries(policy)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`breaker ${name} must be a positive integer, got ${String(value)}`);
  }
  if (policy.openMsMax < policy.openMsBase) throw new RangeError('breaker openMsMax must be at least openMsBase');
}

export function breakerSignal(result: AttemptResult): BreakerSignal {
  if (classify(result).outcome === 'retryable') return 'failure';
  return result.kind === 'response' ? 'success' : 'neutral';
}

/** The length of opening number `openings` (1-based): base × 2^(openings-1), capped. */
export function openMs(policy: BreakerPolicy, openings: number): number {
  if (!Number.isInteger(openings) || openings < 1) throw new RangeError(`openings must be a positive integer, got ${openings}`);
  return Math.min(policy.openMsBase * 2 ** Math.min(openings - 1, 30), policy.openMsMax);
}

export function admission(state: BreakerState, nowMs: number): Admission {
  switch (state.kind) {
    case 'closed':
      return { kind: 'free' };
    case 'open':
      return nowMs < state.untilMs ? { kind: 'wait', untilMs: state.untilMs } : { kind: 'probe' };
    case 'half_open':
      return state.probing ? { kind: 'wait', untilMs: null } : { kind: 'probe' };
  }
}

/** The state once an attempt admitted as `admitted` has started. */
export function attemptStarted(state: BreakerState, admitted: Admission): BreakerState {
  if (admitted.kind === 'wait') throw new Error('an attempt started that the breaker did not admit');
  if (admitted.kind === 'free') return state;
  const openings = state.kind === 'closed' ? 0 : state.openings;
  return { kind: 'half_open', openings, probing: true };
}

/** The state once an attempt has ended with `signal`; `wasProbe`: it was admitted as the probe. */
export function attemptEnded(policy: BreakerPolicy, state: BreakerState, signal: BreakerSignal, wasProbe: boolean, nowMs: number): BreakerState {
  if (signal === 'success') return closedBreaker;
  if (signal === 'neutral') {
    // The probe told us nothing: let the next attempt probe instead.
    return wasProbe && state.kind === 'half_open' ? { ...state, probing: false } : state;
  }
  switch (state.kind) {
    case 'closed': {
      const failures = state.failures + 1;
      return failures >= policy.failuresMax ? { kind: 'open', untilMs: nowMs + openMs(policy, 1), openings: 1 } : { kind: 'closed', failures };
    }
    case 'open':
      return state; // an attempt started before the opening, failing late: already accounted for
    case 'half_open': {
      if (!wasProbe) return state;
      const openings = state.openings + 1;
      return { kind: 'open', untilMs: nowMs + openMs(policy, openings), openings };
    }
  }
}

export function breakerView(state: BreakerState, nowMs: number): BreakerView {
  if (state.kind === 'open') return nowMs < state.untilMs ? 'open' : 'half_open';
  return state.kind;
}
