// The bench run: micro suites, then the HTTP scenarios against the service started here, each
// next to its baselines measured in the same run at the same concurrency, then the targets, the
// JSON results and the SVG plot. `bench/run.ts` is the command line around `runBench`; the smoke
// test calls `runBench` with the tiny configuration.
//
// Order (to keep baselines and subjects under the same background conditions, points are
// interleaved per concurrency rather than measured system after system):
//   1. micro suites;
//   2. sweep: bare uWS, transport, POST /quote, GET /transaction/{id}, mixed — at each concurrency;
//   3. hot-cap: PostgreSQL baseline, then our service on a FRESH service (the day's cap is spent
//      by a run), at each concurrency;
//   4. worker sweep: POST /quote and hot-cap with more shard worker processes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { loadLimitsFile } from '../../src/config/limits.ts';
import type { LimitsConfig } from '../../src/domain/limits.ts';
import { priceQuoteRequest, quoteToJson } from '../../src/domain/pricing.ts';
import { startRedis, type PrivateRedis } from '../../test/support/redis-server.ts';
import { startRedisCluster } from '../../test/support/redis-cluster.ts';
import { startBareUws, startTransport, type BaselineServer } from '../baselines/launch.ts';
import {
  checkPostgresCaps,
  postgresSettings,
  postgresUnavailable,
  resetPostgres,
  startPostgresServer,
  type PostgresIsolation,
  type PostgresServer,
} from '../baselines/postgres.ts';
import { checkServiceCaps } from '../http/cap-check.ts';
import { createQuoteList, hotAcceptLimits, hotAcceptRequests, hotAcceptUserIds, hotAcceptUsersPerPartner } from '../http/hot-accept.ts';
import {
  brebAmountCop,
  createQuote,
  createQuotes,
  getRequests,
  hotCapRequests,
  mixedRequests,
  pixAcceptRequests,
  pixAmountBrl,
  prefillAmountCop,
  prefillCap,
  prefillUsers,
  quoteBodyBreb,
  quoteBodyPix,
  quoteBodyPrefill,
  quoteRequests,
  seedTransactions,
  type SeededTransaction,
} from '../http/workloads.ts';
import { microSuites } from '../micro/index.ts';
import { callsPerResponse, cpuPerResponseUs, cpuSnapshot, redisCommandCalls, type CpuSnapshot, type CpuSubject } from './cpu.ts';
import { loadDriverOf, runLoad, type LoadDriver, type LoadPhase, type LoadRequest, type LoadResult } from './load.ts';
import type { NodeProcess } from './processes.ts';
import { runMicroSuite, type MicroOptions, type MicroResult } from './micro.ts';
import {
  loadAverage1m,
  machineInfo,
  resultsSchemaVersion,
  writeResults,
  type BenchResults,
  type CapCheck,
  type ClusterComparison,
  type HttpPoint,
  type Skipped,
  type TargetCheck,
} from './results.ts';
import { benchPartners, probeAcceptance, startBenchService, type BenchPartner, type BenchService } from './service.ts';
import { ratio } from './stats.ts';
import { renderPlot, seriesFromPoints } from './svg.ts';

export const scenarioNames = [
  'micro',
  'baseline-uws',
  'baseline-transport',
  'baseline-postgres',
  'quote',
  'get-transaction',
  'mixed',
  'hot-cap',
  'hot-accept',
  'workers',
] as const;
export type ScenarioName = (typeof scenarioNames)[number];

export interface BenchOptions {
  /** Empty: every scenario. */
  readonly scenarios: readonly ScenarioName[];
  readonly quick: boolean;
  readonly connections: readonly number[];
  readonly durationS: number;
  readonly warmupS: number;
  /**
   * Untimed load on each freshly started system (baselines and service) before its first point:
   * a new Node process runs unoptimized code for its first thousands of requests, and a first point
   * at 1 connection would measure the JIT rather than the system. 0 skips it.
   */
  readonly settleS: number;
  readonly timeoutS: number;
  readonly requestsMax: number;
  /** Bench partners the load is spread over (the edge rate-limits per partner). */
  readonly partners: number;
  readonly shardCount: number;
  /** Shard processes of the main topology (0: one ROLE=all process). */
  readonly shardProcesses: number;
  /** Shard process counts of the worker sweep, measured at `workerSweepConnections`. */
  readonly workerSweep: readonly number[];
  readonly workerSweepConnections: number;
  readonly seedTransactions: number;
  readonly pgUrl: string;
  readonly pgPool: number;
  readonly logLevel: string;
  readonly outDir: string;
  readonly micro: MicroOptions;
  readonly cpuProfileDir?: string;
  /** Parent directory of the service's temp DATA_DIR (default: the OS temp dir). */
  readonly dataRoot?: string;
  /**
   * `cluster`: POST /quote on a local Redis Cluster (3 masters) next to one Redis server, the two
   * interleaved at each concurrency (runClusterComparison); the other phases do not run.
   */
  readonly redis?: 'single' | 'cluster';
  readonly log: (line: string) => void;
}

export interface BenchRun {
  readonly results: BenchResults;
  readonly files: { readonly json: string; readonly svg: string };
}

/** Baseline systems, in the order ratios are listed. */
const baselineSystems = ['bare-uws', 'transport', 'postgres', 'postgres-rc', 'postgres-accept', 'postgres-accept-rc'] as const;

const baselineScenario: Readonly<Record<string, string>> = {
  'bare-uws': 'baseline-uws',
  transport: 'baseline-transport',
  postgres: 'baseline-postgres',
  'postgres-rc': 'baseline-postgres-rc',
  'postgres-accept': 'baseline-postgres-accept',
  'postgres-accept-rc': 'baseline-postgres-accept-rc',
};

class Recorder {
  readonly points: HttpPoint[] = [];
  readonly capChecks: CapCheck[] = [];
  readonly skipped: Skipped[] = [];
  readonly notes: string[] = [];
  readonly cluster: ClusterComparison[] = [];
  constructor(private readonly log: (line: string) => void) {}

  skip(scenario: string, reason: string): void {
    this.skipped.push({ scenario, reason });
    this.log(`SKIP ${scenario}: ${reason}`);
  }

  note(text: string): void {
    this.notes.push(text);
    this.log(`note: ${text}`);
  }

