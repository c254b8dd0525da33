// The results file: one JSON document per run (bench/results/<timestamp>.json), its shape, a
// validator (the smoke test checks every run writes a valid one) and the machine description.
import { cpus, freemem, loadavg, tmpdir, totalmem } from 'node:os';
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { TagStats } from './load.ts';
import type { MicroResult } from './micro.ts';
import type { LatencySummary } from './stats.ts';

export const resultsSchemaVersion = 'bench-results/1';

export interface MachineInfo {
  readonly nproc: number;
  readonly cpuModel: string;
  readonly memoryBytes: number;
  readonly freeMemoryBytesAtStart: number;
  readonly node: string;
  readonly platform: string;
  /** 1, 5 and 15 minute load averages when the run started (other work on the machine skews numbers). */
  readonly loadAverageAtStart: readonly number[];
  /** fdatasync of a 4 KiB write in the temp directory (where DATA_DIR lives): the floor of a durable commit. */
  readonly fdatasyncMs: { readonly p50: number; readonly p99: number };
}

/** Times `samples` fdatasync calls after a 4 KiB write each, in a scratch file under the temp dir. */
export function measureFdatasync(samples = 100): { p50: number; p99: number } {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fsync-'));
  const times: number[] = [];
  try {
    const fd = openSync(join(dir, 'probe.bin'), 'w');
    const block = Buffer.alloc(4096, 1);
    try {
      for (let index = 0; index < samples; index += 1) {
        writeSync(fd, block, 0, block.length, (index % 16) * block.length);
        const started = process.hrtime.bigint();
        fdatasyncSync(fd);
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
    } finally {
      closeSync(fd);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  const at = (q: number): number => Math.round((times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)] ?? 0) * 1000) / 1000;
  return { p50: at(0.5), p99: at(0.99) };
}

export interface HttpErrors {
  readonly non2xx: number;
  /** Statuses outside the workload's expected set (e.g. a 400 that is not a cap refusal counts here). */
  readonly unexpected: number;
  readonly timeouts: number;
  readonly connectionErrors: number;
}

/** One measured point: one system, one workload, one concurrency. */
export interface HttpPoint {
  readonly scenario: string;
  /** `service` or the baseline's name: `bare-uws`, `transport`, `postgres`. */
  readonly system: string;
  readonly topology: string;
  readonly connections: number;
  readonly durationS: number;
  readonly responses: number;
  /** Responses per second. */
  readonly throughput: number;
  readonly latency: LatencySummary;
  readonly errors: HttpErrors;
  readonly statusCodes: Readonly<Record<string, number>>;
  readonly perTag: Readonly<Record<string, TagStats>>;
  /** Throughput ratio to each same-run baseline at the same concurrency (null: not measured). */
  readonly ratios: Readonly<Record<string, number | null>>;
  /** CPU microseconds per response of each process in the measured phase (`load-generator` included). */
  readonly cpuUsPerResponse: Readonly<Record<string, number | null>>;
  /** Redis commands per response by command (INFO commandstats around the measured phase); systems on Redis only. */
  readonly redisCallsPerResponse?: Readonly<Record<string, number>>;
  readonly loadAverage1m: number;
  readonly notes: readonly string[];
}

export interface CapCheck {
  readonly system: string;
  readonly scenario: string;
  readonly connections: number;
  readonly acceptedTransactions: number;
  /** Sum of accepted target amounts, COP. */
  readonly acceptedAmount: string;
  readonly methodDailyCap: string;
  readonly usersChecked: number;
  readonly violations: readonly string[];
  /** Observations that are not cap violations (e.g. an acceptance whose answer timed out). */
  readonly notes: readonly string[];
  readonly ok: boolean;
  readonly source: string;
}

export interface TargetCheck {
  readonly name: string;
  readonly measured: number | null;
  readonly target: string;
  readonly met: boolean | null;
  /**
   * What this machine allows at best for this target, from the baselines of the same run (absent
   * when the target has no such bound). The service's path contains the transport baseline's
   * path, so the service cannot beat it: a target the bound already misses cannot be met on this
   * machine by any change to our logic.
   */
  readonly bound?: TargetBound;
  /** How the measured value splits, when that explains it (e.g. CPU per response of each side). */
  readonly explanation?: string;
}

export interface TargetBound {
  /** The best value reachable here (null when its inputs were not measured). */
  readonly value: number | null;
  /** Whether that best value meets the target (null when not measured). */
  readonly reachable: boolean | null;
  /** How the bound is derived, in words. */
  readonly basis: string;
}

export interface Skipped {
  readonly scenario: string;
  readonly reason: string;
}

export interface BenchResults {
  readonly schema: typeof resultsSchemaVersion;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly quick: boolean;
  readonly machine: MachineInfo;
  readonly config: Readonly<Record<string, unknown>>;
  readonly micro: readonly MicroResult[];
  readonly http: readonly HttpPoint[];
  readonly capChecks: readonly CapCheck[];
  readonly targets: readonly TargetCheck[];
  readonly skipped: readonly Skipped[];
  /** `--redis=cluster`: POST /quote on a Redis Cluster next to one Redis server, round by round. */
  readonly cluster?: readonly ClusterComparison[];
}

/** One round of `--redis=cluster`: the same quote load on one Redis server, then on the cluster. */
export interface ClusterComparison {
  readonly connections: number;
  readonly topology: string;
  /** Responses per second. */
  readonly single: number;
  readonly cluster: number;
  /** cluster ÷ single (the target: ≥ 0.85). */
  readonly ratio: number | null;
  /** Redis commands per response, all commands together (by command in each point's `redisCallsPerResponse`). */
  readonly redisCallsPerResponse: { readonly single: number | null; readonly cluster: number | null };
  /** Load average (1 min) at the end of each of the two points. */
  readonly loadAverage1m: { readonly single: number; readonly cluster: number };
}

export function machineInfo(): MachineInfo {
  const cpuList = cpus();
  return {
    nproc: cpuList.length,
    cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
    memoryBytes: totalmem(),
    freeMemoryBytesAtStart: freemem(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    loadAverageAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
    fdatasyncMs: measureFdatasync(),
  };
}

export function loadAverage1m(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}

/** `2026-11-23T02-41-20Z`: sortable and safe in file names. */
export function timestampForFile(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-');
}

export function writeResults(dir: string, results: BenchResults, svg: string): { json: string; svg: string } {
  mkdirSync(dir, { recursive: true });
  const base = timestampForFile(new Date(results.startedAt));
  const jsonPath = join(dir, `${base}.json`);
  const svgPath = join(dir, `${base}.svg`);
  writeFileSync(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(svgPath, svg);
  return { json: jsonPath, svg: svgPath };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** Problems with a parsed results document (empty when it is valid). */
export function validateResults(value: unknown): string[] {
  const problems: string[] = [];
  if (!isRecord(value)) return ['results are not a JSON object'];
  if (value['schema'] !== resultsSchemaVersion) problems.push(`schema is not ${resultsSchemaVersion}`);
  for (const field of ['startedAt', 'finishedAt']) {
    if (typeof value[field] !== 'string' || Number.isNaN(Date.parse(String(value[field])))) problems.push(`${field} is not a date`);
  }
  const machine = value['machine'];
  if (!isRecord(machine) || !isFiniteNumber(machine['nproc']) || typeof machine['cpuModel'] !== 'string') problems.push('machine is incomplete');
  for (const field of ['micro', 'http', 'capChecks', 'targets', 'skipped']) {
    if (!Array.isArray(value[field])) problems.push(`${field} is not an array`);
  }
  for (const [index, item] of (Array.isArray(value['micro']) ? (value['micro'] as unknown[]) : []).entries()) {
    if (!isRecord(item) || !isFiniteNumber(item['opsPerSecond']) || typeof item['name'] !== 'string') problems.push(`micro[${index}] is incomplete`);
    else if (!item['isBaseline'] && !isFiniteNumber(item['ratioToBaseline'])) problems.push(`micro[${index}] has no ratio to its baseline`);
  }
  for (const [index, item] of (Array.isArray(value['http']) ? (value['http'] as unknown[]) : []).entries()) {
    if (!isRecord(item)) {
      problems.push(`http[${index}] is not an object`);
      continue;
    }
    const latency = item['latency'];
    const errors = item['errors'];
    if (!isFiniteNumber(item['throughput']) || !isFiniteNumber(item['connections'])) problems.push(`http[${index}] lacks throughput or connections`);
    if (!isRecord(latency) || !['p50Ms', 'p99Ms', 'p999Ms'].every((field) => isFiniteNumber(latency[field]))) {
      problems.push(`http[${index}] lacks p50/p99/p99.9 latency`);
    }
    if (!isRecord(errors) || !['non2xx', 'timeouts', 'unexpected', 'connectionErrors'].every((field) => isFiniteNumber(errors[field]))) {
      problems.push(`http[${index}] lacks error counts`);
    }
    if (!isRecord(item['ratios'])) problems.push(`http[${index}] lacks ratios`);
  }
  return problems;
}
