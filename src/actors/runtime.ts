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
//   5. only then send replies, hand the outbox to its dispatchers, and ack the stream entries.
// A refused write (stale version or fencing token) drops the actor from memory and leaves the
// entries unacknowledged: they are re-read and re-applied against the reloaded state.
import type { Bus, BusEntry } from '../bus/bus.ts';
import { replyTo } from '../bus/request-reply.ts';
import { shardOf, commandStreamKey } from '../bus/shards.ts';
import {
  actorId,
  timerCommandKind,
  type ActorBehavior,
  type CommandEnvelope,
  type JsonValue,
  type LogLevel,
  type OutboxMessage,
  type ReadModelWrite,
  type ReplyTarget,
} from './envelope.ts';
import { decodeEnvelope, encodeEnvelope } from './codec.ts';
import type { ActorStore, CommitResult, OutboxRowWrite } from './actor-store.ts';

export interface RuntimeClock {
  nowMs(): number;
}

export interface RuntimeOptions {
  readonly bus: Bus;
  readonly store: ActorStore;
  readonly behaviors: ReadonlyArray<ActorBehavior<unknown>>;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly group: string;
  readonly consumer: string;
  readonly clock: RuntimeClock;
  /** Fencing token of the lease under which this worker owns `shard`; null if not owned. */
  readonly fenceToken: (shard: number) => number | null;
  readonly batchSizeMax?: number;
  readonly actorsInMemoryMax?: number;
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
}

interface ActiveActor {
  readonly id: string;
  readonly behavior: ActorBehavior<unknown>;
  state: unknown;
  version: number;
  lastUsedMs: number;
  /** Command ids applied since activation (a fast path before asking the store). */
  readonly recentCommandIds: Set<string>;
}

interface PendingReply {
  readonly to: ReplyTarget;
  readonly payload: JsonValue;
}

/** The stable id of an actor's timer command for a due time: redelivery never double-fires. */
export function timerCommandId(id: string, dueAtMs: number): string {
  return `${id}:timer:${dueAtMs}`;
}

export const outboxTopicCommands = 'commands';
const recentCommandIdsMax = 256;

export class ActorRuntime {
  private readonly behaviors = new Map<string, ActorBehavior<unknown>>();
  private readonly actors = new Map<string, ActiveActor>();
  private readonly batchSizeMax: number;
  private readonly actorsInMemoryMax: number;
  private readonly streamLengthMax: number;

  constructor(private readonly options: RuntimeOptions) {
    for (const behavior of options.behaviors) this.behaviors.set(behavior.type, behavior);
    this.batchSizeMax = options.batchSizeMax ?? 512;
    this.actorsInMemoryMax = options.actorsInMemoryMax ?? 100_000;
    this.streamLengthMax = options.streamLengthMax ?? 1_000_000;
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
    await this.options.bus.append(this.streamFor(envelope.actorType, envelope.actorKey), encodeEnvelope(envelope), {
      maxLenApprox: this.streamLengthMax,
    });
  }

  /** Forgets every in-memory actor of `shard` (the lease was lost or handed over). */
  dropShard(shard: number): void {
    for (const [id, actor] of this.actors) {
      if (shardOf(id, this.options.shardCount) === shard) this.actors.delete(id);
      void actor;
    }
  }

  actorCount(): number {
    return this.actors.size;
  }

  /**
   * Applies a batch of stream entries and acknowledges those whose outcome is durable (or that
   * were malformed and can never apply). Entries of an actor whose write was refused stay pending.
   */
  async applyBatch(entries: readonly BusEntry[]): Promise<{ applied: number; retried: number }> {
    const byActor = new Map<string, Array<{ entry: BusEntry; command: CommandEnvelope }>>();
    const toAck = new Map<string, string[]>();
    const ack = (entry: BusEntry): void => {
      const ids = toAck.get(entry.stream) ?? [];
      ids.push(entry.id);
      toAck.set(entry.stream, ids);
    };
    for (const entry of entries) {
      const command = decodeEnvelope(entry.payload);
      if (command === null || !this.behaviors.has(command.actorType)) {
        this.log('error', 'dropping a malformed command', { stream: entry.stream, entryId: entry.id });
        ack(entry);
        continue;
      }
      const id = actorId(command.actorType, command.actorKey);
      const list = byActor.get(id) ?? [];
      list.push({ entry, command });
      byActor.set(id, list);
    }

    const replies: PendingReply[] = [];
    const outboxRows: OutboxRowWrite[] = [];
    let applied = 0;
    let retried = 0;
    await Promise.all(
      [...byActor].map(async ([id, items]) => {
        const result = await this.applyToActor(id, items.map((item) => item.command));
        if (result === null) {
          retried += items.length;
          return;
        }
        applied += items.length;
        replies.push(...result.replies);
        outboxRows.push(...result.outbox);
        for (const item of items) ack(item.entry);
      }),
    );

    await Promise.all(replies.map((reply) => this.sendReply(reply)));
    if (outboxRows.length > 0) this.options.onOutbox?.(outboxRows);
    await Promise.all([...toAck].map(([stream, ids]) => this.options.bus.ack(stream, this.options.group, ids)));
    this.passivateIfOverfull();
    return { applied, retried };
  }