  point(scenario: string, system: string, topology: string, measured: Measured, durationS: number, notes: readonly string[] = []): HttpPoint {
    const { result } = measured;
    const point: HttpPoint = {
      scenario,
      system,
      topology,
      connections: result.connections,
      durationS,
      responses: result.responses,
      throughput: result.throughput,
      latency: result.latency,
      errors: { non2xx: result.non2xx, unexpected: result.unexpected, timeouts: result.timeouts, connectionErrors: result.connectionErrors },
      statusCodes: result.statusCodes,
      perTag: result.perTag,
      ratios: {},
      cpuUsPerResponse: measured.cpuUsPerResponse,
      ...(measured.redisCallsPerResponse === undefined ? {} : { redisCallsPerResponse: measured.redisCallsPerResponse }),
      loadAverage1m: loadAverage1m(),
      notes,
    };
    this.points.push(point);
    const l = point.latency;
    const errors = point.errors;
    this.log(
      `${scenario.padEnd(19)} ${system.padEnd(9)} c=${String(point.connections).padEnd(4)} ${String(Math.round(point.throughput)).padStart(7)} req/s` +
        `  p50 ${l.p50Ms.toFixed(3)}  p99 ${l.p99Ms.toFixed(3)}  p99.9 ${l.p999Ms.toFixed(3)} ms` +
        `  non2xx ${errors.non2xx} unexpected ${errors.unexpected} timeouts ${errors.timeouts} connErr ${errors.connectionErrors}  [${topology}] load ${point.loadAverage1m}` +
        `  cpu µs/resp ${Object.entries(point.cpuUsPerResponse).map(([name, value]) => `${name} ${value ?? '?'}`).join(', ')}` +
        (point.redisCallsPerResponse === undefined ? '' : `  redis calls/resp ${Object.entries(point.redisCallsPerResponse).map(([name, value]) => `${name} ${value}`).join(', ')}`),
    );
    return point;
  }
}

