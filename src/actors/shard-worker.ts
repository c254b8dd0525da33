// A shard worker: claims shard leases (its fair share of the live workers), consumes the owned
// shards' command streams through one consumer group, feeds batches to the actor runtime, fires
// actor timers, and relays commands that actors sent to each other (from the outbox) onto streams.
//
// Ownership is what makes "one writer per key" true: a worker works on a shard only while it holds
// the shard's lease, and every snapshot write carries the lease's fencing token, so a worker that
// lost its lease (paused, partitioned) can no longer write even if it still runs.
import type { Bus, BusEntry } from '../bus/bus.ts';
import type { Leases } from '../bus/leases.ts';
import { commandStreamKey, shardLeaseName, shardOfCommandStream } from '../bus/shards.ts';
import type { OutboxRowWrite } from './actor-store.ts';
import { decodeEnvelope } from './codec.ts';
import type { CommandEnvelope, LogLevel } from './envelope.ts';
import { outboxTopicCommands, type ActorRuntime } from './runtime.ts';

export interface WorkerStore {
  /** Actors of `shard` with a pending timer. */
  listTimers(shard: number): Promise<Array<{ actorId: string; dueAtMs: number }>>;
  /** Command rows not yet relayed (left by a worker that crashed between commit and append). */
  pendingCommandRows(limit: number): Promise<OutboxRowWrite[]>;
  markOutboxDone(ids: readonly string[]): Promise<void>;
  /** Refuse, from now on, store writes under a lower token for `shard` (the previous owner's). */
  raiseFence(shard: number, token: number): Promise<'ok' | 'fenced'>;
  /** Publishes this worker's health for the admin service (actors in memory, memory, shards). */
  reportWorkerStats(stats: WorkerStats): Promise<void>;
}

export interface WorkerStats {
  readonly workerId: string;
  readonly ownedShards: readonly number[];
  readonly actorsInMemory: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly reportedAtMs: number;
}

export interface ShardWorkerOptions {
  readonly bus: Bus;
  readonly leases: Leases;
  readonly store: WorkerStore;
  readonly runtime: ActorRuntime;
  readonly workerId: string;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly group: string;
  readonly leaseTtlMs?: number;
  readonly leaseRenewEveryMs?: number;
  readonly readBlockMs?: number;
  /** Actors unused this long leave memory (default 10 minutes). */
  readonly actorIdleMs?: number;
  /**
   * An entry of an owned shard still unacknowledged this long is stuck (its read's reply was lost
   * with a dropped connection, say) and goes back through recovery; 10 s by default. Checked every
   * lease round.
   */
  readonly stuckPendingMs?: number;
  readonly clock: { nowMs(): number };
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
}

const memberLeasePrefix = 'member:';
const timerDelayMsMax = 2 ** 31 - 1;

export class ShardWorker {
  private readonly owned = new Map<number, number>(); // shard → fencing token
  private readonly needsRecovery = new Set<number>();
  private readonly timers = new Map<string, { dueAtMs: number; handle: NodeJS.Timeout }>();
  private running = false;
  private leaseLoop: Promise<void> | null = null;
  private consumeLoop: Promise<void> | null = null;
  private readAbort = new AbortController();
  private memberToken: number | null = null;
  private readonly leaseTtlMs: number;
  private readonly renewEveryMs: number;
  private readonly readBlockMs: number;
  private readonly wakers = new Set<() => void>();

  constructor(private readonly options: ShardWorkerOptions) {
    this.leaseTtlMs = options.leaseTtlMs ?? 10_000;
    this.renewEveryMs = options.leaseRenewEveryMs ?? Math.floor(this.leaseTtlMs / 3);
    this.readBlockMs = options.readBlockMs ?? 1_000;
  }

  /** Shards owned now, with their fencing tokens (for the runtime and the admin service). */
  fenceToken(shard: number): number | null {
    return this.owned.get(shard) ?? null;
  }

