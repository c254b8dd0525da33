// Runs the micro-benchmark suites (bench/micro/*.ts) with tinybench. Each suite has a baseline
// measured in the same run (JSON.parse + JSON.stringify of the same payload, or a no-op), and every
// case reports ops/s and its ratio to that baseline: absolute numbers move with the machine, the
// ratio much less. Fast operations run `opsPerCall` times per timed call so that one sample is
// well above the timer's resolution.
import { Bench } from 'tinybench';
import { ratio, round3 } from './stats.ts';

export interface MicroCase {
  readonly name: string;
  /** Does `opsPerCall` operations. Must return something derived from the work (kept alive). */
  readonly run: () => unknown;
  readonly opsPerCall: number;
}

export interface MicroSuite {
  readonly group: string;
  /** What the baseline is, in words (printed and stored). */
  readonly baselineLabel: string;
  readonly baseline: MicroCase;
  readonly cases: readonly MicroCase[];
}

export type MicroSuiteLoad = { readonly ok: true; readonly suite: MicroSuite } | { readonly ok: false; readonly group: string; readonly reason: string };

export interface MicroResult {
  readonly group: string;
  readonly name: string;
  readonly isBaseline: boolean;
  readonly opsPerSecond: number;
  /** Mean time of one operation, nanoseconds. */
  readonly meanNs: number;
  /** 99th percentile of one timed call divided by opsPerCall, nanoseconds. */
  readonly p99Ns: number;
  readonly samples: number;
  readonly baseline: string;
  readonly ratioToBaseline: number | null;
}

export interface MicroOptions {
  /** Time budget per case, ms (tinybench `time`). */
  readonly timeMs: number;
  /** Minimum timed calls per case (tinybench `iterations`). */
  readonly iterations: number;
  readonly warmupMs: number;
}

export const fullMicroOptions: MicroOptions = { timeMs: 700, iterations: 64, warmupMs: 150 };
export const tinyMicroOptions: MicroOptions = { timeMs: 5, iterations: 3, warmupMs: 1 };

/** A sink the JIT cannot prove unused, so benchmarked work is not eliminated. */
let sink: unknown = null;
export function keep(value: unknown): void {
  sink = value;
}
export function lastKept(): unknown {
  return sink;
}

export async function runMicroSuite(suite: MicroSuite, options: MicroOptions): Promise<MicroResult[]> {
  const bench = new Bench({
    time: options.timeMs,
    iterations: options.iterations,
    warmup: true,
    warmupTime: options.warmupMs,
    warmupIterations: Math.max(1, Math.min(options.iterations, 16)),
    throws: true,
  });
  const all = [suite.baseline, ...suite.cases];
  for (const item of all) {
    bench.add(item.name, () => {
      keep(item.run());
    });
  }
  await bench.run();
  const measured = bench.tasks.map((task, index) => {
    const item = all[index];
    const result = task.result;
    if (item === undefined || result.state !== 'completed') {
      throw new Error(`micro bench ${suite.group}/${task.name} did not complete (${result.state})`);
    }
    const periodMs = result.period; // mean time of one timed call
    return {
      item,
      opsPerSecond: periodMs > 0 ? (1000 / periodMs) * item.opsPerCall : 0,
      meanNs: (periodMs * 1e6) / item.opsPerCall,
      p99Ns: (result.latency.p99 * 1e6) / item.opsPerCall,
      samples: task.runs,
    };
  });
  const baselineOps = measured[0]?.opsPerSecond ?? 0;
  return measured.map((entry, index) => ({
    group: suite.group,
    name: entry.item.name,
    isBaseline: index === 0,
    opsPerSecond: Math.round(entry.opsPerSecond),
    meanNs: round3(entry.meanNs),
    p99Ns: round3(entry.p99Ns),
    samples: entry.samples,
    baseline: suite.baselineLabel,
    ratioToBaseline: ratio(entry.opsPerSecond, baselineOps),
  }));
}

/** JSON.parse(JSON.stringify(payload)), `times` times: the usual baseline. */
export function jsonRoundTripCase(name: string, payload: unknown, opsPerCall: number): MicroCase {
  return {
    name,
    opsPerCall,
    run: () => {
      let last: unknown = null;
      for (let index = 0; index < opsPerCall; index += 1) last = JSON.parse(JSON.stringify(payload));
      return last;
    },
  };
}

/** `opsPerCall` calls of `operation`, returning the last result. */
export function repeatedCase(name: string, opsPerCall: number, operation: () => unknown): MicroCase {
  return {
    name,
    opsPerCall,
    run: () => {
      let last: unknown = null;
      for (let index = 0; index < opsPerCall; index += 1) last = operation();
      return last;
    },
  };
}
