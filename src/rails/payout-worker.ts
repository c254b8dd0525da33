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
// The job loop is the one the outbox workers share (src/store/outbox-jobs.ts), over both topics:
// claims renewed while held and attempts only under a live claim; a row that waits is handed back
// to the store with its attempts, reason and next attempt time (it takes no slot while it waits,
// and operations see it); a malformed row is parked for operations. Neither topic may hold more
// than 3/4 of the slots, so stuck payouts never starve refunds.
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
import type { HealthCheck } from '../lifecycle/health.ts';
import { OutboxJobs, type OutboxJobEntry, type OutboxJobsLog } from '../store/outbox-jobs.ts';

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
  /** How long a claim keeps other workers off a row (renewed while held); must exceed one attempt (rail call + report). Default 120,000. */
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
  /** Rows this worker holds, or handed back to the store until their next attempt. */
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
  /** Rows this worker parked because it could not read them. */
  malformedRows: number;
  /** Of `inFlight`, the rows that have waited longer than stuckAfterMs. */
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

/** Rows whose first sighting this worker keeps, for the stuck alarm (oldest forgotten first). */
const firstSeenRememberedMax = 10_000;

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

/** The worker's log function as the shared job loop's log (its lines keep the `component` the caller adds). */
function jobsLog(log: PayoutWorkerOptions['log']): OutboxJobsLog {
  return {
    error: (fields, message) => log?.('error', message, fields),
    warn: (fields, message) => log?.('warn', message, fields),
  };
}

export class PayoutWorker {
  /** The shared job loop, over the payouts and PIX refunds topics. */
  private readonly jobs: OutboxJobs<Work>;
  /** When this worker first saw each row it works on, for rows whose event carries no time. */
  private readonly firstSeenAtMs = new Map<string, number>();
  private readonly counters: Omit<PayoutWorkerStats, 'inFlight' | 'stuck' | 'oldestWaitingMs' | 'malformedRows'> = {
    claimed: 0,
    attempts: 0,
    payoutsSucceeded: 0,
    payoutsFailed: 0,
    refundsSettled: 0,
    notYet: 0,
    railErrors: 0,
    reportErrors: 0,
    reportsRefused: 0,
  };
  private readonly inFlightMax: number;
  private readonly leaseMs: number;
  private readonly pollIntervalMs: number;
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;
  private readonly railCallTimeoutMs: number;
  private readonly reportTimeoutMs: number;
  private readonly stuckAfterMs: number;

  constructor(private readonly options: PayoutWorkerOptions) {
    this.inFlightMax = options.inFlightMax ?? 32;
    this.leaseMs = options.leaseMs ?? 120_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 200;
    this.retryDelayMsMin = options.retryDelayMsMin ?? 500;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 60_000;
    this.railCallTimeoutMs = options.railCallTimeoutMs ?? 20_000;
    this.reportTimeoutMs = options.reportTimeoutMs ?? 10_000;
    this.stuckAfterMs = options.stuckAfterMs ?? 15 * 60_000;
    if (this.leaseMs <= this.railCallTimeoutMs + this.reportTimeoutMs) {
      throw new RangeError('leaseMs must exceed railCallTimeoutMs + reportTimeoutMs');
    }
    // Neither topic may take more than 3/4 of the slots, so stuck payouts never starve refunds.
    const perTopicMax = Math.max(1, Math.floor((this.inFlightMax * 3) / 4));
    this.jobs = new OutboxJobs<Work>({
      store: options.store,
      clock: options.clock,
      log: jobsLog(options.log),
      owner: options.owner,
      topic: payoutTopics,
      what: 'payout',
      tuning: { claimLeaseMs: this.leaseMs, claimBatchMax: this.inFlightMax, inFlightMax: this.inFlightMax, topicShareMax: perTopicMax, tickMs: this.pollIntervalMs },
      parse: (row) => this.parse(row),
      attempt: (entry) => this.attempt(entry),
    });
  }

  start(): void {
    this.jobs.start();
  }

  /**
   * Stops claiming, waits up to `waitMs` for the attempts in progress (each is bounded anyway), and
   * hands back every row it holds — also rows whose attempt is still running when the time is up:
   * another worker repeats that attempt with the same idempotency key (the rail pays once) and the
   * same report command id (the actor applies once), instead of waiting for the claim to lapse.
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    await this.jobs.stop(waitMs);
  }

  /** The health listener's check (`payout-rounds`): the loop's rounds, with the jobs held and waiting. */
  health(): HealthCheck {
    return this.jobs.health();
  }

  stats(): PayoutWorkerStats {
    const nowMs = this.options.clock.nowMs();
    let stuck = 0;
    let oldestWaitingMs = 0;
    // A row waiting for its next attempt is still this worker's work, as one being attempted.
    const rows = [...this.jobs.held(), ...this.jobs.waiting()];
    for (const entry of rows) {
      const waitingMs = nowMs - this.startedAtMs(entry);
      if (waitingMs > this.stuckAfterMs) stuck += 1;
      oldestWaitingMs = Math.max(oldestWaitingMs, waitingMs);
    }
    return { ...this.counters, malformedRows: this.jobs.malformedRows(), inFlight: rows.length, stuck, oldestWaitingMs };
  }

  /**
   * What this worker knows about the transaction's row of `topic`: held (claimed, being attempted
   * or about to be) or handed back by it to wait for its next attempt (`heldHere` either way).
   */
  jobOf(transactionId: string, topic: string = outboxTopicPayouts): JobView | null {
    const entry = this.entryOf(transactionId, topic);
    if (entry === null) return null;
    return { rowId: entry.rowId, topic, attempts: entry.attempts, nextAttemptAtMs: entry.nextAttemptAtMs, lastOutcome: entry.lastError, heldHere: true };
  }

