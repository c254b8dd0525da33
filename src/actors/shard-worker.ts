// A shard worker: claims shard leases (its fair share of the live workers), consumes the owned
// shards' command streams through one consumer group, feeds batches to the actor runtime, fires
// actor timers, and relays commands that actors sent to each other (from the outbox) onto streams
// — or, when the receiving shard is its own, applies them in a batch of its own at once (local
// delivery: no stream round trip; the outbox row stays until they are durable, docs/actors.md).
//
// Ownership is what makes "one writer per key" true: a worker works on a shard only while it holds
// the shard's lease, and every snapshot write carries the lease's fencing token, so a worker that
// lost its lease (paused, partitioned) can no longer write even if it still runs.
import type { Bus, BusEntry } from '../bus/bus.ts';
import type { Leases } from '../bus/leases.ts';
import { commandStreamKey, fnv1a32, shardLeaseName, shardLeasePrefix, shardOfCommandStream } from '../bus/shards.ts';
import { shardGroupCount } from '../bus/shard-groups.ts';
import { RetryLog } from '../bus/outage-log.ts';
import type { OutboxRowWrite } from './actor-store.ts';
import type { WorkerStore } from './worker-store.ts';
import type { LogLevel } from './envelope.ts';
import { LocalBatches } from './local-delivery.ts';
import { ActorTimers } from './actor-timers.ts';
import type { ActorRuntime } from './runtime.ts';
import { CommandRelay } from './command-relay.ts';
import { LegacyStreamDrain } from './legacy-streams.ts';
import { shardsToGiveBack, shardsToTake } from './shard-share.ts';
import { batchesOfCommands } from './codec.ts';
import { LoopHealth, loopCheck, type HealthCheck } from '../lifecycle/health.ts';

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
  /** How often `Leases.changes` is read between rounds (default 200 ms: five cheap reads a second). */
  readonly leaseChangesPollMs?: number;
  readonly readBlockMs?: number;
  /** Actors unused this long leave memory (default 10 minutes). */
  readonly actorIdleMs?: number;
  /**
   * An entry of an owned shard still unacknowledged this long is stuck (its read's reply was lost
   * with a dropped connection, say) and goes back through recovery; 10 s by default. Checked every
   * lease round.
   */
  readonly stuckPendingMs?: number;
  /**
   * Batches applied at once: the next batch is read and applied while the previous one's durable
   * write is in flight (the runtime keeps each actor's commands in order across them). 1 applies
   * one batch at a time. Default 2: the store syncs one write transaction at a time, so while one
   * batch syncs, a second one's writes gather for the next sync; a third could not be synced any
   * sooner and would only split the reads into smaller batches (more per-batch work: reads, syncs,
   * Redis round trips), which costs more CPU per command than it saves when the CPU is busy.
   */
  readonly batchesInFlightMax?: number;
  readonly clock: { nowMs(): number };
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /**
   * A timer the actor refused (`retryTimer`) fires again no sooner than this after the refusal,
   * doubling per refusal of the same due time up to `timerRetryDelayMsMax` (defaults 1 s, 60 s).
   */
  readonly timerRetryDelayMsMin?: number;
  readonly timerRetryDelayMsMax?: number;
  /**
   * While reads keep failing (Redis away), the failure is logged at once and then at most once
   * per this many milliseconds, with a count (default 10 s): the retries every 100 ms are not.
   */
  readonly retryLogIntervalMs?: number;
}

const memberLeasePrefix = 'member:';
const batchesInFlightMaxDefault = 2;
const batchesInFlightLimit = 64;
/** Pause after a batch in which applying threw, so a persistent failure does not spin. */
const failedBatchPauseMs = 100;

