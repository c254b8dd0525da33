// Per-partner state of one dispatcher (docs/webhooks.md, "Fairness"): the attempts it has in
// flight, the breaker of its destination (breaker.ts), and when it was last given a slot
// (fair-share.ts). In memory only: every dispatcher process keeps its own, so with N dispatchers a
// partner has at most N × its share in flight, and each dispatcher probes on its own.
//
// Bounded: a partner's lane is dropped once nothing of it is held or in flight and its breaker has
// nothing to wait for; the label values of the metrics are the partners that have a lane.
import {
  admission,
  attemptEnded,
  attemptStarted,
  breakerView,
  breakerViews,
  closedBreaker,
  type BreakerPolicy,
  type BreakerSignal,
  type BreakerState,
} from './breaker.ts';
import type { MetricFamily } from '../lifecycle/metrics.ts';

interface Lane {
  inFlight: number;
  breaker: BreakerState;
  lastServed: number;
  /** The destination URL the breaker's record is about (null before the first attempt). */
  url: string | null;
}

/** An attempt the lanes let start; hand it back to `ended`. */
export interface StartedAttempt {
  readonly partnerId: string;
  /** The breaker's half-open probe. */
  readonly probe: boolean;
}

export class PartnerLanes {
  private readonly lanes = new Map<string, Lane>();
  private servedCounter = 0;
  private openings = 0;

  constructor(
    private readonly policy: BreakerPolicy,
    /** Attempts one partner may have in flight at once in this dispatcher. */
    private readonly sharePerPartner: number,
  ) {}

  /** Attempts the partner may start now: its share less those in flight, one while its breaker probes, none while it is open. */
  room(partnerId: string, nowMs: number): number {
    const lane = this.lanes.get(partnerId);
    if (lane === undefined) return this.sharePerPartner;
    const admitted = admission(lane.breaker, nowMs);
    if (admitted.kind === 'wait') return 0;
    const share = Math.max(0, this.sharePerPartner - lane.inFlight);
    return admitted.kind === 'probe' ? Math.min(1, share) : share;
  }

  /** The partner's breaker keeps its queue waiting now (open, or its probe is still out). */
  waiting(partnerId: string, nowMs: number): boolean {
    const lane = this.lanes.get(partnerId);
    return lane !== undefined && admission(lane.breaker, nowMs).kind === 'wait';
  }

  lastServed(partnerId: string): number {
    return this.lanes.get(partnerId)?.lastServed ?? 0;
  }

  inFlight(partnerId: string): number {
    return this.lanes.get(partnerId)?.inFlight ?? 0;
  }

  /** Starts an attempt if the partner still has room at `nowMs`; null otherwise. */
  start(partnerId: string, nowMs: number): StartedAttempt | null {
    if (this.room(partnerId, nowMs) <= 0) return null;
    const lane = this.laneOf(partnerId);
    const admitted = admission(lane.breaker, nowMs);
    lane.breaker = attemptStarted(lane.breaker, admitted);
    lane.inFlight += 1;
    this.servedCounter += 1;
    lane.lastServed = this.servedCounter;
    return { partnerId, probe: admitted.kind === 'probe' };
  }

  /** The attempt has ended; `signal` is what its result says about the endpoint. Call exactly once per started attempt. */
  ended(attempt: StartedAttempt, signal: BreakerSignal, nowMs: number): void {
    const lane = this.laneOf(attempt.partnerId);
    lane.inFlight = Math.max(0, lane.inFlight - 1);
    const wasOpen = lane.breaker.kind === 'open';
    lane.breaker = attemptEnded(this.policy, lane.breaker, signal, attempt.probe, nowMs);
    if (!wasOpen && lane.breaker.kind === 'open') this.openings += 1;
  }

  /**
   * The partner's destination is `url` now. A different URL than the breaker's record (an
   * administrator activated a new one) is a new destination: its breaker starts closed.
   */
  destination(partnerId: string, url: string | null): void {
    const lane = this.laneOf(partnerId);
    if (lane.url !== null && url !== null && url !== lane.url) lane.breaker = closedBreaker;
    if (url !== null) lane.url = url;
  }

  /** Forgets partners with nothing held or in flight whose breaker has nothing to wait for. */
  prune(activePartners: ReadonlySet<string>, nowMs: number): void {
    for (const [partnerId, lane] of this.lanes) {
      if (lane.inFlight === 0 && !activePartners.has(partnerId) && admission(lane.breaker, nowMs).kind !== 'wait') this.lanes.delete(partnerId);
    }
  }

  metrics(nowMs: number): MetricFamily[] {
    const lanes = [...this.lanes.entries()];
    return [
      {
        name: 'webhook_breaker_state',
        type: 'gauge',
        help: "Each partner's destination breaker in this dispatcher: 1 for its current state, 0 for the others (open: the partner's deliveries wait; half_open: one probe goes).",
        samples: lanes.flatMap(([partner, lane]) => breakerViews.map((state) => ({ labels: { partner, state }, value: breakerView(lane.breaker, nowMs) === state ? 1 : 0 }))),
      },
      {
        name: 'webhook_attempts_in_flight',
        type: 'gauge',
        help: 'Webhook attempts this dispatcher has in flight, per partner (at most the per-partner share).',
        samples: lanes.map(([partner, lane]) => ({ labels: { partner }, value: lane.inFlight })),
      },
      { name: 'webhook_breaker_openings_total', type: 'counter', help: 'Times a partner breaker opened in this dispatcher since it started (a failed probe counts again).', samples: [{ value: this.openings }] },
    ];
  }

  private laneOf(partnerId: string): Lane {
    let lane = this.lanes.get(partnerId);
    if (lane === undefined) {
      lane = { inFlight: 0, breaker: closedBreaker, lastServed: 0, url: null };
      this.lanes.set(partnerId, lane);
    }
    return lane;
  }
}