  /**
   * Ops: one payout attempt now for a transaction in PROCESSING_PAYMENT, with the worker's own key
   * (so it can never pay twice), reporting a final outcome to the actor. The outbox row is finished
   * by its holder's next attempt (same key, same report id); when this worker handed it back to
   * wait, it is made due at once.
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
    await this.report(work, outcome.report);
    await this.dueNow(transactionId);
    return { result: 'reported', detail: outcome.summary, rail };
  }

  /** The transaction's state as the actor last stored it (read-only). */
  async loadTransaction(transactionId: string): Promise<TransactionState | null> {
    const snapshot = await this.options.store.load(`${transactionActorType}/${transactionId}`);
    if (snapshot === null) return null;
    const state = fromJsonValue<TransactionActorState>(snapshot.state);
    return state.phase === 'live' ? state.tx : null;
  }

  // ---- the jobs ----

  private entryOf(transactionId: string, topic: string): OutboxJobEntry<Work> | null {
    return [...this.jobs.held(), ...this.jobs.waiting()].find((entry) => entry.topic === topic && entry.job.transactionId === transactionId) ?? null;
  }

  /** The payout row of the transaction, held here or handed back to wait: attempted at the next round. */
  private async dueNow(transactionId: string): Promise<void> {
    const nowMs = this.options.clock.nowMs();
    const isPayout = (entry: OutboxJobEntry<Work>): boolean => entry.topic === outboxTopicPayouts && entry.job.transactionId === transactionId;
    const held = this.jobs.held().find(isPayout);
    if (held !== undefined) {
      if (!held.running) held.nextAttemptAtMs = nowMs;
      return;
    }
    const waiting = this.jobs.waiting().find(isPayout);
    if (waiting === undefined) return;
    // `claimed`: another worker holds it now and its attempt decides; `not_found`: done already.
    await this.options.store.outboxRetryNow(outboxTopicPayouts, waiting.rowId, nowMs);
  }

  private parse(row: OutboxRow): Work | 'malformed' {
    this.counters.claimed += 1;
    if (!this.firstSeenAtMs.has(row.id)) {
      this.firstSeenAtMs.set(row.id, this.options.clock.nowMs());
      while (this.firstSeenAtMs.size > firstSeenRememberedMax) {
        const oldest = this.firstSeenAtMs.keys().next();
        if (oldest.done === true) break;
        this.firstSeenAtMs.delete(oldest.value);
      }
    }
    // A row we cannot read is a bug; it is never dropped: the loop parks it, loud, for operations.
    return decodeWork(row) ?? 'malformed';
  }

  /** One attempt (the loop's `attempt`): a final outcome is reported, then the row is done; else it waits. */
  private async attempt(entry: OutboxJobEntry<Work>): Promise<void> {
    this.counters.attempts += 1;
    entry.attempts += 1;
    const work = entry.job;
    let outcome: AttemptOutcome;
    try {
      outcome = await this.callRail(work);
    } catch (error) {
      this.counters.railErrors += 1;
      this.notYet(entry, `rail error: ${error instanceof Error ? error.message : String(error)}`, 'warn');
      return;
    }
    if (!outcome.final) {
      this.notYet(entry, outcome.summary, 'info');
      return;
    }
    try {
      await this.report(work, outcome.report);
    } catch (error) {
      this.counters.reportErrors += 1;
      this.notYet(entry, `report not confirmed: ${error instanceof Error ? error.message : String(error)}`, 'warn');
      return;
    }
    // Done only now: the actor has applied (or had already applied) the outcome.
    await this.jobs.finish(entry);
    this.firstSeenAtMs.delete(entry.rowId);
    if (outcome.report.kind === 'PayoutSucceeded') this.counters.payoutsSucceeded += 1;
    if (outcome.report.kind === 'PayoutFailed') this.counters.payoutsFailed += 1;
    if (outcome.report.kind === 'RefundSettled') this.counters.refundsSettled += 1;
    this.log('info', 'rail outcome reported', { transactionId: work.transactionId, work: work.kind, outcome: outcome.summary, attempts: entry.attempts });
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

  /** Not final yet: the loop hands the row back until its next attempt (bounded exponential backoff). */
  private notYet(entry: OutboxJobEntry<Work>, summary: string, level: LogLevel): void {
    this.counters.notYet += 1;
    const nowMs = this.options.clock.nowMs();
    entry.lastError = summary;
    entry.nextAttemptAtMs = nowMs + retryDelayMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax);
    const waitingMs = nowMs - this.startedAtMs(entry);
    const stuck = waitingMs > this.stuckAfterMs;
    this.log(stuck ? 'error' : level, stuck ? 'rail work stuck: no final outcome yet' : 'rail work not final yet; will poll again', {
      rowId: entry.rowId,
      transactionId: entry.job.transactionId,
      work: entry.job.kind,
      attempts: entry.attempts,
      outcome: summary,
      waitingMs,
      nextAttemptInMs: entry.nextAttemptAtMs - nowMs,
    });
  }

  private startedAtMs(entry: OutboxJobEntry<Work>): number {
    const firstSeen = this.firstSeenAtMs.get(entry.rowId) ?? this.options.clock.nowMs();
    const requested = entry.job.requestedAtMs;
    return requested > 0 ? Math.min(requested, firstSeen) : firstSeen;
  }

  private log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(level, message, fields);
  }
}
