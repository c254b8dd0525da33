// What the runner's reporter (reporter.ts) writes, one JSON object a line, and how the runner reads it back.

export type RunnerEvent =
  | { readonly kind: 'start'; readonly id: string; readonly name: string; readonly nesting: number }
  | {
      readonly kind: 'end';
      readonly id: string;
      readonly name: string;
      readonly nesting: number;
      readonly suite: boolean;
      readonly passed: boolean;
      /** The skip reason ('' when none was given), or null when not skipped. */
      readonly skip: string | null;
      readonly todo: string | null;
      readonly error: string | null;
    }
  /** The file's tests are all done (node:test wrote its summary); the process should exit now. */
  | { readonly kind: 'done' };

/** Parses the reporter's output; a torn last line (the process was killed mid-write) is ignored. */
export function parseEvents(text: string): RunnerEvent[] {
  const events: RunnerEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      events.push(JSON.parse(line) as RunnerEvent);
    } catch {
      // torn line
    }
  }
  return events;
}
