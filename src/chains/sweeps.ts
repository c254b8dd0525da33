// The sweep worker: moves what a per-transaction deposit address holds to the hot wallet. It
// consumes the `sweeps.chain` outbox topic, whose rows the deposit actor writes in the same
// durable step as it links a transfer into a transaction's own address (src/actors/deposit-actor.ts),
// so no linked deposit is left behind at its address. Payouts do not wait for it (the fiat leg is
// paid from liquidity), and refunds are sent from the hot wallet, so a sweep's timing decides
// nothing about the transaction.
//
// For each row: `sweep({ transactionId, asset, idempotencyKey: 'sweep:<deposit key>' })` on the
// network's PerTransactionDeposits. The adapters journal a sweep like a send (one transfer per key;
// a retry rebroadcasts the recorded bytes), so a retry, a second worker or a restart never moves
// funds twice. `confirmed` or `nothing_to_sweep` (an earlier sweep of the same address already took
// everything) → the row is done. `pending` or a retryable failure → tried again with bounded
// exponential backoff. A non-retryable failure is logged as an error every time and retried at the
// slow `parkedRetryDelayMs`: the funds are safe at the address, and operations see it in `status()`.
// Two rows of one address (two deposits) are never worked at the same time: the second waits.
//
// Claims, the tick loop and hand-back on stop: src/store/outbox-jobs.ts.
import type { Logger } from 'pino';
import { cryptoAssets, isOneOf, type CryptoAsset } from '../domain/assets.ts';
import { chainSweepTopic } from '../actors/deposit-actor.ts';
import type { OutboxRow, SnapshotStore } from '../store/store.ts';
import { OutboxJobs, backoffMs, type OutboxJobEntry, type OutboxJobTuning } from '../store/outbox-jobs.ts';
import type { HealthCheck } from '../lifecycle/health.ts';
import type { PerTransactionPorts } from './payment-context.ts';

export interface SweepWorkerOptions extends OutboxJobTuning {
  readonly store: SnapshotStore;
  readonly ports: PerTransactionPorts;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Unique per worker process: the outbox claim owner. */
  readonly owner: string;
  readonly topic?: string;
  readonly retryDelayMsMin?: number;
  readonly retryDelayMsMax?: number;
  readonly parkedRetryDelayMs?: number;
}

/** A sweep to make, read from an outbox row. */
export interface ChainSweep {
  readonly rowId: string;
  readonly network: 'SOLANA' | 'CELO';
  readonly asset: CryptoAsset;
  readonly transactionId: string;
  /** The transaction's address (as frozen in its payment_context). */
  readonly address: string;
  readonly idempotencyKey: string;
}

export interface SweepWorkerStatus {
  readonly inFlight: number;
  /** Sweeps that failed or stayed pending at least once, most attempts first. */
  readonly retrying: ReadonlyArray<{ readonly rowId: string; readonly network: string; readonly attempts: number; readonly lastError: string | null }>;
}

/** Reads a sweep row; 'malformed' when it is not one the deposit actor writes. */
export function chainSweepOf(row: Pick<OutboxRow, 'id' | 'payload'>): ChainSweep | 'malformed' {
  const payload = row.payload;
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) || payload.type !== 'SweepRequested') return 'malformed';
  const { network, asset, transactionId, address, depositKey } = payload;
  if ((network !== 'SOLANA' && network !== 'CELO') || !isOneOf(cryptoAssets, asset)) return 'malformed';
  if (typeof transactionId !== 'string' || typeof address !== 'string' || typeof depositKey !== 'string' || depositKey === '') return 'malformed';
  return { rowId: row.id, network, asset, transactionId, address, idempotencyKey: `sweep:${depositKey}` };
}

export class SweepWorker {
  private readonly jobs: OutboxJobs<ChainSweep>;
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;
  private readonly parkedRetryDelayMs: number;
  /** Addresses with a sweep in flight in this worker. */
  private readonly sweeping = new Set<string>();

