// One actor's step in a batch of the runtime (runtime.ts): the actor in memory, what became of its
// commands, and the ONE versioned write that makes them durable, with the pure pieces that build
// it (the commit with its outbox rows and timer row, the commands it sends to other actors) and
// the rules for a repeated command. No I/O here: the runtime loads, asks the store and writes.
import type { ActorSnapshot } from '../store/store.ts';
import { shardOf } from '../bus/shards.ts';
import {
  timerCommandKind,
  type AnyActorBehavior,
  type CommandPayloads,
  type TypedCommand,
  type CommandEnvelope,
  type JsonValue,
  type OutboxMessage,
  type ReadModelWrite,
  type ReplyTarget,
} from './envelope.ts';
import type { ActorCommit, OutboxRowWrite } from './actor-store.ts';
import { actorPartId, partText, partWrites, partsArray, type PartDoc } from './actor-parts.ts';
import { ActorFault } from './quarantine.ts';
import { actorOverheadBytes, estimateJsonBytes, rememberedCommandBytes } from './actor-memory.ts';

/** One command per row (written by releases before command batches; still relayed). */
export const outboxTopicCommands = 'commands';
/**
 * The commands one actor write sends, up to `commandsPerRowMax` per row, as an array of envelopes.
 * Every command used to be a row of its own, and each row costs the store four operations to
 * write and three to mark relayed (an accepted BREB transaction sent nine: bench/README.md,
 * "hot-accept"). A topic of its own, not a new payload shape under `commands`: a worker of the
 * previous release sweeps only `commands`, so during a rolling upgrade it never sees (and never
 * drops as malformed) a batch row; such rows wait for a worker of this release.
 */
export const outboxTopicCommandBatches = 'command-batches';
/** Envelopes per command-batch row (a stream entry carries at most as many: `batchRequestsMax`). */
export const commandsPerRowMax = 64;
const recentCommandIdsMax = 256;

/** An outbox row's id: the writing actor, the version its write makes, the row's position in it (the store checks it). */
export function outboxRowIdOf(actorId: string, newVersion: number, index: number): string {
  return `${actorId}:${newVersion}:${index}`;
}

/**
 * The stable id of an actor's timer command for a due time: redelivery never double-fires. A
 * timer armed again after a refusal (`attempt` ≥ 1) needs an id of its own: the refusal wrote
 * nothing, but the actor remembers the first id for a while and would answer it from memory.
 */
export function timerCommandId(id: string, dueAtMs: number, attempt = 0): string {
  return attempt === 0 ? `${id}:timer:${dueAtMs}` : `${id}:timer:${dueAtMs}:retry:${attempt}`;
}

/** The command that fires an actor's timer (`attempt` ≥ 1: armed again after a refusal). */
export function timerCommand(id: string, dueAtMs: number, attempt: number, nowMs: number): CommandEnvelope {
  const slash = id.indexOf('/');
  return {
    commandId: timerCommandId(id, dueAtMs, attempt),
    actorType: id.slice(0, slash),
    actorKey: id.slice(slash + 1),
    kind: timerCommandKind,
    payload: { dueAtMs },
    sentAtMs: nowMs,
  };
}

export interface ActiveActor {
  readonly id: string;
  readonly behavior: AnyActorBehavior;
  state: unknown;
  version: number;
  lastUsedMs: number;
  /** Command ids applied since activation (a fast path before asking the store). */
  readonly recentCommandIds: Set<string>;
  /**
   * Replies of recent commands that wrote nothing (a refusal, a read): the store keeps no reply
   * for them, so a repeat of the same id is answered from here (else its asker would wait for a
   * reply that never comes). Bounded with `recentCommandIds`.
   */
  readonly unwrittenReplies: Map<string, JsonValue>;
  /**
   * The actor's row in the `timers` read model as of `version`: a due time, null (no row), or
   * undefined when not known (activated from a snapshot). A write that leaves it unchanged skips it.
   */
  storedTimerAtMs: number | null | undefined;
  /**
   * The actor's parts as of `version` (src/actors/actor-parts.ts), by index ('' where none); null
   * for an actor type without parts. A write writes only the parts that differ from these.
   */
  storedParts: readonly string[] | null;
  /** Estimated bytes this actor holds in memory (src/actors/actor-memory.ts), as of its last load or write. */
  approxBytes: number;
}

