// Starts the payments service for the HTTP scenarios, the way an operator would: separate
// processes — one `ROLE=edge` (uWebSockets.js) and N `ROLE=shard` workers — all from
// src/main.ts, against one private Redis and one embedded LMDB store in a temp DATA_DIR that the
// processes share (LMDB supports several processes on one machine). The partners file declares
// the bench partners (KYC off, KYB approved) with fresh random keys. `stop()` stops every process
// by its handle and removes the data directory.
//
// Readiness is observed, never slept on: every shard lease held (and spread over all workers),
// then the edge answering GET /public/corridors and POST /quote with 200.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { freePort, http, startNode, waitFor, type NodeProcess } from './processes.ts';

export interface BenchPartner {
  readonly id: string;
  readonly apiKey: string;
}

/** Which program serves the edge: the real composition root, or the stand-in (service-entry.ts). */
export type EdgeEntry = 'src/main.ts' | 'bench/lib/service-entry.ts';

export interface BenchServiceOptions {
  readonly redisUrl: string;
  readonly partners: readonly BenchPartner[];
  /** Number of `ROLE=shard` processes; 0 runs one `ROLE=all` process instead (edge and shard together). */
  readonly shardProcesses: number;
  /** Virtual shards (SHARDS); 64 like the default. */
  readonly shardCount?: number;
  readonly logLevel?: string;
  /** Edge program; `auto` = src/main.ts unless it cannot accept transactions (see service-entry.ts). */
  readonly edgeEntry?: EdgeEntry | 'auto';
  /** Writes V8 CPU profiles of every process into this directory (node --cpu-prof). */
  readonly cpuProfileDir?: string;
  readonly startTimeoutMs?: number;
  /** Where the temp DATA_DIR is created (default: the OS temp dir). `/dev/shm` takes the disk's sync latency out. */
  readonly dataRoot?: string;
  /** Limits of the service (LIMITS_FILE): hot-accept raises the BREB caps so that nothing is refused. */
  readonly limits?: object;
  /** More arguments for every process's `node` (the soak's `--max-old-space-size`). */
  readonly nodeArgs?: readonly string[];
}

export interface BenchService {
  readonly baseUrl: string;
  /** The temp DATA_DIR the processes share (the embedded store's files are in it). */
  readonly dataDir: string;
  /** OPS_API_KEY of the processes (GET /metrics). */
  readonly opsApiKey: string;
  readonly edgeEntry: EdgeEntry;
  readonly topology: string;
  readonly keyPrefix: string;
  readonly processes: readonly NodeProcess[];
  stop(): Promise<void>;
}

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const mainEntry = join(repoRoot, 'src/main.ts');
const benchEntry = join(repoRoot, 'bench/lib/service-entry.ts');
const startTimeoutMsDefault = 120_000;

/** Fresh partners with random keys: `bench-p000`, `bench-p001`, … */
export function benchPartners(count: number): BenchPartner[] {
  return Array.from({ length: count }, (_, index) => ({
    id: `bench-p${String(index).padStart(3, '0')}`,
    apiKey: `bench_${randomBytes(20).toString('hex')}`,
  }));
}

function partnersFileJson(partners: readonly BenchPartner[]): string {
  return JSON.stringify({
    partners: partners.map((partner) => ({
      id: partner.id,
      name: `Bench partner ${partner.id}`,
      apiKeySha256: [sha256Hex(partner.apiKey)],
      kycEnabled: false,
      kybApproved: true,
      disabledUsers: [],
    })),
  });
}

/** A PIX payout quote and its acceptance: 200 means the edge can accept transactions. */
export async function probeAcceptance(baseUrl: string, apiKey: string): Promise<{ status: number; body: string }> {
  const quote = await http(`${baseUrl}/quote`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey },
    body: JSON.stringify({ amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' }),
  });
  if (quote.status !== 200) return quote;
  const quoteId = (JSON.parse(quote.body) as { quote_id?: unknown }).quote_id;
  return http(`${baseUrl}/transaction`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey },
    body: JSON.stringify({ quote_id: quoteId, user_id: 'bench-probe', account_number: randomUUID() }),
  });
}

let decidedEntry: EdgeEntry | null = null;

