// The loop shared by the workers that execute outbox rows one job per row (chain refunds, onramp
// deliveries): claim due rows of one topic for a lease, attempt each as a job, and hand every row
// that has to wait back to the store with its not-before time. Nothing waits while held, so a
// worker's slots are only ever taken by attempts in progress: rows that keep failing cannot fill
// them and stop the queue.
//
// What a job does, and when it is finished or retried, belongs to the worker: `attempt` receives
// the job's entry, sets `attempts`/`nextAttemptAtMs`/`lastError` (and `parked` when the work now
// waits on operations) for a retry, and calls `finish` once the row's work is done (the row is
// marked done and forgotten). An attempt that ends with its next attempt in the future is deferred
// (`SnapshotStore.outboxDefer`): its claim is dropped, and the store keeps it from every claimer
// until then, with the attempts, reason and parked flag (operations see and act on them:
// `outboxWaiting`, `outboxRetryNow`, `outboxResolve`). Attempts count on from what the row
// carries, so backoff continues on whichever worker claims it next.
//
// A round: renew the claims running short, defer held rows that wait, claim due rows (the store
// gives rows never tried first, then the oldest due), start an attempt for each held row. Attempts
// run beside the loop, so one that hangs (a node that never answers) holds its own slot and no
// more: claims, renewals and other attempts go on. Its row stays held (the attempt may still
// land; a second one beside it would rest on the adapter's journal alone): an attempt running
// longer than the claim lease is logged as an error once and counted (`attemptsOverdue`).
//
// Budget: with `budgetKey` (the job's network), one key holds at most `inFlightPerKeyMax` rows
// (default half the slots). A claimed row over its key's budget is deferred for a second, without
// counting as an attempt: one sick network cannot take every slot, and its rows step aside in the
// claim order for the others.
//
// Claims: a worker renews its claims once less than half the lease is left, and attempts a job only
// under a live claim. A row it could not renew (another worker claimed it after the claim lapsed,
// e.g. while this process was stalled) is dropped from memory and left to its new holder, so two
// workers do not work one row on and on; the stale attempt's outcome is not written back. A crash
// drops the claims and after the lease another worker (or this one, restarted) takes the rows.
// A malformed row is never dropped silently nor marked done: it is logged the first time this
// worker sees it, counted (`malformedRows`), and parked with the reason for operations. Due times
// come from the injected clock; the loop itself ticks on a real timer every `tickMs`.
import type { Logger } from 'pino';
import { settlesWithin } from '../lifecycle/shutdown.ts';
import { LoopHealth, loopCheck, type HealthCheck } from '../lifecycle/health.ts';
import { outboxBatchMax, outboxReasonCharsMax, type OutboxDeferral, type OutboxRow, type SnapshotStore } from './store.ts';

export interface OutboxJobEntry<Job> {
  readonly rowId: string;
  readonly job: Job;
  attempts: number;
  nextAttemptAtMs: number;
  lastError: string | null;
  /** Set by `attempt` when the retry waits on operations (e.g. the chain refuses); cleared before each attempt. */
  parked: boolean;
  running: boolean;
  /** This worker's claim on the row ends then (renewed by the loop). */
  claimExpiresAtMs: number;
}

/** Claims are renewed once less than this share of the lease is left. */
const renewWhenLeftShare = 0.5;
/** A row claimed over its budget key's share waits this long before it can be claimed again. */
const overBudgetDelayMs = 1_000;
/** Backoff of an attempt that threw (the workers catch their own failures; this is a bug's). */
const thrownRetryDelayMsMin = 1_000;
const thrownRetryDelayMsMax = 60_000;
/** Rows this worker deferred that it keeps in memory for status (oldest forgotten first). */
const waitingRememberedMax = 10_000;
const malformedRememberedMax = 10_000;

export interface OutboxJobTuning {
  readonly claimLeaseMs?: number;
  readonly claimBatchMax?: number;
  readonly inFlightMax?: number;
  /** Rows of one budget key held at most; default half of `inFlightMax`. */
  readonly inFlightPerKeyMax?: number;
  readonly tickMs?: number;
  /** How long a malformed row waits before it is read again; default 10 minutes. */
  readonly parkedRetryDelayMs?: number;
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
  /** One attempt at a due job; see the header. Throwing counts as a failed attempt, logged. */
  attempt(entry: OutboxJobEntry<Job>): Promise<void>;
  /** The share a job counts against (its network); omitted: every job shares one budget. */
  budgetKey?(job: Job): string;
}