export interface PendingReply {
  readonly to: ReplyTarget;
  readonly payload: JsonValue;
}

/** What became of one actor's commands in a batch. */
export type ActorOutcome =
  | { readonly kind: 'applied'; readonly replies: PendingReply[]; readonly outbox: OutboxRowWrite[] }
  /**
   * Not applied: the actor is quarantined; these commands go to its dead letters. `error` is set
   * when this batch put it there (null: it already was).
   */
  | { readonly kind: 'quarantined'; readonly error: string | null }
  /** Not applied (write refused, actor blocked, shard not owned): the entries stay pending. */
  | { readonly kind: 'retry' }
  /** Not applied because applying threw (a bug or broken infrastructure): the entries stay pending. */
  | { readonly kind: 'failed'; readonly error: unknown };

/**
 * What a step of an actor starts from when it follows another step of the same actor in the same
 * batch that is not durable yet (actor-prepare.ts): that step's outcome as the actor would hold it.
 */
export interface StepBase {
  readonly state: unknown;
  readonly version: number;
  readonly storedParts: readonly string[] | null;
  readonly storedTimerAtMs: number | null | undefined;
  /** The commands applied by the steps before, with their replies. */
  readonly applied: ReadonlyMap<string, JsonValue>;
}

/** An actor's part of a batch once applied in memory: a write to make durable, or done already. */
export interface PreparedWrite {
  readonly kind: 'write';
  readonly actor: ActiveActor;
  /** The step of the same batch this one follows (null: it starts from the actor as it is durable). */
  readonly base: StepBase | null;
  readonly commit: ActorCommit;
  /** The state the actor takes once the write is durable. */
  readonly state: unknown;
  readonly timerAtMs: number | null | undefined;
  /** A timer this batch fired and the actor still wants at the same time (see onTimerRefused). */
  readonly refusedTimerAtMs: number | null;
  readonly replies: PendingReply[];
  readonly outboxRows: OutboxRowWrite[];
  /** The actor's parts once the write is durable (undefined: it has none, or wrote no state). */
  readonly parts: readonly string[] | undefined;
  /** Set when this write applies a quarantined actor's dead letters: it is released once durable. */
  readonly releases?: true;
}
export type PreparedStep = PreparedWrite | { readonly kind: 'done'; readonly outcome: ActorOutcome };

/** The due time a `timer` command fired for (its payload), or null when it carries none. */
export function firedDueAtMs(command: CommandEnvelope): number | null {
  if (command.kind !== timerCommandKind) return null;
  const payload = command.payload;
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return null;
  const dueAtMs = payload['dueAtMs'];
  return typeof dueAtMs === 'number' && Number.isSafeInteger(dueAtMs) ? dueAtMs : null;
}

/** An actor as its snapshot (or none: a new actor) and the part records it names leave it, at `nowMs`. */
export function activeActor(
  id: string,
  behavior: AnyActorBehavior,
  snapshot: ActorSnapshot | null,
  nowMs: number,
  partDocs: ReadonlyMap<number, PartDoc> = new Map(),
): ActiveActor {
  const { state, storedParts } = decodedState(behavior, id, snapshot, partDocs);
  return {
    id,
    behavior,
    state,
    version: snapshot?.version ?? 0,
    lastUsedMs: nowMs,
    recentCommandIds: new Set(),
    unwrittenReplies: new Map(),
    // A never-written actor has no timer row; one loaded from a snapshot may have one.
    storedTimerAtMs: snapshot === null ? null : undefined,
    storedParts,
    approxBytes: actorBytes(snapshot?.state ?? null, 0, storedParts),
  };
}

/**
 * The state a snapshot holds, decoded with its parts. A snapshot may hold no state: an actor that
 * had none yet and did something durable all the same (a counter refusing a first reservation
 * sends its answer, and that send is written with the actor) is written with `state: null`. That
 * means "no state yet", exactly as no snapshot does, and is never handed to `decode`: a behavior
 * decodes only what its own `encode` wrote (docs/actors.md, "Snapshots without a state").
 */
