// The one test command (README, CI and `npm run verify` all call it): finds every *.test.ts under
// test/ (optionally only under the folders named as arguments) and runs them, several files at
// once, each in a process of its own. Each test file starts whatever it needs itself (a private
// redis-server on a free port, an edge on a free port), so files are independent.
//
// The runner makes sure a run can neither hang nor leak (scripts/test-runner/):
// - each file runs in its own process group with a time bound; at the bound the whole group
//   (the file and every process it started) is killed and the file is named with what it was doing;
// - each file gets a private TMPDIR; what is left in it when the file exits is named and removed;
// - processes still in a file's group after it exited are named and killed, and at the end so is
//   any process carrying this run's marker (PAYMENTS_TEST_RUN) that escaped its group;
// - skipped tests and suites are listed with their reason;
// - a file marked `// test runner: alone` runs with no test file of another run on this machine
//   beside it (scripts/test-runner/alone-lock.ts).
// Any of these fails the run.
//
// TEST_CONCURRENCY: files at once (default twice the cores); TEST_FILE_TIMEOUT_MS: the bound per
// file (default 300 s; a file may declare a longer one, see scripts/test-runner/time-bound.ts).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, availableParallelism } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { findTestFiles } from './test-runner/find-files.ts';
import { killRunningGroups, runFile, type FileResult } from './test-runner/file-run.ts';
import { processesWithEnvironment, signalProcess } from './test-runner/process-table.ts';
import { fileHeadline, fileProblems, runSummary } from './test-runner/summary.ts';
import { defaultFileTimeoutMs, fileTimeoutMs } from './test-runner/time-bound.ts';
import { enterTogether, leaveAll, runsAlone, takeAloneLock } from './test-runner/alone-lock.ts';

const files = findTestFiles(process.argv.slice(2));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

// Integration files mostly wait on Redis and child processes, so more files than cores is fine.
const concurrency = Number(process.env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism() * 2));
const defaultTimeoutMs = Number(process.env.TEST_FILE_TIMEOUT_MS ?? defaultFileTimeoutMs);
const runId = `${process.pid}-${randomBytes(4).toString('hex')}`;
const marker = { PAYMENTS_TEST_RUN: runId };
const runDir = mkdtempSync(join(tmpdir(), 'payments-test-run-'));
mkdirSync(join(runDir, 'tmp'));
mkdirSync(join(runDir, 'events'));

let releaseAloneLock: (() => void) | undefined;
function interrupted(signal: NodeJS.Signals): void {
  console.error(`\n${signal}: stopping every running test file and what it started`);
  killRunningGroups();
  releaseAloneLock?.();
  leaveAll();
  rmSync(runDir, { recursive: true, force: true });
  process.exit(130);
}
process.once('SIGINT', interrupted);
process.once('SIGTERM', interrupted);

const started = Date.now();
const results: FileResult[] = [];

async function run(file: string, index: number, text: string): Promise<void> {
  const result = await runFile({ file, runDir, index, timeoutMs: fileTimeoutMs(text, defaultTimeoutMs), env: marker });
  results.push(result);
  // Whole blocks, one file at a time: parallel files never interleave their output.
  const problems = fileProblems(result);
  process.stdout.write(`\n${fileHeadline(result)}\n${problems.length > 0 ? `${result.output}\n${problems.map((p) => `  ✖ ${p}`).join('\n')}\n` : result.output}`);
}

// The files that must run alone take the first lane, one at a time under the machine-wide lock
// (scripts/test-runner/alone-lock.ts): no file of another run on this machine runs beside them,
// while this run's own files go on in the other lanes (as they always did; the run is not made
// longer by the lock when it is the only one). Each other file is started only while no other run
// holds the lock.
const sources = files.map((file) => readFileSync(file, 'utf8'));
const indexes = files.map((_, index) => index);
const alone = indexes.filter((index) => runsAlone(sources[index] as string));
const together = indexes.filter((index) => !runsAlone(sources[index] as string));
async function runAloneFiles(): Promise<void> {
  for (const index of alone) {
    const release = await takeAloneLock();
    releaseAloneLock = release;
    try {
      await run(files[index] as string, index, sources[index] as string);
    } finally {
      release();
      releaseAloneLock = undefined;
    }
  }
}
let next = 0;
async function worker(): Promise<void> {
  while (next < together.length) {
    const index = together[next] as number;
    next += 1;
    const leave = await enterTogether(String(index));
    try {
      await run(files[index] as string, index, sources[index] as string);
    } finally {
      leave();
    }
  }
}
const lanes = Math.max(1, Math.min(concurrency, files.length));
await Promise.all(Array.from({ length: lanes }, async (_, lane) => {
  if (lane === 0) await runAloneFiles();
  await worker();
}));


// A process that left its file's group (setsid, `detached`) still carries the run's marker.
// One a file's own check already named and killed may not be reaped yet on a loaded machine: it is
// not counted twice.
const namedAlready = new Set(results.flatMap((result) => result.orphans.map((orphan) => orphan.pid)));
const escaped = processesWithEnvironment(`PAYMENTS_TEST_RUN=${runId}`, process.pid).filter((found) => !namedAlready.has(found.pid));
for (const orphan of escaped) signalProcess(orphan.pid, 'SIGKILL');
rmSync(runDir, { recursive: true, force: true });

results.sort((a, b) => a.file.localeCompare(b.file));
const summary = runSummary(results, escaped, Date.now() - started);
process.stdout.write(`${summary.lines.join('\n')}\n`);
process.exitCode = summary.failed ? 1 : 0;
