// A shard worker's actor timers: one Node timer per actor that wants one (its snapshot's due time),
// firing the runtime's timer command through the actor's stream like any other command. Armed when
// a durable write sets a due time, cleared when one clears it, forgotten with a shard given up;
// the shard's next owner re-arms them from the store's timer documents (shard-worker.ts, recovery).
import type { LogLevel } from './envelope.ts';

const timerDelayMsMax = 2 ** 31 - 1;

export interface ActorTimersOptions {
  /** Sends the timer command for `dueAtMs` (`attempt`: 0, or the refusals so far). */
  send(actorId: string, dueAtMs: number, attempt: number): Promise<void>;
  readonly clock: { nowMs(): number };
  readonly log: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /**
   * A timer the actor refused (`retry`) fires again no sooner than this after the refusal,
   * doubling per refusal of the same due time up to `retryDelayMsMax` (defaults 1 s, 60 s).
   */
  readonly retryDelayMsMin?: number;
  readonly retryDelayMsMax?: number;
}

export class ActorTimers {
  private readonly timers = new Map<string, { dueAtMs: number; handle: NodeJS.Timeout }>();
  /**
   * Refusals of an actor's current due time so far (the retry's attempt number). One entry per
   * actor whose timer was refused; dropped when its timer changes, is cleared or its shard goes.
   */
  private readonly refusals = new Map<string, { dueAtMs: number; refusals: number }>();
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;

  constructor(private readonly options: ActorTimersOptions) {
    this.retryDelayMsMin = options.retryDelayMsMin ?? 1_000;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 60_000;
    if (!(this.retryDelayMsMin >= 1 && this.retryDelayMsMax >= this.retryDelayMsMin && this.retryDelayMsMax <= timerDelayMsMax)) {
      throw new RangeError('timerRetryDelayMsMin/Max must satisfy 1 ≤ min ≤ max ≤ 2^31 - 1');
    }
  }

  /** Schedules (or reschedules, or with null clears) an actor's timer. */
  schedule(actorId: string, dueAtMs: number | null): void {
    const existing = this.timers.get(actorId);
    if (existing && existing.dueAtMs === dueAtMs) return;
    if (existing) clearTimeout(existing.handle);
    this.timers.delete(actorId);
    if (this.refusals.get(actorId)?.dueAtMs !== dueAtMs) this.refusals.delete(actorId);
    if (dueAtMs === null) return;
    this.arm(actorId, dueAtMs, dueAtMs, 0);
  }

  /**
   * The actor was sent its timer and still wants that same due time (it refused: a transaction
   * told to expire before its expiry by its own clock). Nothing else arms it again, so it is armed
   * here, under a new command id (`attempt`), at the due time or after a backoff from now,
   * whichever is later: an early firing retries at the due time, a refusal past it does not spin.
   */
  retry(actorId: string, dueAtMs: number): void {
    const existing = this.timers.get(actorId);
    // Moved meanwhile (a write set another due time): that timer is the one to keep.
    if (existing && existing.dueAtMs !== dueAtMs) return;
    if (existing) clearTimeout(existing.handle);
    this.timers.delete(actorId);
    const previous = this.refusals.get(actorId);
    const refusals = (previous?.dueAtMs === dueAtMs ? previous.refusals : 0) + 1;
    this.refusals.set(actorId, { dueAtMs, refusals });
    const backoffMs = Math.min(this.retryDelayMsMax, this.retryDelayMsMin * 2 ** Math.min(refusals - 1, 30));
    const fireAtMs = Math.max(dueAtMs, this.options.clock.nowMs() + backoffMs);
    this.options.log('info', 'actor refused its timer; armed again', { actorId, dueAtMs, refusals, fireAtMs });
    this.arm(actorId, dueAtMs, fireAtMs, refusals);
  }

  /** Drops the timers (and refusal counts) of the actors `matches` names: a shard given up. */
  forget(matches: (actorId: string) => boolean): void {
    for (const [actorId, timer] of this.timers) {
      if (actorId.length > 0 && matches(actorId)) {
        clearTimeout(timer.handle);
        this.timers.delete(actorId);
      }
    }
    for (const actorId of this.refusals.keys()) {
      if (matches(actorId)) this.refusals.delete(actorId);
    }
  }

  /** Every timer cleared (the worker stops). */
  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer.handle);
    this.timers.clear();
    this.refusals.clear();
  }

  /** Sends the timer command for `dueAtMs` at `fireAtMs` (by the injected clock). */
  private arm(actorId: string, dueAtMs: number, fireAtMs: number, attempt: number): void {
    const delayMs = Math.min(Math.max(0, fireAtMs - this.options.clock.nowMs()), timerDelayMsMax);
    const handle = setTimeout(() => {
      this.timers.delete(actorId);
      this.options.send(actorId, dueAtMs, attempt).catch((error: unknown) => {
        this.options.log('error', 'could not send a timer command; retrying', { actorId, error: String(error) });
        if (!this.timers.has(actorId)) this.arm(actorId, dueAtMs, dueAtMs, attempt);
      });
    }, delayMs);
    handle.unref();
    this.timers.set(actorId, { dueAtMs, handle });
  }
}
