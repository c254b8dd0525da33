// A node:test reporter that the runner passes to every test file (next to `spec`, which is for
// people): one JSON line per event the runner needs, written to a file the runner reads. From it
// the runner counts tests, lists skipped tests and suites with their reasons, and, when a file
// overruns its time, says which test was still running or that all had finished and only the
// process failed to exit.
import type { RunnerEvent } from './events.ts';

interface TestEventData {
  readonly name?: string;
  readonly nesting?: number;
  readonly line?: number;
  readonly column?: number;
  readonly skip?: string | boolean;
  readonly todo?: string | boolean;
  readonly message?: string;
  readonly details?: { readonly type?: string; readonly passed?: boolean; readonly error?: unknown };
}

function reason(value: string | boolean | undefined): string | null {
  if (value === undefined || value === false) return null;
  return value === true ? '' : value;
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // node:test wraps the test's own error as `cause` (ERR_TEST_FAILURE)
  const cause = (error as Error & { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : error.message;
}

function translate(type: string, data: TestEventData): RunnerEvent | null {
  const id = `${data.nesting ?? 0}:${data.line ?? 0}:${data.column ?? 0}:${data.name ?? ''}`;
  switch (type) {
    case 'test:dequeue':
      return { kind: 'start', id, name: data.name ?? '', nesting: data.nesting ?? 0 };
    case 'test:complete': {
      const passed = data.details?.passed === true;
      return {
        kind: 'end',
        id,
        name: data.name ?? '',
        nesting: data.nesting ?? 0,
        suite: data.details?.type === 'suite',
        passed,
        skip: reason(data.skip),
        todo: reason(data.todo),
        error: passed ? null : errorText(data.details?.error).slice(0, 500),
      };
    }
    case 'test:diagnostic':
      // node:test prints its own summary as diagnostics at nesting 0 once the file's tests are done
      return data.nesting === 0 && data.message?.startsWith('duration_ms') === true ? { kind: 'done' } : null;
    default:
      return null;
  }
}

export default async function* reporter(source: AsyncIterable<{ type: string; data: TestEventData }>): AsyncGenerator<string> {
  for await (const event of source) {
    const translated = translate(event.type, event.data);
    if (translated !== null) yield `${JSON.stringify(translated)}\n`;
  }
}
