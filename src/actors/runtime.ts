// The actor runtime of one shard worker: applies the commands of the shards it owns, one at a time
// per actor, and makes each outcome durable before anything becomes visible.
//
// The life of a batch (docs/actors.md):
//   1. read up to `batchSizeMax` entries from the owned shard streams (own pending first);
//   2. group them by actor, keeping stream order; activate each actor from its snapshot;
//   3. for each command: skip it if its commandId was applied before (replay the stored reply),
//      else `handle` it against the in-memory state;
//   4. write, per actor, ONE versioned snapshot with its applied command ids + replies, outbox rows
//      (effects and commands for other actors) and read models, fenced by the shard lease token;
//      the writes of all the batch's actors go to the store together (one sync per batch);
//   5. only then send replies, hand the outbox to its dispatchers, and ack the stream entries.
// A refused write (stale version or fencing token) drops the actor from memory and leaves the
// entries unacknowledged: they are re-read and re-applied against the reloaded state.
//
// Several batches may be in flight at once (the shard worker overlaps reading and applying the
// next batch with the durable write of the previous one). Each actor has a lane: its work in a
// later batch starts only once its work in every earlier batch has settled, so it sees the state
// the previous write made durable (and dedupes against it). An actor whose write was refused (or
// threw) is blocked: its commands in later batches are not applied but left pending, until the
// worker recovers the shard and re-reads every pending entry in stream order.
//
// An actor's step (its in-memory record, the write its commands make, the rules for a repeated
// command) is built by the pure functions of actor-step.ts.
import type { Bus, BusEntry } from '../bus/bus.ts';
import { headerBatchCount, replyBatches } from '../bus/request-reply.ts';
import { shardOf, commandStreamKey } from '../bus/shards.ts';
import { actorId, type AnyActorBehavior, type CommandEnvelope, type Decoded, type LogLevel, type ReadModelWrite } from './envelope.ts';
import { commandEntries } from './codec.ts';
import { malformedReply, sortArrivals, type ArrivedCommand } from './command-arrival.ts';
import { isLocalEntry } from './local-entry.ts';
import type { ActorStore, BatchCommitResult, OutboxRowWrite } from './actor-store.ts';
import { ActorFault, errorText, releaseWrites, replayCommandKind, replayDeadLettersMax, type DeadLetter, type QuarantineRecord, type QuarantineStore } from './quarantine.ts';
import {
  activeActor, actorBytes, fencesAtRead, rememberCommand, timerCommand, type ActiveActor, type ActorOutcome, type PendingReply, type PreparedStep, type PreparedWrite,
} from './actor-step.ts';
import { actorBytesCap } from './actor-memory.ts';
import { baseAfter, prepareStep, type PrepareContext } from './actor-prepare.ts';
import { linkSteps, withoutLinked } from './linked-steps.ts';
import { namedPartDocs } from './actor-parts.ts';
import { ResidentActors, type ResidentCaps } from './resident-actors.ts';
import { getHeapStatistics } from 'node:v8';

// Kept importable from here: the shard worker, the store adapter and tests name them so.
export { commandsPerRowMax, outboxTopicCommandBatches, outboxTopicCommands, timerCommandId } from './actor-step.ts';

export interface RuntimeClock {
  nowMs(): number;
}

