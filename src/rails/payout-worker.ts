// The `payout` role's worker: executes the fiat side of the outbox. It claims 'payouts' rows (pay
// the recipient) and 'refunds.pix' rows (return an onramp payer's PIX payment), calls the rail
// with an idempotency key derived from the transaction, and reports each final outcome to the
// transaction actor. Guarantees:
//   - at most one payout per transaction: the rail pays at most once per key (`payout:<txId>`),
//     whoever calls and however often (a dead worker's claim expires and another takes over);
//   - every final outcome reaches the actor: the row is marked done only after the actor has
//     applied the report (ask with a command id derived from the transaction, so a repeat is a
//     replay, never a second application);
//   - nothing is given up silently: 'pending' and 'retry' are polled again with bounded
//     exponential backoff for as long as it takes, with logs, counters and a "stuck" alarm.
// Operations: docs/rails.md.
import type { ActorClient } from '../actors/client.ts';
import type { JsonValue, LogLevel } from '../actors/envelope.ts';
import { fromJsonValue, toJsonValue } from '../actors/state-codec.ts';
import {
  outboxTopicPayouts,
  outboxTopicRefundsPix,
  transactionActorType,
  type DomainReply,
  type TransactionActorState,
} from '../actors/transaction-actor.ts';
import { fiatCurrencies, isOneOf, paymentMethods } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import type { PayoutFailedCommand, PayoutSucceededCommand, RefundSettledCommand, TransactionState } from '../domain/transaction.ts';
import type { OutboxRow, SnapshotStore } from '../store/store.ts';
import type { PayoutRequest, PayoutResult, PixRefundRequest, PixRefundResult, Rail } from './rails.ts';
import { settlesWithin } from '../lifecycle/shutdown.ts';
import { LoopHealth, loopCheck, type HealthCheck } from '../lifecycle/health.ts';

export const payoutTopics = [outboxTopicPayouts, outboxTopicRefundsPix] as const;

export function payoutIdempotencyKey(transactionId: string): string {
  return `payout:${transactionId}`;
}

export function refundIdempotencyKey(transactionId: string, depositId: string): string {
  return `refund:${transactionId}:${depositId}`;
}

/** The delay before attempt `attempt + 1` (attempt ≥ 1): min · 2^(attempt−1), capped at max. */
export function retryDelayMs(attempt: number, minMs: number, maxMs: number): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  return Math.min(maxMs, minMs * 2 ** exponent);
}

/** What a 'payouts' row asks for, decoded and checked; null when the row is malformed. */
export interface PayoutWork {
  readonly kind: 'payout';
  readonly transactionId: string;
  readonly request: PayoutRequest;
  readonly requestedAtMs: number;
}

/** What a 'refunds.pix' row asks for. */
export interface RefundWork {
  readonly kind: 'refund';
  readonly transactionId: string;
  readonly depositId: string;
  readonly request: PixRefundRequest;
  readonly requestedAtMs: number;
}

export type Work = PayoutWork | RefundWork;

function isDecimal(value: unknown): value is Decimal {
  return typeof value === 'object' && value !== null && typeof (value as Decimal).units === 'bigint' && typeof (value as Decimal).scale === 'number';
}

function nullableString(value: unknown): value is string | null {
  return value === null || typeof value === 'string';
}

/** The payout request of a transaction, exactly as its PayoutRequested event states it. */
export function payoutRequestOf(tx: TransactionState): PayoutRequest {
  return {
    method: tx.quote.paymentMethod,
    currency: tx.quote.targetCurrency,
    amount: tx.quote.targetAmount,
    accountNumber: tx.accountNumber,
    qrCode: tx.qrCode,
    taxId: tx.taxId,
    idempotencyKey: payoutIdempotencyKey(tx.id),
  };
}