  private async activate(id: string, behavior: ActorBehavior<unknown>): Promise<ActiveActor> {
    const cached = this.actors.get(id);
    if (cached) {
      cached.lastUsedMs = this.options.clock.nowMs();
      return cached;
    }
    const snapshot = await this.options.store.load(id);
    const actor: ActiveActor = {
      id,
      behavior,
      state: snapshot === null ? null : behavior.decode(snapshot.state),
      version: snapshot?.version ?? 0,
      lastUsedMs: this.options.clock.nowMs(),
      recentCommandIds: new Set(),
    };
    this.actors.set(id, actor);
    return actor;
  }

  /**
   * Applies an actor's commands in order and commits them in one write. Returns what to publish,
   * or null when the write was refused (the actor is dropped; the commands will be retried).
   */
  private async applyToActor(
    id: string,
    commands: readonly CommandEnvelope[],
  ): Promise<{ replies: PendingReply[]; outbox: OutboxRowWrite[] } | null> {
    const first = commands[0];
    if (first === undefined) return { replies: [], outbox: [] };
    const behavior = this.behaviors.get(first.actorType);
    if (behavior === undefined) throw new Error(`no behavior for ${first.actorType}`);
    const actor = await this.activate(id, behavior);
    const shard = shardOf(id, this.options.shardCount);
    const fence = this.options.fenceToken(shard);
    if (fence === null) return null; // the shard was lost while the batch was read

    let state = actor.state;
    let changed = false;
    const replies: PendingReply[] = [];
    const appliedCommands: Array<{ commandId: string; reply: JsonValue }> = [];
    const outbox: OutboxMessage[] = [];
    const readModels = new Map<string, ReadModelWrite>();
    const seenInBatch = new Set<string>();

    for (const command of commands) {
      if (seenInBatch.has(command.commandId) || actor.recentCommandIds.has(command.commandId)) {
        await this.replayStoredReply(id, command, replies, appliedCommands);
        continue;
      }
      const stored = await this.options.store.getAppliedReply(id, command.commandId);
      if (stored !== undefined) {
        if (command.replyTo && stored !== null) replies.push({ to: command.replyTo, payload: stored });
        actor.recentCommandIds.add(command.commandId);
        continue;
      }
      seenInBatch.add(command.commandId);
      const nowMs = this.options.clock.nowMs();
      const outcome = behavior.handle(state, command, { nowMs, commandId: command.commandId });
      if (outcome.state !== undefined) {
        state = outcome.state;
        changed = true;
      }
      const reply = outcome.reply ?? null;
      appliedCommands.push({ commandId: command.commandId, reply });
      if (command.replyTo && outcome.reply !== undefined) replies.push({ to: command.replyTo, payload: outcome.reply });
      for (const deferred of outcome.replies ?? []) replies.push(deferred);
      for (const [index, send] of (outcome.send ?? []).entries()) {
        const envelope: CommandEnvelope = {
          commandId: `${command.commandId}>${index}`,
          actorType: send.actorType,
          actorKey: send.actorKey,
          kind: send.kind,
          payload: send.payload,
          ...(send.replyTo ? { replyTo: send.replyTo } : {}),
          sentAtMs: nowMs,
        };
        outbox.push({ topic: outboxTopicCommands, payload: envelope as unknown as JsonValue });
      }
      outbox.push(...(outcome.outbox ?? []));
      for (const write of outcome.readModels ?? []) readModels.set(`${write.collection}\u0000${write.id}`, write);
    }

    // Read-only commands (no state change, no effects) need no write: re-applying them after a
    // crash yields the same reply from the same state.
    if (appliedCommands.length === 0 || (!changed && outbox.length === 0 && readModels.size === 0)) {
      for (const appliedCommand of appliedCommands) this.remember(actor, appliedCommand.commandId);
      return { replies, outbox: [] };
    }

    const newVersion = actor.version + 1;
    const outboxRows: OutboxRowWrite[] = outbox.map((message, index) => ({
      id: `${id}:${newVersion}:${index}`,
      topic: message.topic,
      payload: message.payload,
      ...(message.partitionKey !== undefined ? { partitionKey: message.partitionKey } : {}),
    }));
    const timerAtMs = changed && state !== null && behavior.timerAtMs ? behavior.timerAtMs(state) : undefined;
    const result: CommitResult = await this.options.store.commit({
      actorId: id,
      expectedVersion: actor.version,
      newVersion,
      state: state === null ? null : behavior.encode(state),
      fence: { shard, token: fence },
      appliedCommands,
      outbox: outboxRows,
      readModels: [
        ...readModels.values(),
        ...(timerAtMs === undefined
          ? []
          : [
              {
                collection: 'timers',
                id,
                doc: timerAtMs === null ? null : { actorId: id, shard, dueAtMs: timerAtMs },
              },
            ]),
      ],
    });
    if (result !== 'ok') {
      this.log('warn', 'snapshot write refused; reloading the actor', { actorId: id, result });
      this.actors.delete(id);
      return null;
    }
    this.options.afterCommit?.(id);
    actor.state = state;
    actor.version = newVersion;
    actor.lastUsedMs = this.options.clock.nowMs();
    for (const appliedCommand of appliedCommands) this.remember(actor, appliedCommand.commandId);
    if (timerAtMs !== undefined) this.options.onTimer?.(id, timerAtMs);
    return { replies, outbox: outboxRows };
  }

