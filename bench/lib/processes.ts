// Child processes of the bench (servers, workers): started with `node --import tsx`, their output
// kept in a bounded buffer for error messages, stopped by their own handle (SIGTERM, then SIGKILL
// after a bound). A bench that dies without stopping them kills them on exit. Every wait is bounded.
import { spawn, type ChildProcess } from 'node:child_process';

const outputBytesMax = 16_384;
const stopTimeoutMs = 10_000;

export interface NodeProcess {
  readonly name: string;
  readonly pid: number;
  /** The last bytes the process wrote (stdout and stderr), for failure messages. */
  output(): string;
  exited(): boolean;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `node --import tsx <entry>` with `env` added to this process's environment. */
export function startNode(name: string, entry: string, env: Readonly<Record<string, string>>, extraNodeArgs: readonly string[] = []): NodeProcess {
  const child = spawn(process.execPath, [...extraNodeArgs, '--import', 'tsx', entry], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  running.add(child);
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-outputBytesMax);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.once('exit', () => running.delete(child));
  let stopped: Promise<void> | undefined;
  return {
    name,
    pid: child.pid,
    output: () => output,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: () => (stopped ??= stopChild(child)),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), stopTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (late) {
    child.kill('SIGKILL');
    await exited;
  }
}

// The same helper the test harnesses use.
export { freePort } from '../../test/support/processes.ts';

export async function sleepMs(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `check` until it returns true, failing after `timeoutMs` with `what` (and the output of
 * the processes whose death would explain it). A dead process fails the wait at once.
 */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, watched: readonly NodeProcess[] = []): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = watched.find((proc) => proc.exited());
    if (dead !== undefined) throw new Error(`${dead.name} exited while waiting for ${what}:\n${dead.output()}`);
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) {
      const outputs = watched.map((proc) => `--- ${proc.name} (pid ${proc.pid}) ---\n${proc.output()}`).join('\n');
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${outputs}`);
    }
    await sleepMs(100);
  }
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers: Headers;
}

/** One HTTP request with a timeout (set-up and checks; the load itself goes through autocannon). */
export async function http(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: init.body === undefined ? (init.headers ?? {}) : { 'content-type': 'application/json', ...(init.headers ?? {}) },
    ...(init.body === undefined ? {} : { body: init.body }),
    signal: AbortSignal.timeout(init.timeoutMs ?? 10_000),
  });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

/** Runs `work` over `items` with at most `concurrency` in flight; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, async () => {
    for (;;) {
      const index = next;
      next += 1;
      if (index >= items.length) return;
      results[index] = await work(items[index] as T, index);
    }
  });
  await Promise.all(workers);
  return results;
}