export interface RuntimeOptions {
  readonly bus: Bus;
  readonly store: ActorStore;
  readonly behaviors: ReadonlyArray<AnyActorBehavior>;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly group: string;
  readonly consumer: string;
  readonly clock: RuntimeClock;
  /** Fencing token of the lease under which this worker owns `shard`; null if not owned. */
  readonly fenceToken: (shard: number) => number | null;
  readonly batchSizeMax?: number;
  readonly actorsInMemoryMax?: number;
  /**
   * Estimated bytes the actors in memory may take (src/actors/actor-memory.ts); by default a share
   * of the process's heap limit. Past it, as past `actorsInMemoryMax`, the least recently used go.
   */
  readonly actorBytesInMemoryMax?: number;
  readonly streamLengthMax?: number;
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /** Called after each durable batch with the outbox rows written (the in-process fast path). */
  readonly onOutbox?: (rows: readonly OutboxRowWrite[]) => void;
  /**
   * Test-only fault injection: called right after a write is durable and before anything is
   * replied or acknowledged — the window a crash test must hit to prove dedupe after takeover.
   */
  readonly afterCommit?: (actorId: string) => void;
  /** Called after a durable write that set or cleared an actor's timer. */
  readonly onTimer?: (actorId: string, dueAtMs: number | null) => void;
  /**
   * Where actors that cannot be applied are set aside (src/actors/quarantine.ts). Without it, such
   * an actor's commands stay pending and are retried, as for an infrastructure failure.
   */
  readonly quarantine?: QuarantineStore;
  /**
   * Called when a `timer` command was applied and the actor still wants that same due time (it
   * refused the timer, e.g. a transaction asked to expire before its expiry by its clock). No
   * write changes the timer then, so nothing else would arm it again: the worker re-arms it.
   */
  readonly onTimerRefused?: (actorId: string, dueAtMs: number) => void;
  /**
   * Whether commands for actors of `shard` may be applied as linked steps now (linked-steps.ts):
   * the worker owns the shard and is not recovering any. Without it, nothing is linked.
   */
  readonly linksTo?: (shard: number) => boolean;
}

/** A batch's outcomes per actor of its own, and what its linked steps (linked-steps.ts) left to send. */
interface AppliedActors {
  readonly outcomes: ActorOutcome[];
  readonly linked: { readonly replies: PendingReply[]; readonly outbox: OutboxRowWrite[] };
}

/** Counts are of commands (an entry may hold several); `pending` is of entries. */
export interface BatchResult {
  /** Commands whose outcome is durable (and were replied to). */
  readonly applied: number;
  /** Commands left pending to be retried through recovery: re-read in stream order. */
  readonly retried: number;
  /** Commands left pending because applying them threw. */
  readonly failed: number;
  /**
   * The entries left pending (one of their commands retried or failed), for the worker to recover
   * their shards; every other entry was acknowledged.
   */
  readonly pending: readonly BusEntry[];
}

export class ActorRuntime {
  private readonly behaviors = new Map<string, AnyActorBehavior>();
  /** Commands decoded on arrival (`applyBatch`), handed to `handle` as decoded. */
  private readonly decoded = new WeakMap<CommandEnvelope, Decoded<ArrivedCommand>>();
  private readonly actors = new ResidentActors();
  /**
   * Per actor with work in flight: `tail` settles when its last queued work has settled, and
   * `batch` is the ordinal of the batch that queued it (a linked step never waits on a younger one).
   */
  private readonly lanes = new Map<string, { readonly tail: Promise<void>; readonly batch: number }>();
  /** Counts the batches applied, oldest first (their lanes' `batch`). */
  private batchOrdinal = 0;
  private readonly prepareContext: PrepareContext;
  /** Actors whose write was refused or threw: nothing more is applied until their shard recovers. */
  private readonly blocked = new Set<string>();
  /** Quarantined actors of the owned shards: their commands go to their dead letters. */
  private readonly quarantined = new Map<string, QuarantineRecord>();
  /** Orders this runtime's dead letters within a millisecond. */
  private deadLetterSeq = 0;
  private readonly batchSizeMax: number;
  private readonly residentCaps: ResidentCaps;
  private readonly streamLengthMax: number;

  constructor(private readonly options: RuntimeOptions) {
    for (const behavior of options.behaviors) this.behaviors.set(behavior.type, behavior);
    this.batchSizeMax = options.batchSizeMax ?? 512;
    this.residentCaps = {
      actorsMax: options.actorsInMemoryMax ?? 100_000,
      bytesMax: options.actorBytesInMemoryMax ?? actorBytesCap(getHeapStatistics().heap_size_limit),
    };
    this.streamLengthMax = options.streamLengthMax ?? 1_000_000;
    this.prepareContext = {
      store: options.store,
      nowMs: () => options.clock.nowMs(),
      decodedOnArrival: (command) => this.decoded.get(command),
      log: (level, message, fields) => this.log(level, message, fields),
      ...(options.onTimerRefused ? { onTimerRefused: options.onTimerRefused } : {}),
    };
  }

  get batchSize(): number {
    return this.batchSizeMax;
  }

  /** The stream a command for `actorType/actorKey` goes to. */
  streamFor(actorType: string, actorKey: string): string {
    return commandStreamKey(this.options.keyPrefix, shardOf(actorId(actorType, actorKey), this.options.shardCount));
  }