  private async replayStoredReply(
    id: string,
    command: CommandEnvelope,
    replies: PendingReply[],
    appliedCommands: ReadonlyArray<{ commandId: string; reply: JsonValue }>,
  ): Promise<void> {
    if (!command.replyTo) return;
    const inBatch = appliedCommands.find((item) => item.commandId === command.commandId);
    const stored = inBatch ? inBatch.reply : await this.options.store.getAppliedReply(id, command.commandId);
    if (stored !== undefined && stored !== null) replies.push({ to: command.replyTo, payload: stored });
  }

  private remember(actor: ActiveActor, commandId: string): void {
    actor.recentCommandIds.add(commandId);
    if (actor.recentCommandIds.size > recentCommandIdsMax) {
      const oldest = actor.recentCommandIds.values().next();
      if (!oldest.done) actor.recentCommandIds.delete(oldest.value);
    }
  }

  private async sendReply(reply: PendingReply): Promise<void> {
    await replyTo(this.options.bus, reply.to, JSON.stringify(reply.payload));
  }

  /** Builds the command that fires an actor's timer. */
  timerCommand(id: string, dueAtMs: number): CommandEnvelope {
    const slash = id.indexOf('/');
    return {
      commandId: timerCommandId(id, dueAtMs),
      actorType: id.slice(0, slash),
      actorKey: id.slice(slash + 1),
      kind: timerCommandKind,
      payload: { dueAtMs },
      sentAtMs: this.options.clock.nowMs(),
    };
  }

  /** Idle passivation: actors unused for `idleMs` leave memory (their snapshots are the truth). */
  passivateIdle(idleMs: number): number {
    const cutoffMs = this.options.clock.nowMs() - idleMs;
    let dropped = 0;
    for (const [id, actor] of this.actors) {
      if (actor.lastUsedMs < cutoffMs) {
        this.actors.delete(id);
        dropped += 1;
      }
    }
    return dropped;
  }

  /** Passivation: least recently used actors leave memory; their snapshots stay durable. */
  private passivateIfOverfull(): void {
    if (this.actors.size <= this.actorsInMemoryMax) return;
    const byAge = [...this.actors.values()].sort((a, b) => a.lastUsedMs - b.lastUsedMs);
    for (const actor of byAge.slice(0, this.actors.size - Math.floor(this.actorsInMemoryMax * 0.9))) {
      this.actors.delete(actor.id);
    }
  }

  private log(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(level, message, fields);
  }
}