  constructor(private readonly options: SweepWorkerOptions) {
    this.retryDelayMsMin = options.retryDelayMsMin ?? 1_000;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 30_000;
    this.parkedRetryDelayMs = options.parkedRetryDelayMs ?? 600_000;
    this.jobs = new OutboxJobs<ChainSweep>({
      store: options.store,
      clock: options.clock,
      log: options.log,
      owner: options.owner,
      topic: options.topic ?? chainSweepTopic,
      what: 'sweep',
      tuning: options,
      parse: (row) => chainSweepOf(row),
      attempt: (entry) => this.attempt(entry),
    });
  }

  start(): void {
    this.jobs.start();
  }

  /** Stops claiming, waits at most `waitMs` for sweeps in flight, hands the rows back. */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    await this.jobs.stop(waitMs);
  }

  health(): HealthCheck {
    return this.jobs.health();
  }

  status(): SweepWorkerStatus {
    const retrying = this.jobs
      .held()
      .filter((entry) => entry.attempts > 0)
      .sort((a, b) => b.attempts - a.attempts)
      .map((entry) => ({ rowId: entry.rowId, network: entry.job.network, attempts: entry.attempts, lastError: entry.lastError }));
    return { inFlight: this.jobs.held().length, retrying };
  }

  /** One round: claim new rows, then attempt every due sweep. Exposed for tests and ops. */
  async tick(): Promise<void> {
    await this.jobs.tick();
  }

  private async attempt(entry: OutboxJobEntry<ChainSweep>): Promise<void> {
    const sweep = entry.job;
    const retryAfter = (delayMs: number): void => {
      entry.nextAttemptAtMs = this.options.clock.nowMs() + delayMs;
    };
    const addressKey = `${sweep.network}:${sweep.network === 'CELO' ? sweep.address.toLowerCase() : sweep.address}`;
    if (this.sweeping.has(addressKey)) {
      retryAfter(this.retryDelayMsMin); // another deposit's sweep of this address is running
      return;
    }
    this.sweeping.add(addressKey);
    try {
      const port = this.options.ports.get(sweep.network);
      if (port === undefined) throw new Error(`no per-transaction deposit addresses on ${sweep.network} in this process`);
      const swept = await port.sweep({ transactionId: sweep.transactionId, asset: sweep.asset, idempotencyKey: sweep.idempotencyKey });
      if (swept.status === 'confirmed' || swept.status === 'nothing_to_sweep') {
        await this.jobs.finish(entry);
        this.options.log.info({ rowId: sweep.rowId, network: sweep.network, transactionId: sweep.transactionId, result: swept.status, ...(swept.status === 'confirmed' ? { sweepOnChainId: swept.onChainId } : {}) }, 'deposit address swept');
        return;
      }
      entry.attempts += 1;
      if (swept.status === 'pending') {
        entry.lastError = null;
        retryAfter(backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax));
      } else if (swept.retryable) {
        entry.lastError = swept.reason;
        retryAfter(backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax));
        this.options.log.warn({ rowId: sweep.rowId, network: sweep.network, attempts: entry.attempts, reason: swept.reason }, 'sweep failed; will retry');
      } else {
        entry.lastError = swept.reason;
        retryAfter(this.parkedRetryDelayMs);
        this.options.log.error({ rowId: sweep.rowId, network: sweep.network, transactionId: sweep.transactionId, attempts: entry.attempts, reason: swept.reason }, 'sweep refused by the chain; the funds stay at the deposit address (retried slowly)');
      }
    } catch (error) {
      entry.attempts += 1;
      entry.lastError = error instanceof Error ? error.message : String(error);
      retryAfter(backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax));
      this.options.log.warn({ rowId: sweep.rowId, network: sweep.network, attempts: entry.attempts, error: entry.lastError }, 'sweep attempt failed; will retry');
    } finally {
      this.sweeping.delete(addressKey);
    }
  }
}
