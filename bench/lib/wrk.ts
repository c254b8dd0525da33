// The wrk driver of the load generator (bench/lib/load.ts). wrk (Debian package, C, one thread per
// core) is the bench's default: autocannon is one Node thread and spends more CPU per response
// than the bare-uWS baseline itself, so it capped that baseline at about a third of what the box
// serves. wrk is driven by a Lua script (bench/lib/wrk-driver.lua) that cycles through the
// workload's requests, counts statuses, optionally collects a JSON field of 200 answers, and
// prints one result block when done. wrk is its own process, so its CPU is never the server's;
// it is read from the waiting shell's /proc counters of reaped children.
//
// What wrk cannot do, and what the bench does about it:
// - per-tag statistics (a response cannot be matched to its request in wrk's Lua API): workloads
//   that need `perTag` (mixed) keep autocannon (`LoadSpec.driver`);
// - a request cap: wrk stops on duration only (the phases are ≤ 10 s);
// - sub-second durations: phases are rounded up to whole seconds;
// - latency percentiles come from wrk's own per-response histogram (1 µs resolution), not from
//   raw samples.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Collected, LoadPhase, LoadRequest, LoadResult, LoadSpec } from './load.ts';
import { round3 } from './stats.ts';

const driverScript = fileURLToPath(new URL('./wrk-driver.lua', import.meta.url));
const wrkPaths = ['/usr/bin/wrk', '/usr/local/bin/wrk'];
/** Threads of wrk: one per core of this 2-core box, never more than connections. */
const threadsMax = 2;
/** Beyond the phase's duration: start-up, connection set-up, the result block. */
const deadlineSlackMs = 30_000;
/** /proc/<pid>/stat ticks per second (USER_HZ). */
const ticksPerSecond = 100;

export function wrkPath(): string | null {
  return wrkPaths.find((path) => existsSync(path)) ?? null;
}

/** One request per line: method, path, body ('' for none), then header name/value pairs; tab-separated. */
function requestLine(request: LoadRequest): string {
  const headers: string[] = [];
  const all = request.body === undefined ? request.headers : { 'content-type': 'application/json', ...request.headers };
  for (const [name, value] of Object.entries(all)) headers.push(name, value);
  const fields = [request.method, request.path, request.body ?? '', ...headers];
  for (const field of fields) {
    if (/[\t\n\r]/.test(field)) throw new Error('a wrk request field may not contain tabs or line breaks');
  }
  return fields.join('\t');
}

interface WrkOutput {
  readonly requests: number;
  readonly durationUs: number;
  readonly timeouts: number;
  readonly connectionErrors: number;
  readonly latencyUs: { readonly min: number; readonly mean: number; readonly max: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly p999: number };
  readonly statusCodes: ReadonlyMap<number, number>;
  readonly collected: readonly Collected[];
  readonly cpuMs: number;
}

/** Parses the driver's result block (`key value` lines between markers) and the shell's stat line. */
function parseOutput(stdout: string): WrkOutput {
  const start = stdout.indexOf('--- wrk-result ---');
  const end = stdout.indexOf('--- wrk-end ---');
  if (start < 0 || end < start) throw new Error(`wrk printed no result block: ${stdout.slice(0, 500)}`);
  const values = new Map<string, number>();
  const statusCodes = new Map<number, number>();
  const collected: Collected[] = [];
  for (const line of stdout.slice(start, end).split('\n').slice(1)) {
    const [key, first, second] = line.split(' ');
    if (key === undefined || first === undefined) continue;
    if (key === 'status') statusCodes.set(Number(first), Number(second));
    else if (key === 'collected') collected.push({ index: Number(first), value: second ?? '' });
    else values.set(key, Number(first));
  }
  const value = (name: string): number => values.get(name) ?? 0;
  // The shell's own /proc/<pid>/stat after waiting for wrk: fields 16–17 (cutime, cstime) hold wrk's CPU.
  const statLine = stdout.slice(end).split('\n').find((line) => line.includes(') ')) ?? '';
  const statFields = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
  const cpuTicks = Number(statFields[13]) + Number(statFields[14]);
  return {
    requests: value('requests'),
    durationUs: value('duration_us'),
    timeouts: value('timeouts'),
    connectionErrors: value('connect_errors') + value('read_errors') + value('write_errors'),
    latencyUs: { min: value('lat_min'), mean: value('lat_mean'), max: value('lat_max'), p50: value('lat_p50'), p90: value('lat_p90'), p99: value('lat_p99'), p999: value('lat_p999') },
    statusCodes,
    collected,
    cpuMs: Number.isFinite(cpuTicks) ? (cpuTicks * 1000) / ticksPerSecond : 0,
  };
}

