// Waits for an asynchronous consequence (a release relayed between actors, a webhook delivered):
// polls `check` until it stops throwing, failing with its last error after `timeoutMs`.
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}

/**
 * Awaits one step of a test with a deadline that names it: a step that never settles (seen once,
 * under a load average of 25) fails the test with its name instead of hanging the file until the
 * runner's per-file timeout. The timer is cleared either way.
 */
export async function within<T>(step: string, timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${step}: not done within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
