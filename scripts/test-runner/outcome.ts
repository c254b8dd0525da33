// Pure: what one test file's events and exit say — counts, failures, skips with their reasons, and
// for a file stopped at its time bound, what it was doing then.
import type { RunnerEvent } from './events.ts';

export interface Named {
  readonly name: string;
  readonly detail: string;
}

export interface FileOutcome {
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly todo: number;
  /** Failed tests and suites (a suite fails alone when its `after` hook throws), with the error. */
  readonly failures: readonly Named[];
  /** Skipped tests and suites with the reason given (a skipped suite counts once: its tests never ran). */
  readonly skips: readonly Named[];
  /** Tests begun and not finished, innermost last. */
  readonly running: readonly string[];
  /** node:test wrote its summary: every test of the file had finished. */
  readonly finished: boolean;
}

export function outcomeOf(events: readonly RunnerEvent[]): FileOutcome {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let todo = 0;
  let finished = false;
  const failures: Named[] = [];
  const skips: Named[] = [];
  const open = new Map<string, { name: string; nesting: number }>();
  for (const event of events) {
    if (event.kind === 'done') {
      finished = true;
    } else if (event.kind === 'start') {
      open.set(event.id, { name: event.name, nesting: event.nesting });
    } else {
      open.delete(event.id);
      if (event.skip !== null) {
        skipped += 1;
        skips.push({ name: event.name, detail: event.skip === '' ? 'no reason given' : event.skip });
      } else if (event.todo !== null) {
        todo += 1;
      } else if (!event.passed) {
        if (!event.suite) failed += 1;
        failures.push({ name: event.name, detail: event.error ?? '' });
      } else if (!event.suite) {
        passed += 1;
      }
    }
  }
  const running = [...open.values()].sort((a, b) => a.nesting - b.nesting).map((test) => test.name);
  return { passed, failed, skipped, todo, failures, skips, running, finished };
}
