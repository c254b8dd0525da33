// The upgrade to shard groups: a shard's command stream before it was `<prefix>cmd:{<shard>}` (one
// Redis Cluster slot per shard); now it is `<prefix>cmd:{<group tag>}:<shard>` (src/bus/shards.ts).
// Entries still in an old stream when the new release starts — written by an edge after the last
// old worker stopped, or left pending by a worker that crashed — must not be stranded. So whenever
// a worker takes a shard it looks at the shard's old stream (one XLEN; an absent stream is 0), and
// when that holds entries, the shard's recovery drains it first: every pending entry (whoever
// holds it: the previous owner is gone or fenced once the lease is ours), then every entry never
// delivered, applied and acknowledged like any other, until none is left. Then the old stream is
// not read again (it is left in place, acknowledged, for the operator to delete or for trimming).
// Old entries come first: they were written before anything in the new stream.
import type { Bus, BusEntry } from '../bus/bus.ts';
import { legacyCommandStreamKey } from '../bus/shards.ts';
import type { LogLevel } from './envelope.ts';

export interface LegacyStreamDrainOptions {
  readonly bus: Bus;
  readonly group: string;
  readonly workerId: string;
  readonly keyPrefix: string;
  readonly log: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
}

export class LegacyStreamDrain {
  /** Owned shards whose old stream may still hold entries for us. */
  private readonly draining = new Set<number>();

  constructor(private readonly options: LegacyStreamDrainOptions) {}

  /** On taking a shard (before its recovery): does its old stream hold anything? */
  async noteAcquired(shard: number): Promise<void> {
    const { bus, group, keyPrefix } = this.options;
    const stream = legacyCommandStreamKey(keyPrefix, shard);
    if ((await bus.length(stream)) === 0) {
      this.draining.delete(shard);
      return;
    }
    // The stream exists, so this only adds the group if no old worker ever made it.
    await bus.ensureGroup(stream, group);
    this.draining.add(shard);
    this.options.log('info', 'shard has a command stream from before shard groups; draining it', { shard, stream });
  }

  forget(shard: number): void {
    this.draining.delete(shard);
  }

  /**
   * The next entries of the shard's old stream: pending ones first (claimed to us), then new ones
   * (never blocking). Empty once the stream is drained, and from then on.
   */
  async nextEntries(shard: number, count: number): Promise<BusEntry[]> {
    if (!this.draining.has(shard)) return [];
    const { bus, group, workerId, keyPrefix } = this.options;
    const stream = legacyCommandStreamKey(keyPrefix, shard);
    for (;;) {
      const pending = await bus.claimStale(stream, group, workerId, { minIdleMs: 0, count });
      if (pending.entries.length > 0) return [...pending.entries];
      // Only entries trimmed away (now dropped from the pending list): look again.
      if (pending.deletedIds.length === 0) break;
      this.options.log('warn', 'pending entries of an old command stream were trimmed before delivery', { shard, stream, entries: pending.deletedIds.length });
    }
    const fresh = await bus.read(group, workerId, [stream], { count, blockMs: 0 });
    if (fresh.length > 0) return fresh;
    this.draining.delete(shard);
    this.options.log('info', 'old command stream drained', { shard, stream });
    return [];
  }
}
