// Pure: the lines printed for one finished file and for the whole run, and whether the run failed.
// A run fails on a failed test, on a file that exited non-zero or overran its bound, and on
// anything a file left behind (a process or a temp dir) even when its tests passed.
import type { FileResult } from './file-run.ts';
import type { ProcessInfo } from './process-table.ts';

function seconds(ms: number): string {
  return `${(ms / 1_000).toFixed(1)} s`;
}

function describeProcess(process: ProcessInfo): string {
  return `pid ${process.pid}: ${process.command}`;
}

/** Why a file failed, one line each; none when it passed cleanly. */
export function fileProblems(result: FileResult): string[] {
  const problems: string[] = [];
  const { outcome } = result;
  if (result.timedOut) {
    const doing = outcome.running.length > 0
      ? `still running: ${outcome.running.join(' > ')}`
      : outcome.finished || outcome.passed + outcome.failed > 0
        ? 'its tests had finished but the process did not exit (something it started is still open: a server, a child process, a timer, a socket)'
        : 'no test had started';
    problems.push(`timed out: stopped (process group killed) after ${seconds(result.durationMs)}; ${doing}`);
  } else if (result.exitCode !== 0) {
    problems.push(result.signal !== null ? `killed by ${result.signal}` : `exited with code ${String(result.exitCode)}`);
  }
  for (const failure of outcome.failures) problems.push(`failed: ${failure.name}${failure.detail === '' ? '' : ` — ${failure.detail.split('\n')[0]}`}`);
  for (const orphan of result.orphans) problems.push(`left running (killed now): ${describeProcess(orphan)}`);
  for (const path of result.leftoverTemp) problems.push(`left in its TMPDIR (removed now): ${path}`);
  return problems;
}

export function fileHeadline(result: FileResult): string {
  const { outcome } = result;
  const mark = fileProblems(result).length === 0 ? '✔' : '✖';
  const counts = [`${outcome.passed} passed`];
  if (outcome.failed > 0) counts.push(`${outcome.failed} failed`);
  if (outcome.skipped > 0) counts.push(`${outcome.skipped} skipped`);
  if (outcome.todo > 0) counts.push(`${outcome.todo} todo`);
  return `${mark} ${result.file} (${seconds(result.durationMs)}; ${counts.join(', ')})`;
}

export interface RunSummary {
  readonly lines: readonly string[];
  readonly failed: boolean;
}

/** `escaped`: processes of this run found at the end outside any file's group (killed since). */
export function runSummary(results: readonly FileResult[], escaped: readonly ProcessInfo[], durationMs: number): RunSummary {
  const total = { passed: 0, failed: 0, skipped: 0, todo: 0 };
  for (const { outcome } of results) {
    total.passed += outcome.passed;
    total.failed += outcome.failed;
    total.skipped += outcome.skipped;
    total.todo += outcome.todo;
  }
  const failedFiles = results.filter((result) => fileProblems(result).length > 0);
  const lines = [
    '',
    `files ${results.length} (${results.length - failedFiles.length} clean, ${failedFiles.length} failed; ${results.filter((r) => r.timedOut).length} timed out)`,
    `tests ${total.passed + total.failed + total.skipped + total.todo} · pass ${total.passed} · fail ${total.failed} · skipped ${total.skipped} · todo ${total.todo}`,
  ];
  const skips = results.flatMap((result) => result.outcome.skips.map((skip) => `  ${result.file}: ${skip.name} — ${skip.detail}`));
  if (skips.length > 0) lines.push('skipped:', ...skips);
  if (failedFiles.length > 0) {
    lines.push('failed:');
    for (const result of failedFiles) lines.push(`  ${result.file}`, ...fileProblems(result).map((problem) => `    ${problem}`));
  }
  const orphanCount = results.reduce((sum, result) => sum + result.orphans.length, 0) + escaped.length;
  const tempCount = results.reduce((sum, result) => sum + result.leftoverTemp.length, 0);
  if (escaped.length > 0) {
    lines.push('left running outside any test file\'s process group (killed now):', ...escaped.map((process) => `  ${describeProcess(process)}`));
  }
  lines.push(`leftovers: ${orphanCount} orphaned processes, ${tempCount} temp entries`);
  lines.push(`duration ${seconds(durationMs)}`);
  return { lines, failed: failedFiles.length > 0 || escaped.length > 0 };
}