export class OutboxJobs<Job> {
  private readonly entries = new Map<string, OutboxJobEntry<Job>>();
  /** Rows this worker deferred, until they are due again and claimed (by it or another worker). */
  private readonly waitingHere = new Map<string, OutboxJobEntry<Job>>();
  private readonly malformed = new Set<string>();
  private readonly attemptsInFlight = new Set<Promise<void>>();
  /** When each running attempt started, and whether it was reported overdue. */
  private readonly attemptsStarted = new Map<string, { readonly atMs: number; overdueLogged: boolean }>();
  private running = false;
  /** Set by stop(): rows claimed from then on go straight back, and no attempt starts. */
  private stopRequested = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly claimLeaseMs: number;
  private readonly claimBatchMax: number;
  private readonly inFlightMax: number;
  private readonly inFlightPerKeyMax: number;
  private readonly tickMs: number;
  private readonly parkedRetryDelayMs: number;
  /** The loop's rounds (the health listener's check). */
  private readonly rounds: LoopHealth;

  constructor(private readonly options: OutboxJobsOptions<Job>) {
    const tuning = options.tuning ?? {};
    this.claimLeaseMs = tuning.claimLeaseMs ?? 60_000;
    this.claimBatchMax = tuning.claimBatchMax ?? 32;
    this.inFlightMax = tuning.inFlightMax ?? 256;
    this.inFlightPerKeyMax = tuning.inFlightPerKeyMax ?? Math.max(1, Math.floor(this.inFlightMax / 2));
    this.tickMs = tuning.tickMs ?? 250;
    this.parkedRetryDelayMs = tuning.parkedRetryDelayMs ?? 600_000;
    this.rounds = new LoopHealth(this.tickMs);
  }

  /** The health listener's check (`<what>-rounds`): claim and attempt rounds, with the jobs held. */
  health(): HealthCheck {
    return loopCheck(`${this.options.what}-rounds`, this.rounds, () => ({
      jobsHeld: this.entries.size,
      jobsWaiting: this.waitingHere.size,
      attemptsOverdue: [...this.attemptsStarted.values()].filter((started) => started.overdueLogged).length,
      malformedRows: this.malformed.size,
    }));
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
    const loop = this.loop;
    const settled = (async () => {
      await loop;
      await Promise.all([...this.attemptsInFlight]);
    })();
    if (!(await settlesWithin(settled, waitMs))) {
      this.options.log.warn({ waitMs }, `${this.options.what} worker stopping with attempts in flight; their rows are handed back`);
    }
    this.loop = null;
    const ids = [...this.entries.keys()];
    this.entries.clear();
    for (let start = 0; start < ids.length; start += outboxBatchMax) {
      await this.options.store.outboxRelease(ids.slice(start, start + outboxBatchMax), this.options.owner).catch(() => undefined);
    }
  }

  /** The jobs held now: claimed, being attempted or about to be (for status and stats). */
  held(): Array<OutboxJobEntry<Job>> {
    return [...this.entries.values()];
  }

  /**
   * The rows this worker deferred and that wait for their next attempt (for status and stats). A
   * row another worker claims again is forgotten here a lease after it fell due.
   */
  waiting(): Array<OutboxJobEntry<Job>> {
    return [...this.waitingHere.values()];
  }

  malformedRows(): number {
    return this.malformed.size;
  }

  /** The job's work is done: its row is marked done and the job forgotten. */
  async finish(entry: OutboxJobEntry<Job>): Promise<void> {
    await this.options.store.outboxMarkDone([entry.rowId]);
    if (this.entries.get(entry.rowId) === entry) this.entries.delete(entry.rowId);
    this.waitingHere.delete(entry.rowId);
  }

  /**
   * One round, then waits for the attempts it started (and their deferrals), so a test or an
   * operator sees their outcome when it resolves. The loop itself does not wait for attempts.
   */
  async tick(): Promise<void> {
    const started: Array<Promise<void>> = [];
    await this.round(started);
    await Promise.all(started);
  }