function decodedState(behavior: AnyActorBehavior, id: string, snapshot: ActorSnapshot | null, partDocs: ReadonlyMap<number, PartDoc>): { state: unknown; storedParts: readonly string[] | null } {
  const parts = behavior.parts;
  if (snapshot === null || snapshot.state === null) return { state: null, storedParts: parts === undefined ? null : [] };
  if (parts === undefined) return { state: decodeOrFault(behavior, id, snapshot.state), storedParts: null };
  try {
    const texts = new Map<number, string>();
    for (const [index, doc] of partDocs) texts.set(index, partText(doc, actorPartId(id, index)));
    return { state: parts.decode(snapshot.state, texts), storedParts: partsArray(texts) };
  } catch (error) {
    throw new ActorFault('decode', id, error);
  }
}

/** An actor's estimated bytes in memory from its encoded state, its parts and how many command ids it remembers. */
export function actorBytes(encodedState: JsonValue | null, rememberedCommands: number, parts: readonly string[] | null = null): number {
  return actorOverheadBytes + estimateJsonBytes(encodedState) + (parts === null ? 0 : estimateJsonBytes(parts)) + rememberedCommands * rememberedCommandBytes;
}

/**
 * Notes a command as applied by the in-memory actor (bounded: the oldest is forgotten).
 * `unwrittenReply`: the reply of a command that wrote nothing (the store has none to replay).
 */
export function rememberCommand(actor: ActiveActor, commandId: string, unwrittenReply?: JsonValue): void {
  actor.recentCommandIds.add(commandId);
  if (unwrittenReply !== undefined) actor.unwrittenReplies.set(commandId, unwrittenReply);
  if (actor.recentCommandIds.size > recentCommandIdsMax) {
    const oldest = actor.recentCommandIds.values().next();
    if (!oldest.done) {
      actor.recentCommandIds.delete(oldest.value);
      actor.unwrittenReplies.delete(oldest.value);
    }
  }
}

/** The commands a handled command sends to other actors, as outbox messages (ids derived from its id). */
export function sentCommands(command: CommandEnvelope, sends: readonly NonNullable<ReturnType<AnyActorBehavior['handle']>['send']>[number][], nowMs: number): OutboxMessage[] {
  return sends.map((send, index) => {
    const envelope: CommandEnvelope = {
      commandId: `${command.commandId}>${index}`,
      actorType: send.actorType,
      actorKey: send.actorKey,
      kind: send.kind,
      payload: send.payload,
      ...(send.replyTo ? { replyTo: send.replyTo } : {}),
      sentAtMs: nowMs,
    };
    return { topic: outboxTopicCommands, payload: envelope };
  });
}

/** The write's messages with its commands gathered into command-batch rows (other topics as they were, first). */
export function withCommandBatches(outbox: readonly OutboxMessage[]): OutboxMessage[] {
  const others = outbox.filter((message) => message.topic !== outboxTopicCommands);
  const commands = outbox.filter((message) => message.topic === outboxTopicCommands).map((message) => message.payload);
  const batches: OutboxMessage[] = [];
  for (let start = 0; start < commands.length; start += commandsPerRowMax) {
    batches.push({ topic: outboxTopicCommandBatches, payload: commands.slice(start, start + commandsPerRowMax) });
  }
  return [...others, ...batches];
}

/** What an actor's handled commands left, to be made durable in one write. */
export interface HandledCommands {
  readonly actor: ActiveActor;
  readonly base: StepBase | null;
  readonly behavior: AnyActorBehavior;
  readonly fence: { readonly shard: number; readonly token: number };
  /** The state after the commands, and whether any of them changed it. */
  readonly state: unknown;
  readonly changed: boolean;
  readonly appliedCommands: Array<{ commandId: string; reply: JsonValue }>;
  readonly outbox: readonly OutboxMessage[];
  readonly readModels: readonly ReadModelWrite[];
  readonly replies: PendingReply[];
  readonly refusedTimerAtMs: number | null;
}

