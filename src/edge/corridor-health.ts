// Corridor health at the edge (docs/corridor-health.md): GET /public/corridors/health and the
// `corridor_*` families of /metrics answer from one computed snapshot, kept `cacheMs` and computed
// by one request at a time (the others wait for it), so a request costs O(1) however many arrive.
// The figures come from what every process of the deployment shares: the settlement samples the
// transaction actors write to the store when a payout finishes (`settlement_samples`, read newest
// first per payment method, at most `samplesPerMethodMax`), and the rail's liquidity and
// availability as this edge's liquidity view reads them. The decisions are pure
// (src/domain/corridor-health.ts); time is the injected clock's.
import { settlementSamplesCollection } from '../actors/transaction-actor.ts';
import type { EnvConfig } from '../config/env.ts';
import type { PaymentMethod } from '../domain/assets.ts';
import {
  dayMs,
  hourMs,
  liquidityLevel,
  railHealth,
  settlementTimes,
  type HealthThresholds,
  type LiquidityLevel,
  type RailState,
  type SettlementSample,
  type SettlementTimes,
} from '../domain/corridor-health.ts';
import { listCorridors, type Route } from '../domain/corridors.ts';
import type { MetricFamily } from '../lifecycle/metrics.ts';
import type { LiveConfig } from '../ports/context.ts';
import type { LiquidityView } from '../ports/ports.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';

/** Finished payouts read per payment method at most (newest first): the day's figures are over these. */
export const samplesPerMethodMax = 1_000;

export interface CorridorHealthEntry {
  readonly blockchain: string;
  readonly cryptoCurrency: string;
  readonly paymentMethod: PaymentMethod;
  readonly targetCurrency: string;
  readonly rail: { readonly state: RailState; readonly since: string | null; readonly recent_payouts: number; readonly recent_failure_share: number | null };
  readonly settlement: { readonly last_hour: TimesJson; readonly last_day: TimesJson };
  readonly liquidity: LiquidityLevel;
}

interface TimesJson {
  readonly payouts: number;
  readonly p50_ms: number | null;
  readonly p95_ms: number | null;
}

export interface CorridorHealthSnapshot {
  readonly generated_at: string;
  readonly corridors: readonly CorridorHealthEntry[];
}

export interface CorridorHealth {
  snapshot(): Promise<CorridorHealthSnapshot>;
  /** The same figures as /metrics families. */
  metrics(): Promise<MetricFamily[]>;
}

export interface CorridorHealthOptions {
  readonly store: SnapshotStore;
  readonly config: Pick<LiveConfig, 'corridors'>;
  readonly clock: { nowMs(): number };
  readonly liquidity?: LiquidityView;
  /** Only the corridors whose network and asset are active (as GET /public/corridors). */
  readonly active?: (route: Route) => boolean;
  readonly thresholds: HealthThresholds;
  readonly cacheMs: number;
  readonly lowLiquidityMultiple: number;
}

export function healthThresholdsOf(env: EnvConfig): HealthThresholds {
  return {
    recentWindowMs: env.CORRIDOR_HEALTH_WINDOW_MS,
    recentPayoutsMax: env.CORRIDOR_HEALTH_RECENT_PAYOUTS,
    recentPayoutsMin: env.CORRIDOR_HEALTH_MIN_PAYOUTS,
    failureShareDegraded: env.CORRIDOR_HEALTH_FAILURE_SHARE_DEGRADED,
    failureShareRecovered: env.CORRIDOR_HEALTH_FAILURE_SHARE_RECOVERED,
    p95DegradedMs: env.CORRIDOR_HEALTH_P95_DEGRADED_MS,
    p95RecoveredMs: env.CORRIDOR_HEALTH_P95_RECOVERED_MS,
  };
}

interface StoredSample extends SettlementSample {
  readonly network: unknown;
  readonly cryptoCurrency: unknown;
  readonly targetCurrency: unknown;
}

function sampleOf(doc: JsonObject): StoredSample | null {
  const finishedAtMs = doc['finishedAtMs'];
  if (typeof finishedAtMs !== 'number') return null;
  const succeeded = doc['succeeded'] === true;
  const depositAtMs = doc['depositAtMs'];
  const durationMs = succeeded && typeof depositAtMs === 'number' ? Math.max(0, finishedAtMs - depositAtMs) : null;
  return { finishedAtMs, succeeded, durationMs, network: doc['network'], cryptoCurrency: doc['cryptoCurrency'], targetCurrency: doc['targetCurrency'] };
}

function timesJson(times: SettlementTimes): TimesJson {
  return { payouts: times.count, p50_ms: times.p50Ms, p95_ms: times.p95Ms };
}

const stateValue: Readonly<Record<RailState, number>> = { up: 0, degraded: 1, down: 2 };
const liquidityValue: Readonly<Record<LiquidityLevel, number>> = { ok: 0, low: 1, exhausted: 2, unknown: -1 };