  /** Appends a command to its actor's shard stream (used by every role that sends commands). */
  async send(envelope: CommandEnvelope): Promise<void> {
    await this.sendAll([envelope]);
  }

  /** Appends commands to their actors' shard streams, those for one stream batched in one entry (`commandEntries`). */
  async sendAll(envelopes: readonly CommandEnvelope[]): Promise<void> {
    const entries = commandEntries(envelopes, (envelope) => this.streamFor(envelope.actorType, envelope.actorKey));
    await Promise.all(entries.map(async ({ stream, payload, count }) => {
      const headers = count > 1 ? { [headerBatchCount]: String(count) } : undefined;
      return this.options.bus.append(stream, payload, { maxLenApprox: this.streamLengthMax, ...(headers === undefined ? {} : { headers }) });
    }));
  }

  /**
   * Forgets every in-memory actor of `shard` (the lease was lost or handed over, or the shard is
   * about to be recovered). The worker calls it only when no batch touching the shard is in flight.
   */
  dropShard(shard: number): void {
    for (const id of [...this.actors.ids()]) {
      if (shardOf(id, this.options.shardCount) === shard) this.actors.delete(id);
    }
    for (const id of this.quarantined.keys()) {
      if (shardOf(id, this.options.shardCount) === shard) this.quarantined.delete(id);
    }
    this.unblockShard(shard);
  }

  /**
   * Learns which actors of `shard` are quarantined (the worker calls it when it takes the shard,
   * before applying any of its commands), so their commands keep going to their dead letters.
   */
  async restoreQuarantine(shard: number): Promise<void> {
    if (this.options.quarantine === undefined) return;
    for (const record of await this.options.quarantine.quarantinedOf(shard, replayDeadLettersMax)) this.quarantined.set(record.actorId, record);
  }

  quarantinedCount(): number {
    return this.quarantined.size;
  }

  /**
   * Lets the blocked actors of `shard` apply commands again: the worker calls it when it starts
   * re-reading the shard's pending entries (their refused commands first, in stream order), with
   * no batch in flight.
   */
  unblockShard(shard: number): void {
    for (const id of this.blocked) {
      if (shardOf(id, this.options.shardCount) === shard) this.blocked.delete(id);
    }
  }

  actorCount(): number {
    return this.actors.size;
  }

  /** Estimated bytes of the actors in memory, and the cap they are held to. */
  actorBytes(): { readonly estimated: number; readonly max: number } {
    return { estimated: this.actors.bytes, max: this.residentCaps.bytesMax };
  }