  /** Renew, defer what waits, claim, start the due attempts (added to `started`; they never reject). */
  private async round(started: Array<Promise<void>> = []): Promise<void> {
    await this.renew();
    this.reportOverdueAttempts();
    await this.deferWaiting();
    this.forgetStaleWaiting();
    await this.claim();
    started.push(...this.startDue());
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.round();
        this.rounds.succeeded();
      } catch (error) {
        this.rounds.failed();
        this.options.log.error({ error: errorText(error) }, `${this.options.what} round failed; retrying`);
      }
      if (this.running) await this.sleep(this.tickMs);
    }
  }

  private startDue(): Array<Promise<void>> {
    if (this.stopRequested) return [];
    const nowMs = this.options.clock.nowMs();
    const started: Array<Promise<void>> = [];
    for (const entry of this.entries.values()) {
      if (entry.running || entry.nextAttemptAtMs > nowMs || entry.claimExpiresAtMs <= nowMs) continue;
      started.push(this.attemptOnce(entry));
    }
    return started;
  }

  /** One attempt; a row that has to wait afterwards is deferred at once (failing that, next round). */
  private attemptOnce(entry: OutboxJobEntry<Job>): Promise<void> {
    entry.running = true;
    entry.parked = false;
    this.attemptsStarted.set(entry.rowId, { atMs: this.options.clock.nowMs(), overdueLogged: false });
    const attempt = (async () => {
      try {
        await this.options.attempt(entry);
      } catch (error) {
        entry.attempts += 1;
        entry.lastError = errorText(error);
        entry.nextAttemptAtMs = this.options.clock.nowMs() + backoffMs(entry.attempts, thrownRetryDelayMsMin, thrownRetryDelayMsMax);
        this.options.log.error({ rowId: entry.rowId, attempts: entry.attempts, error: entry.lastError }, `${this.options.what} attempt threw; retried later`);
      }
      // Finished, lost to another worker or handed back on stop: nothing of it is ours to write.
      if (this.entries.get(entry.rowId) !== entry) return;
      if (entry.nextAttemptAtMs <= this.options.clock.nowMs()) return; // due again: the next round
      await this.defer([entry]).catch((error: unknown) => {
        this.options.log.warn({ rowId: entry.rowId, error: errorText(error) }, `${this.options.what} row could not be deferred; retried next round`);
      });
    })().finally(() => {
      entry.running = false;
      this.attemptsStarted.delete(entry.rowId);
      this.attemptsInFlight.delete(attempt);
    });
    this.attemptsInFlight.add(attempt);
    return attempt;
  }

  private reportOverdueAttempts(): void {
    const nowMs = this.options.clock.nowMs();
    for (const [rowId, started] of this.attemptsStarted) {
      if (started.overdueLogged || nowMs - started.atMs <= this.claimLeaseMs) continue;
      started.overdueLogged = true;
      this.options.log.error({ rowId, runningMs: nowMs - started.atMs }, `${this.options.what} attempt still running after a whole claim lease; its row stays held (check the node)`);
    }
  }

  /** Held rows whose next attempt is later (a deferral that failed before) go back to the store. */
  private async deferWaiting(): Promise<void> {
    const nowMs = this.options.clock.nowMs();
    const waiting = [...this.entries.values()].filter((entry) => !entry.running && entry.nextAttemptAtMs > nowMs);
    for (let start = 0; start < waiting.length; start += outboxBatchMax) await this.defer(waiting.slice(start, start + outboxBatchMax));
  }

  private async defer(entries: ReadonlyArray<OutboxJobEntry<Job>>): Promise<void> {
    const deferred = new Set(await this.options.store.outboxDefer(entries.map(deferralOf), this.options.owner));
    for (const entry of entries) {
      if (this.entries.get(entry.rowId) !== entry) continue;
      this.entries.delete(entry.rowId);
      if (deferred.has(entry.rowId)) {
        this.remember(entry);
        continue;
      }
      // The claim lapsed and another worker took the row (e.g. this process stalled mid-attempt):
      // this attempt's outcome is not the row's any more.
      this.options.log.warn({ rowId: entry.rowId, attempts: entry.attempts }, `${this.options.what} row no longer claimed by this worker; left to its holder`);
    }
  }

  private remember(entry: OutboxJobEntry<Job>): void {
    this.waitingHere.delete(entry.rowId);
    this.waitingHere.set(entry.rowId, entry);
    forgetOldest(this.waitingHere, waitingRememberedMax);
  }

  /** A row due a lease ago and not claimed back by this worker is another worker's by now. */
  private forgetStaleWaiting(): void {
    const nowMs = this.options.clock.nowMs();
    for (const [id, entry] of this.waitingHere) {
      if (entry.nextAttemptAtMs + this.claimLeaseMs < nowMs) this.waitingHere.delete(id);
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
        if (this.entries.get(entry.rowId) !== entry) continue; // finished or deferred meanwhile
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
    if (room <= 0 || this.stopRequested) return;
    const { store, owner } = this.options;
    const nowMs = this.options.clock.nowMs();
    const rows = await store.outboxClaim(this.options.topic, owner, room, this.claimLeaseMs, nowMs);
    if (this.stopRequested) {
      // stop() ran while we were claiming and may already have handed back what it held.
      if (rows.length > 0) await store.outboxRelease(rows.map((row) => row.id), owner).catch(() => undefined);
      return;
    }
    const heldPerKey = this.heldPerKey();
    const putBack: OutboxDeferral[] = [];
    for (const row of rows) {
      const held = this.entries.get(row.id);
      if (held !== undefined) {
        held.claimExpiresAtMs = row.claimExpiresAtMs; // ours; its lease lapsed and is claimed again
        continue;
      }
      const entry = this.entryOf(row, nowMs, putBack);
      if (entry === null) continue;
      const key = this.options.budgetKey?.(entry.job);
      if (key !== undefined && (heldPerKey.get(key) ?? 0) >= this.inFlightPerKeyMax) {
        // Not an attempt: the row steps aside so rows of other keys are claimed next.
        putBack.push({ ...deferralOf(entry), notBeforeMs: nowMs + overBudgetDelayMs, reason: entry.lastError ?? `waiting for a free ${key} slot` });
        this.remember({ ...entry, nextAttemptAtMs: nowMs + overBudgetDelayMs });
        continue;
      }
      if (key !== undefined) heldPerKey.set(key, (heldPerKey.get(key) ?? 0) + 1);
      this.entries.set(row.id, entry);
    }
    if (putBack.length > 0) await store.outboxDefer(putBack, owner);
  }

  /** The job of a claimed row, continuing what the row (and this worker) knew; null when it is put back. */
  private entryOf(row: OutboxRow, nowMs: number, putBack: OutboxDeferral[]): OutboxJobEntry<Job> | null {
    const parsed = this.options.parse(row);
    if (parsed === 'malformed') {
      if (!this.malformed.has(row.id)) this.options.log.error({ rowId: row.id }, `malformed ${this.options.what} row; parked for operations`);
      this.malformed.add(row.id);
      forgetOldest(this.malformed, malformedRememberedMax);
      putBack.push({ id: row.id, notBeforeMs: nowMs + this.parkedRetryDelayMs, attempts: (row.attempts ?? 0) + 1, reason: `malformed ${this.options.what} row`, parked: true });
      return null;
    }
    if (parsed === 'release') {
      // Another kind of worker's row: left to it, out of this worker's claims for a lease.
      putBack.push({ id: row.id, notBeforeMs: nowMs + this.claimLeaseMs, attempts: row.attempts ?? 0, reason: row.reason ?? null, parked: row.parked ?? false });
      return null;
    }
    // A job this worker deferred keeps its state (e.g. what it already logged).
    const before = this.waitingHere.get(row.id);
    this.waitingHere.delete(row.id);
    return {
      rowId: row.id,
      job: before?.job ?? parsed,
      attempts: Math.max(row.attempts ?? 0, before?.attempts ?? 0),
      nextAttemptAtMs: 0,
      lastError: row.reason ?? before?.lastError ?? null,
      parked: row.parked ?? false,
      running: false,
      claimExpiresAtMs: row.claimExpiresAtMs,
    };
  }

  private heldPerKey(): Map<string, number> {
    const counts = new Map<string, number>();
    const budgetKey = this.options.budgetKey;
    if (budgetKey === undefined) return counts;
    for (const entry of this.entries.values()) {
      const key = budgetKey(entry.job);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
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

function deferralOf<Job>(entry: OutboxJobEntry<Job>): OutboxDeferral {
  return { id: entry.rowId, notBeforeMs: entry.nextAttemptAtMs, attempts: entry.attempts, reason: reasonText(entry.lastError), parked: entry.parked };
}

/** What the store keeps of a failure: bounded, and without URLs (a provider URL may carry a key). */
function reasonText(error: string | null): string | null {
  if (error === null) return null;
  return error.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>').slice(0, outboxReasonCharsMax);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function forgetOldest<K>(remembered: Map<K, unknown> | Set<K>, max: number): void {
  while (remembered.size > max) {
    const oldest = remembered.keys().next();
    if (oldest.done === true) return;
    remembered.delete(oldest.value);
  }
}

/** Bounded exponential backoff: `minMs` after the first failure, doubling, at most `maxMs`. */
export function backoffMs(attempts: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(Math.max(attempts - 1, 0), 20));
}