/** Runs wrk for one phase and returns the load generator's result for it. */
export async function runWrkPhase(spec: LoadSpec, phase: LoadPhase, wrk: string): Promise<LoadResult> {
  const scratch = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const requestsFile = join(scratch, 'requests.tsv');
    writeFileSync(requestsFile, `${phase.requests.map(requestLine).join('\n')}\n`);
    const collectField = phase.requests.find((request) => request.collectField !== undefined)?.collectField ?? '';
    const durationS = Math.max(1, Math.ceil(phase.durationS));
    const threads = Math.max(1, Math.min(threadsMax, spec.connections));
    const args = [
      `-t${threads}`,
      `-c${spec.connections}`,
      `-d${durationS}s`,
      `--timeout=${Math.max(1, Math.ceil(spec.timeoutS))}s`,
      '-s',
      driverScript,
      spec.url,
    ];
    // `sh` waits for wrk, then prints its own stat line: the children's CPU counters then include wrk.
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = spawn('sh', ['-c', '"$0" "$@"; status=$?; cat /proc/$$/stat; exit $status', wrk, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, BENCH_WRK_REQUESTS: requestsFile, BENCH_WRK_COLLECT: collectField, BENCH_WRK_THREADS: String(threads) },
      });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), durationS * 1000 + deadlineSlackMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve(out);
        else reject(new Error(`wrk exited with ${String(code ?? signal)}: ${err.slice(0, 500)}${out.slice(0, 500)}`));
      });
    });
    return toLoadResult(spec, parseOutput(stdout));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function toLoadResult(spec: LoadSpec, output: WrkOutput): LoadResult {
  const expected = spec.expectedStatuses === undefined ? null : new Set(spec.expectedStatuses);
  let non2xx = 0;
  let unexpected = 0;
  let responses = 0;
  const statusCodes: Record<string, number> = {};
  for (const [status, count] of [...output.statusCodes].sort((a, b) => a[0] - b[0])) {
    statusCodes[String(status)] = count;
    responses += count;
    const ok = status >= 200 && status <= 299;
    if (!ok) non2xx += count;
    if (expected === null ? !ok : !expected.has(status)) unexpected += count;
  }
  const elapsedS = output.durationUs / 1e6;
  const ms = (us: number): number => round3(us / 1000);
  return {
    connections: spec.connections,
    elapsedS: round3(elapsedS),
    responses,
    throughput: elapsedS > 0 ? Math.round((responses / elapsedS) * 10) / 10 : 0,
    latency: {
      samples: responses,
      minMs: ms(output.latencyUs.min),
      meanMs: ms(output.latencyUs.mean),
      p50Ms: ms(output.latencyUs.p50),
      p90Ms: ms(output.latencyUs.p90),
      p99Ms: ms(output.latencyUs.p99),
      p999Ms: ms(output.latencyUs.p999),
      maxMs: ms(output.latencyUs.max),
    },
    latencySamplesDropped: 0,
    statusCodes,
    non2xx,
    unexpected,
    timeouts: output.timeouts,
    connectionErrors: output.connectionErrors,
    perTag: {},
    collected: output.collected,
    generatorCpuMs: Math.round(output.cpuMs),
  };
}