  /**
   * Applies a batch of stream entries and acknowledges those whose outcome is durable (or that
   * were malformed and can never apply). Entries of an actor whose write was refused, or that is
   * blocked, stay pending. May run while earlier batches are still in flight (see the lanes above);
   * never rejects for one actor's failure, only when replying or acknowledging fails.
   */
  async applyBatch(entries: readonly BusEntry[]): Promise<BatchResult> {
    // An entry may hold several commands (an edge's batch, possibly for several actors): it stays
    // pending while any of its commands does, and is acknowledged once all of them are settled.
    // Redelivered whole, its commands already applied are deduplicated (by their ids).
    const pending = new Set<BusEntry>();
    // Checked against the actor type's command map on arrival: a malformed one never reaches
    // the actor (nor activates it); its asker is answered at once.
    const { byActor, decoded, malformed } = sortArrivals(entries, this.behaviors);
    for (const [command, typed] of decoded) this.decoded.set(command, { ok: true, value: typed });
    const malformedReplies: PendingReply[] = [];
    for (const { entry, command, reason } of malformed) {
      const about = command === null ? {} : { actorType: command.actorType, kind: command.kind.slice(0, 64), commandId: command.commandId };
      this.log('error', 'dropping a malformed command', { stream: entry.stream, entryId: entry.id, ...about, reason });
      if (command?.replyTo) malformedReplies.push({ to: command.replyTo, payload: malformedReply(reason) });
    }

    // The ownership each shard had when the batch was read: its entries are applied under that
    // token only (a shard lost and re-acquired meanwhile goes through recovery instead).
    const fenceAtRead = fencesAtRead(this.options.shardCount, this.options.fenceToken);
    const { outcomes, linked } = await this.applyActors(
      [...byActor].map(([id, items]) => ({ id, fence: fenceAtRead(id), commands: items.map((item) => item.command) })),
    );

    const replies: PendingReply[] = [...malformedReplies, ...linked.replies];
    const outboxRows: OutboxRowWrite[] = [...linked.outbox];
    let applied = 0;
    let retried = 0;
    let failed = 0;
    let index = 0;
    let firstFailure: { actorId: string; error: unknown } | null = null;
    const deadLettered: Array<Promise<void>> = [];
    for (const [id, items] of byActor) {
      const outcome = outcomes[index];
      index += 1;
      if (outcome?.kind === 'quarantined') {
        deadLettered.push(
          this.deadLetter(id, outcome.error, items.map((item) => item.command)).catch((error: unknown) => {
            // Not recorded: the entries stay pending and come back through recovery.
            this.log('error', 'dead-lettering commands of a quarantined actor failed; they stay pending', { actorId: id, error: String(error) });
            for (const item of items) pending.add(item.entry);
          }),
        );
        continue;
      }
      if (outcome === undefined || outcome.kind !== 'applied') {
        if (outcome?.kind === 'failed') {
          failed += items.length;
          firstFailure ??= { actorId: id, error: outcome.error };
        } else retried += items.length;
        for (const item of items) pending.add(item.entry);
        continue;
      }
      applied += items.length;
      for (const reply of outcome.replies) replies.push(reply);
      for (const row of outcome.outbox) outboxRows.push(row);
    }

    await Promise.all(deadLettered);
    if (firstFailure !== null) {
      // One line per batch (a broken store fails every actor): the first failure and how many.
      this.log('error', 'applying commands failed; they stay pending and will be retried', {
        actorId: firstFailure.actorId,
        error: String(firstFailure.error),
        commands: failed,
      });
    }
    // Every entry none of whose commands stays pending: applied, malformed or dead-lettered.
    const toAck = new Map<string, string[]>();
    for (const entry of entries) {
      // A local entry is not in any stream: its outbox row stands for it (local-entry.ts).
      if (pending.has(entry) || isLocalEntry(entry)) continue;
      const ids = toAck.get(entry.stream);
      if (ids === undefined) toAck.set(entry.stream, [entry.id]);
      else ids.push(entry.id);
    }
    // Replies and acks go out together (one pipelined write to Redis, one round trip to wait
    // for): both only follow the durable write, and neither depends on the other. If a reply is
    // lost anyway, its asker times out, as it would if the worker had died after the write.
    const replied = replyBatches(this.options.bus, replies);
    if (outboxRows.length > 0) this.options.onOutbox?.(outboxRows);
    const acked = Promise.all([...toAck].map(([stream, ids]) => this.options.bus.ack(stream, this.options.group, ids)));
    await Promise.all([replied, acked]);
    // Passivation: least recently used actors leave memory; their snapshots stay durable.
    this.actors.passivateLeastRecent(this.residentCaps, (id) => this.lanes.has(id));
    return { applied, retried, failed, pending: [...pending] };
  }

