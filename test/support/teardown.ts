// The one way an `after` hook stops what its file started: every step runs, in order, even when an
// earlier one threw or its resource was never started (a `before` that failed half-way). With plain
// sequential awaits the first stop that throws skips the rest, and a redis-server or child process
// left running keeps the test process alive after its tests are done.

/** Runs each step (awaited in turn); then throws the one failure, or all of them together. */
export async function teardown(...steps: ReadonlyArray<() => unknown>): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `teardown: ${failures.length} steps failed`);
}
