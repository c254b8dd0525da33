// Which shards an edge may send requests to, judged from what the shard leases said. Pure: the
// readings of the leases and their times come from the caller (src/service/shard-watch.ts).
//
// A live worker holds a shard when its lease (`shardLeaseName`) is held: workers renew their
// leases every third of the TTL, so a worker that stopped or died loses them within a TTL. A shard
// is *served* while its lease is seen held and for `graceMs` (the lease TTL) after it was last
// seen held: a hand-over (a worker stops and releases its shards; another takes them in its next
// lease round, a third of the TTL later) or a crashed worker's lease taken over once it lapses
// must neither refuse requests nor flap readiness. A shard never seen held since the edge started
// is unserved at once: an edge started before any worker is not ready until one holds it.
//
// When the leases cannot be read for `graceMs`, Redis is not answering this edge: ownership is
// unknown and a request would fail anyway, so every shard is refused for that reason instead.
// The first reading after that gives the shards that were served when the leases went unread the
// grace again: their workers were cut off too, their leases may have lapsed meanwhile, and they
// take them back in their next lease round. A shard already unserved then stays unserved.
import { BusError } from './bus.ts';
import { RequestError } from './request-reply.ts';
import { assertShardCount } from './shards.ts';

export type ShardVerdict = 'served' | 'no_owner' | 'bus_unreachable';

export interface CoverageSummary {
  /** `served` when every shard is; else why not (`bus_unreachable` wins: ownership is then unknown). */
  readonly verdict: ShardVerdict;
  /** Shards without a live owner beyond the grace (empty when the leases cannot be read). */
  readonly unservedShards: readonly number[];
  readonly shardCount: number;
  /** Time since the last successful reading of the leases (null: none yet). */
  readonly lastReadingAgoMs: number | null;
}

/** A request refused before it was sent: no live worker owns its shard, so an ask would only time out. */
export class NoShardOwnerError extends RequestError {
  override readonly name = 'NoShardOwnerError';
  constructor(readonly shard: number) {
    super('no_owner', `no shard worker owns shard ${shard}`);
  }
}

/** The error of a request refused because the edge cannot read the shard leases (Redis not answering). */
export function leasesUnreadableError(): BusError {
  return new BusError('unavailable', 'the shard leases cannot be read: Redis is not answering');
}

/** What the edge asks before it sends a request to a shard. */
export interface ShardGate {
  /** Null when requests for `shard` may be sent; else the error to fail the request with (the refusal is counted). */
  refusal(shard: number): Error | null;
}

export class ShardCoverage {
  /** Per shard, when its lease was last seen held; -Infinity when never. */
  private readonly lastHeldAtMs: number[];
  private lastReadingAtMs: number | null = null;

  constructor(
    readonly shardCount: number,
    readonly graceMs: number,
    /** The edge's start: the leases count as readable until `graceMs` after it, as after a reading. */
    private readonly startedAtMs: number,
  ) {
    assertShardCount(shardCount);
    if (!Number.isSafeInteger(graceMs) || graceMs <= 0) throw new RangeError(`graceMs must be a positive integer, got ${graceMs}`);
    this.lastHeldAtMs = Array.from({ length: shardCount }, () => Number.NEGATIVE_INFINITY);
  }

  /** A successful reading of the leases, finished at `nowMs`: these shards were held. */
  observed(nowMs: number, heldShards: Iterable<number>): void {
    const lastReadingAtMs = this.lastReadingAtMs;
    if (lastReadingAtMs !== null && this.leasesUnreadable(nowMs)) {
      this.lastHeldAtMs.forEach((heldAtMs, shard) => {
        if (lastReadingAtMs - heldAtMs <= this.graceMs) this.lastHeldAtMs[shard] = nowMs;
      });
    }
    for (const shard of heldShards) {
      if (!Number.isSafeInteger(shard) || shard < 0 || shard >= this.shardCount) throw new RangeError(`not a shard of ${this.shardCount}: ${shard}`);
      this.lastHeldAtMs[shard] = nowMs;
    }
    this.lastReadingAtMs = nowMs;
  }

  /** Whether the leases have gone unread (no successful reading) for longer than the grace. */
  leasesUnreadable(nowMs: number): boolean {
    return nowMs - (this.lastReadingAtMs ?? this.startedAtMs) > this.graceMs;
  }

  verdict(shard: number, nowMs: number): ShardVerdict {
    if (this.leasesUnreadable(nowMs)) return 'bus_unreachable';
    const heldAtMs = this.lastHeldAtMs[shard];
    if (heldAtMs === undefined) throw new RangeError(`not a shard of ${this.shardCount}: ${shard}`);
    return nowMs - heldAtMs <= this.graceMs ? 'served' : 'no_owner';
  }

  summary(nowMs: number): CoverageSummary {
    const lastReadingAgoMs = this.lastReadingAtMs === null ? null : Math.max(0, nowMs - this.lastReadingAtMs);
    if (this.leasesUnreadable(nowMs)) return { verdict: 'bus_unreachable', unservedShards: [], shardCount: this.shardCount, lastReadingAgoMs };
    const unservedShards: number[] = [];
    for (let shard = 0; shard < this.shardCount; shard += 1) {
      if (nowMs - (this.lastHeldAtMs[shard] ?? Number.NEGATIVE_INFINITY) > this.graceMs) unservedShards.push(shard);
    }
    return { verdict: unservedShards.length === 0 ? 'served' : 'no_owner', unservedShards, shardCount: this.shardCount, lastReadingAgoMs };
  }
}