  /**
   * Applies each actor's commands (in its lane: after its work in earlier batches has settled),
   * links the commands they send to actors of this worker (linked-steps.ts), then makes every
   * resulting write durable in ONE store write for the whole batch, then settles the lanes.
   * Outcomes are in the order of `work`; the linked steps' replies and rows come apart.
   */
  private async applyActors(work: ReadonlyArray<{ id: string; fence: number | null; commands: readonly CommandEnvelope[] }>): Promise<AppliedActors> {
    this.batchOrdinal += 1;
    const batch = this.batchOrdinal;
    const settles: Array<() => void> = [];
    const lanes = work.map(({ id }) => this.openLane(id, batch, settles));
    try {
      const steps = await Promise.all(
        work.map(({ id, fence, commands }, index) => {
          const previous = lanes[index];
          return previous === undefined
            ? this.prepareGuarded(id, fence, commands)
            : previous.then(() => this.prepareGuarded(id, fence, commands));
        }),
      );
      const writes = steps.filter((step): step is PreparedWrite => step.kind === 'write');
      const linksTo = this.options.linksTo;
      const linked = linksTo === undefined || writes.length === 0 ? null : await linkSteps({
        mayReceive: (command, id) => this.behaviors.has(command.actorType) && linksTo(shardOf(id, this.options.shardCount)) && !this.blocked.has(id) && !this.quarantined.has(id),
        laneBatch: (id) => this.lanes.get(id)?.batch ?? null,
        joinLane: (id) => this.openLane(id, batch, settles),
        prepare: (id, commands, before) => this.prepareLinked(id, commands, before),
      }, work.map(({ id }, index) => ({ id, step: steps[index] })), batch);
      if (linked !== null && linked.linked.size > 0) {
        // One write per actor: each own step with the steps linked after it merged in, then the other receivers'.
        const all = linked.writes.map((step) => withoutLinked(step, linked.linked));
        let committed: boolean;
        try {
          committed = await this.options.store.commitAllOrNothing(all.map((step) => step.commit));
        } catch (error) {
          // Whether it landed is not known (a commit whose answer was lost): as when a batch's
          // write throws, its actors are blocked and reloaded once their shards recover, the
          // receivers too (they have no entry to retry, so they are blocked by hand).
          for (const step of all) {
            this.actors.delete(step.actor.id);
            this.blocked.add(step.actor.id);
          }
          return { outcomes: steps.map((step) => (step.kind === 'write' ? { kind: 'failed', error } : step.outcome)), linked: { replies: [], outbox: [] } };
        }
        if (committed) {
          const outcomeOf = new Map(all.map((step) => [step.actor.id, this.finishWrite(step, 'ok')]));
          const outcomes = steps.map((step) => (step.kind === 'write' ? (outcomeOf.get(step.actor.id) ?? { kind: 'retry' as const }) : step.outcome));
          for (const write of writes) outcomeOf.delete(write.actor.id);
          const extra = { replies: [] as PendingReply[], outbox: [] as OutboxRowWrite[] };
          for (const outcome of outcomeOf.values()) {
            if (outcome.kind !== 'applied') continue;
            extra.replies.push(...outcome.replies);
            extra.outbox.push(...outcome.outbox);
          }
          return { outcomes, linked: extra };
        }
        // Refused (a shard lost meanwhile, say): nothing was written; the batch's own steps are
        // written as if nothing had been linked, and their commands travel as rows.
      }
      let results: ReadonlyArray<BatchCommitResult>;
      try {
        results = writes.length === 0 ? [] : await this.options.store.commitBatch(writes.map((step) => step.commit));
      } catch (error) {
        results = writes.map(() => ({ error }));
      }
      // `writes` keeps the order of `steps`, so the n-th write step takes the n-th result.
      let next = 0;
      const outcomes = steps.map((step) => {
        if (step.kind !== 'write') return step.outcome;
        const result = results[next] ?? { error: new Error('no commit result') };
        next += 1;
        return this.finishWrite(step, result);
      });
      return { outcomes, linked: { replies: [], outbox: [] } };
    } finally {
      for (const settle of settles) settle();
    }
  }

  /** A receiver's linked step, or null when it cannot take part (see `linkSteps`). */
  private async prepareLinked(id: string, commands: readonly CommandEnvelope[], before: PreparedWrite | undefined): Promise<PreparedWrite | null> {
    const shard = shardOf(id, this.options.shardCount);
    const token = this.options.fenceToken(shard);
    const behavior = this.behaviors.get(commands[0]?.actorType ?? '');
    if (token === null || behavior === undefined) return null;
    try {
      const actor = before?.actor ?? (await this.activate(id, behavior));
      const step = await prepareStep(this.prepareContext, actor, { shard, token }, commands, [], before === undefined ? null : baseAfter(before), { linked: true });
      return step.kind === 'write' ? step : null;
    } catch {
      // The commands go through their rows, where a fault quarantines the actor as usual.
      return null;
    }
  }

  /**
   * An actor's lane for this batch: the returned promise settles when its work in earlier
   * batches has; the settle pushed on `settles` releases its work in later batches.
   */
  private openLane(id: string, batch: number, settles: Array<() => void>): Promise<void> | undefined {
    const previous = this.lanes.get(id)?.tail;
    let settle = (): void => undefined;
    const tail = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const lane = { tail, batch };
    this.lanes.set(id, lane);
    void tail.then(() => {
      if (this.lanes.get(id) === lane) this.lanes.delete(id);
    });
    settles.push(settle);
    return previous;
  }