/**
 * The actor's next version as one write: its state, the commands applied with their replies, the
 * outbox rows (ids from the actor and version: a retried write makes the same rows), the read
 * models, and its `timers` row when the wanted due time differs from the stored one.
 */
export function buildWrite(handled: HandledCommands): PreparedWrite {
  const { actor, base, behavior, fence, state, changed, appliedCommands, outbox, readModels, replies, refusedTimerAtMs } = handled;
  const id = actor.id;
  const from = base ?? actor;
  const newVersion = from.version + 1;
  const outboxRows: OutboxRowWrite[] = withCommandBatches(outbox).map((message, index) => ({
    id: outboxRowIdOf(id, newVersion, index),
    topic: message.topic,
    payload: message.payload,
    ...(message.partitionKey !== undefined ? { partitionKey: message.partitionKey } : {}),
  }));
  // Only the parts that changed since the last durable write are written (src/actors/actor-parts.ts).
  const parts = behavior.parts !== undefined && state !== null ? behavior.parts.of(state) : undefined;
  const partModels = parts === undefined ? [] : partWrites(id, from.storedParts ?? [], parts);
  const wantedTimerAtMs = changed && state !== null && behavior.timerAtMs ? behavior.timerAtMs(state) : undefined;
  // Most writes (a saga step, a refusal) leave the timer as it was: no read-model write for it.
  const timerAtMs = wantedTimerAtMs === from.storedTimerAtMs ? undefined : wantedTimerAtMs;
  const commit: ActorCommit = {
    actorId: id,
    expectedVersion: from.version,
    newVersion,
    state: state === null ? null : behavior.encode(state),
    fence: { shard: fence.shard, token: fence.token },
    appliedCommands,
    outbox: outboxRows,
    readModels: [
      ...readModels,
      ...partModels,
      ...(timerAtMs === undefined
        ? []
        : [
            {
              collection: 'timers',
              id,
              doc: timerAtMs === null ? null : { actorId: id, shard: fence.shard, dueAtMs: timerAtMs },
            },
          ]),
    ],
  };
  return { kind: 'write', actor, base, commit, state, timerAtMs, refusedTimerAtMs, replies, outboxRows, parts };
}

export function decodeOrFault(behavior: AnyActorBehavior, id: string, json: JsonValue): unknown {
  try {
    return behavior.decode(json);
  } catch (error) {
    throw new ActorFault('decode', id, error);
  }
}

export function handleOrFault(behavior: AnyActorBehavior, id: string, state: unknown, command: TypedCommand<CommandPayloads>, nowMs: number): ReturnType<AnyActorBehavior['handle']> {
  try {
    return behavior.handle(state, command, { nowMs, commandId: command.commandId });
  } catch (error) {
    throw new ActorFault('handle', id, error);
  }
}

/**
 * Whether a repeat of an applied command goes back to `handle`: its first handling recorded no
 * reply because the reply comes later (a saga), and someone waits for this repeat. Answered from
 * the empty record, the repeat would wait forever though the first one's outcome exists.
 */
export function asksAgain(behavior: AnyActorBehavior, command: CommandEnvelope, stored: JsonValue | null | undefined): boolean {
  return command.replyTo !== undefined && stored === null && behavior.deferredReplyKinds?.has(command.kind) === true;
}

export function dedupesByState(behavior: AnyActorBehavior, kind: string): boolean {
  const rule = behavior.dedupeByState;
  return typeof rule === 'function' ? rule(kind) : rule === true;
}

/** A domain refusal (`{ ok: false, … }`, the shape the transaction actor answers). */
export function isRefusal(reply: JsonValue | undefined): boolean {
  return typeof reply === 'object' && reply !== null && !Array.isArray(reply) && reply['ok'] === false;
}

/** Per actor id, its shard's fencing token as first read in this batch (each shard read once). */
export function fencesAtRead(shardCount: number, fenceToken: (shard: number) => number | null): (id: string) => number | null {
  const fences = new Map<number, number | null>();
  return (id) => {
    const shard = shardOf(id, shardCount);
    let fence = fences.get(shard);
    if (fence === undefined) {
      fence = fenceToken(shard);
      fences.set(shard, fence);
    }
    return fence;
  };
}