export function decodeWork(row: OutboxRow): Work | null {
  const payload = fromJsonValue<Record<string, unknown>>(row.payload);
  if (typeof payload !== 'object' || payload === null || typeof payload.transactionId !== 'string') return null;
  const transactionId = payload.transactionId;
  const requestedAtMs = typeof payload.atMs === 'number' ? payload.atMs : 0;
  if (row.topic === outboxTopicPayouts) {
    const { amount, currency, paymentMethod, accountNumber, qrCode, taxId } = payload;
    if (payload.type !== 'PayoutRequested' || !isDecimal(amount) || !isOneOf(fiatCurrencies, currency) || !isOneOf(paymentMethods, paymentMethod)) return null;
    if (!nullableString(accountNumber) || !nullableString(qrCode) || !nullableString(taxId)) return null;
    return {
      kind: 'payout',
      transactionId,
      requestedAtMs,
      request: { method: paymentMethod, currency, amount, accountNumber, qrCode, taxId, idempotencyKey: payoutIdempotencyKey(transactionId) },
    };
  }
  if (row.topic === outboxTopicRefundsPix) {
    const deposit = payload.deposit as Record<string, unknown> | null | undefined;
    if (payload.type !== 'RefundRequested' || typeof deposit !== 'object' || deposit === null) return null;
    if (deposit.rail !== 'pix' || typeof deposit.id !== 'string' || !isDecimal(deposit.amount)) return null;
    return {
      kind: 'refund',
      transactionId,
      depositId: deposit.id,
      requestedAtMs,
      request: { providerPaymentId: deposit.id, amount: deposit.amount, idempotencyKey: refundIdempotencyKey(transactionId, deposit.id) },
    };
  }
  return null;
}

type Report =
  | { readonly kind: 'PayoutSucceeded'; readonly command: PayoutSucceededCommand }
  | { readonly kind: 'PayoutFailed'; readonly command: PayoutFailedCommand }
  | { readonly kind: 'RefundSettled'; readonly command: RefundSettledCommand };

/** An attempt's outcome: a report for the actor, or "not yet" with the reason. */
type AttemptOutcome = { readonly final: true; readonly report: Report; readonly summary: string } | { readonly final: false; readonly summary: string };

function payoutOutcome(result: PayoutResult): AttemptOutcome {
  switch (result.status) {
    case 'succeeded':
      return { final: true, summary: 'succeeded', report: { kind: 'PayoutSucceeded', command: { kind: 'PayoutSucceeded', railReference: result.railReference } } };
    case 'failed':
      return {
        final: true,
        summary: `failed: ${result.reason}`,
        report: { kind: 'PayoutFailed', command: { kind: 'PayoutFailed', reason: result.reason, railReference: result.railReference } },
      };
    case 'pending':
      return { final: false, summary: 'pending' };
    case 'retry':
      return { final: false, summary: `retry: ${result.reason}` };
  }
}

function refundOutcome(work: RefundWork, result: PixRefundResult): AttemptOutcome {
  switch (result.status) {
    case 'succeeded':
      return {
        final: true,
        summary: 'refunded',
        report: { kind: 'RefundSettled', command: { kind: 'RefundSettled', depositId: work.depositId, refundOnChainId: result.refundId } },
      };
    case 'pending':
      return { final: false, summary: 'refund pending' };
    case 'retry':
      return { final: false, summary: `retry: ${result.reason}` };
  }
}

/** The command id of a report: one per transaction (and deposit), so a repeat is deduplicated. */
export function reportCommandId(work: Work): string {
  return work.kind === 'payout' ? `payout-result:${work.transactionId}` : `refund-result:${work.transactionId}:${work.depositId}`;
}

