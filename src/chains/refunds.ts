// The chain refund worker: returns crypto deposits in full to their senders. It consumes the chain
// refund topic of the outbox: the transaction actor's RefundRequested rows whose deposit came by
// chain (wrong amount, late, payout failed, stray) and the deposit actor's unmatched deposits.
//
// For each row: `adapter.send` with the idempotency key `refund:<txId>:<depositId>` (unmatched:
// `refund:unmatched:<network>:<depositId>`), so a retry, a second worker or a restart never sends
// twice. Confirmed → the owner is told (transaction: RefundSettled {depositId, refundOnChainId};
// unmatched deposit: refundSettled) and the row is marked done. Pending or a retryable failure →
// tried again with bounded exponential backoff. A non-retryable failure (the chain refuses the
// send) is logged as an error every time and parked: retried at the slow `parkedRetryDelayMs`, so
// it is neither lost nor hammering; operations see it in the admin listing of parked rows (with the
// chain's reason), in `status()` and the logs, and can retry it now or resolve it by hand.
//
// Claims, the loop, deferral of rows that wait (held by nobody meanwhile), the per-network budget
// and hand-back on stop: src/store/outbox-jobs.ts (shared with the onramp delivery worker).
import type { Logger } from 'pino';
import { isOneOf, networks, type Network } from '../domain/assets.ts';
import type { Deposit } from '../domain/transaction.ts';
import { fromJsonValue, toJsonValue } from '../actors/state-codec.ts';
import { transactionActorType, type DomainReply } from '../actors/transaction-actor.ts';
import { chainRefundTopic, type DepositReply } from '../actors/deposit-actor.ts';
import type { JsonValue } from '../actors/envelope.ts';
import type { OutboxRow, SnapshotStore } from '../store/store.ts';
import type { ChainAdapter } from './chains.ts';
import type { ActorAsker } from './deposits.ts';
import { OutboxJobs, backoffMs, type OutboxJobEntry } from '../store/outbox-jobs.ts';
import type { HealthCheck } from '../lifecycle/health.ts';

export interface RefundWorkerOptions {
  readonly store: SnapshotStore;
  readonly adapters: ReadonlyMap<Network, ChainAdapter>;
  readonly actors: ActorAsker;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Unique per worker process: the outbox claim owner. */
  readonly owner: string;
  readonly topic?: string;
  readonly claimLeaseMs?: number;
  readonly claimBatchMax?: number;
  readonly inFlightMax?: number;
  /** Refunds of one network held at most (default half of `inFlightMax`). */
  readonly inFlightPerKeyMax?: number;
  readonly tickMs?: number;
  readonly retryDelayMsMin?: number;
  readonly retryDelayMsMax?: number;
  readonly parkedRetryDelayMs?: number;
  readonly askTimeoutMs?: number;
}

/** A chain refund to make, read from an outbox row. */
export interface ChainRefund {
  readonly rowId: string;
  readonly network: Network;
  readonly deposit: Extract<Deposit, { rail: 'chain' }>;
  readonly idempotencyKey: string;
  /** Who is told when the refund settles. */
  readonly settleTo: { readonly actorType: string; readonly actorKey: string };
}

export interface RefundWorkerStatus {
  /** Refunds this worker holds: being sent now (a refund waiting for its next try is not held). */
  readonly inFlight: number;
  /**
   * Refunds that failed at least once, held now or deferred by this worker and waiting for their
   * next try (`nextAttemptAtMs`; `parked`: the chain refused it), most attempts first.
   */
  readonly retrying: ReadonlyArray<{
    readonly rowId: string;
    readonly network: Network;
    readonly attempts: number;
    readonly lastError: string | null;
    readonly parked: boolean;
    readonly nextAttemptAtMs: number;
  }>;
}

/** Reads a refund row; null when it is not a chain refund (a PIX refund is the rails' business). */
export function chainRefundOf(row: Pick<OutboxRow, 'id' | 'payload'>): ChainRefund | 'not_chain' | 'malformed' {
  const payload = row.payload;
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || payload.type !== 'RefundRequested') return 'malformed';
  const deposit = fromJsonValue<Deposit | null>(payload.deposit ?? null);
  if (deposit === null || typeof deposit !== 'object') return 'malformed';
  if (deposit.rail !== 'chain') return 'not_chain';
  if (!isOneOf(networks, deposit.network) || typeof deposit.id !== 'string' || typeof deposit.sender !== 'string') return 'malformed';
  if (typeof deposit.amount?.units !== 'bigint' || deposit.amount.units <= 0n) return 'malformed';
  const settleTo = payload.settleTo;
  if (settleTo !== null && typeof settleTo === 'object' && !Array.isArray(settleTo)) {
    if (typeof settleTo.actorType !== 'string' || typeof settleTo.actorKey !== 'string') return 'malformed';
    return {
      rowId: row.id,
      network: deposit.network,
      deposit,
      idempotencyKey: `refund:unmatched:${deposit.network}:${deposit.id}`,
      settleTo: { actorType: settleTo.actorType, actorKey: settleTo.actorKey },
    };
  }
  if (typeof payload.transactionId !== 'string') return 'malformed';
  return {
    rowId: row.id,
    network: deposit.network,
    deposit,
    idempotencyKey: `refund:${payload.transactionId}:${deposit.id}`,
    settleTo: { actorType: transactionActorType, actorKey: payload.transactionId },
  };
}