/** The snapshot as gauges: one sample per corridor (rail state, liquidity) and per window and quantile. */
export function healthFamilies(snapshot: CorridorHealthSnapshot): MetricFamily[] {
  const labelsOf = (entry: CorridorHealthEntry) => ({ network: entry.blockchain, asset: entry.cryptoCurrency, method: entry.paymentMethod, currency: entry.targetCurrency });
  const settlement = snapshot.corridors.flatMap((entry) =>
    (['last_hour', 'last_day'] as const).flatMap((window) =>
      (['p50', 'p95'] as const).flatMap((quantile) => {
        const value = entry.settlement[window][`${quantile}_ms`];
        return value === null ? [] : [{ labels: { ...labelsOf(entry), window, quantile }, value: value / 1000 }];
      }),
    ),
  );
  return [
    { name: 'corridor_rail_state', type: 'gauge', help: 'Rail state per corridor: 0 up, 1 degraded, 2 down (docs/corridor-health.md).', samples: snapshot.corridors.map((entry) => ({ labels: labelsOf(entry), value: stateValue[entry.rail.state] })) },
    { name: 'corridor_settlement_seconds', type: 'gauge', help: 'Settlement time (deposit seen to payout completed), p50/p95 over the last hour and day.', samples: settlement },
    { name: 'corridor_liquidity_level', type: 'gauge', help: 'Liquidity level per corridor: 0 ok, 1 low, 2 exhausted, -1 unknown (never the amount).', samples: snapshot.corridors.map((entry) => ({ labels: labelsOf(entry), value: liquidityValue[entry.liquidity] })) },
  ];
}

export function createCorridorHealth(options: CorridorHealthOptions): CorridorHealth {
  let cached: { readonly atMs: number; readonly snapshot: CorridorHealthSnapshot } | null = null;
  let computing: Promise<CorridorHealthSnapshot> | null = null;
  /** When this edge first saw each method unavailable (an outage has no stored start). */
  const downSince = new Map<PaymentMethod, number>();

  async function samplesOf(method: PaymentMethod): Promise<StoredSample[]> {
    const page = await options.store.list(settlementSamplesCollection, { where: { paymentMethod: method }, orderBy: 'finishedAtMs', direction: 'desc', limit: samplesPerMethodMax });
    return page.items.map((item) => sampleOf(item.doc)).filter((sample): sample is StoredSample => sample !== null);
  }

  function railOf(method: PaymentMethod, samples: readonly SettlementSample[], nowMs: number): CorridorHealthEntry['rail'] {
    const health = railHealth(samples, nowMs - dayMs, nowMs, options.thresholds);
    const recent = { recent_payouts: health.recent.payouts, recent_failure_share: health.recent.failureShare };
    const available = options.liquidity?.available(method) ?? true;
    if (!available) {
      const since = downSince.get(method) ?? nowMs;
      downSince.set(method, since);
      return { state: 'down', since: new Date(since).toISOString(), ...recent };
    }
    downSince.delete(method);
    return { state: health.state, since: health.sinceMs === null ? null : new Date(health.sinceMs).toISOString(), ...recent };
  }

  async function compute(): Promise<CorridorHealthSnapshot> {
    const nowMs = options.clock.nowMs();
    const routes = listCorridors(options.config.corridors()).filter((route) => options.active?.(route) ?? true);
    const methods = [...new Set(routes.map((route) => route.paymentMethod))];
    const byMethod = new Map(await Promise.all(methods.map(async (method) => [method, await samplesOf(method)] as const)));
    const rails = new Map(methods.map((method) => [method, railOf(method, byMethod.get(method) ?? [], nowMs)] as const));
    const corridors = routes.map((route): CorridorHealthEntry => {
      const mine = (byMethod.get(route.paymentMethod) ?? []).filter(
        (sample) => sample.network === route.network && sample.cryptoCurrency === route.cryptoCurrency && sample.targetCurrency === route.targetCurrency,
      );
      const reading = options.liquidity?.latest(route.paymentMethod) ?? null;
      return {
        blockchain: route.network,
        cryptoCurrency: route.cryptoCurrency,
        paymentMethod: route.paymentMethod,
        targetCurrency: route.targetCurrency,
        rail: rails.get(route.paymentMethod) ?? { state: 'up', since: null, recent_payouts: 0, recent_failure_share: null },
        settlement: { last_hour: timesJson(settlementTimes(mine, nowMs - hourMs, nowMs)), last_day: timesJson(settlementTimes(mine, nowMs - dayMs, nowMs)) },
        liquidity: liquidityLevel(reading?.amount ?? null, { min: route.minAmount, max: route.maxAmount }, options.lowLiquidityMultiple),
      };
    });
    return { generated_at: new Date(nowMs).toISOString(), corridors };
  }

  async function snapshot(): Promise<CorridorHealthSnapshot> {
    const nowMs = options.clock.nowMs();
    if (cached !== null && nowMs - cached.atMs < options.cacheMs && nowMs >= cached.atMs) return cached.snapshot;
    if (computing === null) {
      computing = compute().then(
        (computed) => {
          cached = { atMs: nowMs, snapshot: computed };
          computing = null;
          return computed;
        },
        (error: unknown) => {
          computing = null;
          throw error;
        },
      );
    }
    return computing;
  }

  return { snapshot, metrics: async () => healthFamilies(await snapshot()) };
}
