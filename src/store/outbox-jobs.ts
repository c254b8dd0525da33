// The loop shared by the workers that execute outbox rows one job per row (chain refunds, onramp
// deliveries): claim rows of one topic for a lease, keep each as a job in memory with its retry
// state, attempt every job that is due on each tick, and hand everything back on stop.
//
// What a job does, and when it is finished or retried, belongs to the worker: `attempt` receives
// the job's entry, sets `attempts`/`nextAttemptAtMs`/`lastError` for a retry, and calls `finish`
// once the row's work is done (the row is marked done and forgotten).
//
// Claims: a worker renews the claims of the rows it holds once less than half the lease is left,
// and attempts a job only under a live claim. A row it could not renew (another worker claimed it
// after the claim lapsed, e.g. while this process was stalled) is dropped from memory and left to
// its new holder, so two workers do not work one row on and on. A crash drops the claims and
// after the lease another worker (or this one, restarted) takes the rows again.
// A malformed row is never dropped silently nor marked done: it is logged the first time this
// worker sees it, counted (`malformedRows`), and keeps its claim until the lease lapses, for
// operations to act on. Due times come from the injected clock; the loop itself ticks on a real
// timer every `tickMs`.
import type { Logger } from 'pino';
import { settlesWithin } from '../service/shutdown.ts';
import { LoopHealth, loopCheck, type HealthCheck } from '../service/health.ts';
import { outboxBatchMax, type OutboxRow, type SnapshotStore } from './store.ts';

export interface OutboxJobEntry<Job> {
  readonly rowId: string;
  readonly job: Job;
  attempts: number;
  nextAttemptAtMs: number;
  lastError: string | null;
  running: boolean;
  /** This worker's claim on the row ends then (renewed by the loop). */
  claimExpiresAtMs: number;
}

/** Claims are renewed once less than this share of the lease is left. */
const renewWhenLeftShare = 0.5;

export interface OutboxJobTuning {
  readonly claimLeaseMs?: number;
  readonly claimBatchMax?: number;
  readonly inFlightMax?: number;
  readonly tickMs?: number;
}

export interface OutboxJobsOptions<Job> {
  readonly store: SnapshotStore;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Unique per worker process: the outbox claim owner. */
  readonly owner: string;
  readonly topic: string;
  /** What the jobs are, for log lines (`refund`, `delivery`). */
  readonly what: string;
  /** Claim lease, batch, jobs held at most, tick; the workers' own options carry them as is. */
  readonly tuning?: OutboxJobTuning;
  /** Reads a claimed row: its job, `release` (another worker's kind: handed back), or `malformed`. */
  parse(row: OutboxRow): Job | 'release' | 'malformed';
  /** One attempt at a due job; see the header. Throwing counts as a failed round, logged. */
  attempt(entry: OutboxJobEntry<Job>): Promise<void>;
}

export class OutboxJobs<Job> {
  private readonly entries = new Map<string, OutboxJobEntry<Job>>();
  private readonly malformed = new Set<string>();
  private running = false;
  /** Set by stop(): rows claimed from then on go straight back. */
  private stopRequested = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly claimLeaseMs: number;
  private readonly claimBatchMax: number;
  private readonly inFlightMax: number;
  private readonly tickMs: number;
  /** The loop's rounds (the health listener's check). */
  private readonly rounds: LoopHealth;

  constructor(private readonly options: OutboxJobsOptions<Job>) {
    const tuning = options.tuning ?? {};
    this.claimLeaseMs = tuning.claimLeaseMs ?? 60_000;
    this.claimBatchMax = tuning.claimBatchMax ?? 32;
    this.inFlightMax = tuning.inFlightMax ?? 256;
    this.tickMs = tuning.tickMs ?? 250;
    this.rounds = new LoopHealth(this.tickMs);
  }

  /** The health listener's check (`<what>-rounds`): claim and attempt rounds, with the jobs held. */
  health(): HealthCheck {
    return loopCheck(`${this.options.what}-rounds`, this.rounds, () => ({ jobsHeld: this.entries.size, malformedRows: this.malformed.size }));
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopRequested = false;
    this.loop = this.run();
  }

