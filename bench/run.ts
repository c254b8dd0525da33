// `npm run bench` — every scenario, full size; `npm run bench -- <scenario> [<scenario> …]` — only
// those (plus the baselines they are compared with); `--quick` — the tiny configuration the test
// suite runs. Options (all optional): --connections=1,16,64,256 --duration=5 --warmup=1
// --partners=128 --workers=1,2 --shards=64 --shard-processes=1 --pg-url=… --pg-pool=16
// --log-level=warn --out=bench/results --cpu-prof=<dir> --data-root=<dir>. See bench/README.md.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fullMicroOptions, tinyMicroOptions } from './lib/micro.ts';
import { runBench, scenarioNames, type BenchOptions, type ScenarioName } from './lib/runner.ts';
import { postgresUrlDefault } from './baselines/postgres.ts';
import { wrkPath } from './lib/wrk.ts';

const durationSMax = 10;
const startedAtMs = Date.now();

/** Time since the bench started, `m:ss`, prefixed to every line. */
function elapsed(): string {
  const seconds = Math.floor((Date.now() - startedAtMs) / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

function numberList(text: string, name: string): number[] {
  const values = text.split(',').map((part) => Number(part.trim()));
  if (values.length === 0 || values.some((value) => !Number.isInteger(value) || value < 0 || value > 4096)) {
    throw new Error(`--${name} must be a comma-separated list of integers`);
  }
  return values;
}

function positive(text: string, name: string, max: number): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || value > max) throw new Error(`--${name} must be a number in (0, ${max}]`);
  return value;
}

function nonNegative(text: string, name: string, max: number): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || value > max) throw new Error(`--${name} must be a number in [0, ${max}]`);
  return value;
}

function redisMode(text: string): 'single' | 'cluster' {
  if (text !== 'single' && text !== 'cluster') throw new Error('--redis must be single or cluster');
  return text;
}

export function parseArgs(argv: readonly string[]): BenchOptions {
  const flags = new Map<string, string>();
  const scenarios: ScenarioName[] = [];
  for (const arg of argv) {
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (match !== null) flags.set(match[1] ?? '', match[2] ?? 'true');
    else if ((scenarioNames as readonly string[]).includes(arg)) scenarios.push(arg as ScenarioName);
    else throw new Error(`unknown scenario ${JSON.stringify(arg)}; scenarios: ${scenarioNames.join(', ')}`);
  }
  const known = ['quick', 'connections', 'duration', 'warmup', 'partners', 'workers', 'shards', 'shard-processes', 'pg-url', 'pg-pool', 'log-level', 'out', 'cpu-prof', 'seed', 'data-root', 'settle', 'redis'];
  for (const flag of flags.keys()) if (!known.includes(flag)) throw new Error(`unknown option --${flag}; options: ${known.map((name) => `--${name}`).join(' ')}`);
  const quick = flags.has('quick');
  const get = (name: string): string | undefined => flags.get(name);
  const defaultOut = fileURLToPath(new URL('./results/', import.meta.url));
  return {
    scenarios,
    quick,
    connections: numberList(get('connections') ?? (quick ? '4' : '1,16,64,256'), 'connections').filter((value) => value > 0),
    durationS: positive(get('duration') ?? (quick ? '1' : '5'), 'duration', durationSMax),
    warmupS: Number(get('warmup') ?? (quick ? '0.3' : '1')),
    settleS: nonNegative(get('settle') ?? (quick ? '0' : '5'), 'settle', durationSMax),
    timeoutS: 10,
    requestsMax: 2_000_000,
    partners: positive(get('partners') ?? (quick ? '32' : '128'), 'partners', 10_000),
    shardCount: positive(get('shards') ?? '64', 'shards', 16_384),
    shardProcesses: Number(get('shard-processes') ?? (quick ? '0' : '1')),
    workerSweep: numberList(get('workers') ?? '1,2', 'workers'),
    workerSweepConnections: 64,
    seedTransactions: Number(get('seed') ?? (quick ? '16' : '512')),
    pgUrl: get('pg-url') ?? process.env['BENCH_PG_URL'] ?? postgresUrlDefault,
    pgPool: positive(get('pg-pool') ?? '16', 'pg-pool', 1_000),
    logLevel: get('log-level') ?? 'warn',
    outDir: get('out') ?? defaultOut,
    micro: quick ? tinyMicroOptions : fullMicroOptions,
    ...(get('cpu-prof') === undefined ? {} : { cpuProfileDir: get('cpu-prof') ?? '' }),
    ...(get('data-root') === undefined ? {} : { dataRoot: get('data-root') ?? '' }),
    redis: redisMode(get('redis') ?? 'single'),
    log: (line) => process.stdout.write(`[${elapsed()}] ${line}\n`),
  };
}

/**
 * wrk is the load generator (bench/lib/wrk.ts); like redis-server it comes from Debian's packages.
 * Installed here when missing and we may (root with apt-get); otherwise the bench falls back to
 * autocannon and says so in the results (`config.loadGenerator`).
 */
function ensureWrk(log: (line: string) => void): void {
  if (wrkPath() !== null) return;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (root && spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0) {
    log('wrk missing: installing it from Debian\'s packages (apt-get install -y wrk)');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: 'inherit', env });
  }
  if (wrkPath() === null) log('wrk missing and not installable here: the load is driven by autocannon (one Node thread; it caps the bare-uWS baseline)');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  let options: BenchOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  ensureWrk(options.log);
  runBench(options).then(
    // Child processes are stopped by then; exit explicitly so no stray handle keeps the bench alive.
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
