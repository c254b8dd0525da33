// The load generator process (forked by bench/lib/load.ts): receives one LoadSpec over IPC, runs
// autocannon against 127.0.0.1 (warm-up phase, then the measured phase) and sends back one
// LoadResult. Latencies are recorded per response from autocannon's `response` event with
// sub-millisecond resolution (see stats.ts); request k of the cycle goes to whichever connection
// is free next, so every connection sees the whole mix.
import { createRequire } from 'node:module';
import type { ChildMessage, Collected, LoadPhase, LoadRequest, LoadResult, LoadSpec, ParentMessage, TagStats } from './load.ts';
import { summariseLatency } from './stats.ts';

/** The slice of autocannon's programmatic API we use (the package ships no types). */
interface AutocannonRequest {
  setupRequest(request: Record<string, unknown>, context: Record<string, unknown>): Record<string, unknown>;
  onResponse(status: number, body: string, context: Record<string, unknown>): void;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  timeout: number;
  pipelining: number;
  requests: AutocannonRequest[];
}
interface AutocannonSummary {
  errors: number;
  timeouts: number;
  resets?: number;
}
interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): void;
  on(event: 'done', listener: (result: AutocannonSummary) => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  stop(): void;
}
type Autocannon = (options: AutocannonOptions) => AutocannonInstance;

const require = createRequire(import.meta.url);
const autocannon = require('autocannon') as Autocannon;

const latencySamplesMaxDefault = 2_000_000;
const collectedMax = 1_000_000;

interface PhaseOutcome {
  readonly result: LoadResult;
}

function requestFields(request: LoadRequest): Record<string, unknown> {
  return {
    method: request.method,
    path: request.path,
    headers: request.body === undefined ? { ...request.headers } : { 'content-type': 'application/json', ...request.headers },
    ...(request.body === undefined ? {} : { body: request.body }),
  };
}

function collectFrom(body: string, field: string): string | null {
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed === null || typeof parsed !== 'object') return null;
    const value = (parsed as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}

async function runPhase(spec: LoadSpec, phase: LoadPhase): Promise<PhaseOutcome> {
  const requests = phase.requests;
  const prepared = requests.map(requestFields);
  const expected = spec.expectedStatuses === undefined ? null : new Set(spec.expectedStatuses);
  const samplesMax = spec.latencySamplesMax ?? latencySamplesMaxDefault;
  const samples = new Float64Array(samplesMax);
  let sampleCount = 0;
  let dropped = 0;
  let responses = 0;
  let non2xx = 0;
  let unexpected = 0;
  let next = 0;
  const statusCodes = new Map<number, number>();
  const perTag = new Map<string, { responses: number; statusCodes: Map<number, number> }>();
  const collected: Collected[] = [];

  let instance: AutocannonInstance | null = null;
  const request: AutocannonRequest = {
    setupRequest(base, context) {
      const index = next;
      next = (next + 1) % requests.length;
      context['index'] = index;
      return { ...base, ...prepared[index] };
    },
    onResponse(status, body, context) {
      const index = typeof context['index'] === 'number' ? context['index'] : -1;
      const source = requests[index];
      if (source === undefined) return;
      let tag = perTag.get(source.tag);
      if (tag === undefined) {
        tag = { responses: 0, statusCodes: new Map() };
        perTag.set(source.tag, tag);
      }
      tag.responses += 1;
      tag.statusCodes.set(status, (tag.statusCodes.get(status) ?? 0) + 1);
      if (status === 200 && source.collectField !== undefined && collected.length < collectedMax) {
        const value = collectFrom(body, source.collectField);
        if (value !== null) collected.push({ index, value });
      }
    },
  };

  const startedAtMs = performance.now();
  const cpuAtStart = process.cpuUsage();
  const summary = await new Promise<AutocannonSummary>((resolve, reject) => {
    const started = autocannon({
      url: spec.url,
      connections: spec.connections,
      duration: phase.durationS,
      timeout: spec.timeoutS,
      pipelining: 1,
      requests: [request],
    });
    instance = started;
    started.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      responses += 1;
      statusCodes.set(statusCode, (statusCodes.get(statusCode) ?? 0) + 1);
      if (statusCode < 200 || statusCode > 299) non2xx += 1;
      if (expected === null ? statusCode < 200 || statusCode > 299 : !expected.has(statusCode)) unexpected += 1;
      if (sampleCount < samplesMax) {
        samples[sampleCount] = responseTimeMs;
        sampleCount += 1;
      } else {
        dropped += 1;
      }
      if (responses >= spec.requestsMax) instance?.stop();
    });
    started.on('done', resolve);
    started.on('error', reject);
  });
  const elapsedS = (performance.now() - startedAtMs) / 1000;
  const cpu = process.cpuUsage(cpuAtStart);

  const tags: Record<string, TagStats> = {};
  for (const [name, stats] of perTag) tags[name] = { responses: stats.responses, statusCodes: mapToRecord(stats.statusCodes) };
  const timeouts = summary.timeouts;
  return {
    result: {
      connections: spec.connections,
      elapsedS: Math.round(elapsedS * 1000) / 1000,
      responses,
      throughput: elapsedS > 0 ? Math.round((responses / elapsedS) * 10) / 10 : 0,
      latency: summariseLatency(samples, sampleCount),
      latencySamplesDropped: dropped,
      statusCodes: mapToRecord(statusCodes),
      non2xx,
      unexpected,
      timeouts,
      connectionErrors: Math.max(0, summary.errors - timeouts),
      perTag: tags,
      collected,
      generatorCpuMs: Math.round((cpu.user + cpu.system) / 1000),
    },
  };
}

function mapToRecord(map: ReadonlyMap<number, number>): Record<string, number> {
  const record: Record<string, number> = {};
  for (const [key, value] of [...map].sort((a, b) => a[0] - b[0])) record[String(key)] = value;
  return record;
}

function reply(message: ChildMessage): void {
  process.send?.(message);
}

let goAhead: (() => void) | null = null;

async function run(spec: LoadSpec): Promise<void> {
  if (spec.warmup !== undefined && spec.warmup.durationS > 0 && spec.warmup.requests.length > 0) {
    await runPhase({ ...spec, latencySamplesMax: 1 }, spec.warmup);
  }
  // The parent may snapshot counters between the phases; it answers `go` when done.
  await new Promise<void>((resolve) => {
    goAhead = resolve;
    reply({ kind: 'warm' });
  });
  const { result } = await runPhase(spec, spec.measure);
  reply({ kind: 'result', result });
}

process.on('message', (message: ParentMessage) => {
  if (message.kind === 'go') {
    goAhead?.();
    return;
  }
  run(message.spec).catch((error: unknown) => {
    reply({ kind: 'error', message: error instanceof Error ? error.message : String(error) });
  });
});