  /**
   * Stops claiming, waits at most `waitMs` for the attempts in flight, then hands every row back at
   * once instead of waiting for the claims to lapse. An attempt still running then is repeated by
   * the next holder, which is why every job is idempotent by its key.
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    this.running = false;
    this.stopRequested = true;
    this.wake?.();
    if (this.loop !== null && !(await settlesWithin(this.loop, waitMs))) {
      this.options.log.warn({ waitMs }, `${this.options.what} worker stopping with attempts in flight; their rows are handed back`);
    }
    this.loop = null;
    const ids = [...this.entries.keys()];
    this.entries.clear();
    if (ids.length > 0) await this.options.store.outboxRelease(ids, this.options.owner).catch(() => undefined);
  }

  /** The jobs held now (for status and stats). */
  held(): Array<OutboxJobEntry<Job>> {
    return [...this.entries.values()];
  }

  malformedRows(): number {
    return this.malformed.size;
  }

  /** The job's work is done: its row is marked done and the job forgotten. */
  async finish(entry: OutboxJobEntry<Job>): Promise<void> {
    await this.options.store.outboxMarkDone([entry.rowId]);
    this.entries.delete(entry.rowId);
  }

  /** One round: claim new rows, then attempt every due job. Exposed for tests and ops. */
  async tick(): Promise<void> {
    await this.renew();
    await this.claim();
    const nowMs = this.options.clock.nowMs();
    const due = [...this.entries.values()].filter((entry) => !entry.running && entry.nextAttemptAtMs <= nowMs && entry.claimExpiresAtMs > nowMs);
    await Promise.all(due.map((entry) => this.attemptOnce(entry)));
  }

  private async attemptOnce(entry: OutboxJobEntry<Job>): Promise<void> {
    entry.running = true;
    try {
      await this.options.attempt(entry);
    } finally {
      entry.running = false;
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.tick();
        this.rounds.succeeded();
      } catch (error) {
        this.rounds.failed();
        this.options.log.error({ error: error instanceof Error ? error.message : String(error) }, `${this.options.what} round failed; retrying`);
      }
      if (this.running) await this.sleep(this.tickMs);
    }
  }

  /** Renews the claims running short; forgets the rows this worker no longer holds. */
  private async renew(): Promise<void> {
    const nowMs = this.options.clock.nowMs();
    const expiring = [...this.entries.values()].filter((entry) => entry.claimExpiresAtMs - nowMs < this.claimLeaseMs * renewWhenLeftShare);
    for (let start = 0; start < expiring.length; start += outboxBatchMax) {
      const batch = expiring.slice(start, start + outboxBatchMax);
      const renewed = new Set(await this.options.store.outboxRenew(batch.map((entry) => entry.rowId), this.options.owner, this.claimLeaseMs, nowMs));
      for (const entry of batch) {
        if (renewed.has(entry.rowId)) {
          entry.claimExpiresAtMs = nowMs + this.claimLeaseMs;
          continue;
        }
        // Another worker holds it now (or it is done): its attempts are that worker's.
        this.entries.delete(entry.rowId);
        this.options.log.warn({ rowId: entry.rowId, attempts: entry.attempts }, `${this.options.what} row no longer claimed by this worker; left to its holder`);
      }
    }
  }

  private async claim(): Promise<void> {
    const room = Math.min(this.claimBatchMax, this.inFlightMax - this.entries.size);
    if (room <= 0) return;
    const { store, owner } = this.options;
    const rows = await store.outboxClaim(this.options.topic, owner, room, this.claimLeaseMs, this.options.clock.nowMs());
    if (this.stopRequested) {
      // stop() ran while we were claiming and may already have handed back what it held.
      if (rows.length > 0) await store.outboxRelease(rows.map((row) => row.id), owner).catch(() => undefined);
      return;
    }
    const notOurs: string[] = [];
    for (const row of rows) {
      const held = this.entries.get(row.id);
      if (held !== undefined) {
        held.claimExpiresAtMs = row.claimExpiresAtMs; // ours; its lease lapsed and is claimed again
        continue;
      }
      const job = this.options.parse(row);
      if (job === 'release') {
        notOurs.push(row.id);
        continue;
      }
      if (job === 'malformed') {
        if (!this.malformed.has(row.id)) this.options.log.error({ rowId: row.id }, `malformed ${this.options.what} row; left in the outbox for operations`);
        this.malformed.add(row.id);
        continue;
      }
      this.entries.set(row.id, { rowId: row.id, job, attempts: 0, nextAttemptAtMs: 0, lastError: null, running: false, claimExpiresAtMs: row.claimExpiresAtMs });
    }
    if (notOurs.length > 0) await store.outboxRelease(notOurs, owner);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** Bounded exponential backoff: `minMs` after the first failure, doubling, at most `maxMs`. */
export function backoffMs(attempts: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempts - 1, 0), 20));
}
