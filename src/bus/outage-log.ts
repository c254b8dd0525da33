// Logging a condition that lasts (a Redis connection lost, shards without a worker, requests refused
// for it) without a line per failure, which would bury the cause under thousands of copies:
// - OutageLog: one warning when the outage begins (with what its first failure was), nothing while
//   it lasts but a count, and one line when it ends with how long it lasted and the count;
// - RateLimitedLog: for failures with no "it is over" signal (requests answered 503 whatever the
//   cause), one line at once and then at most one per interval, carrying how many were not logged;
// - RetryLog: for a loop that retries what failed (a shard worker's reads every 100 ms while Redis
//   is away): the first failure at once, then at most one line per interval with the count and
//   the latest error, and one line when a round succeeds again, with the length and the count.
// Durations come from the clock given, never from a clock read here.
import type { Clock } from './bus.ts';

export type OutageLogLevel = 'debug' | 'info' | 'warn' | 'error';
export type OutageLogFn = (level: OutageLogLevel, message: string, fields: Readonly<Record<string, unknown>>) => void;

/** Logs nothing: for clients built without a logger (tests, tools); errors then surface on commands only. */
export const silentLog: OutageLogFn = () => undefined;

export interface OutageLogOptions {
  readonly log: OutageLogFn;
  readonly clock: Clock;
  /** The warning when the outage begins. */
  readonly beganMessage: string;
  /** The line (info) when it ends. */
  readonly endedMessage: string;
  /** Fields of both lines, e.g. `{ client: 'bus' }`. */
  readonly fields?: Readonly<Record<string, unknown>>;
  /** Name of the count in the end line (`errors`, `refusedRequests`). */
  readonly countName: string;
}

export class OutageLog {
  private sinceMs: number | null = null;
  private count = 0;

  constructor(private readonly options: OutageLogOptions) {}

  get active(): boolean {
    return this.sinceMs !== null;
  }

  /** The condition holds: begins the outage (its one warning, with `detail`) unless one is under way. */
  began(detail: Readonly<Record<string, unknown>> = {}): void {
    if (this.sinceMs !== null) return;
    this.sinceMs = this.options.clock.nowMs();
    this.count = 0;
    this.options.log('warn', this.options.beganMessage, { ...this.options.fields, ...detail });
  }

  /** One failure: begins the outage if none is under way, and is counted in it. */
  failed(detail: Readonly<Record<string, unknown>> = {}): void {
    this.began(detail);
    this.count += 1;
  }

  /** One more consequence of the outage under way (a refused request); nothing outside an outage. */
  counted(): void {
    if (this.sinceMs !== null) this.count += 1;
  }

  /** The condition is over: the end line with the outage's length and count (nothing if there was none). */
  recovered(detail: Readonly<Record<string, unknown>> = {}): void {
    if (this.sinceMs === null) return;
    const outageMs = Math.max(0, this.options.clock.nowMs() - this.sinceMs);
    this.options.log('info', this.options.endedMessage, {
      ...this.options.fields,
      ...detail,
      outageMs,
      [this.options.countName]: this.count,
    });
    this.sinceMs = null;
    this.count = 0;
  }
}

export interface RateLimitedLogOptions {
  readonly log: OutageLogFn;
  readonly clock: Clock;
  readonly level: OutageLogLevel;
  readonly message: string;
  /** At most one line per this many milliseconds. */
  readonly intervalMs: number;
}

export class RateLimitedLog {
  private lastLineAtMs = Number.NEGATIVE_INFINITY;
  private notLogged = 0;

  constructor(private readonly options: RateLimitedLogOptions) {
    if (!Number.isSafeInteger(options.intervalMs) || options.intervalMs <= 0) throw new RangeError('intervalMs must be a positive integer');
  }

  /** One occurrence: a line now (with how many occurrences since the last line went unlogged), or only a count. */
  note(fields: Readonly<Record<string, unknown>> = {}): void {
    const nowMs = this.options.clock.nowMs();
    if (nowMs - this.lastLineAtMs < this.options.intervalMs) {
      this.notLogged += 1;
      return;
    }
    this.options.log(this.options.level, this.options.message, { ...fields, notLoggedSinceLastLine: this.notLogged });
    this.lastLineAtMs = nowMs;
    this.notLogged = 0;
  }
}

export interface RetryLogOptions {
  readonly log: OutageLogFn;
  readonly clock: Clock;
  /** The failure line (level `error`): at the first failure, then at most once per interval. */
  readonly failedMessage: string;
  /** The line (info) when a round succeeds after failures. */
  readonly recoveredMessage: string;
  /** At most one failure line per this many milliseconds after the first. */
  readonly intervalMs: number;
}

export class RetryLog {
  private sinceMs: number | null = null;
  private lastLineAtMs = 0;
  private failures = 0;

  constructor(private readonly options: RetryLogOptions) {
    if (!Number.isSafeInteger(options.intervalMs) || options.intervalMs <= 0) throw new RangeError('intervalMs must be a positive integer');
  }

  /** One failed round: a line if it is the first of a run or an interval has passed since the last line. */
  failed(fields: Readonly<Record<string, unknown>> = {}): void {
    const nowMs = this.options.clock.nowMs();
    this.failures += 1;
    if (this.sinceMs === null) {
      this.sinceMs = nowMs;
    } else if (nowMs - this.lastLineAtMs < this.options.intervalMs) {
      return;
    }
    this.lastLineAtMs = nowMs;
    this.options.log('error', this.options.failedMessage, { ...fields, failures: this.failures, failingForMs: nowMs - this.sinceMs });
  }

  /** A round succeeded: the end line if rounds had failed (nothing otherwise). */
  succeeded(): void {
    if (this.sinceMs === null) return;
    const outageMs = Math.max(0, this.options.clock.nowMs() - this.sinceMs);
    this.options.log('info', this.options.recoveredMessage, { outageMs, failures: this.failures });
    this.sinceMs = null;
    this.failures = 0;
  }
}