export interface PayoutWorkerOptions {
  readonly store: SnapshotStore;
  readonly rail: Rail;
  /** How reports reach the transaction actor (an ActorClient). */
  readonly actors: Pick<ActorClient, 'ask'>;
  readonly clock: { nowMs(): number };
  /** This worker's identity on outbox claims (unique per process). */
  readonly owner: string;
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /** Rows worked on at once. Default 32. */
  readonly inFlightMax?: number;
  /** How long a claim keeps other workers off a row; must exceed one attempt plus the longest backoff. Default 120,000. */
  readonly leaseMs?: number;
  /** How often to look for new rows. Default 200. */
  readonly pollIntervalMs?: number;
  readonly retryDelayMsMin?: number;
  /** Backoff cap. Default 60,000. */
  readonly retryDelayMsMax?: number;
  /** One rail call's bound; a slower call counts as 'retry' (the key makes a repeat safe). Default 20,000. */
  readonly railCallTimeoutMs?: number;
  /** One report's bound. Default 10,000. */
  readonly reportTimeoutMs?: number;
  /** After this long without a final outcome, every attempt logs an error. Default 15 minutes. */
  readonly stuckAfterMs?: number;
}

export interface PayoutWorkerStats {
  inFlight: number;
  claimed: number;
  attempts: number;
  payoutsSucceeded: number;
  payoutsFailed: number;
  refundsSettled: number;
  /** Attempts that ended 'pending' or 'retry' (or threw): polled again later. */
  notYet: number;
  railErrors: number;
  reportErrors: number;
  /** Reports the actor refused (logged as errors; the row is done, operations follow up). */
  reportsRefused: number;
  malformedRows: number;
  /** Rows held now that have waited longer than stuckAfterMs. */
  stuck: number;
  oldestWaitingMs: number;
}

export interface JobView {
  readonly rowId: string;
  readonly topic: string;
  readonly attempts: number;
  readonly nextAttemptAtMs: number;
  readonly lastOutcome: string | null;
  readonly heldHere: boolean;
}

interface Job {
  row: OutboxRow;
  readonly work: Work | null;
  claimExpiresAtMs: number;
  attempts: number;
  nextAttemptAtMs: number;
  readonly firstSeenAtMs: number;
  lastOutcome: string | null;
  running: boolean;
}

/** Backoff state of rows whose claim lapsed while waiting; restored if this worker claims them again. */
interface Remembered {
  readonly attempts: number;
  readonly nextAttemptAtMs: number;
  readonly firstSeenAtMs: number;
  readonly lastOutcome: string | null;
}

