// `npm run soak` — memory under sustained load: the service as an operator deploys it (one
// ROLE=edge and one ROLE=shard process over a private Redis, the embedded store on local disk),
// each process under a V8 heap limit (`--max-old-space-size`, as the manifests set it), driven with
// POST /quote by wrk for `--minutes` (every quote is a new actor, so the shard worker's actors grow
// until the byte or count cap passivates them). Every second it samples each process's memory from
// /proc (proportional set, anonymous and file-backed apart: the store's memory map is file-backed), and
// every ten seconds the shard worker's report in /metrics (actors in memory, their estimated
// bytes, heap used) and the store's file size. It fails (exit 1) when any process's anonymous
// memory passes `--limit-mb` (the container limit the manifests give it). File-backed pages are
// reported but not held to the limit: they are the embedded store's page cache, clean once synced,
// which the kernel takes back under memory pressure (a container's cgroup reclaims them before it
// kills anything); they grow with the store, not with the load.
//
// Options: --minutes=10 --heap-mb=384 --limit-mb=512 --connections=32 --partners=16
// --out=bench/results. The result goes to <out>/soak-<time>.json; bench/README.md ("Soak") and
// deploy/README.md ("Sizing") quote its figures.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis } from '../test/support/redis-server.ts';
import { benchPartners, startBenchService, type BenchService } from './lib/service.ts';
import { runWrkPhase, wrkPath } from './lib/wrk.ts';
import { quoteRequests } from './http/workloads.ts';
import type { NodeProcess } from './lib/processes.ts';

interface SoakOptions {
  readonly minutes: number;
  readonly heapMb: number;
  readonly limitMb: number;
  readonly connections: number;
  readonly partners: number;
  readonly out: string;
}

function options(argv: readonly string[]): SoakOptions {
  const value = (name: string, fallback: number, max: number): number => {
    const found = argv.find((arg) => arg.startsWith(`--${name}=`));
    if (found === undefined) return fallback;
    const parsed = Number(found.slice(name.length + 3));
    if (!Number.isFinite(parsed) || parsed <= 0 || parsed > max) throw new Error(`--${name} must be a number in (0, ${max}]`);
    return parsed;
  };
  const out = argv.find((arg) => arg.startsWith('--out='))?.slice('--out='.length) ?? 'bench/results';
  return {
    minutes: value('minutes', 10, 240),
    heapMb: value('heap-mb', 384, 16_384),
    limitMb: value('limit-mb', 512, 65_536),
    connections: value('connections', 32, 1_024),
    partners: value('partners', 16, 128),
    out,
  };
}

interface ProcessMemory {
  /** Resident set as `ps` shows it. */
  readonly rssMb: number;
  /** Proportional set: each resident page once, shared ones split between the processes mapping them. */
  readonly pssMb: number;
  /** Anonymous memory (the V8 heap, native buffers): what only this process holds. */
  readonly anonMb: number;
  /** File-backed pages, counted once (the code, and the embedded store's page cache). */
  readonly fileMb: number;
}

/**
 * Memory of `pid` from /proc/<pid>/smaps_rollup, in MB; null once it has exited. RSS alone
 * misleads here: lmdb-js maps the store's file again from offset 0 each time it grows, keeping the
 * earlier mappings, so the same page of the file is counted once per mapping (ten mappings after
 * a few minutes). PSS counts it once.
 */
function processMemory(pid: number): ProcessMemory | null {
  let rollup: string;
  try {
    rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return null;
  }
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
  const mb = (kilobytes: number): number => Math.round(kilobytes / 102.4) / 10;
  return { rssMb: mb(kb('Rss')), pssMb: mb(kb('Pss')), anonMb: mb(kb('Pss_Anon')), fileMb: mb(kb('Pss_File') + kb('Pss_Shmem')) };
}

/** Bytes of every file under `dir` (the embedded store's data and lock files). */
function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(path) : statSync(path).size;
  }
  return total;
}

interface WorkerReport {
  readonly actorsInMemory: number;
  readonly actorBytesMb: number;
  readonly heapUsedMb: number;
}

/** The shard worker's last report, from the edge's /metrics (one worker in this topology). */
async function workerReport(service: BenchService): Promise<WorkerReport | null> {
  try {
    const response = await fetch(`${service.baseUrl}/metrics`, { headers: { 'x-ops-api-key': service.opsApiKey }, signal: AbortSignal.timeout(5_000) });
    const text = await response.text();
    const metric = (name: string): number => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    return {
      actorsInMemory: metric('shard_worker_actors_in_memory'),
      actorBytesMb: Math.round(metric('shard_worker_actor_bytes_in_memory') / 104_857.6) / 10,
      heapUsedMb: Math.round(metric('shard_worker_heap_used_bytes') / 104_857.6) / 10,
    };
  } catch {
    return null;
  }
}