  ownedShards(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  async start(): Promise<void> {
    this.running = true;
    await this.rebalance();
    await this.relayPendingCommands();
    this.leaseLoop = this.runLeaseLoop();
    this.consumeLoop = this.runConsumeLoop();
  }

  /** Graceful stop: finish the batch in hand, release every lease so others take over at once. */
  async stop(): Promise<void> {
    this.running = false;
    this.readAbort.abort();
    this.wakeAll();
    await this.consumeLoop;
    await this.leaseLoop;
    for (const timer of this.timers.values()) clearTimeout(timer.handle);
    this.timers.clear();
    await Promise.all(
      [...this.owned].map(([shard, token]) => this.options.leases.release(shardLeaseName(shard), this.options.workerId, token)),
    );
    this.owned.clear();
    if (this.memberToken !== null) {
      await this.options.leases.release(this.memberLeaseName(), this.options.workerId, this.memberToken);
    }
  }

  /** Schedules (or reschedules) an actor's timer; the command goes through the stream like any other. */
  scheduleTimer(actorId: string, dueAtMs: number | null): void {
    const existing = this.timers.get(actorId);
    if (existing && existing.dueAtMs === dueAtMs) return;
    if (existing) clearTimeout(existing.handle);
    this.timers.delete(actorId);
    if (dueAtMs === null) return;
    const delayMs = Math.min(Math.max(0, dueAtMs - this.options.clock.nowMs()), timerDelayMsMax);
    const handle = setTimeout(() => {
      this.timers.delete(actorId);
      this.options.runtime.send(this.options.runtime.timerCommand(actorId, dueAtMs)).catch((error: unknown) => {
        this.log('error', 'could not send a timer command; retrying', { actorId, error: String(error) });
        this.scheduleTimer(actorId, dueAtMs);
      });
    }, delayMs);
    handle.unref();
    this.timers.set(actorId, { dueAtMs, handle });
  }

  /** Relays commands that actors sent to each other, then marks their outbox rows done. */
  async relayCommands(rows: readonly OutboxRowWrite[]): Promise<void> {
    const commandRows = rows.filter((row) => row.topic === outboxTopicCommands);
    if (commandRows.length === 0) return;
    await Promise.all(commandRows.map((row) => this.options.runtime.send(row.payload as unknown as CommandEnvelope)));
    await this.options.store.markOutboxDone(commandRows.map((row) => row.id));
  }

  private memberLeaseName(): string {
    return `${memberLeasePrefix}${this.options.workerId}`;
  }

  private async runLeaseLoop(): Promise<void> {
    while (this.running) {
      await this.sleep(this.renewEveryMs);
      if (!this.running) break;
      try {
        await this.rebalance();
        await this.relayPendingCommands();
        await this.sweepStuckPending();
        this.options.runtime.passivateIdle(this.options.actorIdleMs ?? 600_000);
        const memory = process.memoryUsage();
        await this.options.store.reportWorkerStats({
          workerId: this.options.workerId,
          ownedShards: this.ownedShards(),
          actorsInMemory: this.options.runtime.actorCount(),
          rssBytes: memory.rss,
          heapUsedBytes: memory.heapUsed,
          reportedAtMs: this.options.clock.nowMs(),
        });
      } catch (error) {
        this.log('error', 'lease round failed', { error: String(error) });
      }
    }
  }

  /** Renew what we own, drop what we lost, take free shards up to our fair share, give back extras. */
  private async rebalance(): Promise<void> {
    const { leases, workerId } = this.options;
    if (this.memberToken === null || !(await leases.renew(this.memberLeaseName(), workerId, this.memberToken, this.leaseTtlMs))) {
      this.memberToken = (await leases.acquire(this.memberLeaseName(), workerId, this.leaseTtlMs))?.token ?? null;
    }
    for (const [shard, token] of [...this.owned]) {
      if (!(await leases.renew(shardLeaseName(shard), workerId, token, this.leaseTtlMs))) this.loseShard(shard);
    }
    const members = Math.max(1, (await leases.listAll(memberLeasePrefix)).length);
    const fairShare = Math.ceil(this.options.shardCount / members);
    if (this.owned.size > fairShare) {
      for (const shard of this.ownedShards().slice(fairShare)) {
        const token = this.owned.get(shard);
        this.loseShard(shard);
        if (token !== undefined) await leases.release(shardLeaseName(shard), workerId, token);
      }
      return;
    }
    for (let shard = 0; shard < this.options.shardCount && this.owned.size < fairShare; shard += 1) {
      if (this.owned.has(shard)) continue;
      if ((await leases.owner(shardLeaseName(shard))) !== null) continue;
      const grant = await leases.acquire(shardLeaseName(shard), workerId, this.leaseTtlMs);
      if (grant === null) continue;
      // Fence the previous owner out before we read anything of the shard: a write it still has
      // in flight is refused from here on.
      if ((await this.options.store.raiseFence(shard, grant.token)) !== 'ok') {
        await leases.release(shardLeaseName(shard), workerId, grant.token);
        continue;
      }
      await this.options.bus.ensureGroup(commandStreamKey(this.options.keyPrefix, shard), this.options.group);
      this.owned.set(shard, grant.token);
      this.needsRecovery.add(shard);
      this.log('debug', 'shard acquired', { shard, token: grant.token });
      this.wakeAll();
    }
  }

  /**
   * A consumer's `>` reads never return its own unacknowledged entries again; only recovery does.
   * Between batches nothing should be pending on an owned shard, so an entry idle for
   * `stuckPendingMs` was lost on the way (a read served by Redis whose reply never arrived): take
   * it (XAUTOCLAIM, to ourselves) and send the shard through recovery. An entry of a batch still
   * being applied can be taken too; applying it again is a no-op (commands are deduplicated).
   */
  private async sweepStuckPending(): Promise<void> {
    const { bus, group, workerId, keyPrefix } = this.options;
    const minIdleMs = this.options.stuckPendingMs ?? 10_000;
    await Promise.all(
      this.ownedShards().map(async (shard) => {
        if (this.needsRecovery.has(shard)) return;
        const stuck = await bus.claimStale(commandStreamKey(keyPrefix, shard), group, workerId, { minIdleMs, count: 1 });
        if (stuck.entries.length === 0 && stuck.deletedIds.length === 0) return;
        if (!this.owned.has(shard)) return;
        this.log('warn', 'unacknowledged entries found on an owned shard; recovering them', { shard });
        this.needsRecovery.add(shard);
        this.wakeAll();
      }),
    );
  }

  private loseShard(shard: number): void {
    this.owned.delete(shard);
    this.needsRecovery.delete(shard);
    this.options.runtime.dropShard(shard);
    for (const [actorId, timer] of this.timers) {
      if (actorId.length > 0 && this.shardOfActor(actorId) === shard) {
        clearTimeout(timer.handle);
        this.timers.delete(actorId);
      }
    }
    this.log('debug', 'shard released', { shard });
  }

  private shardOfActor(actorId: string): number | null {
    const slash = actorId.indexOf('/');
    if (slash < 0) return null;
    const stream = this.options.runtime.streamFor(actorId.slice(0, slash), actorId.slice(slash + 1));
    return shardOfCommandStream(this.options.keyPrefix, stream);
  }

  private async runConsumeLoop(): Promise<void> {
    while (this.running) {
      try {
        const entries = await this.nextEntries();
        if (entries.length === 0) continue;
        try {
          const result = await this.options.runtime.applyBatch(entries);
          // Entries of a refused write stay in our pending list; `>` reads never return them again,
          // so the shard goes back through recovery, which re-reads its pending entries first.
          if (result.retried > 0) this.recoverShardsOf(entries);
        } catch (error) {
          this.recoverShardsOf(entries);
          throw error;
        }
      } catch (error) {
        this.log('error', 'batch failed; entries stay pending and will be retried', { error: String(error) });
        await this.sleep(100);
      }
    }
  }

  private recoverShardsOf(entries: readonly BusEntry[]): void {
    for (const entry of entries) {
      const shard = shardOfCommandStream(this.options.keyPrefix, entry.stream);
      if (shard !== null && this.owned.has(shard)) this.needsRecovery.add(shard);
    }
  }

  /** Entries to apply next: a newly owned shard's leftovers first, then new entries. */
  private async nextEntries(): Promise<BusEntry[]> {
    const { bus, group, workerId, keyPrefix } = this.options;
    const batchSize = this.options.runtime.batchSize;
    for (const shard of [...this.needsRecovery]) {
      const stream = commandStreamKey(keyPrefix, shard);
      // The lease guarantees the previous owner is gone or fenced: take all its pending entries.
      const claimed = await bus.claimStale(stream, group, workerId, { minIdleMs: 0, count: batchSize });
      const own = await bus.readPending(stream, group, workerId, { count: batchSize });
      const entries = [...own.entries, ...claimed.entries];
      if (entries.length > 0) return entries;
      this.needsRecovery.delete(shard);
      for (const timer of await this.options.store.listTimers(shard)) this.scheduleTimer(timer.actorId, timer.dueAtMs);
    }
    const streams = this.ownedShards().map((shard) => commandStreamKey(keyPrefix, shard));
    if (streams.length === 0) {
      await this.sleep(this.renewEveryMs);
      return [];
    }
    if (this.readAbort.signal.aborted) this.readAbort = new AbortController();
    return bus.read(group, workerId, streams, {
      count: batchSize,
      blockMs: this.readBlockMs,
      signal: this.readAbort.signal,
    });
  }

  private async relayPendingCommands(): Promise<void> {
    // Re-sending a row another worker is relaying right now is harmless: receivers dedupe by
    // commandId. Malformed rows cannot be relayed; they are marked done so they do not block.
    const rows = await this.options.store.pendingCommandRows(1_000);
    const malformed = rows.filter((row) => decodeEnvelope(JSON.stringify(row.payload)) === null);
    if (malformed.length > 0) {
      this.log('error', 'dropping malformed command rows from the outbox', { count: malformed.length });
      await this.options.store.markOutboxDone(malformed.map((row) => row.id));
    }
    await this.relayCommands(rows.filter((row) => !malformed.includes(row)));
  }

  private wakeAll(): void {
    for (const wake of [...this.wakers]) wake();
  }

  /** Sleeps up to `ms`; `wakeAll` (stop, a new shard) ends every sleep at once. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(handle);
        this.wakers.delete(wake);
        resolve();
      };
      const handle = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(level, message, { workerId: this.options.workerId, ...fields });
  }
}