  /**
   * Never rejects. Whenever an actor's commands are not applied, the actor is blocked, so that
   * its later commands (in batches already read) are not applied ahead of these.
   */
  private async prepareGuarded(id: string, fence: number | null, commands: readonly CommandEnvelope[]): Promise<PreparedStep> {
    if (this.blocked.has(id)) return { kind: 'done', outcome: { kind: 'retry' } };
    const shard = shardOf(id, this.options.shardCount);
    if (fence === null || this.options.fenceToken(shard) !== fence) {
      // The shard was not owned, or lost (perhaps re-acquired) since the batch was read.
      this.blocked.add(id);
      return { kind: 'done', outcome: { kind: 'retry' } };
    }
    try {
      // A replay asked for an actor this worker did not know as quarantined (its record was written
      // elsewhere): the record decides.
      const quarantine = this.options.quarantine;
      if (quarantine !== undefined && !this.quarantined.has(id) && commands.some((command) => command.kind === replayCommandKind)) {
        const record = await quarantine.record(id);
        if (record !== null) this.quarantined.set(id, record);
      }
      if (this.quarantined.has(id)) return await this.prepareQuarantined(id, { shard, token: fence }, commands);
      // A replay asked for an actor that is not (or no longer) quarantined has nothing to do.
      const ordinary = commands.filter((command) => command.kind !== replayCommandKind);
      return await this.prepare(id, { shard, token: fence }, ordinary);
    } catch (error) {
      this.actors.delete(id);
      if (error instanceof ActorFault && this.options.quarantine !== undefined) return { kind: 'done', outcome: this.enterQuarantine(id, shard, error) };
      this.blocked.add(id);
      return { kind: 'done', outcome: { kind: 'failed', error } };
    }
  }

  /** From now on the actor's commands are dead-lettered (set synchronously: later batches see it). */
  private enterQuarantine(id: string, shard: number, fault: ActorFault): ActorOutcome {
    const nowMs = this.options.clock.nowMs();
    const error = errorText(fault);
    const since = this.quarantined.get(id)?.sinceMs ?? nowMs;
    this.quarantined.set(id, { actorId: id, shard, error, sinceMs: since, lastErrorAtMs: nowMs });
    return { kind: 'quarantined', error };
  }

  /**
   * A quarantined actor's commands are dead-lettered, unless one of them asks for a replay: then
   * the actor is reloaded from its snapshot and its dead letters are applied first, followed by
   * this batch's other commands, in one write that also releases it.
   */
  private async prepareQuarantined(id: string, fence: { readonly shard: number; readonly token: number }, commands: readonly CommandEnvelope[]): Promise<PreparedStep> {
    const quarantine = this.options.quarantine;
    const others = commands.filter((command) => command.kind !== replayCommandKind);
    if (quarantine === undefined || others.length === commands.length) return { kind: 'done', outcome: { kind: 'quarantined', error: null } };
    const letters = await quarantine.deadLetters(id, replayDeadLettersMax);
    if (letters.length >= replayDeadLettersMax) {
      // Too many to release in one write: the operator replays again once these are in.
      this.log('error', 'a quarantined actor has more dead letters than one replay applies; not replayed', { actorId: id, deadLettersMax: replayDeadLettersMax });
      return { kind: 'done', outcome: { kind: 'quarantined', error: null } };
    }
    this.actors.delete(id);
    const step = await this.prepare(id, fence, [...letters.map((letter) => letter.envelope), ...others], releaseWrites(id, letters));
    this.log('info', 'replaying a quarantined actor', { actorId: id, deadLetters: letters.length });
    if (step.kind === 'write') return { ...step, releases: true };
    // Nothing to write (only reads): released at once, nothing durable to remove but its records.
    return step;
  }

