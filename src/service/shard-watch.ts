// The edge's view of the shard workers. Every `pollMs` it reads every shard's lease and keeps a
// ShardCoverage of what it saw (src/bus/shard-coverage.ts: which shards have a live owner, with
// the lease TTL as the grace), so that:
// - the edge's /readyz and its health listener check `shard-owners` say not ready while a shard
//   has had no live owner for longer than the grace, or the leases cannot be read (Redis);
// - a request for such a shard is refused at once with 503 instead of waiting the ask timeout:
//   the edge's actor client asks `refusal(shard)` before it sends (a request already sent to a
//   shard that had an owner still waits for its reply);
// - each condition is logged once when it begins and once when it ends, with its length and how
//   many requests were refused meanwhile (src/bus/outage-log.ts), never once per request.
// One reading at a time: a reading that hangs (a frozen Redis answers nothing) is not piled upon;
// the time since the last successful reading grows until the leases count as unreadable.
// Cost: SHARDS lease reads (one small script each, auto-pipelined) per `pollMs` per edge.
import type { Leases } from '../bus/leases.ts';
import { OutageLog, type OutageLogFn } from '../bus/outage-log.ts';
import {
  NoShardOwnerError,
  ShardCoverage,
  leasesUnreadableError,
  type CoverageSummary,
  type ShardGate,
} from '../bus/shard-coverage.ts';
import { shardLeaseName } from '../bus/shards.ts';
import { LoopHealth, type HealthCheck } from '../lifecycle/health.ts';

export interface ShardWatchOptions {
  readonly leases: Leases;
  readonly shardCount: number;
  /** The shard workers' lease TTL (SHARD_LEASE_TTL_MS): how long a shard may go without an owner. */
  readonly graceMs: number;
  readonly log: OutageLogFn;
  /**
   * Elapsed time, for the grace and the outage lines; Date.now by default, like the health checks
   * (not the service clock, which tests move by days to expire quotes).
   */
  readonly now?: () => number;
}

export interface ShardWatch extends ShardGate {
  summary(): CoverageSummary;
  /** The health listener's `shard-owners` check. */
  check(): HealthCheck;
  /** Stops reading (a reading in flight is left to settle on its own). */
  stop(): void;
}

/** A quarter of the grace: a shard back under an owner is seen within that (bounded both ways). */
export function shardWatchPollMs(graceMs: number): number {
  return Math.min(2_500, Math.max(100, Math.floor(graceMs / 4)));
}

/** Unserved shards named in a log line, at most (the count is always there). */
const shardsNamedMax = 32;

export async function startShardWatch(options: ShardWatchOptions): Promise<ShardWatch> {
  const watch = new LeaseShardWatch(options);
  await watch.start();
  return watch;
}

class LeaseShardWatch implements ShardWatch {
  private readonly now: () => number;
  private readonly pollMs: number;
  private readonly coverage: ShardCoverage;
  /** Finished readings, for the check's details. */
  private readonly readings: LoopHealth;
  private readonly noOwner: OutageLog;
  private readonly unreadable: OutageLog;
  private lastError: string | null = null;
  private reading: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly options: ShardWatchOptions) {
    this.now = options.now ?? Date.now;
    this.pollMs = shardWatchPollMs(options.graceMs);
    this.coverage = new ShardCoverage(options.shardCount, options.graceMs, this.now());
    this.readings = new LoopHealth(this.pollMs, this.now);
    const clock = { nowMs: this.now };
    this.noOwner = new OutageLog({
      log: options.log,
      clock,
      beganMessage: 'no shard worker is serving some shards: requests for them are refused with 503',
      endedMessage: 'every shard has a live owner again',
      countName: 'refusedRequests',
    });
    this.unreadable = new OutageLog({
      log: options.log,
      clock,
      beganMessage: 'the shard leases cannot be read (Redis is not answering): requests that need a shard worker are refused with 503',
      endedMessage: 'the shard leases can be read again',
      countName: 'refusedRequests',
    });
  }

  /** The first reading before the edge takes requests, so it starts with what the leases say; then the rounds. */
  async start(): Promise<void> {
    await this.startReading();
    this.schedule();
  }

  refusal(shard: number): Error | null {
    const nowMs = this.now();
    const verdict = this.coverage.verdict(shard, nowMs);
    if (verdict === 'served') return null;
    if (verdict === 'no_owner') {
      if (!this.noOwner.active) this.noOwner.began(this.noOwnerDetail(this.coverage.summary(nowMs)));
      this.noOwner.counted();
      return new NoShardOwnerError(shard);
    }
    this.unreadable.began(this.unreadableDetail());
    this.unreadable.counted();
    return leasesUnreadableError();
  }

  summary(): CoverageSummary {
    return this.coverage.summary(this.now());
  }

  check(): HealthCheck {
    return {
      name: 'shard-owners',
      report: (_nowMs, unreadyAfterMs) => {
        const loop = this.readings.report(this.now(), unreadyAfterMs);
        const summary = this.summary();
        return {
          // The readings run on a timer of their own: a hung one is Redis frozen, which a restart
          // of the edge would not cure. So always live; ready only while every shard is served.
          live: true,
          ready: summary.verdict === 'served',
          detail: {
            rounds: loop.detail['rounds'] ?? 0,
            consecutiveFailures: loop.detail['consecutiveFailures'] ?? 0,
            lastSuccessAgoMs: loop.detail['lastSuccessAgoMs'] ?? null,
            verdict: summary.verdict,
            unservedShards: summary.unservedShards.length,
            shardCount: summary.shardCount,
            graceMs: this.options.graceMs,
          },
        };
      },
    };
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.round(), this.pollMs);
    this.timer.unref();
  }

  /** A new reading unless one is still in flight (never piled on a hung one), and the lines. */
  private round(): void {
    this.timer = null;
    if (this.stopped) return;
    if (this.reading === null) void this.startReading();
    this.evaluate();
    this.schedule();
  }

  private startReading(): Promise<void> {
    const reading = this.readOnce().finally(() => {
      this.reading = null;
    });
    this.reading = reading;
    return reading;
  }

  private async readOnce(): Promise<void> {
    const { leases, shardCount } = this.options;
    try {
      const holders = await Promise.all(Array.from({ length: shardCount }, async (_, shard) => leases.owner(shardLeaseName(shard))));
      if (this.stopped) return;
      const held: number[] = [];
      holders.forEach((holder, shard) => {
        if (holder !== null) held.push(shard);
      });
      this.coverage.observed(this.now(), held);
      this.readings.succeeded();
    } catch (error) {
      if (this.stopped) return;
      // The first words only: the outage line carries it; the Redis client's own line says more.
      this.lastError = (error instanceof Error ? error.message : String(error)).slice(0, 200);
      this.readings.failed();
    }
    this.evaluate();
  }

  /** Begins or ends the outage lines from what the coverage says now. */
  private evaluate(): void {
    const summary = this.summary();
    if (summary.verdict === 'bus_unreachable') {
      this.unreadable.began(this.unreadableDetail());
      return;
    }
    this.unreadable.recovered();
    if (summary.verdict === 'no_owner') this.noOwner.began(this.noOwnerDetail(summary));
    else this.noOwner.recovered();
  }

  private noOwnerDetail(summary: CoverageSummary): Record<string, unknown> {
    return {
      unservedShards: summary.unservedShards.slice(0, shardsNamedMax),
      unservedCount: summary.unservedShards.length,
      shardCount: summary.shardCount,
      graceMs: this.options.graceMs,
    };
  }

  private unreadableDetail(): Record<string, unknown> {
    return { lastError: this.lastError, graceMs: this.options.graceMs };
  }
}
