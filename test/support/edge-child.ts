// The whole service (ROLE=all, exactly as test/support/service-harness.ts starts it) in a child
// process of its own, so a test can measure the edge's memory without its own allocations in the
// numbers. The child runs with --expose-gc and answers over IPC:
//   child → parent once started:  { kind: 'ready', baseUrl, apiKeys }
//   { kind: 'measure' }  → { kind: 'memory', ...MemorySample } after two full collections
//   { kind: 'blobs' }    → { kind: 'blobs', ...BlobCounts } read from the embedded store's files
//   { kind: 'stop' }     → stops the service, then exits
// Started as a program (by `startEdgeChild`) it is the child; imported, it is the parent's helper.
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { open as openLmdb } from 'lmdb';
import { lmdbDirFromEnv } from '../../src/store/lmdb-store.ts';
import { stopChild } from './processes.ts';
import { startServiceHarness } from './service-harness.ts';

export interface MemorySample {
  readonly rssBytes: number;
  /**
   * The resident memory that is the process's own (Linux `RssAnon`): RSS without file-backed
   * pages, such as the embedded store's memory map, which the kernel reclaims at will.
   */
  readonly rssAnonBytes: number;
  readonly heapUsedBytes: number;
  /** Memory of Buffers and other objects outside the V8 heap (request bodies held live here). */
  readonly externalBytes: number;
}

export interface BlobCounts {
  /** Blob streams begun and neither committed nor removed. */
  readonly stagingEntries: number;
  /** Stored parts of streamed blobs (committed or not). */
  readonly parts: number;
}

export interface EdgeChild {
  readonly baseUrl: string;
  readonly port: number;
  readonly apiKeys: Readonly<Record<string, string>>;
  measure(): Promise<MemorySample>;
  blobs(): Promise<BlobCounts>;
  stop(): Promise<void>;
}

type ChildMessage =
  | { readonly kind: 'ready'; readonly baseUrl: string; readonly apiKeys: Record<string, string> }
  | ({ readonly kind: 'memory' } & MemorySample)
  | ({ readonly kind: 'blobs' } & BlobCounts)
  | { readonly kind: 'failed'; readonly error: string };

type ParentMessage = { readonly kind: 'measure' } | { readonly kind: 'blobs' } | { readonly kind: 'stop' };

const startTimeoutMs = 90_000;
const answerTimeoutMs = 30_000;
const stopTimeoutMs = 20_000;

/** Starts the child with `env` added to the service's environment; resolves once it serves. */
export async function startEdgeChild(env: Readonly<Record<string, string>> = {}): Promise<EdgeChild> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    env: { ...process.env, EDGE_CHILD_ENV: JSON.stringify(env) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const ready = await nextMessage(child, 'ready', startTimeoutMs);
    const port = Number(new URL(ready.baseUrl).port);
    return {
      baseUrl: ready.baseUrl,
      port,
      apiKeys: ready.apiKeys,
      async measure() {
        const answer = nextMessage(child, 'memory', answerTimeoutMs);
        send(child, { kind: 'measure' });
        const { kind: _kind, ...sample } = await answer;
        return sample;
      },
      async blobs() {
        const answer = nextMessage(child, 'blobs', answerTimeoutMs);
        send(child, { kind: 'blobs' });
        const { kind: _kind, ...counts } = await answer;
        return counts;
      },
      stop: () => stopEdgeChild(child),
    };
  } catch (error) {
    await stopChild(child);
    throw error;
  }
}

function send(child: ChildProcess, message: ParentMessage): void {
  child.send(message);
}

/** The child's next message of `kind` (a 'failed' message or an exit rejects). */
function nextMessage<Kind extends ChildMessage['kind']>(
  child: ChildProcess,
  kind: Kind,
  timeoutMs: number,
): Promise<Extract<ChildMessage, { kind: Kind }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => settle(new Error(`edge child: no '${kind}' within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: ChildMessage): void => {
      if (message.kind === 'failed') settle(new Error(`edge child failed: ${message.error}`));
      else if (message.kind === kind) settle(null, message as Extract<ChildMessage, { kind: Kind }>);
    };
    const onExit = (code: number | null): void => settle(new Error(`edge child exited (${code}) before '${kind}'`));
    function settle(error: Error | null, message?: Extract<ChildMessage, { kind: Kind }>): void {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error !== null || message === undefined) reject(error ?? new Error('edge child: no message'));
      else resolve(message);
    }
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function stopEdgeChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    send(child, { kind: 'stop' });
  } catch {
    // The IPC channel is gone: the signals below still stop it.
  }
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([exited.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), stopTimeoutMs)))]);
  clearTimeout(timer);
  if (late) await stopChild(child);
}

// ---- the child ----

function countBlobs(dataDir: string): BlobCounts {
  const env = openLmdb({ path: lmdbDirFromEnv({ DATA_DIR: dataDir }), maxDbs: 32, readOnly: true });
  try {
    const parts = [...env.openDB({ name: 'blobChunks', encoding: 'binary' }).getKeys()].length;
    const stagingEntries = [...env.openDB({ name: 'blobMeta' }).getKeys({ start: ['staging'], end: ['staging', Buffer.from([0xff])] })].length;
    return { stagingEntries, parts };
  } finally {
    void env.close();
  }
}

function rssAnonBytes(): number {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = /^RssAnon:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error('no RssAnon in /proc/self/status (Linux only)');
  return Number(kib) * 1024;
}

function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the edge child needs --expose-gc');
  gc();
  gc();
}

async function runChild(): Promise<void> {
  const reply = (message: ChildMessage): void => {
    process.send?.(message);
  };
  try {
    const env = JSON.parse(process.env['EDGE_CHILD_ENV'] ?? '{}') as Record<string, string>;
    const harness = await startServiceHarness({ env });
    process.on('message', (message: ParentMessage) => {
      if (message.kind === 'measure') {
        collectGarbage();
        const usage = process.memoryUsage();
        reply({ kind: 'memory', rssBytes: usage.rss, rssAnonBytes: rssAnonBytes(), heapUsedBytes: usage.heapUsed, externalBytes: usage.external });
      } else if (message.kind === 'blobs') {
        reply({ kind: 'blobs', ...countBlobs(harness.ctx.env.DATA_DIR) });
      } else {
        void harness.stop().finally(() => process.exit(0));
      }
    });
    // Parent gone (killed): stop too, never linger.
    process.on('disconnect', () => void harness.stop().finally(() => process.exit(0)));
    reply({ kind: 'ready', baseUrl: harness.baseUrl, apiKeys: { ...harness.apiKeys } });
  } catch (error) {
    reply({ kind: 'failed', error: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) void runChild();
