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
import { LoopHealth, type HealthCheck } from './health.ts';

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
  const now = options.now ?? Date.now;
  const pollMs = shardWatchPollMs(options.graceMs);
  const coverage = new ShardCoverage(options.shardCount, options.graceMs, now());
  const readings = new LoopHealth(pollMs, now);
  const clock = { nowMs: now };
  const noOwner = new OutageLog({
    log: options.log,
    clock,
    beganMessage: 'no shard worker is serving some shards: requests for them are refused with 503',
    endedMessage: 'every shard has a live owner again',
    countName: 'refusedRequests',
  });
  const unreadable = new OutageLog({
    log: options.log,
    clock,
    beganMessage: 'the shard leases cannot be read (Redis is not answering): requests that need a shard worker are refused with 503',
    endedMessage: 'the shard leases can be read again',
    countName: 'refusedRequests',
  });
  let lastError: string | null = null;
  let reading: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const noOwnerDetail = (summary: CoverageSummary): Record<string, unknown> => ({
    unservedShards: summary.unservedShards.slice(0, shardsNamedMax),
    unservedCount: summary.unservedShards.length,
    shardCount: summary.shardCount,
    graceMs: options.graceMs,
  });

  /** Begins or ends the outage lines from what the coverage says now. */
  const evaluate = (): void => {
    const summary = coverage.summary(now());
    if (summary.verdict === 'bus_unreachable') {
      unreadable.began({ lastError, graceMs: options.graceMs });
      return;
    }
    unreadable.recovered();
    if (summary.verdict === 'no_owner') noOwner.began(noOwnerDetail(summary));
    else noOwner.recovered();
  };

  const readOnce = async (): Promise<void> => {
    try {
      const holders = await Promise.all(Array.from({ length: options.shardCount }, async (_, shard) => options.leases.owner(shardLeaseName(shard))));
      if (stopped) return;
      const held: number[] = [];
      holders.forEach((holder, shard) => {
        if (holder !== null) held.push(shard);
      });
      coverage.observed(now(), held);
      readings.succeeded();
    } catch (error) {
      if (stopped) return;
      // Only the first words: the outage line carries it, the bus's own line says more.
      lastError = (error instanceof Error ? error.message : String(error)).slice(0, 200);
      readings.failed();
    }
    evaluate();
  };

  const round = (): void => {
    timer = null;
    if (stopped) return;
    reading ??= readOnce().finally(() => {
      reading = null;
    });
    evaluate();
    timer = setTimeout(round, pollMs);
    timer.unref();
  };

  // The first reading before the edge takes requests, so it starts with what the leases say.
  reading = readOnce().finally(() => {
    reading = null;
  });
  await reading;
  timer = setTimeout(round, pollMs);
  timer.unref();

  return {
    refusal(shard) {
      const nowMs = now();
      const verdict = coverage.verdict(shard, nowMs);
      if (verdict === 'served') return null;
      if (verdict === 'no_owner') {
        if (!noOwner.active) noOwner.began(noOwnerDetail(coverage.summary(nowMs)));
        noOwner.counted();
        return new NoShardOwnerError(shard);
      }
      unreadable.began({ lastError, graceMs: options.graceMs });
      unreadable.counted();
      return leasesUnreadableError();
    },
    summary: () => coverage.summary(now()),
    check: () => ({
      name: 'shard-owners',
      report(_nowMs, unreadyAfterMs) {
        const loop = readings.report(now(), unreadyAfterMs);
        const summary = coverage.summary(now());
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
            graceMs: options.graceMs,
          },
        };
      },
    }),
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
