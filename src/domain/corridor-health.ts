// Corridor health, decided purely from settled payouts (docs/corridor-health.md): settlement time
// percentiles, the rail's state with hysteresis, and a liquidity level that never shows the amount.
// The edge reads the samples (src/edge/corridor-health.ts) and hands them here with the time.
//
// A sample is one payout that finished: succeeded (its settlement time is deposit seen → payout
// completed) or failed. The rail's state is replayed over the samples of the last day, in the order
// they finished, so every edge that reads the same samples answers the same state and the same
// "since": no edge keeps state of its own.
// - The recent window is the last `recentPayoutsMax` payouts that finished within `recentWindowMs`.
// - up → degraded when the window holds at least `recentPayoutsMin` payouts and their failure share
//   reaches `failureShareDegraded`, or the p95 settlement time of its successes exceeds
//   `p95DegradedMs`.
// - degraded → up when both are back under their recovery marks (`failureShareRecovered`,
//   `p95RecoveredMs`), or when fewer than `recentPayoutsMin` payouts are left in the window (no
//   evidence of trouble any more). Two marks per figure (hysteresis) keep a rail near one threshold
//   from flapping on every payout.
// - `down` is not decided here: it is the rail's own availability (an outage), given by the edge.

import { compare, decimal, isPositive, multiply, type Decimal } from './money.ts';

export type RailState = 'up' | 'degraded' | 'down';
export type LiquidityLevel = 'ok' | 'low' | 'exhausted' | 'unknown';

export interface SettlementSample {
  readonly finishedAtMs: number;
  readonly succeeded: boolean;
  /** Deposit seen → payout completed; null for a failed payout. */
  readonly durationMs: number | null;
}

export interface HealthThresholds {
  readonly recentWindowMs: number;
  readonly recentPayoutsMax: number;
  readonly recentPayoutsMin: number;
  /** 0..1: the failure share that makes a rail degraded. */
  readonly failureShareDegraded: number;
  /** 0..1, at most `failureShareDegraded`: below it a degraded rail recovers. */
  readonly failureShareRecovered: number;
  readonly p95DegradedMs: number;
  /** At most `p95DegradedMs`. */
  readonly p95RecoveredMs: number;
}

/** The defaults (docs/corridor-health.md); each is an environment variable (src/config/env.ts). */
export const defaultHealthThresholds: HealthThresholds = {
  recentWindowMs: 15 * 60_000,
  recentPayoutsMax: 20,
  recentPayoutsMin: 5,
  failureShareDegraded: 0.25,
  failureShareRecovered: 0.1,
  p95DegradedMs: 10 * 60_000,
  p95RecoveredMs: 5 * 60_000,
};

export const hourMs = 60 * 60_000;
export const dayMs = 24 * hourMs;

/** Nearest-rank percentile (p in 0..100) of values sorted ascending; null when there are none. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? null;
}

export interface SettlementTimes {
  /** Succeeded payouts in the period. */
  readonly count: number;
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
}

/** p50/p95 of the settlement times of the payouts that succeeded in (fromMs, toMs]. */
export function settlementTimes(samples: readonly SettlementSample[], fromMs: number, toMs: number): SettlementTimes {
  const durations = samples
    .filter((sample) => sample.succeeded && sample.durationMs !== null && sample.finishedAtMs > fromMs && sample.finishedAtMs <= toMs)
    .map((sample) => sample.durationMs as number)
    .sort((a, b) => a - b);
  return { count: durations.length, p50Ms: percentile(durations, 50), p95Ms: percentile(durations, 95) };
}

export interface WindowFigures {
  readonly payouts: number;
  readonly failureShare: number | null;
  readonly p95Ms: number | null;
}

/** The recent window at `atMs` over samples sorted by finishedAtMs ascending. */
export function recentWindow(sorted: readonly SettlementSample[], atMs: number, thresholds: HealthThresholds): WindowFigures {
  const inWindow = sorted.filter((sample) => sample.finishedAtMs <= atMs && sample.finishedAtMs > atMs - thresholds.recentWindowMs);
  const recent = inWindow.slice(-thresholds.recentPayoutsMax);
  if (recent.length === 0) return { payouts: 0, failureShare: null, p95Ms: null };
  const failures = recent.filter((sample) => !sample.succeeded).length;
  return { payouts: recent.length, failureShare: failures / recent.length, p95Ms: settlementTimes(recent, -Infinity, atMs).p95Ms };
}

function nextState(current: 'up' | 'degraded', figures: WindowFigures, thresholds: HealthThresholds): 'up' | 'degraded' {
  if (figures.payouts < thresholds.recentPayoutsMin) return 'up';
  const share = figures.failureShare ?? 0;
  const p95 = figures.p95Ms ?? 0;
  if (current === 'up') return share >= thresholds.failureShareDegraded || p95 > thresholds.p95DegradedMs ? 'degraded' : 'up';
  return share < thresholds.failureShareRecovered && p95 <= thresholds.p95RecoveredMs ? 'up' : 'degraded';
}

export interface RailHealth {
  readonly state: 'up' | 'degraded';
  /** When the state began; null when it has held for the whole replayed period. */
  readonly sinceMs: number | null;
  readonly recent: WindowFigures;
}

/**
 * The rail's state at `nowMs`, replayed from `fromMs` (state `up` then) over every moment the recent
 * window changes: a payout finishing, and a payout leaving the window.
 */
export function railHealth(samples: readonly SettlementSample[], fromMs: number, nowMs: number, thresholds: HealthThresholds): RailHealth {
  const sorted = [...samples].filter((sample) => sample.finishedAtMs > fromMs && sample.finishedAtMs <= nowMs).sort((a, b) => a.finishedAtMs - b.finishedAtMs);
  const moments = new Set<number>();
  for (const sample of sorted) {
    moments.add(sample.finishedAtMs);
    const leaves = sample.finishedAtMs + thresholds.recentWindowMs;
    if (leaves <= nowMs) moments.add(leaves);
  }
  let state: 'up' | 'degraded' = 'up';
  let sinceMs: number | null = null;
  for (const atMs of [...moments].sort((a, b) => a - b)) {
    const next = nextState(state, recentWindow(sorted, atMs, thresholds), thresholds);
    if (next !== state) {
      state = next;
      sinceMs = atMs;
    }
  }
  return { state, sinceMs, recent: recentWindow(sorted, nowMs, thresholds) };
}

/**
 * How much of the corridor's payouts the rail's liquidity covers, never the amount: `exhausted`
 * when it cannot pay the corridor's smallest payout (or nothing at all), `low` when it covers fewer
 * than `lowMultiple` (a whole number) of its largest (or of its smallest when it has no largest),
 * `ok` otherwise; `unknown` before the first reading. Exact decimals throughout.
 */
export function liquidityLevel(amount: Decimal | null, bounds: { readonly min: Decimal | null; readonly max: Decimal | null }, lowMultiple: number): LiquidityLevel {
  if (amount === null) return 'unknown';
  if (!isPositive(amount) || (bounds.min !== null && compare(amount, bounds.min) < 0)) return 'exhausted';
  const unit = bounds.max ?? bounds.min;
  if (unit !== null && compare(amount, multiply(unit, decimal(BigInt(lowMultiple), 0), unit.scale, 'halfEven')) < 0) return 'low';
  return 'ok';
}
