// The PIX notice inbox worker (watcher role): applies the notices that were stored but not applied
// (pix-inbox.ts), e.g. because the transaction could not be reached when the notice came in. Every
// `tickMs` it takes up to `batchMax` pending notices whose next attempt is due (by the injected
// clock) and applies each through the intake, which records the outcome or the next attempt time.
// Retried with bounded backoff, forever: a payment we acknowledged to the provider is never given
// up on; once a notice has failed `stuckAfterAttempts` times an error is logged (once per worker),
// for operations. Application is idempotent by the provider payment id, so a notice applied by the
// intake and by this worker at the same moment still moves its transaction once.
import type { Logger } from 'pino';
import { LoopHealth, loopCheck, type HealthCheck } from '../lifecycle/health.ts';
import type { PixNoticeIntake } from './intake.ts';

export interface NoticeWorkerOptions {
  readonly intake: Pick<PixNoticeIntake, 'apply' | 'inbox'>;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  readonly tickMs?: number;
  readonly batchMax?: number;
  /** How long a taken notice is left to this worker before another may take it. */
  readonly leaseMs?: number;
  readonly stuckAfterAttempts?: number;
}

export interface NoticeWorkerStats {
  readonly applied: number;
  readonly retried: number;
  /** Notices that failed `stuckAfterAttempts` times (logged as errors). */
  readonly stuck: number;
}

export class NoticeWorker {
  private readonly tickMs: number;
  private readonly batchMax: number;
  private readonly leaseMs: number;
  private readonly stuckAfterAttempts: number;
  private readonly rounds: LoopHealth;
  private readonly stuckLogged = new Set<string>();
  private counters = { applied: 0, retried: 0 };
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;

  constructor(private readonly options: NoticeWorkerOptions) {
    this.tickMs = options.tickMs ?? 1_000;
    this.batchMax = options.batchMax ?? 32;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.stuckAfterAttempts = options.stuckAfterAttempts ?? 10;
    this.rounds = new LoopHealth(this.tickMs);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops after the round in flight (a notice being applied finishes or stays pending). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = null;
  }

  health(): HealthCheck {
    return loopCheck('pix-notice-rounds', this.rounds, () => ({ stuck: this.stuckLogged.size }));
  }

  stats(): NoticeWorkerStats {
    return { ...this.counters, stuck: this.stuckLogged.size };
  }

  /** One round: apply every due pending notice (at most `batchMax`). Exposed for tests and ops. */
  async tick(): Promise<void> {
    const { intake, clock, log } = this.options;
    const due = await intake.inbox.due(clock.nowMs(), this.batchMax);
    // Together: a round then lasts about one ask timeout, however many notices are due.
    await Promise.all(
      due.map(async (entry) => {
        await intake.inbox.take(entry, clock.nowMs(), this.leaseMs);
        const outcome = await intake.apply(entry);
        if (outcome.result !== 'queued') {
          this.counters.applied += 1;
          this.stuckLogged.delete(entry.id);
          return;
        }
        this.counters.retried += 1;
        if (entry.attempts + 1 >= this.stuckAfterAttempts && !this.stuckLogged.has(entry.id)) {
          // Bounded: one id per stuck notice, forgotten once it is applied.
          if (this.stuckLogged.size < 10_000) this.stuckLogged.add(entry.id);
          log.error({ providerPaymentId: entry.notice.providerPaymentId, attempts: entry.attempts + 1, reason: outcome.reason }, 'PIX notice still not applied; check the bus and the shard workers');
        }
      }),
    );
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.tick();
        this.rounds.succeeded();
      } catch (error) {
        this.rounds.failed();
        this.options.log.error({ error: error instanceof Error ? error.message : String(error) }, 'PIX notice round failed; retrying');
      }
      if (this.running) await this.sleep(this.tickMs);
    }
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
