// Runs one test file in a process group of its own, so that the file and everything it started
// (redis-server, anvil, node roles, their children) can be stopped together: at the file's time
// bound the whole group gets SIGTERM, then SIGKILL. After the file's process has exited, whatever
// is still in its group was left behind (an orphan), and whatever is still in its private TMPDIR
// is a temp dir it did not remove; both are named in the result, then killed and removed so the
// next run starts clean.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { parseEvents } from './events.ts';
import { outcomeOf, type FileOutcome } from './outcome.ts';
import { processesInGroup, signalGroup, type ProcessInfo } from './process-table.ts';

export interface FileRunOptions {
  readonly file: string;
  /** Where this file's TMPDIR and reporter output go (the runner's per-run directory). */
  readonly runDir: string;
  readonly index: number;
  readonly timeoutMs: number;
  /** Environment entries every process of the run carries (the run marker). */
  readonly env: Readonly<Record<string, string>>;
}

export interface FileResult {
  readonly file: string;
  readonly durationMs: number;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  readonly outcome: FileOutcome;
  /** The spec reporter's output and the file's own stdout/stderr, in arrival order. */
  readonly output: string;
  /** Processes still in the file's group after its process exited (killed since). */
  readonly orphans: readonly ProcessInfo[];
  /** Entries left in the file's TMPDIR (removed since). */
  readonly leftoverTemp: readonly string[];
}

/** After SIGTERM to the group, how long before SIGKILL. */
const termGraceMs = 5_000;
/**
 * After the file's process exits, how long its group may take to empty on its own: tsx's esbuild
 * service, say, exits once it sees its stdin close, a moment after the process that started it.
 */
const groupDrainMs = 3_000;
const outputBytesMax = 4 * 1024 * 1024;
const reporterPath = join(import.meta.dirname, 'reporter.ts');
/** Groups of the files running now, for `killRunningGroups`. */
const runningGroups = new Set<number>();

async function until(condition: () => boolean, boundMs: number): Promise<boolean> {
  const deadline = Date.now() + boundMs;
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/**
 * tsx keeps its compile cache in `$TMPDIR/tsx-<uid>`. Each file's TMPDIR gets a link to the shared
 * one: without it every file (and every node role it starts) would compile the whole source tree
 * again, and the cache would count as a leftover.
 */
const tsxCacheName = `tsx-${userInfo().uid}`;

function linkTsxCache(dir: string): void {
  const shared = join(tmpdir(), tsxCacheName);
  mkdirSync(shared, { recursive: true });
  symlinkSync(shared, join(dir, tsxCacheName));
}

function tempLeftovers(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name !== tsxCacheName).map((name) => join(dir, name));
  } catch {
    return [];
  }
}

export async function runFile(options: FileRunOptions): Promise<FileResult> {
  const tmp = join(options.runDir, 'tmp', String(options.index));
  const eventsPath = join(options.runDir, 'events', `${options.index}.jsonl`);
  mkdirSync(tmp, { recursive: true });
  linkTsxCache(tmp);
  const started = Date.now();
  const child = spawn(process.execPath, [
    '--import', 'tsx',
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${reporterPath}`, `--test-reporter-destination=${eventsPath}`,
    options.file,
  ], {
    detached: true, // a process group of its own, led by the file's process
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env, TMPDIR: tmp },
  });
  const chunks: Buffer[] = [];
  let outputBytes = 0;
  const collect = (chunk: Buffer): void => {
    if (outputBytes >= outputBytesMax) return;
    chunks.push(chunk);
    outputBytes += chunk.length;
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  const group = child.pid;
  if (group !== undefined) runningGroups.add(group);
  let timedOut = false;
  let killTimer: NodeJS.Timeout | undefined;
  const boundTimer = setTimeout(() => {
    timedOut = true;
    if (group === undefined) return;
    signalGroup(group, 'SIGTERM');
    killTimer = setTimeout(() => signalGroup(group, 'SIGKILL'), termGraceMs);
  }, options.timeoutMs);
  const { code, signal } = await exited;
  clearTimeout(boundTimer);
  clearTimeout(killTimer);
  const durationMs = Date.now() - started;

  let orphans: ProcessInfo[] = [];
  if (group !== undefined && !(await until(() => processesInGroup(group).length === 0, groupDrainMs))) {
    orphans = processesInGroup(group);
    signalGroup(group, 'SIGKILL');
  }
  if (group !== undefined) runningGroups.delete(group);
  // A grandchild that inherited the pipes would keep them open; the file's output is complete now.
  child.stdout.destroy();
  child.stderr.destroy();

  const leftoverTemp = tempLeftovers(tmp);
  rmSync(tmp, { recursive: true, force: true });
  let eventsText = '';
  try {
    eventsText = readFileSync(eventsPath, 'utf8');
  } catch {
    // the file never got as far as running a test
  }
  return {
    file: options.file,
    durationMs,
    exitCode: code,
    signal,
    timedOut,
    outcome: outcomeOf(parseEvents(eventsText)),
    output: Buffer.concat(chunks).toString('utf8'),
    orphans,
    leftoverTemp,
  };
}

/** Kills every running file's whole group at once (the runner itself was interrupted). */
export function killRunningGroups(): void {
  for (const group of runningGroups) signalGroup(group, 'SIGKILL');
}
