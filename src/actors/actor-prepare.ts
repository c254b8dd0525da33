// Preparing one actor's step of a batch: its commands applied in order against its in-memory state,
// and the ONE write that makes them durable (or the outcome, when nothing needs writing). Nothing
// of the actor changes in memory here; the runtime moves it to the step's state once the write is
// durable (runtime.ts, `finishWrite`).
//
// A step may build on another step of the same actor in the same batch, not yet durable (its
// `base`): a linked step (linked-steps.ts), whose write follows the base's in the same all-or-nothing
// commit. It then starts from the base's state, version, parts and timer row, and treats the
// base's commands as applied.
import {
  asksAgain, buildWrite, dedupesByState, firedDueAtMs, handleOrFault, isRefusal, rememberCommand, sentCommands,
  type ActiveActor, type PendingReply, type PreparedStep, type PreparedWrite, type StepBase,
} from './actor-step.ts';
import type { ActorStore } from './actor-store.ts';
import { decodeCommand, malformedReply, type ArrivedCommand } from './command-arrival.ts';
import type { CommandEnvelope, Decoded, JsonValue, LogLevel, OutboxMessage, ReadModelWrite } from './envelope.ts';

export interface PrepareContext {
  readonly store: Pick<ActorStore, 'getAppliedReply'>;
  nowMs(): number;
  /** The command as decoded on arrival, if it was (a command decoded nowhere is decoded here). */
  decodedOnArrival(command: CommandEnvelope): Decoded<ArrivedCommand> | undefined;
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
  /** A fired timer the actor still wants at the same time, for a step that writes nothing. */
  onTimerRefused?(actorId: string, dueAtMs: number): void;
}

/** The base a step after `step` starts from (see the header). */
export function baseAfter(step: PreparedWrite): StepBase {
  const before = step.base;
  const applied = new Map(before?.applied ?? []);
  for (const command of step.commit.appliedCommands) applied.set(command.commandId, command.reply);
  // null is a value here (no parts; no timer row): only undefined means "as before this step".
  const partsBefore = before === null ? step.actor.storedParts : before.storedParts;
  const timerBefore = before === null ? step.actor.storedTimerAtMs : before.storedTimerAtMs;
  return {
    state: step.state,
    version: step.commit.newVersion,
    storedParts: step.parts === undefined ? partsBefore : step.parts,
    storedTimerAtMs: step.timerAtMs === undefined ? timerBefore : step.timerAtMs,
    applied,
  };
}

