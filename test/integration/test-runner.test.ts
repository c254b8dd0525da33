// The test runner (scripts/test.ts) on files that misbehave on purpose (test/fixtures/runner/): a
// file whose tests passed but whose process stays, and one whose test never ends, are stopped at
// their bound with their whole process group and named with what they were doing; processes a file
// left behind (in its group or escaped from it) are named and killed; a temp dir left in the file's
// TMPDIR is named and removed; a skipped suite is listed with its reason. Any of these fails the run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually.ts';

const repoRoot = join(import.meta.dirname, '../..');
const fixtures = ['tests-pass-process-stays', 'test-never-ends', 'leaves-processes', 'leaves-temp-dir'].map((name) => `fixtures/runner/${name}.fixture.ts`);

/** Alive and not a zombie (an orphan's zombie waits for a reaper that may never come; it runs nothing). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

test('hangs, leftovers and skips are stopped, named and cleaned up, and fail the run', { skip: process.platform !== 'linux' && 'reads /proc', timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pidsFile = join(dir, 'pids.json');
  const runner = spawn(process.execPath, ['--import', 'tsx', 'scripts/test.ts', ...fixtures], {
    cwd: repoRoot,
    env: { ...process.env, TEST_FILE_TIMEOUT_MS: '20000', TEST_CONCURRENCY: '4', RUNNER_FIXTURE_PIDS: pidsFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    if (runner.exitCode === null) runner.kill('SIGKILL');
  });
  let output = '';
  runner.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  runner.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => runner.once('exit', resolve));

  assert.equal(code, 1, output);
  const summary = output.slice(output.lastIndexOf('\nfiles '));
  assert.match(summary, /^\nfiles 4 \(0 clean, 4 failed; 2 timed out\)/, output);
  assert.match(summary, /tests-pass-process-stays\.fixture\.ts\n\s+timed out: .*its tests had finished but the process did not exit/);
  assert.match(summary, /test-never-ends\.fixture\.ts\n\s+timed out: .*still running: waits forever/);
  assert.match(summary, /leaves-processes\.fixture\.ts\n\s+left running \(killed now\): pid \d+: sleep 300/);
  assert.match(summary, /left running outside any test file's process group \(killed now\):\n\s+pid \d+: sleep 301/);
  assert.match(summary, /leaves-temp-dir\.fixture\.ts\n\s+left in its TMPDIR \(removed now\): \S+\/forgotten-\w+/);
  assert.match(summary, /skipped:\n\s+test\/fixtures\/runner\/leaves-temp-dir\.fixture\.ts: a contract for a server that is not here — SERVER_URL is not set/);
  assert.match(summary, /leftovers: 2 orphaned processes, 1 temp entries/);

  const pids = JSON.parse(readFileSync(pidsFile, 'utf8')) as number[];
  await eventually(() => assert.deepEqual(pids.filter(running), [], 'the runner killed both sleepers'), 5_000);
});

test('a file marked "alone" runs with no test file of another run on the machine beside it', { skip: process.platform !== 'linux' && 'reads /proc', timeout: 90_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-alone-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const intervals = join(dir, 'intervals.jsonl');
  // Two runs side by side, each with an "alone" file and an ordinary one, sharing a private lock.
  const runners = ['a', 'b'].map((name) => spawn(process.execPath, ['--import', 'tsx', 'scripts/test.ts', `fixtures/runner/alone-${name}.fixture.ts`, 'fixtures/runner/together.fixture.ts'], {
    cwd: repoRoot,
    env: { ...process.env, TEST_CONCURRENCY: '4', TEST_ALONE_LOCK: join(dir, 'alone.lock'), RUNNER_FIXTURE_INTERVALS: intervals, RUNNER_FIXTURE_NAME: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  t.after(() => {
    for (const runner of runners) if (runner.exitCode === null) runner.kill('SIGKILL');
  });
  const outputs = runners.map((runner) => {
    let output = '';
    runner.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    runner.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    return () => output;
  });
  const codes = await Promise.all(runners.map((runner) => new Promise<number | null>((resolve) => runner.once('exit', resolve))));
  assert.deepEqual(codes, [0, 0], outputs.map((output) => output()).join('\n'));

  const runs = readFileSync(intervals, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { name: string; startMs: number; endMs: number });
  assert.deepEqual(runs.map((run) => run.name).sort(), ['alone-a', 'alone-b', 'together-a', 'together-b']);
  const runOf = (name: string): string => name.split('-')[1] ?? '';
  for (const alone of runs.filter((run) => run.name.startsWith('alone-'))) {
    for (const other of runs.filter((run) => runOf(run.name) !== runOf(alone.name))) {
      assert.ok(other.endMs <= alone.startMs || other.startMs >= alone.endMs, `${other.name} overlapped ${alone.name}: ${JSON.stringify(runs)}`);
    }
  }
});
