// The load generator as the bench uses it, always in a SEPARATE process so its CPU is never the
// server's. Two drivers:
// - wrk (default; bench/lib/wrk.ts): C, one thread per core, driven by a Lua script. The only one
//   that can load the bare-uWS baseline to what this box serves.
// - autocannon, run programmatically in a forked child (bench/lib/load-child.ts): the parent sends
//   a `LoadSpec` over IPC and gets a `LoadResult` back. Kept for workloads that need per-request
//   tags (wrk cannot match a response to its request) and as the fallback where wrk is missing.
// Every run is bounded: the phase's duration, a wall-clock deadline after which the child is
// killed, and (autocannon only) a maximum request count.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LatencySummary } from './stats.ts';
import { runWrkPhase, wrkPath } from './wrk.ts';

export type LoadDriver = 'wrk' | 'autocannon';

export interface LoadRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Groups responses in the result (`quote`, `accept`, `get`, …). */
  readonly tag: string;
  /** When set, a 200 response's JSON field of this name is collected (e.g. an accepted transaction's id). */
  readonly collectField?: string;
}

export interface LoadPhase {
  readonly durationS: number;
  /** Cycled in order, shared by all connections (request k goes to whichever connection is free). */
  readonly requests: readonly LoadRequest[];
}

export interface LoadSpec {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly connections: number;
  readonly measure: LoadPhase;
  /** Run first and discarded (JIT, connection set-up, caches). */
  readonly warmup?: LoadPhase;
  /** Stop after this many responses even if the duration has not elapsed. */
  readonly requestsMax: number;
  /** Per-request timeout; a request without an answer by then counts as a timeout. */
  readonly timeoutS: number;
  /** Statuses that are the workload's expected outcomes (default: any 2xx). Others count as unexpected. */
  readonly expectedStatuses?: readonly number[];
  /** Most latency samples kept (the rest are counted, not kept; autocannon only). */
  readonly latencySamplesMax?: number;
  /** Default `wrk` when installed; `autocannon` where per-tag statistics are needed. */
  readonly driver?: LoadDriver;
}

export interface TagStats {
  readonly responses: number;
  readonly statusCodes: Readonly<Record<string, number>>;
}

export interface Collected {
  /** Index of the request in `measure.requests` (-1 with wrk, which cannot tell). */
  readonly index: number;
  readonly value: string;
}

export interface LoadResult {
  readonly connections: number;
  readonly elapsedS: number;
  readonly responses: number;
  /** Responses per second over the measured phase. */
  readonly throughput: number;
  readonly latency: LatencySummary;
  readonly latencySamplesDropped: number;
  readonly statusCodes: Readonly<Record<string, number>>;
  readonly non2xx: number;
  /** Responses whose status is not in `expectedStatuses`. */
  readonly unexpected: number;
  readonly timeouts: number;
  /** Connection errors and resets (timeouts excluded). */
  readonly connectionErrors: number;
  readonly perTag: Readonly<Record<string, TagStats>>;
  readonly collected: readonly Collected[];
  /** CPU the load generator itself used in the measured phase, ms (it shares the machine). */
  readonly generatorCpuMs: number;
}

export type ChildMessage =
  | { readonly kind: 'warm' }
  | { readonly kind: 'result'; readonly result: LoadResult }
  | { readonly kind: 'error'; readonly message: string };

/** Parent → child: the spec, then (after `warm`) the go-ahead for the measured phase. */
export type ParentMessage = { readonly kind: 'spec'; readonly spec: LoadSpec } | { readonly kind: 'go' };

const childEntry = fileURLToPath(new URL('./load-child.ts', import.meta.url));
/** Beyond the phases' durations: process start (tsx), connection set-up, draining. */
const deadlineSlackMs = 60_000;

/**
 * Runs one load in a child process and returns its result; rejects (and kills the child) on any
 * failure. `beforeMeasure` runs between the warm-up and the measured phase (e.g. CPU snapshots).
 */
export async function runLoad(spec: LoadSpec, beforeMeasure?: () => Promise<void>): Promise<LoadResult> {
  if (spec.measure.requests.length === 0) throw new Error('a load needs at least one request');
  const wrk = spec.driver === 'autocannon' ? null : wrkPath();
  if (wrk !== null) {
    if (spec.warmup !== undefined && spec.warmup.durationS > 0 && spec.warmup.requests.length > 0) await runWrkPhase(spec, spec.warmup, wrk);
    await beforeMeasure?.();
    return runWrkPhase(spec, spec.measure, wrk);
  }
  return runAutocannon(spec, beforeMeasure);
}

/** The driver actually used for `spec` on this machine. */
export function loadDriverOf(spec: Pick<LoadSpec, 'driver'>): LoadDriver {
  return spec.driver === 'autocannon' || wrkPath() === null ? 'autocannon' : 'wrk';
}

async function runAutocannon(spec: LoadSpec, beforeMeasure?: () => Promise<void>): Promise<LoadResult> {
  const child = fork(childEntry, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const deadlineMs = ((spec.warmup?.durationS ?? 0) + spec.measure.durationS) * 1000 + deadlineSlackMs;
  try {
    return await new Promise<LoadResult>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`load generator did not finish within ${deadlineMs} ms`)), deadlineMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`load generator exited early (code ${String(code)}, signal ${String(signal)})`));
      });
      const go = (): void => {
        child.send({ kind: 'go' } satisfies ParentMessage);
      };
      child.on('message', (message: ChildMessage) => {
        if (message.kind === 'warm') {
          if (beforeMeasure === undefined) go();
          else beforeMeasure().then(go, reject);
          return;
        }
        clearTimeout(timer);
        if (message.kind === 'result') resolve(message.result);
        else reject(new Error(`load generator failed: ${message.message}`));
      });
      child.send({ kind: 'spec', spec } satisfies ParentMessage);
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const killTimer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killTimer);
    }
  }
}