interface Sample {
  readonly atS: number;
  readonly processes: Record<string, ProcessMemory | null>;
}

interface Checkpoint {
  readonly atS: number;
  readonly quotesPerSecond: number;
  readonly non200: number;
  readonly storeMb: number;
  readonly worker: WorkerReport | null;
}

async function main(): Promise<void> {
  const soak = options(process.argv.slice(2));
  const wrk = wrkPath();
  if (wrk === null) throw new Error('the soak needs wrk (apt-get install wrk)');
  const redis = await startRedis();
  const partners = benchPartners(soak.partners);
  let service: BenchService | undefined;
  const samples: Sample[] = [];
  const checkpoints: Checkpoint[] = [];
  const startedAtMs = Date.now();
  const atS = (): number => Math.round((Date.now() - startedAtMs) / 100) / 10;
  let sampler: NodeJS.Timeout | undefined;
  // Interrupted (Ctrl-C, a timeout's SIGTERM): the service's processes and Redis are stopped too.
  const interrupted = (): void => {
    clearInterval(sampler);
    void Promise.allSettled([service?.stop(), redis.stop()]).then(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    service = await startBenchService({ redisUrl: redis.url, partners, shardProcesses: 1, nodeArgs: [`--max-old-space-size=${soak.heapMb}`] });
    const running = service;
    const byName = (proc: NodeProcess): [string, ProcessMemory | null] => [proc.name, processMemory(proc.pid)];
    sampler = setInterval(() => samples.push({ atS: atS(), processes: Object.fromEntries(running.processes.map(byName)) }), 1_000);
    const requests = quoteRequests(partners);
    const endAtMs = Date.now() + soak.minutes * 60_000;
    while (Date.now() < endAtMs) {
      const durationS = Math.max(1, Math.min(10, Math.ceil((endAtMs - Date.now()) / 1000)));
      const result = await runWrkPhase({ url: running.baseUrl, connections: soak.connections, measure: { durationS, requests }, requestsMax: Number.MAX_SAFE_INTEGER, timeoutS: 10 }, { durationS, requests }, wrk);
      const ok = result.statusCodes['200'] ?? 0;
      const checkpoint: Checkpoint = {
        atS: atS(),
        quotesPerSecond: Math.round(ok / durationS),
        non200: result.responses - ok + result.timeouts,
        storeMb: Math.round(directoryBytes(running.dataDir) / 104_857.6) / 10,
        worker: await workerReport(running),
      };
      checkpoints.push(checkpoint);
      const last = samples.at(-1)?.processes ?? {};
      console.log(
        `${checkpoint.atS.toFixed(0).padStart(5)} s  ${String(checkpoint.quotesPerSecond).padStart(5)} quotes/s  ` +
          `${Object.entries(last).map(([name, memory]) => `${name} pss ${memory?.pssMb ?? '-'} MB (anon ${memory?.anonMb ?? '-'}, file ${memory?.fileMb ?? '-'}; rss ${memory?.rssMb ?? '-'})`).join('  ')}  ` +
          `actors ${checkpoint.worker?.actorsInMemory ?? '-'} (${checkpoint.worker?.actorBytesMb ?? '-'} MB est.), heap ${checkpoint.worker?.heapUsedMb ?? '-'} MB, store ${checkpoint.storeMb} MB`,
      );
      if (running.processes.some((proc) => proc.exited())) throw new Error(`a process exited during the soak: ${running.processes.filter((proc) => proc.exited()).map((proc) => `${proc.name}: ${proc.output().slice(-2_000)}`).join('\n')}`);
    }
  } finally {
    clearInterval(sampler);
    await service?.stop();
    await redis.stop();
  }
  const peak: Record<string, ProcessMemory> = {};
  for (const sample of samples) {
    for (const [name, memory] of Object.entries(sample.processes)) {
      if (memory === null) continue;
      const before = peak[name];
      if (before === undefined || memory.anonMb > before.anonMb) peak[name] = memory;
    }
  }
  const over = Object.entries(peak).filter(([, memory]) => memory.anonMb > soak.limitMb);
  const result = { kind: 'soak', at: new Date(startedAtMs).toISOString(), options: soak, peak, checkpoints, samples, withinLimit: over.length === 0 };
  mkdirSync(soak.out, { recursive: true });
  const file = join(soak.out, `soak-${new Date(startedAtMs).toISOString().replace(/[:.]/g, '-').slice(0, 19)}Z.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 1)}\n`);
  console.log(`peak anonymous memory: ${Object.entries(peak).map(([name, memory]) => `${name} pss ${memory.pssMb} MB (anon ${memory.anonMb}, file ${memory.fileMb}; rss ${memory.rssMb})`).join(', ')}; limit ${soak.limitMb} MB; written to ${file}`);
  if (over.length > 0) {
    console.error(`over the limit: ${over.map(([name]) => name).join(', ')}`);
    process.exitCode = 1;
  }
}

await main();