export class ShardWorker {
  private readonly owned = new Map<number, number>(); // shard → fencing token
  private readonly needsRecovery = new Set<number>();
  private readonly timers: ActorTimers;
  private running = false;
  private leaseLoop: Promise<void> | null = null;
  private consumeLoop: Promise<void> | null = null;
  private readAbort = new AbortController();
  /** The consume loop's read of new entries, while it is in progress. */
  private currentRead: Promise<BusEntry[]> | null = null;
  private memberToken: number | null = null;
  private readonly leaseTtlMs: number;
  /** The lease loop's rounds: renewals, rebalancing, relays and sweeps (the health listener's check). */
  private readonly leaseRounds: LoopHealth;
  /**
   * The consume loop's reads (a blocked read returns every `readBlockMs` even when idle). A loop
   * waiting on batches that never settle makes no reads: that is what the check catches.
   */
  private readonly readRounds: LoopHealth;
  /** The consume loop's failed reads, logged with a back-off (src/bus/outage-log.ts). */
  private readonly readFailures: RetryLog;
  private readonly renewEveryMs: number;
  private readonly changesPollMs: number;
  /** `Leases.changes` as last read; a different value starts a round early. */
  private lastLeaseChanges: number | null = null;
  private readonly readBlockMs: number;
  private readonly wakers = new Set<() => void>();
  /** Batches being applied; each settles (never rejects) with the entries it left pending. */
  private readonly inFlight = new Set<Promise<readonly BusEntry[]>>();
  private readonly batchesInFlightMax: number;
  /** Shards acquired since their last recovery: their in-memory actors (if any) are from before. */
  private readonly acquiredSinceRecovery = new Set<number>();
  private pauseBeforeNextRead = false;
  private readonly relay: CommandRelay;
  /** Streams of the owned shards from before shard groups, drained on taking a shard. */
  private readonly legacy: LegacyStreamDrain;

  constructor(private readonly options: ShardWorkerOptions) {
    this.leaseTtlMs = options.leaseTtlMs ?? 10_000;
    const log = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => this.log(level, message, fields);
    this.relay = new CommandRelay({
      store: options.store,
      runtime: options.runtime,
      log,
      local: new LocalBatches({
        runtime: options.runtime,
        keyPrefix: options.keyPrefix,
        // Not while stopping; not while any shard recovers (the commands it replays come first,
        // in stream order); not past the limit of batches in flight.
        open: () => this.running && this.needsRecovery.size === 0 && this.inFlight.size < batchesInFlightLimit,
        owns: (shard) => this.owned.has(shard),
        launch: (entries) => this.launch(entries),
      }),
    });
    this.legacy = new LegacyStreamDrain({ bus: options.bus, group: options.group, workerId: options.workerId, keyPrefix: options.keyPrefix, log });
    this.renewEveryMs = options.leaseRenewEveryMs ?? Math.floor(this.leaseTtlMs / 3);
    this.changesPollMs = Math.min(options.leaseChangesPollMs ?? 200, this.renewEveryMs);
    this.leaseRounds = new LoopHealth(this.renewEveryMs);
    this.readBlockMs = options.readBlockMs ?? 1_000;
    this.readRounds = new LoopHealth(this.readBlockMs);
    this.readFailures = new RetryLog({
      log: (level, message, fields) => this.log(level, message, { ...fields }),
      clock: options.clock,
      failedMessage: 'reading commands failed; retrying',
      recoveredMessage: 'reading commands recovered',
      intervalMs: options.retryLogIntervalMs ?? 10_000,
    });
    this.timers = new ActorTimers({
      send: (actorId, dueAtMs, attempt) => options.runtime.send(options.runtime.timerCommand(actorId, dueAtMs, attempt)),
      clock: options.clock,
      log,
      ...(options.timerRetryDelayMsMin !== undefined ? { retryDelayMsMin: options.timerRetryDelayMsMin } : {}),
      ...(options.timerRetryDelayMsMax !== undefined ? { retryDelayMsMax: options.timerRetryDelayMsMax } : {}),
    });
    this.batchesInFlightMax = options.batchesInFlightMax ?? batchesInFlightMaxDefault;
    if (!Number.isInteger(this.batchesInFlightMax) || this.batchesInFlightMax < 1 || this.batchesInFlightMax > batchesInFlightLimit) {
      throw new RangeError(`batchesInFlightMax must be an integer in [1, ${batchesInFlightLimit}]`);
    }
  }

  /**
   * Whether the runtime may apply commands for actors of `shard` as linked steps now
   * (linked-steps.ts): as for local delivery, while running and recovering no shard.
   */
  linksTo(shard: number): boolean {
    return this.running && this.needsRecovery.size === 0 && this.owned.has(shard);
  }

  /** Shards owned now, with their fencing tokens (for the runtime and the admin service). */
  fenceToken(shard: number): number | null {
    return this.owned.get(shard) ?? null;
  }

  /** The health listener's checks: lease rounds (shards held, actors in memory) and command reads. */
  health(): HealthCheck[] {
    return [
      loopCheck('shard-leases', this.leaseRounds, () => ({
        ownedShards: this.ownedShards().length,
        actorsInMemory: this.options.runtime.actorCount(),
      })),
      loopCheck('shard-commands', this.readRounds, () => ({ batchesInFlight: this.inFlight.size })),
    ];
  }