export async function startBenchService(options: BenchServiceOptions): Promise<BenchService> {
  const dataDir = mkdtempSync(join(options.dataRoot ?? tmpdir(), 'bench-service-'));
  const partnersFile = join(dataDir, 'partners.json');
  writeFileSync(partnersFile, partnersFileJson(options.partners));
  const limitsFile = join(dataDir, 'limits.json');
  if (options.limits !== undefined) writeFileSync(limitsFile, JSON.stringify(options.limits));
  const keyPrefix = `bench-${randomBytes(4).toString('hex')}:`;
  const shardCount = options.shardCount ?? 64;
  const timeoutMs = options.startTimeoutMs ?? startTimeoutMsDefault;
  const processes: NodeProcess[] = [];
  const nodeArgs = [...(options.nodeArgs ?? []), ...(options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`])];
  const baseEnv = {
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    REDIS_URL: options.redisUrl,
    PARTNERS_FILE: partnersFile,
    DEMO_API_KEY: `demo_${randomBytes(16).toString('hex')}`,
    OPS_API_KEY: `ops_${randomBytes(16).toString('hex')}`,
    KEY_PREFIX: keyPrefix,
    SHARDS: String(shardCount),
    SANDBOX: '1',
    LOG_LEVEL: options.logLevel ?? 'warn',
    // Everything on this host's loopback: a ROLE=all process's admin service needs no certificate
    // (docs/internal-links.md; plaintext is refused on any other bind).
    ADMIN_TLS: 'off',
    // A fresh store that no older release opens: the faster value encoding is safe (docs/store.md
    // "Value encoding"). STORE_PLAIN_MAPS=false in the bench's environment measures the default.
    STORE_PLAIN_MAPS: process.env.STORE_PLAIN_MAPS ?? 'true',
    // The per-partner rate limit is a policy, not a capacity: at the defaults (200/s per partner)
    // the bench's 128 partners would be refused (429) above 25,600 req/s, which a warm edge passes
    // on GET. The limiter still runs on every request (its cost is measured); it never refuses.
    EDGE_RATE_LIMIT_PER_SECOND: '1000000',
    EDGE_RATE_LIMIT_BURST: '1000000',
    ...(options.limits === undefined ? {} : { LIMITS_FILE: limitsFile }),
  };
  const roleEnv = async (role: string, port: number): Promise<Record<string, string>> => ({
    ...baseEnv,
    ROLE: role,
    PORT: String(port),
    GRPC_PORT: String(await freePort()),
    PAYOUT_GRPC_PORT: String(await freePort()),
  });
  const stopAll = async (): Promise<void> => {
    for (const proc of [...processes].reverse()) await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const leases = new RedisLeases({ redis: options.redisUrl, keyPrefix });
  const allLeasesHeld = async (workers: number): Promise<boolean> => {
    const holders = await leases.listAll('shard:');
    return holders.length === shardCount && new Set(holders.map((holder) => holder.owner)).size === workers;
  };
  let stopped: Promise<void> | undefined;
  const service = (baseUrl: string, edgeEntry: EdgeEntry, topology: string): BenchService => ({
    baseUrl,
    dataDir,
    opsApiKey: baseEnv.OPS_API_KEY,
    edgeEntry,
    topology,
    keyPrefix,
    processes,
    stop: () => (stopped ??= stopAll()),
  });
  /** The edge (or, with no shard processes, the one ROLE=all process) from `entry`, ready. */
  const startFront = async (entry: EdgeEntry, baseUrl: string, port: number): Promise<NodeProcess> => {
    const allInOne = options.shardProcesses === 0;
    const front = startNode(allInOne ? 'all' : 'edge', entry === 'src/main.ts' ? mainEntry : benchEntry, await roleEnv(allInOne ? 'all' : 'edge', port), nodeArgs);
    processes.push(front);
    if (allInOne) await waitFor('every shard lease held', () => allLeasesHeld(1), timeoutMs, processes);
    await waitForQuote(baseUrl, options.partners, timeoutMs, processes);
    return front;
  };
  try {
    // Shards first, one at a time, each waiting for the leases to spread over all started workers.
    for (let index = 0; index < options.shardProcesses; index += 1) {
      processes.push(startNode(`shard-${index + 1}`, mainEntry, await roleEnv('shard', 0), nodeArgs));
      const workers = index + 1;
      await waitFor(`${shardCount} shard leases held by ${workers} worker(s)`, () => allLeasesHeld(workers), timeoutMs, processes);
    }
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const requested = options.edgeEntry ?? 'auto';
    let entry: EdgeEntry = requested === 'auto' ? (decidedEntry ?? 'src/main.ts') : requested;
    let front = await startFront(entry, baseUrl, port);
    if (requested === 'auto' && decidedEntry === null) {
      const probe = await probeAcceptance(baseUrl, firstKey(options.partners));
      if (probe.status === 503 && entry === 'src/main.ts') {
        await front.stop();
        processes.splice(processes.indexOf(front), 1);
        entry = 'bench/lib/service-entry.ts';
        front = await startFront(entry, baseUrl, port);
      }
      decidedEntry = entry;
    }
    const topology =
      options.shardProcesses === 0 ? 'one ROLE=all process' : `edge + ${options.shardProcesses} shard process${options.shardProcesses === 1 ? '' : 'es'}`;
    return service(baseUrl, entry, topology);
  } catch (error) {
    await stopAll();
    throw error;
  } finally {
    await leases.close();
  }
}

function firstKey(partners: readonly BenchPartner[]): string {
  const partner = partners[0];
  if (partner === undefined) throw new Error('the bench service needs at least one partner');
  return partner.apiKey;
}

async function waitForQuote(baseUrl: string, partners: readonly BenchPartner[], timeoutMs: number, processes: readonly NodeProcess[]): Promise<void> {
  const apiKey = firstKey(partners);
  await waitFor(
    'the edge to answer POST /quote with 200',
    async () => {
      const answer = await http(`${baseUrl}/quote`, {
        method: 'POST',
        headers: { 'x-api-key': apiKey },
        body: JSON.stringify({ amount: 50_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' }),
        timeoutMs: 2_000,
      });
      return answer.status === 200;
    },
    timeoutMs,
    processes,
  );
}

/** The entry chosen for this run so far (null before the first service start). */
export function chosenEdgeEntry(): EdgeEntry | null {
  return decidedEntry;
}
