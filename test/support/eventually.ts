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