  ownedShards(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  async start(): Promise<void> {
    this.running = true;
    // Read before the first round lists the leases: a change after that listing (shards given back
    // because we joined, a worker joining just after us) starts a round at our first poll.
    this.lastLeaseChanges = await this.options.leases.changes().catch(() => null);
    await this.rebalance();
    await this.relay.relayPending();
    this.leaseLoop = this.runLeaseLoop();
    this.consumeLoop = this.runConsumeLoop();
  }

  /**
   * Graceful stop: finish every batch in flight (replies sent, entries acknowledged), then release
   * every lease so others take over at once.
   */
  async stop(): Promise<void> {
    this.running = false;
    this.readAbort.abort();
    this.wakeAll();
    await this.consumeLoop;
    await this.settled();
    await this.leaseLoop;
    // Not required (the sweep would relay unmarked rows again), but it saves the next owner that.
    await this.relay.settled();
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
    this.timers.schedule(actorId, dueAtMs);
  }

  /** The actor refused its timer and still wants that due time: armed again (actor-timers.ts). */
  retryTimer(actorId: string, dueAtMs: number): void {
    this.timers.retry(actorId, dueAtMs);
  }

  /** Relays commands that actors sent to each other, then marks their outbox rows done. */
  relayCommands(rows: readonly OutboxRowWrite[]): Promise<void> {
    return this.relay.relay(rows);
  }

  private memberLeaseName(): string {
    return `${memberLeasePrefix}${this.options.workerId}`;
  }

  /**
   * Waits for the next lease round: a whole renewal period, or less when a lease was taken or given
   * up meanwhile (`Leases.changes`, read every `changesPollMs`). A joining worker, one leaving
   * gracefully, and shards given back above a fair share are then acted on within a poll, not a
   * round: a shard passes from its old owner to its new one in a fraction of a second instead of
   * waiting up to a third of the lease TTL unowned (test/integration/scaling.test.ts). The reading
   * compared with is taken before the round after it lists the leases (start() takes the first): a
   * first reading at the first poll hid what changed since start-up (shard-handover.test.ts).
   */
  private async untilNextRound(): Promise<void> {
    const deadlineMs = Date.now() + this.renewEveryMs;
    for (;;) {
      const leftMs = deadlineMs - Date.now();
      if (leftMs <= 0 || !this.running) return;
      await this.sleep(Math.min(leftMs, this.changesPollMs));
      if (!this.running) return;
      // An unreadable counter only means the full round: the round itself reports the outage.
      const changes = await this.options.leases.changes().catch(() => null);
      if (changes === null) continue;
      // No earlier reading (the counter was unreadable at start): something may have been missed.
      const changed = changes !== this.lastLeaseChanges;
      this.lastLeaseChanges = changes;
      if (changed) return;
    }
  }

  private async runLeaseLoop(): Promise<void> {
    while (this.running) {
      await this.untilNextRound();
      if (!this.running) break;
      try {
        await this.rebalance();
        await this.relay.relayPending();
        await this.sweepStuckPending();
        this.options.runtime.passivateIdle(this.options.actorIdleMs ?? 600_000);
        const memory = process.memoryUsage();
        await this.options.store.reportWorkerStats({
          workerId: this.options.workerId,
          ownedShards: this.ownedShards(),
          actorsInMemory: this.options.runtime.actorCount(),
          actorBytesInMemory: this.options.runtime.actorBytes().estimated,
          rssBytes: memory.rss,
          heapUsedBytes: memory.heapUsed,
          reportedAtMs: this.options.clock.nowMs(),
        });
        this.leaseRounds.succeeded();
      } catch (error) {
        this.leaseRounds.failed();
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
    // Which shards: whole shard groups where the share allows (shard-share.ts), so that this
    // worker's reads touch as few Redis Cluster slots as they can.
    if (this.owned.size > fairShare) {
      const extras = shardsToGiveBack(this.owned.keys(), this.owned.size - fairShare).map((shard) => [shard, this.owned.get(shard)] as const);
      for (const [shard] of extras) this.loseShard(shard);
      await this.readsEnded();
      for (const [shard, token] of extras) {
        if (token !== undefined) await leases.release(shardLeaseName(shard), workerId, token);
      }
      return;
    }
    if (this.owned.size === fairShare) return;
    const held = new Set((await leases.listAll(shardLeasePrefix)).map((holder) => holder.name));
    const free = Array.from({ length: this.options.shardCount }, (_, shard) => shard).filter((shard) => !held.has(shardLeaseName(shard)));
    const startGroup = fnv1a32(workerId) % shardGroupCount(this.options.shardCount);
    for (const shard of shardsToTake(this.owned.keys(), free, fairShare - this.owned.size, startGroup)) {
      if (this.owned.size >= fairShare) break;
      const grant = await leases.acquire(shardLeaseName(shard), workerId, this.leaseTtlMs);
      if (grant === null) continue;
      // Fence the previous owner out before we read anything of the shard: a write it still has
      // in flight is refused from here on.
      if ((await this.options.store.raiseFence(shard, grant.token)) !== 'ok') {
        await leases.release(shardLeaseName(shard), workerId, grant.token);
        continue;
      }
      await this.options.bus.ensureGroup(commandStreamKey(this.options.keyPrefix, shard), this.options.group);
      await this.legacy.noteAcquired(shard);
      this.owned.set(shard, grant.token);
      this.acquiredSinceRecovery.add(shard);
      this.needsRecovery.add(shard);
      this.log('debug', 'shard acquired', { shard, token: grant.token });
      this.wakeAll();
    }
  }

  /**
   * A consumer's `>` reads never return its own unacknowledged entries again; only recovery does.
   * Outside the batches in flight nothing should be pending on an owned shard, so an entry idle
   * for `stuckPendingMs` was lost on the way (a read served by Redis whose reply never arrived):
   * take it (XAUTOCLAIM, to ourselves) and send the shard through recovery. An entry of a batch
   * still being applied can be taken too: recovery waits for that batch to settle, and applying
   * it again is a no-op (commands are deduplicated).
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
    this.acquiredSinceRecovery.delete(shard);
    this.legacy.forget(shard);
    // Nothing more of the shard is applied from now on (its token is gone), but batches in flight
    // may still be writing its actors: forget them once those have settled. If the shard comes
    // back meanwhile, its recovery drops them instead (also after everything in flight settled).
    const inFlight = [...this.inFlight];
    if (inFlight.length === 0) this.options.runtime.dropShard(shard);
    else {
      void Promise.all(inFlight).then(() => {
        if (!this.owned.has(shard)) this.options.runtime.dropShard(shard);
      });
    }
    this.timers.forget((actorId) => this.shardOfActor(actorId) === shard);
    this.log('debug', 'shard released', { shard });
  }

  private shardOfActor(actorId: string): number | null {
    const slash = actorId.indexOf('/');
    if (slash < 0) return null;
    const stream = this.options.runtime.streamFor(actorId.slice(0, slash), actorId.slice(slash + 1));
    return shardOfCommandStream(this.options.keyPrefix, stream);
  }

  /**
   * Up to `batchesInFlightMax` batches are applied at once; a new batch is read as soon as one of
   * them settles (or at once while there is room). Recovery (a newly acquired shard, a refused
   * write, a stuck entry) waits until nothing is in flight, then re-reads pending entries one
   * batch at a time: a pending entry is never re-read while a batch holding it is being applied.
   */
  private async runConsumeLoop(): Promise<void> {
    while (this.running) {
      try {
        if (this.pauseBeforeNextRead) {
          this.pauseBeforeNextRead = false;
          await this.sleep(failedBatchPauseMs);
          continue;
        }
        if (this.needsRecovery.size > 0) {
          await this.settled();
          const entries = await this.nextRecoveryEntries();
          this.readSucceeded();
          // One batch at a time, in stream order; one refused again (the shard is being taken over,
          // say) ends the round: do not spin.
          for (const batch of batchesOfCommands(entries, this.options.runtime.batchSize)) {
            if ((await this.launch(batch)).length > 0) {
              this.pauseBeforeNextRead = true;
              break;
            }
          }
          continue;
        }
        if (this.inFlight.size >= this.batchesInFlightMax) {
          await Promise.race(this.inFlight);
          continue;
        }
        const entries = await this.nextNewEntries();
        this.readSucceeded();
        // Batched entries carry up to 64 commands each: a batch is bounded by commands, not entries.
        for (const batch of batchesOfCommands(entries, this.options.runtime.batchSize)) {
          while (this.inFlight.size >= this.batchesInFlightMax) await Promise.race(this.inFlight);
          void this.launch(batch);
        }
      } catch (error) {
        this.readRounds.failed();
        this.readFailures.failed({ error: String(error) });
        await this.sleep(failedBatchPauseMs);
      }
    }
  }

  private readSucceeded(): void {
    this.readRounds.succeeded();
    this.readFailures.succeeded();
  }

  /**
   * Starts applying a batch. The promise settles (never rejects) when its outcome is known, with
   * the entries it left pending.
   */
  private launch(entries: readonly BusEntry[]): Promise<readonly BusEntry[]> {
    const batch = this.applyEntries(entries).finally(() => {
      this.inFlight.delete(batch);
    });
    this.inFlight.add(batch);
    return batch;
  }

  private async applyEntries(entries: readonly BusEntry[]): Promise<readonly BusEntry[]> {
    try {
      const result = await this.options.runtime.applyBatch(entries);
      // Entries left pending are in our pending list, where `>` reads never look again: their
      // shards go through recovery, which re-reads pending entries in stream order. A local
      // entry's shard too: recovery unblocks its actors, and the relay sends its commands
      // through the stream, to be read after the ones recovery replays.
      if (result.pending.length > 0) this.recoverShardsOf(result.pending);
      if (result.failed > 0) this.pauseBeforeNextRead = true;
      return result.pending;
    } catch (error) {
      this.recoverShardsOf(entries);
      this.pauseBeforeNextRead = true;
      this.log('error', 'batch failed; entries stay pending and will be retried', { error: String(error) });
      return entries;
    }
  }

  /** Resolves once every batch in flight (including any started meanwhile) has settled. */
  private async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /**
   * Recovery starts when the loop next looks: at once under load, or when a blocked read returns
   * (`readBlockMs` at most). The read is not aborted for it: an aborted read may have been served
   * already, and its entries would sit in our pending list until the stuck-entry sweep.
   */
  private recoverShardsOf(entries: readonly BusEntry[]): void {
    for (const entry of entries) {
      const shard = shardOfCommandStream(this.options.keyPrefix, entry.stream);
      if (shard !== null && this.owned.has(shard)) this.needsRecovery.add(shard);
    }
  }

  /**
   * A recovering shard's leftovers: the previous owner's pending entries and our own, oldest first.
   * Called with nothing in flight. A shard with none left is done: its timers are re-armed.
   */
  private async nextRecoveryEntries(): Promise<BusEntry[]> {
    const { bus, group, workerId, keyPrefix } = this.options;
    const batchSize = this.options.runtime.batchSize;
    for (const shard of [...this.needsRecovery]) {
      if (this.acquiredSinceRecovery.delete(shard)) {
        this.options.runtime.dropShard(shard);
        // Before any of the shard's commands: a quarantined actor's commands keep their order.
        await this.options.runtime.restoreQuarantine(shard);
      }
      // Actors blocked by a refused write apply again: their pending commands come first.
      this.options.runtime.unblockShard(shard);
      // Entries of its stream from before shard groups come first (legacy-streams.ts).
      const old = await this.legacy.nextEntries(shard, batchSize);
      if (old.length > 0) return old;
      const stream = commandStreamKey(keyPrefix, shard);
      // The lease guarantees the previous owner is gone or fenced: take all its pending entries.
      const claimed = await bus.claimStale(stream, group, workerId, { minIdleMs: 0, count: batchSize });
      const own = await bus.readPending(stream, group, workerId, { count: batchSize });
      const entries = [...own.entries, ...claimed.entries];
      if (entries.length > 0) return entries;
      this.needsRecovery.delete(shard);
      for (const timer of await this.options.store.listTimers(shard)) this.scheduleTimer(timer.actorId, timer.dueAtMs);
    }
    return [];
  }

  /** New entries of the owned shards (blocks up to `readBlockMs` when there are none). */
  private async nextNewEntries(): Promise<BusEntry[]> {
    const { bus, group, workerId, keyPrefix } = this.options;
    const streams = this.ownedShards().map((shard) => commandStreamKey(keyPrefix, shard));
    if (streams.length === 0) {
      await this.sleep(this.renewEveryMs);
      return [];
    }
    if (this.readAbort.signal.aborted) {
      if (!this.running) return [];
      this.readAbort = new AbortController();
    }
    const read = bus.read(group, workerId, streams, {
      count: this.options.runtime.batchSize,
      blockMs: this.readBlockMs,
      signal: this.readAbort.signal,
    });
    this.currentRead = read;
    try {
      return await read;
    } finally {
      if (this.currentRead === read) this.currentRead = null;
    }
  }

  /**
   * Ends the read in progress (it may cover shards just given up) and waits until it has returned.
   * An entry the server handed to that read is then pending on this consumer before the lease is
   * released, so the next owner's recovery claims it at once; released earlier, the entry reached
   * us after the next owner had looked, and waited for the stuck-entry sweep (seconds).
   */
  private async readsEnded(): Promise<void> {
    this.readAbort.abort();
    await this.currentRead?.catch(() => undefined);
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