/** The bytes POST /quote answers (and the baselines answer): priced by the domain itself. */
function quoteResponseBody(): string {
  const config = loadDefaultCorridors();
  const priced = priceQuoteRequest(
    config,
    { kind: 'payout', amount: quoteBodyBreb.amount, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' },
    { rates: config.rates, quoteId: '5c1f7a1e-2b3c-4d5e-8f90-a1b2c3d4e5f6', partnerId: 'bench', nowMs: Date.now() },
  );
  if (!priced.ok) throw new Error(`could not price the reference quote: ${priced.error.reason}`);
  return JSON.stringify(quoteToJson(priced.quote));
}

function phase(options: BenchOptions, requests: readonly LoadRequest[]): LoadPhase {
  return { durationS: options.durationS, requests };
}

interface Measured {
  readonly result: LoadResult;
  readonly cpuUsPerResponse: Readonly<Record<string, number | null>>;
  readonly redisCallsPerResponse?: Readonly<Record<string, number>>;
}

/** The processes whose CPU is measured for a system (names as they appear in the results). */
function cpuSubjects(processes: readonly NodeProcess[], redisUrl?: string): CpuSubject[] {
  return [...processes.map((proc) => ({ name: proc.name, pid: proc.pid })), ...(redisUrl === undefined ? [] : [{ name: 'redis', redisUrl }])];
}

async function load(
  options: BenchOptions,
  url: string,
  connections: number,
  requests: readonly LoadRequest[],
  extra: { warmup?: readonly LoadRequest[]; expectedStatuses?: readonly number[]; cpu?: readonly CpuSubject[]; driver?: LoadDriver } = {},
): Promise<Measured> {
  const warmup = extra.warmup ?? requests;
  const subjects = extra.cpu ?? [];
  let before: CpuSnapshot = new Map();
  const redisUrl = subjects.find((subject) => subject.redisUrl !== undefined)?.redisUrl;
  let callsBefore = new Map<string, number>();
  const result = await runLoad(
    {
      url,
      connections,
      measure: phase(options, requests),
      ...(options.warmupS > 0 ? { warmup: { durationS: options.warmupS, requests: warmup } } : {}),
      requestsMax: options.requestsMax,
      timeoutS: options.timeoutS,
      ...(extra.expectedStatuses === undefined ? {} : { expectedStatuses: extra.expectedStatuses }),
      ...(extra.driver === undefined ? {} : { driver: extra.driver }),
    },
    async () => {
      if (redisUrl !== undefined) callsBefore = await redisCommandCalls(redisUrl);
      before = await cpuSnapshot(subjects);
    },
  );
  const after = await cpuSnapshot(subjects);
  const calls = redisUrl === undefined ? null : callsPerResponse(callsBefore, await redisCommandCalls(redisUrl), result.responses);
  const cpuUsPerResponse = {
    ...cpuPerResponseUs(before, after, result.responses),
    'load-generator': result.responses > 0 ? Math.round((result.generatorCpuMs * 1000) / result.responses) : null,
  };
  return { result, cpuUsPerResponse, ...(calls === null ? {} : { redisCallsPerResponse: calls }) };
}

/** Connections of the settle load: enough to reach the code's hot paths quickly. */
const settleConnections = 16;

/** Runs each workload untimed on a freshly started system (`BenchOptions.settleS`); results are dropped. */
async function settle(options: BenchOptions, url: string, workloads: ReadonlyArray<readonly LoadRequest[] | null>): Promise<void> {
  if (options.settleS <= 0) return;
  for (const requests of workloads) {
    if (requests === null || requests.length === 0) continue;
    await runLoad({ url, connections: settleConnections, measure: { durationS: options.settleS, requests }, requestsMax: options.requestsMax, timeoutS: options.timeoutS });
  }
}

function wants(options: BenchOptions, name: ScenarioName): boolean {
  return options.scenarios.length === 0 || options.scenarios.includes(name);
}

async function runMicro(options: BenchOptions, recorder: Recorder): Promise<MicroResult[]> {
  const results: MicroResult[] = [];
  for (const load of await microSuites()) {
    if (!load.ok) {
      recorder.skip(`micro/${load.group}`, load.reason);
      continue;
    }
    const suiteResults = await runMicroSuite(load.suite, options.micro);
    for (const result of suiteResults) {
      options.log(
        `micro ${result.group.padEnd(12)} ${result.name.padEnd(62)} ${String(result.opsPerSecond).padStart(10)} ops/s` +
          `  ${result.isBaseline ? '(baseline)' : `×${String(result.ratioToBaseline)} of baseline`}`,
      );
    }
    results.push(...suiteResults);
  }
  return results;
}

interface SweepContext {
  readonly options: BenchOptions;
  readonly recorder: Recorder;
  readonly redis: PrivateRedis;
  readonly partners: readonly BenchPartner[];
  readonly responseBody: string;
}

/** Phase 2: baselines and the stateless scenarios, interleaved per concurrency. */
async function runSweep(context: SweepContext): Promise<void> {
  const { options, recorder, partners } = context;
  const wantQuote = wants(options, 'quote');
  const wantGet = wants(options, 'get-transaction');
  const wantMixed = wants(options, 'mixed');
  const wantUws = wants(options, 'baseline-uws') || wantQuote || wantGet || wantMixed;
  const wantTransport = wants(options, 'baseline-transport') || wantQuote || wantMixed;
  const servers: BaselineServer[] = [];
  let service: BenchService | null = null;
  try {
    const bare = wantUws ? await startBareUws(context.responseBody) : null;
    if (bare !== null) servers.push(bare);
    const transport = wantTransport ? await startTransport(context.redis.url, context.responseBody) : null;
    if (transport !== null) servers.push(transport);
    let getList: LoadRequest[] | null = null;
    let mixedList: LoadRequest[] | null = null;
    if (wantQuote || wantGet || wantMixed) {
      service = await startService(context, options.shardProcesses, wantGet || wantMixed);
      if (wantGet || wantMixed) {
        const ready = await acceptanceReady(service, partners);
        if (ready !== null) {
          if (wantGet) recorder.skip('get-transaction', ready);
          if (wantMixed) recorder.skip('mixed', ready);
        } else {
          const pixQuotes = await createQuotes(service.baseUrl, partners, quoteBodyPix);
          const seeded: SeededTransaction[] = await seedTransactions(service.baseUrl, partners, options.seedTransactions);
          if (wantGet) getList = getRequests(seeded);
          if (wantMixed) mixedList = mixedRequests(partners, pixQuotes, seeded);
        }
      }
    }
    const quoteList = quoteRequests(partners);
    const baselineRequests = quoteList.map((request) => ({ ...request, headers: {} }));
    const bareCpu = bare === null ? [] : cpuSubjects(bare.processes);
    const transportCpu = transport === null ? [] : cpuSubjects(transport.processes, context.redis.url);
    const serviceCpu = service === null ? [] : cpuSubjects(service.processes, context.redis.url);
    if (bare !== null) await settle(options, bare.baseUrl, [baselineRequests]);
    if (transport !== null) await settle(options, transport.baseUrl, [baselineRequests]);
    if (service !== null) await settle(options, service.baseUrl, [wantQuote || wantMixed ? quoteList : null, getList]);
    for (const connections of options.connections) {
      if (bare !== null) {
        const measured = await load(options, bare.baseUrl, connections, baselineRequests, { cpu: bareCpu });
        recorder.point('baseline-uws', 'bare-uws', 'one uWS process', measured, options.durationS);
      }
      if (transport !== null) {
        const measured = await load(options, transport.baseUrl, connections, baselineRequests, { cpu: transportCpu });
        recorder.point('baseline-transport', 'transport', 'uWS + Redis + 1 worker process', measured, options.durationS);
      }
      if (service === null) continue;
      const at = service;
      const measure = async (scenario: string, requests: readonly LoadRequest[], driver?: LoadDriver): Promise<void> => {
        const measured = await load(options, at.baseUrl, connections, requests, { cpu: serviceCpu, ...(driver === undefined ? {} : { driver }) });
        const notes = driver === 'autocannon' ? [...entryNotes(at), 'load by autocannon (per-request tags; wrk cannot tell which request a response answers)'] : entryNotes(at);
        recorder.point(scenario, 'service', at.topology, measured, options.durationS, notes);
      };
      if (wantQuote) await measure('quote', quoteList);
      if (getList !== null) await measure('get-transaction', getList);
      if (mixedList !== null) await measure('mixed', mixedList, 'autocannon');
    }
  } finally {
    await service?.stop();
    for (const server of servers.reverse()) await server.stop();
  }
}

function entryNotes(service: BenchService): string[] {
  return service.edgeEntry === 'src/main.ts'
    ? []
    : [`edge served by ${service.edgeEntry}: src/main.ts does not wire deposit instructions yet (POST /transaction answered 503)`];
}

/** `needsAcceptance`: the scenarios will POST /transaction (the edge entry is then chosen by probing). */
async function startService(context: SweepContext, shardProcesses: number, needsAcceptance: boolean): Promise<BenchService> {
  const { options } = context;
  const service = await startBenchService({
    redisUrl: context.redis.url,
    partners: context.partners,
    shardProcesses,
    edgeEntry: needsAcceptance ? 'auto' : 'src/main.ts',
    shardCount: options.shardCount,
    logLevel: options.logLevel,
    ...(options.cpuProfileDir === undefined ? {} : { cpuProfileDir: options.cpuProfileDir }),
    ...(options.dataRoot === undefined ? {} : { dataRoot: options.dataRoot }),
  });
  options.log(`service up: ${service.topology}, edge ${service.edgeEntry}, ${service.baseUrl}`);
  return service;
}

function firstPartner(partners: readonly BenchPartner[]): BenchPartner {
  const partner = partners[0];
  if (partner === undefined) throw new Error('the bench needs at least one partner');
  return partner;
}

/** null when the service accepts transactions; otherwise why not. */
async function acceptanceReady(service: BenchService, partners: readonly BenchPartner[]): Promise<string | null> {
  const partner = partners[0];
  if (partner === undefined) return 'no partner';
  const probe = await probeAcceptance(service.baseUrl, partner.apiKey);
  return probe.status === 200 ? null : `POST /transaction answers ${probe.status}: ${probe.body.slice(0, 200)}`;
}

/** One hot-cap point on a fresh service; returns its cap check. */
async function runServiceHotCap(context: SweepContext, connections: number, shardProcesses: number, service: BenchService | null): Promise<void> {
  const { options, recorder, partners } = context;
  const owned = service === null;
  const running = service ?? (await startService(context, shardProcesses, true));
  try {
    const ready = await acceptanceReady(running, partners);
    if (ready !== null) {
      recorder.skip(`hot-cap c=${connections} (${running.topology})`, ready);
      return;
    }
    const brebQuotes = await createQuotes(running.baseUrl, partners, quoteBodyBreb);
    const pixQuotes = await createQuotes(running.baseUrl, partners, quoteBodyPix);
    const prefillPartner = firstPartner(partners);
    const prefillIds = await prefillCap(running.baseUrl, prefillPartner, () => createQuote(running.baseUrl, prefillPartner, quoteBodyPrefill));
    const workload = hotCapRequests(partners, brebQuotes);
    const measured = await load(options, running.baseUrl, connections, workload.requests, {
      warmup: pixAcceptRequests(partners, pixQuotes),
      expectedStatuses: [200, 400],
      cpu: cpuSubjects(running.processes, context.redis.url),
    });
    const { result } = measured;
    const acceptedIds = new Set([...prefillIds, ...result.collected.map((item) => item.value)]);
    const check = await checkServiceCaps({
      baseUrl: running.baseUrl,
      partners,
      userIds: workload.userIds,
      extraUsers: prefillUsers.map((userId) => ({ partner: prefillPartner, userId })),
      acceptedIds,
      scenario: 'hot-cap',
      connections,
    });
    recorder.capChecks.push(check);
    const capNote = `accepted ${check.acceptedTransactions} (${check.acceptedAmount} of ${check.methodDailyCap} COP); cap violations: ${check.violations.length}`;
    recorder.point('hot-cap', 'service', running.topology, measured, options.durationS, [...entryNotes(running), capNote, ...check.notes]);
    options.log(`  cap check (service, c=${connections}): ${check.ok ? 'OK' : 'FAILED'} — ${capNote}${check.violations.map((v) => `\n    ${v}`).join('')}`);
  } finally {
    if (owned) await running.stop();
  }
}

interface PostgresVariant {
  readonly isolation: PostgresIsolation;
  readonly system: string;
  readonly scenario: string;
  readonly server: PostgresServer;
}

async function runPostgresHotCap(context: SweepContext, connections: number, variant: PostgresVariant): Promise<void> {
  const { options, recorder, partners } = context;
  const { server } = variant;
  const quotes = await resetPostgres(
    options.pgUrl,
    partners,
    { breb: `${brebAmountCop}.00`, pix: `${pixAmountBrl}.00`, prefill: `${prefillAmountCop}.00` },
    Date.now(),
  );
  await prefillCap(server.baseUrl, firstPartner(partners), () => Promise.resolve(quotes.prefill));
  const workload = hotCapRequests(partners, quotes.breb);
  const retriesBefore = await server.retries();
  const measured = await load(options, server.baseUrl, connections, workload.requests, {
    warmup: pixAcceptRequests(partners, quotes.pix),
    expectedStatuses: [200, 400],
    // PostgreSQL's own processes are included (the server may also serve others meanwhile).
    cpu: [...cpuSubjects([server.process]), { name: 'postgres (all processes)', command: 'postgres' }],
  });
  const tally = await checkPostgresCaps(options.pgUrl);
  const retries = (await server.retries()) - retriesBefore;
  const check: CapCheck = {
    system: variant.system,
    scenario: variant.scenario,
    connections,
    acceptedTransactions: tally.accepted,
    acceptedAmount: tally.acceptedAmount,
    methodDailyCap: tally.methodCap,
    usersChecked: tally.usersChecked,
    violations: tally.violations,
    notes: [`serialization/deadlock retries during warm-up and run: ${retries}`],
    ok: tally.violations.length === 0,
    source: 'SQL over the transactions and cap rows',
  };
  recorder.capChecks.push(check);
  const capNote = `accepted ${tally.accepted} (${tally.acceptedAmount} of ${tally.methodCap} COP); cap violations: ${tally.violations.length}; retries ${retries}`;
  const topology = `uWS + pg pool of ${options.pgPool} + PostgreSQL, ${variant.isolation.toUpperCase()}`;
  recorder.point(variant.scenario, variant.system, topology, measured, options.durationS, [capNote]);
  options.log(`  cap check (${variant.system}, c=${connections}): ${check.ok ? 'OK' : 'FAILED'} — ${capNote}`);
}

/** Phase 3: hot-cap on PostgreSQL (both isolation levels) and on our service, interleaved per concurrency. */
async function runHotCap(context: SweepContext): Promise<void> {
  const { options, recorder } = context;
  const wantPostgres = wants(options, 'baseline-postgres') || wants(options, 'hot-cap');
  const variants: PostgresVariant[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  try {
    if (wantPostgres) {
      const unavailable = await postgresUnavailable(options.pgUrl);
      if (unavailable !== null) recorder.skip('baseline-postgres', unavailable);
      else {
        const settings = await postgresSettings(options.pgUrl);
        recorder.note(`PostgreSQL ${settings.version}, synchronous_commit=${settings.synchronousCommit}, fsync=${settings.fsync}, pool ${options.pgPool}`);
        const isolations: readonly PostgresIsolation[] = options.quick ? ['serializable'] : ['serializable', 'read committed'];
        for (const isolation of isolations) {
          const server = await startPostgresServer(options.pgUrl, context.partners, scratch, options.pgPool, isolation);
          const suffix = isolation === 'serializable' ? '' : '-rc';
          variants.push({ isolation, system: `postgres${suffix}`, scenario: `baseline-postgres${suffix}`, server });
        }
      }
    }
    for (const connections of options.connections) {
      for (const variant of variants) await runPostgresHotCap(context, connections, variant);
      if (wants(options, 'hot-cap')) await runServiceHotCap(context, connections, options.shardProcesses, null);
    }
  } finally {
    for (const variant of variants) await variant.server.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Quotes created per second of a hot-accept phase: the most acceptances per second it can measure (`--quick`: a tenth). */
const hotAcceptRateMax = 2_000;

/**
 * Phase 3b: hot-accept (bench/http/hot-accept.ts). PostgreSQL (both isolation levels, with the same
 * raised caps) and our service, interleaved per concurrency. One service serves every point (the
 * caps are never reached); each point has its own users and quotes.
 */
async function runHotAccept(context: SweepContext): Promise<void> {
  const { options, recorder, partners } = context;
  const scratch = mkdtempSync(join(tmpdir(), 'bench-accept-'));
  const limitsFile = join(scratch, 'limits.json');
  writeFileSync(limitsFile, JSON.stringify(hotAcceptLimits));
  const limits = loadLimitsFile(limitsFile);
  const variants: PostgresVariant[] = [];
  let service: BenchService | null = null;
  try {
    const unavailable = await postgresUnavailable(options.pgUrl);
    if (unavailable !== null) recorder.skip('baseline-postgres-accept', unavailable);
    else {
      const isolations: readonly PostgresIsolation[] = options.quick ? ['serializable'] : ['serializable', 'read committed'];
      for (const isolation of isolations) {
        const server = await startPostgresServer(options.pgUrl, partners, scratch, options.pgPool, isolation, limitsFile);
        const suffix = isolation === 'serializable' ? '' : '-rc';
        variants.push({ isolation, system: `postgres-accept${suffix}`, scenario: `baseline-postgres-accept${suffix}`, server });
      }
    }
    service = await startBenchService({
      redisUrl: context.redis.url,
      partners,
      shardProcesses: options.shardProcesses,
      edgeEntry: 'auto',
      shardCount: options.shardCount,
      logLevel: options.logLevel,
      limits: hotAcceptLimits,
      ...(options.cpuProfileDir === undefined ? {} : { cpuProfileDir: options.cpuProfileDir }),
      ...(options.dataRoot === undefined ? {} : { dataRoot: options.dataRoot }),
    });
    options.log(`service up (hot-accept caps): ${service.topology}, ${service.baseUrl}`);
    const ready = await acceptanceReady(service, partners);
    if (ready !== null) {
      recorder.skip('hot-accept', ready);
      return;
    }
    await settle(options, service.baseUrl, [quoteRequests(partners)]);
    for (const [round, connections] of options.connections.entries()) {
      for (const variant of variants) await runPostgresHotAccept(context, connections, variant, limits);
      await runServiceHotAccept(context, connections, service, limits, `r${round}-`);
    }
  } finally {
    await service?.stop();
    for (const variant of variants) await variant.server.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function runPostgresHotAccept(context: SweepContext, connections: number, variant: PostgresVariant, limits: LimitsConfig): Promise<void> {
  const { options, recorder, partners } = context;
  const amounts = { breb: `${brebAmountCop}.00`, pix: `${pixAmountBrl}.00`, prefill: `${prefillAmountCop}.00` };
  const quotes = await resetPostgres(options.pgUrl, partners, amounts, Date.now(), limits);
  // One quote per partner, reused: the baseline does not claim quotes (bench/http/hot-accept.ts).
  const reused = (prefix: string): LoadRequest[] =>
    hotAcceptRequests(
      Array.from({ length: partners.length * hotAcceptUsersPerPartner }, (_, index) => {
        const partner = partners[index % partners.length] as BenchPartner;
        return { partner, quoteId: quotes.breb.get(partner.id) ?? '' };
      }),
      partners.length,
      prefix,
    );
  const retriesBefore = await variant.server.retries();
  const measured = await load(options, variant.server.baseUrl, connections, reused('m-'), {
    warmup: reused('w-'),
    cpu: [...cpuSubjects([variant.server.process]), { name: 'postgres (all processes)', command: 'postgres' }],
  });
  const tally = await checkPostgresCaps(options.pgUrl, limits);
  const retries = (await variant.server.retries()) - retriesBefore;
  recorder.capChecks.push({
    system: variant.system,
    scenario: variant.scenario,
    connections,
    acceptedTransactions: tally.accepted,
    acceptedAmount: tally.acceptedAmount,
    methodDailyCap: tally.methodCap,
    usersChecked: tally.usersChecked,
    violations: tally.violations,
    notes: [`serialization/deadlock retries during warm-up and run: ${retries}`],
    ok: tally.violations.length === 0,
    source: 'SQL over the transactions and cap rows',
  });
  const note = `accepted ${tally.accepted} in warm-up and run; cap violations: ${tally.violations.length}; retries ${retries}; quotes not claimed (single use not modelled)`;
  const topology = `uWS + pg pool of ${options.pgPool} + PostgreSQL, ${variant.isolation.toUpperCase()}`;
  recorder.point(variant.scenario, variant.system, topology, measured, options.durationS, [note]);
}

async function runServiceHotAccept(context: SweepContext, connections: number, service: BenchService, limits: LimitsConfig, userPrefix: string): Promise<void> {
  const { options, recorder, partners } = context;
  const quotesFor = async (seconds: number): Promise<Array<{ partner: BenchPartner; quoteId: string }>> =>
    createQuoteList(service.baseUrl, partners, Math.ceil((options.quick ? hotAcceptRateMax / 10 : hotAcceptRateMax) * Math.max(1, Math.ceil(seconds))));
  const warmupQuotes = options.warmupS > 0 ? await quotesFor(options.warmupS) : [];
  const measureQuotes = await quotesFor(options.durationS);
  const measured = await load(options, service.baseUrl, connections, hotAcceptRequests(measureQuotes, partners.length, `${userPrefix}m-`), {
    ...(warmupQuotes.length > 0 ? { warmup: hotAcceptRequests(warmupQuotes, partners.length, `${userPrefix}w-`) } : {}),
    cpu: cpuSubjects(service.processes, context.redis.url),
  });
  const check = await checkServiceCaps({
    baseUrl: service.baseUrl,
    partners,
    userIds: hotAcceptUserIds(`${userPrefix}m-`),
    extraUsers: [],
    acceptedIds: new Set(measured.result.collected.map((item) => item.value)),
    scenario: 'hot-accept',
    connections,
    limits,
  });
  recorder.capChecks.push(check);
  const created = measureQuotes.length;
  const exhausted = measured.result.responses >= created ? [`quotes exhausted: ${created} created for ${measured.result.responses} requests`] : [];
  const note = `accepted ${check.acceptedTransactions} (${check.acceptedAmount} COP) in the measured phase; cap violations: ${check.violations.length}`;
  recorder.point('hot-accept', 'service', service.topology, measured, options.durationS, [...entryNotes(service), note, ...exhausted, ...check.notes]);
  options.log(`  cap check (service hot-accept, c=${connections}): ${check.ok ? 'OK' : 'FAILED'} — ${note}`);
}

/** Phase 4: more shard worker processes behind one edge; POST /quote, then hot-cap on the same (fresh) service. */
async function runWorkerSweep(context: SweepContext): Promise<void> {
  const { options, recorder } = context;
  const connections = options.workerSweepConnections;
  // The main topology's points at this concurrency exist already when phases 2 and 3 measured them.
  const mainCovered = options.connections.includes(connections) && wants(options, 'quote') && wants(options, 'hot-cap');
  const counts = options.workerSweep.filter((count) => !(count === options.shardProcesses && mainCovered));
  for (const count of counts) {
    const service = await startService(context, count, true);
    try {
      await settle(options, service.baseUrl, [quoteRequests(context.partners)]);
      const measured = await load(options, service.baseUrl, connections, quoteRequests(context.partners), {
        cpu: cpuSubjects(service.processes, context.redis.url),
      });
      recorder.point('quote', 'service', service.topology, measured, options.durationS, entryNotes(service));
      await runServiceHotCap(context, connections, count, service);
    } catch (error) {
      recorder.skip(`workers=${count}`, error instanceof Error ? error.message : String(error));
    } finally {
      await service.stop();
    }
  }
}

/** Sum of a point's Redis commands per response (null when not measured). */
function totalRedisCalls(point: HttpPoint): number | null {
  if (point.redisCallsPerResponse === undefined) return null;
  return Math.round(Object.values(point.redisCallsPerResponse).reduce((sum, value) => sum + value, 0) * 100) / 100;
}

/**
 * `--redis=cluster`: the quote scenario on one Redis server and on a local Redis Cluster (3
 * masters, no replicas: a replica only copies the writes), each with the main topology (edge + N
 * shard processes), both started once and measured alternately at every concurrency (single, then
 * cluster), so background load on the machine hits both alike. A concurrency listed several times
 * is several rounds; each round gives the ratio cluster ÷ single and the Redis commands per quote.
 */
async function runClusterComparison(context: SweepContext): Promise<void> {
  const { options, recorder, partners } = context;
  const cluster = await startRedisCluster({ masters: 3 });
  let single: BenchService | null = null;
  let onCluster: BenchService | null = null;
  try {
    single = await startService(context, options.shardProcesses, false);
    onCluster = await startService({ ...context, redis: { ...context.redis, url: cluster.url } }, options.shardProcesses, false);
    const topology = single.topology;
    const quoteList = quoteRequests(partners);
    for (const service of [single, onCluster]) await settle(options, service.baseUrl, [quoteList]);
    const singleCpu = cpuSubjects(single.processes, context.redis.url);
    const clusterCpu = cpuSubjects(onCluster.processes, cluster.url);
    for (const connections of options.connections) {
      const one = recorder.point('quote', 'service', `${topology}, one Redis server`, await load(options, single.baseUrl, connections, quoteList, { cpu: singleCpu }), options.durationS);
      const many = recorder.point('quote', 'service', `${topology}, Redis Cluster (3 masters)`, await load(options, onCluster.baseUrl, connections, quoteList, { cpu: clusterCpu }), options.durationS);
      recorder.cluster.push({
        connections,
        topology,
        single: one.throughput,
        cluster: many.throughput,
        ratio: ratio(many.throughput, one.throughput),
        redisCallsPerResponse: { single: totalRedisCalls(one), cluster: totalRedisCalls(many) },
        loadAverage1m: { single: one.loadAverage1m, cluster: many.loadAverage1m },
      });
    }
  } finally {
    await onCluster?.stop();
    await single?.stop();
    await cluster.stop();
  }
}

/** 2xx answers per second of the measured phase. */
export function successfulPerSecond(point: HttpPoint): number {
  let successes = 0;
  for (const [status, count] of Object.entries(point.statusCodes)) if (status.startsWith('2')) successes += count;
  return point.durationS > 0 ? successes / point.durationS : 0;
}

/** A point of the `system` baseline (its own scenario) at `connections`. */
function isBaselinePoint(point: HttpPoint, system: string, connections: number): boolean {
  return point.system === system && point.scenario === baselineScenario[system] && point.connections === connections;
}

/**
 * Adds each service point's throughput ratio to every baseline measured at the same concurrency
 * (the meaningful pairs: quote/mixed ÷ bare uWS and transport, get ÷ bare uWS, hot-cap ÷ the
 * PostgreSQL variants; the others are listed too, for completeness). A concurrency listed more
 * than once (`--connections=64,64,64`) is measured in rounds: each service point is compared with
 * the baselines of its own round (the last ones measured before it), so a noisy moment on the
 * machine affects both sides of a ratio alike.
 */
export function withRatios(points: readonly HttpPoint[]): HttpPoint[] {
  // hot-accept counts successful acceptances (its target's unit): the PostgreSQL baseline gives a
  // transaction up after 20 serialization failures (a 500), about a tenth of its answers at 64
  // connections, and counting those as throughput flattered it. The other scenarios compare
  // answers per second, refusals included (hot-cap's refusals are its point).
  const rateOf = (point: HttpPoint, scenario: string): number => (scenario === 'hot-accept' ? successfulPerSecond(point) : point.throughput);
  const baselineFor = (system: string, connections: number, before: number): HttpPoint | undefined => {
    const matches = (point: HttpPoint): boolean => isBaselinePoint(point, system, connections);
    return points.slice(0, before).findLast(matches) ?? points.find(matches);
  };
  return points.map((point, index) => {
    if (point.system !== 'service') return point;
    const ratios: Record<string, number | null> = {};
    for (const system of baselineSystems) {
      const baseline = baselineFor(system, point.connections, index);
      if (baseline !== undefined) ratios[system] = ratio(rateOf(point, point.scenario), rateOf(baseline, point.scenario));
    }
    return { ...point, ratios };
  });
}

/** The median of the measured values (null when none): a target over several rounds. */
export function medianOf(values: ReadonlyArray<number | null | undefined>): number | null {
  const measured = values.filter((value): value is number => typeof value === 'number' && Number.isFinite(value)).sort((a, b) => a - b);
  if (measured.length === 0) return null;
  const middle = Math.floor(measured.length / 2);
  return measured.length % 2 === 1 ? (measured[middle] ?? null) : ((measured[middle - 1] ?? 0) + (measured[middle] ?? 0)) / 2;
}

/** Rounded to 3 decimals like every ratio and latency of a point. */
function rounded(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/**
 * `met` is decided on the exact value; the value reported is rounded to 3 decimals like every
 * ratio and latency of a point (the mean of two rounds' medians would otherwise print as
 * 0.16899999999999998).
 */
function target(
  name: string,
  measured: number | null,
  text: string,
  ok: (value: number) => boolean,
  extra: { bound?: { value: number | null; basis: string }; explanation?: string | null } = {},
): TargetCheck {
  const check: TargetCheck = { name, measured: measured === null ? null : rounded(measured), target: text, met: measured === null ? null : ok(measured) };
  const bound = extra.bound;
  return {
    ...check,
    ...(bound === undefined
      ? {}
      : { bound: { value: bound.value === null ? null : rounded(bound.value), reachable: bound.value === null ? null : ok(bound.value), basis: bound.basis } }),
    ...(extra.explanation === undefined || extra.explanation === null ? {} : { explanation: extra.explanation }),
  };
}

/** CPU µs per response summed over every process of a point (load generator included); null if any is unknown. */
export function totalCpuUs(point: HttpPoint): number | null {
  const values = Object.values(point.cpuUsPerResponse);
  if (values.length === 0 || values.some((value) => value === null)) return null;
  return values.reduce<number>((sum, value) => sum + (value ?? 0), 0);
}

/**
 * At 64 connections both the service and the transport baseline keep the machine's cores busy, so
 * their throughput ratio follows their CPU per response (every process, the load generator too):
 * the line says how much CPU the ratio target leaves the whole quote path.
 */
function cpuExplanation(service: readonly HttpPoint[], transport: readonly HttpPoint[], ratioTarget: number): string | null {
  const serviceUs = medianOf(service.map(totalCpuUs));
  const transportUs = medianOf(transport.map(totalCpuUs));
  if (serviceUs === null || transportUs === null || serviceUs <= 0) return null;
  return (
    `CPU per response, all processes (median round): transport ${Math.round(transportUs)} µs, quote ${Math.round(serviceUs)} µs, ` +
    `ratio ${rounded(transportUs / serviceUs)}; ${ratioTarget} needs the quote path at ≤ ${Math.round(transportUs / ratioTarget)} µs`
  );
}

/**
 * The issue's targets; a point measured in several rounds counts with its median. Where the
 * same-run baselines bound what any implementation of the path could reach on this machine, the
 * check carries that bound. Since quotes are offers (docs/actors.md), `POST /quote` is bare uWS
 * plus pricing and one Redis command: no stream, no shard worker and no durable write, so the
 * transport baseline and fdatasync no longer bound it; bare uWS does. (The acceptance is what
 * crosses the command bus now.)
 */
export function targets(points: readonly HttpPoint[], capChecks: readonly CapCheck[], mainTopology: string): TargetCheck[] {
  const at = (scenario: string, connections: number): HttpPoint[] =>
    points.filter((point) => point.scenario === scenario && point.system === 'service' && point.connections === connections && point.topology === mainTopology);
  const baseline = (system: string, connections: number): HttpPoint[] => points.filter((point) => isBaselinePoint(point, system, connections));
  const quote64 = at('quote', 64);
  const quote1 = at('quote', 1);
  const hot64 = at('hot-cap', 64);
  const accept64 = at('hot-accept', 64);
  const transport64 = baseline('transport', 64);
  const transport1 = baseline('transport', 1);
  const bare64 = baseline('bare-uws', 64);
  const ratioOf = (rounds: readonly HttpPoint[], system: string): number | null => medianOf(rounds.map((point) => point.ratios[system]));
  const bare1 = baseline('bare-uws', 1);
  return [
    target('POST /quote throughput ÷ bare uWS, 64 connections', ratioOf(quote64, 'bare-uws'), '≥ 0.40', (value) => value >= 0.4, {
      bound: { value: bare64.length === 0 ? null : 1, basis: 'bare uWS itself (the quote path is bare uWS + pricing + one Redis command)' },
    }),
    target('POST /quote p99 at 64 connections (ms)', medianOf(quote64.map((point) => point.latency.p99Ms)), '≤ 15', (value) => value <= 15, {
      bound: { value: medianOf(bare64.map((point) => point.latency.p99Ms)), basis: 'bare uWS\'s p99 at 64 connections (the quote path is bare uWS + pricing + one Redis command)' },
    }),
    target('POST /quote throughput ÷ transport-only, 64 connections', ratioOf(quote64, 'transport'), '≥ 0.60 (goal 0.80)', (value) => value >= 0.6, {
      explanation: cpuExplanation(quote64, transport64, 0.6),
    }),
    target(
      'POST /quote p99 ÷ the transport-only p99, 64 connections',
      medianOf(quote64.map((point, index) => {
        const transport = transport64[index];
        return transport === undefined || transport.latency.p99Ms <= 0 ? null : point.latency.p99Ms / transport.latency.p99Ms;
      })),
      '≤ 2',
      (value) => value <= 2,
    ),
    target(
      'POST /quote p50 at 1 connection minus the transport-only p50 (ms)',
      medianOf(quote1.map((point, index) => {
        const transport = transport1[index];
        return transport === undefined ? null : point.latency.p50Ms - transport.latency.p50Ms;
      })),
      '≤ 0.5 (goal 0.35)',
      (value) => value <= 0.5,
    ),
    target('POST /transaction hot-accept successful acceptances/s ÷ PostgreSQL (SERIALIZABLE), 64 connections', ratioOf(accept64, 'postgres-accept'), '≥ 2 (goal 5)', (value) => value >= 2),
    target('POST /transaction hot-accept p99 at 64 connections (ms, reported)', medianOf(accept64.map((point) => point.latency.p99Ms)), 'reported', () => true),
    target('POST /transaction hot-cap throughput ÷ PostgreSQL (SERIALIZABLE), 64 connections', ratioOf(hot64, 'postgres'), '≥ 3', (value) => value >= 3),
    target(
      'POST /transaction hot-cap throughput ÷ PostgreSQL (READ COMMITTED variant, informational), 64 connections',
      ratioOf(hot64, 'postgres-rc'),
      '≥ 3',
      (value) => value >= 3,
    ),
    target(
      'cap violations (service and PostgreSQL, every hot-cap and hot-accept run)',
      capChecks.length === 0 ? null : capChecks.reduce((sum, check) => sum + check.violations.length, 0),
      '= 0',
      (value) => value === 0,
    ),
    target('POST /quote p50 at 1 connection (ms)', medianOf(quote1.map((point) => point.latency.p50Ms)), '≤ 0.6', (value) => value <= 0.6, {
      bound: {
        value: medianOf(bare1.map((point) => point.latency.p50Ms)),
        basis: 'bare uWS\'s p50 at 1 connection (the quote path is bare uWS + pricing + one Redis round trip; no durable write)',
      },
    }),
  ];
}

/** One target's summary line (and, when it has them, its bound and explanation). */
export function targetLines(check: TargetCheck): string[] {
  const verdict = check.met === null ? '' : check.met ? ' MET' : ' NOT MET';
  const lines = [`target ${check.name}: ${check.measured === null ? 'not measured' : String(check.measured)} (${check.target})${verdict}`];
  const bound = check.bound;
  if (bound !== undefined && bound.value !== null) {
    const reach = bound.reachable === true ? 'meets the target' : 'misses the target: NOT reachable on this machine unless the path beats its own baseline';
    lines.push(`  best possible here: ${bound.value}, ${reach} (${bound.basis})`);
  }
  if (check.explanation !== undefined) lines.push(`  ${check.explanation}`);
  return lines;
}

export async function runBench(options: BenchOptions): Promise<BenchRun> {
  const startedAt = new Date();
  const recorder = new Recorder(options.log);
  const machine = machineInfo();
  options.log(
    `bench: ${machine.nproc} × ${machine.cpuModel}, ${Math.round(machine.memoryBytes / 2 ** 30)} GiB, node ${machine.node}, ` +
      `load average ${machine.loadAverageAtStart.join(' ')}, fdatasync p50 ${machine.fdatasyncMs.p50} ms p99 ${machine.fdatasyncMs.p99} ms`,
  );
  const micro = wants(options, 'micro') ? await runMicro(options, recorder) : [];
  const httpWanted = scenarioNames.some((name) => name !== 'micro' && wants(options, name));
  const partners = benchPartners(options.partners);
  const mainTopology =
    options.shardProcesses === 0 ? 'one ROLE=all process' : `edge + ${options.shardProcesses} shard process${options.shardProcesses === 1 ? '' : 'es'}`;
  if (httpWanted) {
    const redis = await startRedis();
    try {
      const context: SweepContext = { options, recorder, redis, partners, responseBody: quoteResponseBody() };
      if (options.redis === 'cluster') await runClusterComparison(context);
      else if (['baseline-uws', 'baseline-transport', 'quote', 'get-transaction', 'mixed'].some((name) => wants(options, name as ScenarioName))) {
        await runSweep(context);
      }
      if (options.redis !== 'cluster') {
        if (wants(options, 'hot-cap') || wants(options, 'baseline-postgres')) await runHotCap(context);
        if (wants(options, 'hot-accept')) await runHotAccept(context);
        if (wants(options, 'workers') && !options.quick) await runWorkerSweep(context);
      }
    } finally {
      await redis.stop();
    }
  }
  const points = withRatios(recorder.points);
  const results: BenchResults = {
    schema: resultsSchemaVersion,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    quick: options.quick,
    machine,
    config: {
      scenarios: options.scenarios.length === 0 ? 'all' : options.scenarios,
      connections: options.connections,
      durationS: options.durationS,
      warmupS: options.warmupS,
      settleS: options.settleS,
      timeoutS: options.timeoutS,
      partners: options.partners,
      shardCount: options.shardCount,
      mainTopology,
      workerSweep: options.workerSweep,
      workerSweepConnections: options.workerSweepConnections,
      logLevel: options.logLevel,
      dataRoot: options.dataRoot ?? 'OS temp dir',
      redis: options.redis ?? 'single',
      pgPool: options.pgPool,
      loadGenerator:
        loadDriverOf({}) === 'wrk'
          ? 'wrk (2 threads, Lua driver) in a separate process, 1 request in flight per connection; mixed: autocannon 9'
          : 'autocannon 9 in a separate process (wrk not installed), 1 request in flight per connection',
      notes: recorder.notes,
    },
    micro,
    http: points,
    capChecks: recorder.capChecks,
    targets: targets(points, recorder.capChecks, mainTopology),
    skipped: recorder.skipped,
    ...(recorder.cluster.length === 0 ? {} : { cluster: recorder.cluster }),
  };
  const svg = renderPlot(seriesFromPoints(points), `bench ${results.startedAt} — ${machine.nproc} × ${machine.cpuModel}`);
  const files = writeResults(options.outDir, results, svg);
  options.log('summary (service points; ratios are throughput ÷ the baseline at the same concurrency):');
  for (const point of points.filter((item) => item.system === 'service')) {
    const ratios = Object.entries(point.ratios)
      .map(([name, value]) => `${name} ×${value ?? '?'}`)
      .join('  ');
    options.log(
      `  ${point.scenario.padEnd(16)} c=${String(point.connections).padEnd(4)} ${String(Math.round(point.throughput)).padStart(6)} req/s  p50 ${point.latency.p50Ms} p99 ${point.latency.p99Ms} p99.9 ${point.latency.p999Ms} ms  ${ratios}  [${point.topology}]`,
    );
  }
  for (const check of results.targets) {
    for (const line of targetLines(check)) options.log(line);
  }
  for (const round of recorder.cluster) {
    options.log(
      `  cluster ÷ single, quote c=${round.connections}: ${Math.round(round.cluster)} ÷ ${Math.round(round.single)} req/s = ×${round.ratio ?? '?'}; ` +
        `Redis commands per quote ${round.redisCallsPerResponse.cluster ?? '?'} vs ${round.redisCallsPerResponse.single ?? '?'} (load ${round.loadAverage1m.cluster} / ${round.loadAverage1m.single})`,
    );
  }
  options.log(`results: ${files.json}\nplot:    ${files.svg}`);
  return { results, files };
}
