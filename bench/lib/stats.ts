// Latency statistics from raw samples. The load generator keeps every response's latency (in
// milliseconds, sub-microsecond resolution) up to a bound, so percentiles here are exact order
// statistics, not histogram buckets: autocannon's own histogram rounds to whole milliseconds, which
// is too coarse for a 0.6 ms target.

export interface LatencySummary {
  readonly samples: number;
  readonly minMs: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

export const emptyLatency: LatencySummary = { samples: 0, minMs: 0, meanMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0, p999Ms: 0, maxMs: 0 };

/** Nearest-rank percentile of sorted values (q in [0, 1]). */
export function percentileOfSorted(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  if (!(q >= 0 && q <= 1)) throw new RangeError(`percentile ${q} is not in [0, 1]`);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? 0;
}

/** Summarises the first `count` samples (sorts a copy; the input is left alone). */
export function summariseLatency(samples: Float64Array, count = samples.length): LatencySummary {
  const n = Math.min(count, samples.length);
  if (n === 0) return emptyLatency;
  const sorted = samples.slice(0, n).sort();
  let sum = 0;
  for (let index = 0; index < n; index += 1) sum += sorted[index] ?? 0;
  return {
    samples: n,
    minMs: round3(sorted[0] ?? 0),
    meanMs: round3(sum / n),
    p50Ms: round3(percentileOfSorted(sorted, 0.5)),
    p90Ms: round3(percentileOfSorted(sorted, 0.9)),
    p99Ms: round3(percentileOfSorted(sorted, 0.99)),
    p999Ms: round3(percentileOfSorted(sorted, 0.999)),
    maxMs: round3(sorted[n - 1] ?? 0),
  };
}

/** Three decimals: microsecond resolution for milliseconds, enough for every number we report. */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** `value / baseline`, or null when the baseline is missing or zero (never Infinity in JSON). */
export function ratio(value: number, baseline: number | null | undefined): number | null {
  if (baseline === null || baseline === undefined || !(baseline > 0) || !Number.isFinite(value)) return null;
  return round3(value / baseline);
}