  /** Writes the commands of a quarantined actor to its dead letters (and logs its quarantine once). */
  private async deadLetter(id: string, error: string | null, commands: readonly CommandEnvelope[]): Promise<void> {
    const record = this.quarantined.get(id);
    if (this.options.quarantine === undefined || record === undefined) throw new Error(`${id} is not quarantined`);
    const nowMs = this.options.clock.nowMs();
    const letters: DeadLetter[] = commands
      .filter((command) => command.kind !== replayCommandKind)
      .map((command) => {
        this.deadLetterSeq = (this.deadLetterSeq + 1) % 1_000_000_000;
        const order = `${String(nowMs).padStart(15, '0')}.${String(this.deadLetterSeq).padStart(9, '0')}`;
        return { order, commandId: command.commandId, kind: command.kind, atMs: nowMs, envelope: command };
      });
    await this.options.quarantine.quarantine(record, letters);
    if (error !== null) {
      this.log('error', 'actor quarantined: its commands are dead-lettered until an operator replays them', {
        actorId: id,
        error,
        deadLettered: letters.length,
      });
    }
  }

  private async activate(id: string, behavior: AnyActorBehavior): Promise<ActiveActor> {
    const cached = this.actors.get(id);
    if (cached) {
      cached.lastUsedMs = this.options.clock.nowMs();
      return cached;
    }
    const snapshot = await this.options.store.load(id);
    const parts = await namedPartDocs((partId) => this.options.store.loadPart(partId), id, behavior, snapshot);
    const actor = activeActor(id, behavior, snapshot, this.options.clock.nowMs(), parts);
    this.actors.set(actor);
    return actor;
  }

  private async prepare(
    id: string,
    fence: { readonly shard: number; readonly token: number },
    commands: readonly CommandEnvelope[],
    extraReadModels: readonly ReadModelWrite[] = [],
  ): Promise<PreparedStep> {
    const first = commands[0];
    if (first === undefined) return { kind: 'done', outcome: { kind: 'applied', replies: [], outbox: [] } };
    const behavior = this.behaviors.get(first.actorType);
    if (behavior === undefined) throw new Error(`no behavior for ${first.actorType}`);
    return prepareStep(this.prepareContext, await this.activate(id, behavior), fence, commands, extraReadModels);
  }

  /** The actor moves to its new state only once its write is durable; otherwise it is reloaded. */
  private finishWrite(step: PreparedWrite, result: BatchCommitResult): ActorOutcome {
    const { actor, commit } = step;
    if (typeof result !== 'string') {
      this.actors.delete(actor.id);
      this.blocked.add(actor.id);
      return { kind: 'failed', error: result.error };
    }
    if (result !== 'ok') {
      this.log('warn', 'snapshot write refused; reloading the actor', { actorId: actor.id, result });
      this.actors.delete(actor.id);
      this.blocked.add(actor.id);
      return { kind: 'retry' };
    }
    this.options.afterCommit?.(actor.id);
    if (step.releases === true) this.quarantined.delete(actor.id);
    actor.state = step.state;
    actor.version = commit.newVersion;
    actor.lastUsedMs = this.options.clock.nowMs();
    for (const appliedCommand of commit.appliedCommands) rememberCommand(actor, appliedCommand.commandId);
    if (step.parts !== undefined) actor.storedParts = step.parts;
    this.actors.resize(actor, actorBytes(commit.state, actor.recentCommandIds.size, actor.storedParts));
    if (step.timerAtMs !== undefined) actor.storedTimerAtMs = step.timerAtMs;
    // A refused timer is re-armed under a new command id (the first one is remembered by the
    // actor); arming it as a plain timer would fire that remembered id again and be skipped.
    if (step.refusedTimerAtMs !== null) this.options.onTimerRefused?.(actor.id, step.refusedTimerAtMs);
    else if (step.timerAtMs !== undefined) this.options.onTimer?.(actor.id, step.timerAtMs);
    return { kind: 'applied', replies: step.replies, outbox: step.outboxRows };
  }

  /** Builds the command that fires an actor's timer (`attempt` ≥ 1: armed again after a refusal). */
  timerCommand(id: string, dueAtMs: number, attempt = 0): CommandEnvelope {
    return timerCommand(id, dueAtMs, attempt, this.options.clock.nowMs());
  }

  /** Idle passivation: actors unused for `idleMs` leave memory (their snapshots are the truth). */
  passivateIdle(idleMs: number): number {
    return this.actors.passivateIdle(this.options.clock.nowMs() - idleMs, (id) => this.lanes.has(id));
  }

  private log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(level, message, fields);
  }
}

