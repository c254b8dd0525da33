// One active watcher process at a time, any number on standby: the `watcher` role's transfer
// watchers run only in the process holding the `watchers` lease. A standby process tries to take
// it every round and starts its watchers the moment it does: when the active process stops
// (its graceful stop releases the lease at once) or dies (the lease lapses after `ttlMs`).
//
// Why a lease and not fencing: two watchers running at once are safe, only wasteful. Every
// watched transfer goes to its deposit actor (keyed by network and chain transaction id), which
// links or refunds it once, whoever reported it; and a watcher saves its cursor only after the
// transfer was handed over, so a cursor never skips a transfer nobody handed over. The lease keeps
// that overlap to the short windows around a lapse (a paused or cut-off holder stops its watchers
// when a renewal fails, or when it could not renew for a whole TTL).
//
// The refund and delivery workers of the role are not behind the lease: their outbox claims
// already share work between processes.
import type { Leases } from '../bus/leases.ts';
import { LoopHealth, loopCheck, type HealthCheck } from '../lifecycle/health.ts';

export const watcherLeaseName = 'watchers';

export interface WatcherLeaseOptions {
  readonly leases: Leases;
  /** Unique per process. */
  readonly owner: string;
  readonly ttlMs?: number;
  /** Starts the watchers; a throw releases the lease and the next round tries again. */
  activate(): Promise<void>;
  /** Stops the watchers (the lease was lost, or the role stops). */
  deactivate(): Promise<void>;
  readonly log: { info(fields: object, message: string): void; warn(fields: object, message: string): void; error(fields: object, message: string): void };
  readonly now?: () => number;
}

const ttlMsDefault = 10_000;

export class WatcherLease {
  private readonly ttlMs: number;
  private readonly roundMs: number;
  private readonly now: () => number;
  private token: number | null = null;
  private lastRenewedAtMs = 0;
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Serializes rounds and the stop: activation and deactivation never overlap. */
  private turn: Promise<void> = Promise.resolve();
  private readonly rounds: LoopHealth;

  constructor(private readonly options: WatcherLeaseOptions) {
    this.ttlMs = options.ttlMs ?? ttlMsDefault;
    this.roundMs = Math.max(1, Math.floor(this.ttlMs / 3));
    this.now = options.now ?? Date.now;
    this.rounds = new LoopHealth(this.roundMs, this.now);
  }

  /** True while this process runs the watchers. */
  active(): boolean {
    return this.token !== null;
  }

  /** Takes the lease if it is free (and starts the watchers) before resolving, then keeps trying. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.serialized(() => this.round());
    this.loop = this.runLoop();
  }

  /** Stops trying; stops the watchers and releases the lease if this process held it. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = null;
    await this.serialized(async () => {
      const token = this.token;
      if (token === null) return;
      this.token = null;
      try {
        await this.options.deactivate();
      } finally {
        // Released even when stopping the watchers failed: a standby need not wait for the lapse.
        await this.options.leases.release(watcherLeaseName, this.options.owner, token).catch((error: unknown) => {
          this.options.log.warn({ error: String(error) }, 'watcher lease release failed; it lapses by itself');
        });
      }
    });
  }

  /** The health listener's check: the lease rounds, and whether this process is the active one. */
  health(): HealthCheck {
    return loopCheck('watcher-lease', this.rounds, () => ({ active: this.active() }));
  }

  private async runLoop(): Promise<void> {
    while (this.running) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.wake = null;
          resolve();
        };
        const timer = setTimeout(done, this.roundMs);
        this.wake = done;
      });
      if (!this.running) break;
      await this.serialized(() => this.round());
    }
  }

  private serialized(work: () => Promise<void>): Promise<void> {
    const next = this.turn.then(work);
    this.turn = next.catch(() => undefined);
    return next;
  }

  /** Renews what it holds (stopping the watchers when that fails), or tries to take the lease. */
  private async round(): Promise<void> {
    try {
      if (this.token !== null) await this.renew();
      else await this.tryAcquire();
      this.rounds.succeeded();
    } catch (error) {
      this.rounds.failed();
      this.options.log.error({ error: String(error) }, 'watcher lease round failed');
      // Cut off from the lease store for a whole TTL: another process may hold the lease by now.
      if (this.token !== null && this.now() - this.lastRenewedAtMs >= this.ttlMs) await this.lose('the lease could not be renewed for a whole TTL');
    }
  }

  private async renew(): Promise<void> {
    const token = this.token;
    if (token === null) return;
    if (await this.options.leases.renew(watcherLeaseName, this.options.owner, token, this.ttlMs)) {
      this.lastRenewedAtMs = this.now();
      return;
    }
    await this.lose('the lease was taken over or lapsed');
  }

  private async tryAcquire(): Promise<void> {
    const grant = await this.options.leases.acquire(watcherLeaseName, this.options.owner, this.ttlMs);
    if (grant === null) return;
    this.token = grant.token;
    this.lastRenewedAtMs = this.now();
    try {
      await this.options.activate();
      this.options.log.info({ owner: this.options.owner, token: grant.token }, 'watcher lease taken: watchers started');
    } catch (error) {
      this.token = null;
      await this.options.deactivate().catch(() => undefined);
      await this.options.leases.release(watcherLeaseName, this.options.owner, grant.token).catch(() => undefined);
      throw error;
    }
  }

  private async lose(why: string): Promise<void> {
    this.token = null;
    this.options.log.warn({ owner: this.options.owner, why }, 'watcher lease lost: stopping the watchers');
    await this.options.deactivate();
  }
}