export async function prepareStep(
  context: PrepareContext,
  actor: ActiveActor,
  fence: { readonly shard: number; readonly token: number },
  commands: readonly CommandEnvelope[],
  extraReadModels: readonly ReadModelWrite[] = [],
  base: StepBase | null = null,
  /** A linked step (linked-steps.ts): one that writes nothing is not linked, and remembers nothing. */
  { linked }: { readonly linked: boolean } = { linked: false },
): Promise<PreparedStep> {
  const { behavior, id } = actor;
  let state = base === null ? actor.state : base.state;
  let changed = false;
  const replies: PendingReply[] = [];
  const appliedCommands: Array<{ commandId: string; reply: JsonValue }> = [];
  const outbox: OutboxMessage[] = [];
  const readModels = new Map<string, ReadModelWrite>();
  for (const write of extraReadModels) readModels.set(`${write.collection}\u0000${write.id}`, write);
  const seenInBatch = new Set<string>();
  /** Due times of the timer commands handled (not deduplicated) in this batch. */
  const firedTimers: number[] = [];

  for (const command of commands) {
    // Such a command is answered again from the actor's state: the dedupe log keeps nothing of it.
    const dedupeByState = dedupesByState(behavior, command.kind);
    // A repeat of a command whose answer is deferred goes back to `handle` (see `asksAgain`).
    let repeat = false;
    if (!dedupeByState) {
      const applied = seenInBatch.has(command.commandId) || actor.recentCommandIds.has(command.commandId) || base?.applied.has(command.commandId) === true;
      // An actor that has never been written (version 0) has no dedupe log to ask.
      const stored = applied || actor.version === 0 ? undefined : await context.store.getAppliedReply(id, command.commandId);
      if (applied || stored !== undefined) {
        const known = applied ? await storedReply(context, actor, base, command, appliedCommands) : stored;
        if (!asksAgain(behavior, command, known)) {
          if (command.replyTo && known !== undefined && known !== null) replies.push({ to: command.replyTo, payload: known });
          if (!applied) rememberCommand(actor, command.commandId);
          continue;
        }
        repeat = true;
      } else {
        seenInBatch.add(command.commandId);
      }
    }
    const nowMs = context.nowMs();
    const fired = firedDueAtMs(command);
    if (fired !== null) firedTimers.push(fired);
    // Decoded on arrival; a command that did not come through a stream entry (a dead letter
    // replayed, a linked command) is decoded here, and a malformed one is answered, never handled.
    const typed = context.decodedOnArrival(command) ?? decodeCommand(behavior, command);
    if (!typed.ok) context.log('error', 'dropping a malformed command', { actorId: id, kind: command.kind.slice(0, 64), commandId: command.commandId, reason: typed.reason });
    const outcome = typed.ok ? handleOrFault(behavior, id, state, typed.value, nowMs) : { reply: malformedReply(typed.reason) };
    if (outcome.state !== undefined) {
      state = outcome.state;
      changed = true;
    }
    const reply = outcome.reply ?? null;
    if (!dedupeByState && !repeat) appliedCommands.push({ commandId: command.commandId, reply });
    if (command.replyTo && outcome.reply !== undefined) replies.push({ to: command.replyTo, payload: outcome.reply });
    else if (isRefusal(outcome.reply)) {
      // A command relayed by another actor has nobody waiting for its answer: a refusal (e.g. a
      // transaction refusing a deposit, `too_many_deposits`) would otherwise go unseen.
      context.log('warn', 'a command with no one to answer was refused; check it by hand', { actorId: id, kind: command.kind, commandId: command.commandId, reply: outcome.reply });
    }
    for (const deferred of outcome.replies ?? []) replies.push(deferred);
    outbox.push(...sentCommands(command, outcome.send ?? [], nowMs));
    outbox.push(...(outcome.outbox ?? []));
    for (const write of outcome.readModels ?? []) readModels.set(`${write.collection}\u0000${write.id}`, write);
  }

  // A fired timer the actor still wants at the same time was not consumed (a refusal): nothing
  // below re-arms it (the timer row is unchanged), so the worker is told to.
  const stillDueAtMs = state !== null && behavior.timerAtMs && firedTimers.length > 0 ? behavior.timerAtMs(state) : null;
  const refusedTimerAtMs = stillDueAtMs !== null && firedTimers.includes(stillDueAtMs) ? stillDueAtMs : null;

  // Read-only commands (no state change, no effects) need no write: re-applying them after a
  // crash yields the same reply from the same state.
  if (!changed && outbox.length === 0 && readModels.size === 0) {
    // A linked step that writes nothing is left out: its commands come again through their rows
    // and must be handled then, on the state of then (and after a base that is not durable, these
    // replies rest on a state that may never be). So nothing is remembered.
    if (!linked) for (const appliedCommand of appliedCommands) rememberCommand(actor, appliedCommand.commandId, appliedCommand.reply);
    if (refusedTimerAtMs !== null) context.onTimerRefused?.(id, refusedTimerAtMs);
    return { kind: 'done', outcome: { kind: 'applied', replies, outbox: [] } };
  }

  return buildWrite({ actor, base, behavior, fence, state, changed, appliedCommands, outbox, readModels: [...readModels.values()], replies, refusedTimerAtMs });
}

/** The reply recorded for a command applied earlier (in this step, its base, in memory, or in the store). */
async function storedReply(
  context: PrepareContext,
  actor: ActiveActor,
  base: StepBase | null,
  command: CommandEnvelope,
  appliedCommands: ReadonlyArray<{ commandId: string; reply: JsonValue }>,
): Promise<JsonValue | null | undefined> {
  if (!command.replyTo) return undefined;
  const inBatch = appliedCommands.find((item) => item.commandId === command.commandId);
  if (inBatch) return inBatch.reply;
  const inBase = base?.applied.get(command.commandId);
  if (inBase !== undefined) return inBase;
  return actor.unwrittenReplies.get(command.commandId) ?? (await context.store.getAppliedReply(actor.id, command.commandId));
}
