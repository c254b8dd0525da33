// Graceful shutdown's time budget (SIGTERM → exit within SHUTDOWN_GRACE_MS). Each role's stop gets
// how long it may wait for work in flight; whatever it still holds after that it hands back (outbox
// claims, leases) so another process can take it at once. Nothing here waits without a bound.

/**
 * True when `work` settled within `waitMs`, false when the time ran out first (the work goes on in
 * the background; its rejection is swallowed here because the caller has already moved on). An
 * infinite `waitMs` waits for as long as it takes.
 */
export async function settlesWithin(work: Promise<unknown>, waitMs: number): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  if (!Number.isFinite(waitMs)) return settled;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, waitMs));
  });
  try {
    return await Promise.race([settled, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * When a role stops, relative to the others:
 *  - `intake`: takes or does work (edge, payout, watcher, webhooks, admin). They stop together:
 *    each stops taking new work and finishes (or hands back) what it holds. Their work in flight
 *    needs the shard workers (replies, reports), so these stop first;
 *  - `shard`: the shard worker finishes its batch and releases its leases;
 *  - `shared`: what the others used until the end (partner refresh, the chains link client).
 */
export type StopPhase = 'intake' | 'shard' | 'shared';
export const stopPhases: readonly StopPhase[] = ['intake', 'shard', 'shared'];

/** Part of the grace kept for what follows the waits: handing back claims and leases, closing connections. */
export const shutdownReserveMsMax = 2_000;

/** How the grace period splits: the intake roles may wait until `waitUntilMs`, everything ends by `deadlineMs`. */
export function shutdownBudget(graceMs: number, nowMs: number): { readonly waitUntilMs: number; readonly deadlineMs: number } {
  const reserveMs = Math.min(shutdownReserveMsMax, Math.floor(graceMs / 4));
  return { waitUntilMs: nowMs + graceMs - reserveMs, deadlineMs: nowMs + graceMs };
}
