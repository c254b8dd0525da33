// What a process says about itself on its health listener (HEALTH_PORT, src/service/health-listener.ts).
//
// Two questions, answered per check and then for the whole process:
//  - live: is every loop still making rounds? A loop whose last round finished (well or badly)
//    longer ago than `stalledAfterMs` is stuck — a hung await, a timer that was never set again —
//    and a restart is the remedy. A loop that keeps failing quickly is alive.
//  - ready: is every loop doing its job? A loop with no successful round for `unreadyAfterMs` is
//    failing (its store or Redis is unreachable, say): an alert, not a restart. A draining process
//    is not ready either.
// The reports carry ages and counts only: never error texts (they may name hosts or carry more),
// which stay in the logs.

/** One check's answer: whether it is live and ready, and details for the operator. */
export interface CheckReport {
  readonly live: boolean;
  readonly ready: boolean;
  readonly detail: Readonly<Record<string, string | number | boolean | null | Readonly<Record<string, string>>>>;
}

export interface HealthCheck {
  /** Stable name in the report (`shard-leases`, `payout-rounds`, `watchers`, …). */
  readonly name: string;
  /** `unreadyAfterMs`: HEALTH_UNREADY_AFTER_MS, for checks of loops. */
  report(nowMs: number, unreadyAfterMs: number): CheckReport;
}

export interface HealthReport {
  readonly status: 'ok' | 'stalled';
  readonly ready: 'ready' | 'not_ready' | 'stopping';
  readonly role: string;
  readonly checks: Readonly<Record<string, CheckReport>>;
}

export interface LoopHealthThresholds {
  /** No successful round for this long: not ready. */
  readonly unreadyAfterMs: number;
  /** No round finished for this long: not live. */
  readonly stalledAfterMs: number;
}

/** Default HEALTH_UNREADY_AFTER_MS. */
export const unreadyAfterMsDefault = 15_000;
/** A round that has not finished after 2 minutes is stuck: a longer one has no bound anywhere. */
export const stalledAfterMsFloor = 120_000;

/**
 * Thresholds for a loop that runs a round every `intervalMs`: a few missed rounds before it is
 * unready (never sooner than `unreadyAfterMs`), many before it counts as stalled.
 */
export function loopThresholds(intervalMs: number, unreadyAfterMs: number = unreadyAfterMsDefault): LoopHealthThresholds {
  const unready = Math.max(unreadyAfterMs, 3 * intervalMs);
  return { unreadyAfterMs: unready, stalledAfterMs: Math.max(stalledAfterMsFloor, 4 * unready, 10 * intervalMs) };
}

/**
 * The rounds of one loop. The loop calls `succeeded()` or `failed()` at the end of every round;
 * the process start counts as a success, so a loop is ready until its first rounds have had time
 * to fail.
 */
export class LoopHealth {
  private lastSuccessAtMs: number;
  private lastFinishedAtMs: number;
  private consecutiveFailures = 0;
  private rounds = 0;

  constructor(
    /** How often the loop runs a round when all is well. */
    readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {
    const startedAtMs = now();
    this.lastSuccessAtMs = startedAtMs;
    this.lastFinishedAtMs = startedAtMs;
  }

  succeeded(): void {
    const nowMs = this.now();
    this.rounds += 1;
    this.consecutiveFailures = 0;
    this.lastSuccessAtMs = nowMs;
    this.lastFinishedAtMs = nowMs;
  }

  failed(): void {
    this.rounds += 1;
    this.consecutiveFailures += 1;
    this.lastFinishedAtMs = this.now();
  }

  report(nowMs: number, unreadyAfterMs: number = unreadyAfterMsDefault): CheckReport {
    const thresholds = loopThresholds(this.intervalMs, unreadyAfterMs);
    const sinceSuccessMs = Math.max(0, nowMs - this.lastSuccessAtMs);
    const sinceFinishedMs = Math.max(0, nowMs - this.lastFinishedAtMs);
    return {
      live: sinceFinishedMs <= thresholds.stalledAfterMs,
      ready: sinceSuccessMs <= thresholds.unreadyAfterMs,
      detail: {
        rounds: this.rounds,
        lastSuccessAgoMs: sinceSuccessMs,
        lastRoundAgoMs: sinceFinishedMs,
        consecutiveFailures: this.consecutiveFailures,
        unreadyAfterMs: thresholds.unreadyAfterMs,
        stalledAfterMs: thresholds.stalledAfterMs,
      },
    };
  }
}

/** A loop's check with extra details (the shard worker's owned shards, say). */
export function loopCheck(name: string, loop: LoopHealth, extra: () => CheckReport['detail'] = () => ({})): HealthCheck {
  return {
    name,
    report(nowMs, unreadyAfterMs) {
      const report = loop.report(nowMs, unreadyAfterMs);
      return { ...report, detail: { ...report.detail, ...extra() } };
    },
  };
}

/** Watcher states, as the chains report them (src/chains/chains.ts WatcherStatus). */
export interface WatcherState {
  readonly network: string;
  readonly state: 'starting' | 'streaming' | 'reconnecting' | 'stale' | 'stopped';
}

/**
 * The watchers of the process holding the watcher lease: unready when one is `stale` (no contact
 * with its chain and its probe failed: deposits there are not being seen) or `stopped` while it
 * should run. `reconnecting` is a watcher doing its job through a blip. A standby process (no
 * lease: its watchers are stopped on purpose) is ready. Watchers run their own streams, so they
 * are always live.
 */
export function watchersCheck(states: () => readonly WatcherState[], active: () => boolean = () => true): HealthCheck {
  return {
    name: 'watchers',
    report() {
      const byNetwork: Record<string, string> = {};
      const running = active();
      let ready = true;
      for (const { network, state } of states()) {
        byNetwork[network] = state;
        if (running && (state === 'stale' || state === 'stopped')) ready = false;
      }
      return { live: true, ready, detail: { active: running, states: byNetwork } };
    },
  };
}

/** The whole process: live when every check is, ready when every check is and it is not stopping. */
export function healthReport(
  role: string,
  checks: readonly HealthCheck[],
  at: { readonly nowMs: number; readonly unreadyAfterMs: number; readonly stopping: boolean },
): HealthReport {
  const reports: Record<string, CheckReport> = {};
  let live = true;
  let ready = true;
  for (const check of checks) {
    const report = check.report(at.nowMs, at.unreadyAfterMs);
    reports[check.name] = report;
    live &&= report.live;
    ready &&= report.ready;
  }
  return { status: live ? 'ok' : 'stalled', ready: at.stopping ? 'stopping' : ready ? 'ready' : 'not_ready', role, checks: reports };
}