export class RefundWorker {
  private readonly jobs: OutboxJobs<ChainRefund>;
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;
  private readonly parkedRetryDelayMs: number;
  private readonly askTimeoutMs: number;

  constructor(private readonly options: RefundWorkerOptions) {
    this.retryDelayMsMin = options.retryDelayMsMin ?? 1_000;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 30_000;
    this.parkedRetryDelayMs = options.parkedRetryDelayMs ?? 600_000;
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
    this.jobs = new OutboxJobs<ChainRefund>({
      store: options.store,
      clock: options.clock,
      log: options.log,
      owner: options.owner,
      topic: options.topic ?? chainRefundTopic,
      what: 'refund',
      tuning: options,
      // A PIX refund is the rails' business: handed back at once.
      parse: (row) => {
        const refund = chainRefundOf(row);
        return refund === 'not_chain' ? 'release' : refund;
      },
      attempt: (entry) => this.attempt(entry),
      budgetKey: (refund) => refund.network,
    });
  }

  start(): void {
    this.jobs.start();
  }

  /**
   * Stops claiming, waits at most `waitMs` for the sends in flight, then hands every row back at
   * once instead of waiting for the lease to lapse. A send still running then is repeated by the
   * next holder with the same idempotency key (the chain adapters send once per key).
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    await this.jobs.stop(waitMs);
  }

  health(): HealthCheck {
    return this.jobs.health();
  }

  status(): RefundWorkerStatus {
    const retrying = [...this.jobs.held(), ...this.jobs.waiting()]
      .filter((entry) => entry.attempts > 0)
      .sort((a, b) => b.attempts - a.attempts)
      .map((entry) => ({
        rowId: entry.rowId,
        network: entry.job.network,
        attempts: entry.attempts,
        lastError: entry.lastError,
        parked: entry.parked,
        nextAttemptAtMs: entry.nextAttemptAtMs,
      }));
    return { inFlight: this.jobs.held().length, retrying };
  }

  /** One round: claim new rows, then attempt every due refund. Exposed for tests and ops. */
  async tick(): Promise<void> {
    await this.jobs.tick();
  }

  private async attempt(entry: OutboxJobEntry<ChainRefund>): Promise<void> {
    const refund = entry.job;
    const retryAfter = (delayMs: number): void => {
      entry.nextAttemptAtMs = this.options.clock.nowMs() + delayMs;
    };
    try {
      const adapter = this.options.adapters.get(refund.network);
      if (adapter === undefined) throw new Error(`no adapter for ${refund.network}`);
      const sent = await adapter.send({
        network: refund.network,
        asset: refund.deposit.asset,
        amount: refund.deposit.amount,
        destination: refund.deposit.sender,
        idempotencyKey: refund.idempotencyKey,
      });
      if (sent.status === 'confirmed') {
        await this.settle(refund, sent.onChainId);
        await this.jobs.finish(entry);
        this.options.log.info({ rowId: refund.rowId, network: refund.network, refundOnChainId: sent.onChainId }, 'refund settled');
        return;
      }
      entry.attempts += 1;
      if (sent.status === 'pending') {
        entry.lastError = null;
        retryAfter(backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax));
      } else if (sent.retryable) {
        entry.lastError = sent.reason;
        retryAfter(backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax));
        this.options.log.warn({ rowId: refund.rowId, network: refund.network, attempts: entry.attempts, reason: sent.reason }, 'refund send failed; will retry');
      } else {
        entry.lastError = sent.reason;
        entry.parked = true;
        retryAfter(this.parkedRetryDelayMs);
        this.options.log.error({ rowId: refund.rowId, network: refund.network, attempts: entry.attempts, reason: sent.reason }, 'refund refused by the chain; needs operations (retried slowly)');
      }
    } catch (error) {
      entry.attempts += 1;
      entry.lastError = error instanceof Error ? error.message : String(error);
      retryAfter(backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax));
      this.options.log.warn({ rowId: refund.rowId, network: refund.network, attempts: entry.attempts, error: entry.lastError }, 'refund attempt failed; will retry');
    }
  }

  /** Tells the owner; a domain rejection is terminal (logged), infrastructure errors throw. */
  private async settle(refund: ChainRefund, refundOnChainId: string): Promise<void> {
    const commandId = `refund-settled:${refund.rowId}`;
    const options = { commandId, timeoutMs: this.askTimeoutMs };
    if (refund.settleTo.actorType === transactionActorType) {
      const payload: JsonValue = toJsonValue({ kind: 'RefundSettled', depositId: refund.deposit.id, refundOnChainId });
      const reply = await this.options.actors.ask<DomainReply>(transactionActorType, refund.settleTo.actorKey, 'RefundSettled', payload, options);
      if (!reply.ok) this.options.log.error({ rowId: refund.rowId, code: reply.code, refundOnChainId }, 'the transaction refused the refund settlement; check it by hand');
      return;
    }
    const reply = await this.options.actors.ask<DepositReply>(refund.settleTo.actorType, refund.settleTo.actorKey, 'refundSettled', { refundOnChainId }, options);
    if (reply.result !== 'settled') this.options.log.error({ rowId: refund.rowId, reply: reply.result, refundOnChainId }, 'the deposit refused the refund settlement; check it by hand');
  }
}