const rememberedMax = 10_000;

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class PayoutWorker {
  private readonly jobs = new Map<string, Job>();
  private readonly remembered = new Map<string, Remembered>();
  private readonly running = new Set<Promise<void>>();
  private readonly counters: Omit<PayoutWorkerStats, 'inFlight' | 'stuck' | 'oldestWaitingMs'> = {
    claimed: 0,
    attempts: 0,
    payoutsSucceeded: 0,
    payoutsFailed: 0,
    refundsSettled: 0,
    notYet: 0,
    railErrors: 0,
    reportErrors: 0,
    reportsRefused: 0,
    malformedRows: 0,
  };
  private readonly inFlightMax: number;
  private readonly leaseMs: number;
  private readonly pollIntervalMs: number;
  /** The tick loop's rounds (the health listener's check). */
  private readonly rounds: LoopHealth;
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;
  private readonly railCallTimeoutMs: number;
  private readonly reportTimeoutMs: number;
  private readonly stuckAfterMs: number;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = true;

  constructor(private readonly options: PayoutWorkerOptions) {
    this.inFlightMax = options.inFlightMax ?? 32;
    this.leaseMs = options.leaseMs ?? 120_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 200;
    this.rounds = new LoopHealth(this.pollIntervalMs);
    this.retryDelayMsMin = options.retryDelayMsMin ?? 500;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 60_000;
    this.railCallTimeoutMs = options.railCallTimeoutMs ?? 20_000;
    this.reportTimeoutMs = options.reportTimeoutMs ?? 10_000;
    this.stuckAfterMs = options.stuckAfterMs ?? 15 * 60_000;
    if (this.leaseMs <= this.attemptBudgetMs()) {
      throw new RangeError('leaseMs must exceed railCallTimeoutMs + reportTimeoutMs');
    }
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.scheduleTick(0);
  }

  /**
   * Stops claiming, waits up to `waitMs` for the attempts in progress (each is bounded anyway), and
   * hands back every row it holds — also rows whose attempt is still running when the time is up:
   * another worker repeats that attempt with the same idempotency key (the rail pays once) and the
   * same report command id (the actor applies once), instead of waiting for the claim to lapse.
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const finished = await settlesWithin(this.attemptsDone(), waitMs);
    const held = [...this.jobs.keys()];
    this.jobs.clear();
    if (!finished) {
      this.log('warn', 'payout worker stopping with rail attempts in flight; their rows are handed back', { inFlight: this.running.size, waitMs });
    }
    if (held.length > 0) {
      // Another worker may take them at once instead of waiting for the claims to lapse.
      await this.options.store.outboxRelease(held, this.options.owner).catch((error: unknown) => {
        this.log('warn', 'could not release claimed rows; their claims will lapse', { error: String(error) });
      });
    }
  }

  /** Resolves once the current tick and every attempt it started have ended. */
  private async attemptsDone(): Promise<void> {
    await this.ticking;
    await Promise.all([...this.running]);
  }

  /** The health listener's check: tick rounds, with the jobs held. */
  health(): HealthCheck {
    return loopCheck('payout-rounds', this.rounds, () => ({ jobsHeld: this.jobs.size }));
  }

  stats(): PayoutWorkerStats {
    const nowMs = this.options.clock.nowMs();
    let stuck = 0;
    let oldestWaitingMs = 0;
    for (const job of this.jobs.values()) {
      const waitingMs = nowMs - this.startedAtMs(job);
      if (waitingMs > this.stuckAfterMs) stuck += 1;
      oldestWaitingMs = Math.max(oldestWaitingMs, waitingMs);
    }
    return { ...this.counters, inFlight: this.jobs.size, stuck, oldestWaitingMs };
  }

  /** What this worker knows about the transaction's payout row (if it holds or held it). */
  jobOf(transactionId: string, topic: string = outboxTopicPayouts): JobView | null {
    for (const job of this.jobs.values()) {
      if (job.work?.transactionId === transactionId && job.row.topic === topic) {
        return { rowId: job.row.id, topic, attempts: job.attempts, nextAttemptAtMs: job.nextAttemptAtMs, lastOutcome: job.lastOutcome, heldHere: true };
      }
    }
    return null;
  }

  /**
   * Ops: one payout attempt now for a transaction in PROCESSING_PAYMENT, with the worker's own key
   * (so it can never pay twice), reporting a final outcome to the actor. The outbox row, wherever
   * it is held, is finished by its holder's next attempt (same key, same report id).
   */
  async executeNow(transactionId: string): Promise<{ readonly result: 'reported' | 'not_yet' | 'not_applicable'; readonly detail: string; readonly rail: PayoutResult | null }> {
    const tx = await this.loadTransaction(transactionId);
    if (tx === null) return { result: 'not_applicable', detail: 'no such transaction', rail: null };
    if (tx.direction !== 'payout' || tx.status !== 'PROCESSING_PAYMENT' || tx.settlement.state !== 'requested') {
      return { result: 'not_applicable', detail: `transaction is ${tx.status}`, rail: null };
    }
    const work: PayoutWork = { kind: 'payout', transactionId, request: payoutRequestOf(tx), requestedAtMs: tx.settlement.requestedAtMs ?? 0 };
    const rail = await within(this.options.rail.payout(work.request), this.railCallTimeoutMs, 'rail payout');
    const outcome = payoutOutcome(rail);
    if (!outcome.final) return { result: 'not_yet', detail: outcome.summary, rail };
    const job = [...this.jobs.values()].find((candidate) => candidate.work?.transactionId === transactionId && candidate.row.topic === outboxTopicPayouts);
    if (job !== undefined && !job.running) job.nextAttemptAtMs = this.options.clock.nowMs();
    await this.report(work, outcome.report);
    return { result: 'reported', detail: outcome.summary, rail };
  }

  /** The transaction's state as the actor last stored it (read-only). */
  async loadTransaction(transactionId: string): Promise<TransactionState | null> {
    const snapshot = await this.options.store.load(`${transactionActorType}/${transactionId}`);
    if (snapshot === null) return null;
    const state = fromJsonValue<TransactionActorState>(snapshot.state);
    return state.phase === 'live' ? state.tx : null;
  }

  // ---- the loop ----

  private scheduleTick(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.ticking = this.tick()
        .then(
          () => this.rounds.succeeded(),
          (error: unknown) => {
            this.rounds.failed();
            this.log('error', 'payout worker tick failed', { error: String(error) });
          },
        )
        .finally(() => {
          this.ticking = null;
          this.scheduleTick(this.pollIntervalMs);
        });
    }, delayMs);
  }

  private async tick(): Promise<void> {
    this.dropLapsingJobs();
    await this.claim();
    const nowMs = this.options.clock.nowMs();
    for (const job of this.jobs.values()) {
      if (this.stopped) break;
      if (job.running || job.nextAttemptAtMs > nowMs) continue;
      job.running = true;
      const attempt = this.attempt(job)
        .catch((error: unknown) => this.log('error', 'payout attempt failed unexpectedly', { rowId: job.row.id, error: String(error) }))
        .finally(() => {
          job.running = false;
          this.running.delete(attempt);
        });
      this.running.add(attempt);
    }
  }

  private attemptBudgetMs(): number {
    return this.railCallTimeoutMs + this.reportTimeoutMs;
  }

  /**
   * A row whose claim would lapse before its next attempt could finish is let go (its backoff is
   * remembered): the claim expires and any worker, this one included, picks it up again.
   */
  private dropLapsingJobs(): void {
    const nowMs = this.options.clock.nowMs();
    for (const [id, job] of this.jobs) {
      if (job.running) continue;
      if (Math.max(nowMs, job.nextAttemptAtMs) + this.attemptBudgetMs() < job.claimExpiresAtMs) continue;
      this.jobs.delete(id);
      this.remember(id, job);
    }
  }

  private remember(id: string, job: Job): void {
    this.remembered.delete(id);
    this.remembered.set(id, { attempts: job.attempts, nextAttemptAtMs: job.nextAttemptAtMs, firstSeenAtMs: job.firstSeenAtMs, lastOutcome: job.lastOutcome });
    while (this.remembered.size > rememberedMax) {
      const oldest = this.remembered.keys().next().value;
      if (oldest === undefined) break;
      this.remembered.delete(oldest);
    }
  }

  private async claim(): Promise<void> {
    // Neither topic may take more than 3/4 of the slots, so stuck payouts never starve refunds.
    const perTopicMax = Math.max(1, Math.floor((this.inFlightMax * 3) / 4));
    for (const topic of payoutTopics) {
      let heldInTopic = 0;
      for (const job of this.jobs.values()) if (job.row.topic === topic) heldInTopic += 1;
      const room = Math.min(this.inFlightMax - this.jobs.size, perTopicMax - heldInTopic);
      if (this.stopped) return;
      if (room <= 0) continue;
      const nowMs = this.options.clock.nowMs();
      const rows = await this.options.store.outboxClaim(topic, this.options.owner, room, this.leaseMs, nowMs);
      if (this.stopped) {
        // stop() ran while we were claiming and may already have handed back what it held.
        if (rows.length > 0) await this.options.store.outboxRelease(rows.map((row) => row.id), this.options.owner);
        return;
      }
      for (const row of rows) {
        this.counters.claimed += 1;
        const before = this.remembered.get(row.id);
        this.remembered.delete(row.id);
        const work = decodeWork(row);
        this.jobs.set(row.id, {
          row,
          work,
          claimExpiresAtMs: row.claimExpiresAtMs,
          attempts: before?.attempts ?? 0,
          nextAttemptAtMs: before?.nextAttemptAtMs ?? nowMs,
          firstSeenAtMs: before?.firstSeenAtMs ?? nowMs,
          lastOutcome: before?.lastOutcome ?? null,
          running: false,
        });
      }
    }
  }

  private async attempt(job: Job): Promise<void> {
    this.counters.attempts += 1;
    job.attempts += 1;
    const work = job.work;
    if (work === null) {
      // A row we cannot read is a bug; it is never dropped: it stays, loud, for operations.
      this.counters.malformedRows += 1;
      this.notYet(job, 'malformed row', 'error');
      return;
    }
    let outcome: AttemptOutcome;
    try {
      outcome = await this.callRail(work);
    } catch (error) {
      this.counters.railErrors += 1;
      this.notYet(job, `rail error: ${error instanceof Error ? error.message : String(error)}`, 'warn');
      return;
    }
    if (!outcome.final) {
      this.notYet(job, outcome.summary, 'info');
      return;
    }
    try {
      await this.report(work, outcome.report);
    } catch (error) {
      this.counters.reportErrors += 1;
      this.notYet(job, `report not confirmed: ${error instanceof Error ? error.message : String(error)}`, 'warn');
      return;
    }
    // Done only now: the actor has applied (or had already applied) the outcome.
    await this.options.store.outboxMarkDone([job.row.id]);
    this.jobs.delete(job.row.id);
    if (outcome.report.kind === 'PayoutSucceeded') this.counters.payoutsSucceeded += 1;
    if (outcome.report.kind === 'PayoutFailed') this.counters.payoutsFailed += 1;
    if (outcome.report.kind === 'RefundSettled') this.counters.refundsSettled += 1;
    this.log('info', 'rail outcome reported', { transactionId: work.transactionId, work: work.kind, outcome: outcome.summary, attempts: job.attempts });
  }

  private async callRail(work: Work): Promise<AttemptOutcome> {
    if (work.kind === 'payout') {
      return payoutOutcome(await within(this.options.rail.payout(work.request), this.railCallTimeoutMs, 'rail payout'));
    }
    return refundOutcome(work, await within(this.options.rail.refundPixPayment(work.request), this.railCallTimeoutMs, 'rail refund'));
  }

  private async report(work: Work, report: Report): Promise<void> {
    const reply = await this.options.actors.ask<DomainReply>(
      transactionActorType,
      work.transactionId,
      report.kind,
      toJsonValue(report.command) as JsonValue,
      { commandId: reportCommandId(work), timeoutMs: this.reportTimeoutMs },
    );
    if (!reply.ok) {
      // Durable and final on the actor's side (a replay answers the same): retrying cannot help.
      this.counters.reportsRefused += 1;
      this.log('error', 'the transaction refused a rail outcome; operations must reconcile', {
        transactionId: work.transactionId,
        report: report.kind,
        code: reply.code,
      });
    }
  }

  private notYet(job: Job, summary: string, level: LogLevel): void {
    this.counters.notYet += 1;
    const nowMs = this.options.clock.nowMs();
    job.lastOutcome = summary;
    job.nextAttemptAtMs = nowMs + retryDelayMs(job.attempts, this.retryDelayMsMin, this.retryDelayMsMax);
    const waitingMs = nowMs - this.startedAtMs(job);
    const stuck = waitingMs > this.stuckAfterMs;
    this.log(stuck ? 'error' : level, stuck ? 'rail work stuck: no final outcome yet' : 'rail work not final yet; will poll again', {
      rowId: job.row.id,
      transactionId: job.work?.transactionId ?? null,
      work: job.work?.kind ?? null,
      attempts: job.attempts,
      outcome: summary,
      waitingMs,
      nextAttemptInMs: job.nextAttemptAtMs - nowMs,
    });
  }

  private startedAtMs(job: Job): number {
    const requested = job.work?.requestedAtMs ?? 0;
    return requested > 0 ? Math.min(requested, job.firstSeenAtMs) : job.firstSeenAtMs;
  }

  private log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(level, message, fields);
  }
}
