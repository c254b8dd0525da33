// Linked steps: a command one actor sends to another actor of the same worker is applied in the
// sender's own batch and made durable in the sender's own commit, with no outbox row between them
// (docs/actors.md, "Linked steps"). An accepted transaction's saga — the transaction, its quote,
// its counters, the transaction again — then costs one commit instead of one per hop, and none of
// the rows, reads and removals that carried each hop.
//
// Safe because the commit is all or nothing (`commitAllOrNothing`): a receiver's write never lands
// without the sender's, nor the sender's without the receiver's, so no command is lost or applied
// twice. When that commit is refused (a shard lost meanwhile), the batch's own steps are written as
// if nothing had been linked — each sender with its rows — and the commands travel as rows do.
//
// The pure pieces are here; the runtime (runtime.ts, `linkSteps`) decides which receivers may take
// part (owned shard, not blocked or quarantined, not waiting on a younger batch) and prepares them.
import { outboxRowIdOf, outboxTopicCommandBatches } from './actor-step.ts';
import type { PreparedStep, PreparedWrite } from './actor-step.ts';
import { actorId, type CommandEnvelope, type ReadModelWrite } from './envelope.ts';
import type { OutboxRowWrite } from './actor-store.ts';

/** Rounds of linking per batch: the acceptance saga needs four (accept, claim and reserve, answers, consume). */
export const linkRoundsMax = 6;

/** The commands a step's write sends to other actors (its command-batch rows), in order. */
export function commandsSentBy(step: PreparedWrite): CommandEnvelope[] {
  const sent: CommandEnvelope[] = [];
  for (const row of step.outboxRows) {
    if (row.topic !== outboxTopicCommandBatches || !Array.isArray(row.payload)) continue;
    for (const item of row.payload) sent.push(item as unknown as CommandEnvelope);
  }
  return sent;
}

/** Commands grouped by receiving actor id, each group in send order; receivers in order of first send. */
export function byReceiver(commands: readonly CommandEnvelope[], idOf: (command: CommandEnvelope) => string): Map<string, CommandEnvelope[]> {
  const groups = new Map<string, CommandEnvelope[]>();
  for (const command of commands) {
    const id = idOf(command);
    const group = groups.get(id);
    if (group === undefined) groups.set(id, [command]);
    else group.push(command);
  }
  return groups;
}

/** A linked command's key: its receiver and its id (two senders' derived ids could meet). */
export function linkedKey(command: CommandEnvelope): string {
  return `${actorId(command.actorType, command.actorKey)}\u0000${command.commandId}`;
}

/**
 * The step without the commands that were linked (applied by their receivers in the same commit):
 * its command-batch rows keep the others, and a row left with none is not written at all.
 */
export function withoutLinked(step: PreparedWrite, linked: ReadonlySet<string>): PreparedWrite {
  let trimmed = false;
  const outboxRows: OutboxRowWrite[] = [];
  for (const row of step.outboxRows) {
    if (row.topic !== outboxTopicCommandBatches || !Array.isArray(row.payload)) {
      outboxRows.push(row);
      continue;
    }
    const kept = row.payload.filter((item) => !linked.has(linkedKey(item as unknown as CommandEnvelope)));
    if (kept.length === row.payload.length) outboxRows.push(row);
    else {
      trimmed = true;
      if (kept.length > 0) outboxRows.push({ ...row, payload: kept });
    }
  }
  if (!trimmed) return step;
  const renumbered = numbered(step, outboxRows);
  return { ...step, outboxRows: renumbered, commit: { ...step.commit, outbox: renumbered } };
}

/**
 * One write for two steps of an actor in the same batch: `after`, prepared on `before` as its
 * base, folded into `before`'s version. The actor is then written once per commit however many
 * steps it took (a transaction's acceptance and the answers to it; a quote's claim and consume):
 * the later state, every applied command, both steps' rows and replies, the read models with the
 * later one winning, the later timer and parts where the later step changed them.
 */
export function mergedSteps(before: PreparedWrite, after: PreparedWrite): PreparedWrite {
  const readModels = new Map<string, ReadModelWrite>();
  for (const model of [...before.commit.readModels, ...after.commit.readModels]) readModels.set(`${model.collection}\u0000${model.id}`, model);
  const outboxRows = numbered(before, [...before.outboxRows, ...after.outboxRows]);
  return {
    ...before,
    commit: {
      ...before.commit,
      state: after.commit.state,
      appliedCommands: [...before.commit.appliedCommands, ...after.commit.appliedCommands],
      outbox: outboxRows,
      readModels: [...readModels.values()],
    },
    state: after.state,
    timerAtMs: after.timerAtMs === undefined ? before.timerAtMs : after.timerAtMs,
    // A timer the first step refused (still wanted) is moot if the later step changed the timer.
    refusedTimerAtMs: after.refusedTimerAtMs ?? (after.timerAtMs === undefined ? before.refusedTimerAtMs : null),
    replies: [...before.replies, ...after.replies],
    outboxRows,
    parts: after.parts === undefined ? before.parts : after.parts,
  };
}

/** Rows as the step's write numbers them: `<actor>:<new version>:<index>`, by position. */
function numbered(step: PreparedWrite, rows: readonly OutboxRowWrite[]): OutboxRowWrite[] {
  return rows.map((row, index) => ({ ...row, id: outboxRowIdOf(step.actor.id, step.commit.newVersion, index) }));
}

/** What `linkSteps` needs of the runtime. */
export interface LinkHost {
  /** Whether actor `id` may receive `command` as a linked step at all: its type is known, its shard linkable now, it is neither blocked nor quarantined. */
  mayReceive(command: CommandEnvelope, id: string): boolean;
  /** The ordinal of the batch that queued the actor's lane last, or null when no work is queued there. */
  laneBatch(id: string): number | null;
  /** Queues this batch on the actor's lane; settles once the work queued there before has. */
  joinLane(id: string): Promise<void> | undefined;
  /** The receiver's step after `before` (its step in this batch, if any), or null when it cannot take part. */
  prepare(id: string, commands: readonly CommandEnvelope[], before: PreparedWrite | undefined): Promise<PreparedWrite | null>;
}

/**
 * Links, round after round, the commands the batch's own steps send to actors that may receive
 * them now: each receiver's step is prepared in this batch (after the step of the same actor it
 * follows, if any), to be written in the same all-or-nothing commit. A receiver takes part only if
 * its lane is free, held by this batch, or held by an OLDER batch: an older batch never waits on a
 * younger one, so no two batches can wait on each other in a circle. A receiver whose step cannot
 * be prepared, or writes nothing, is left out, and its commands stay in their rows.
 */
export async function linkSteps(
  host: LinkHost,
  own: ReadonlyArray<{ readonly id: string; readonly step: PreparedStep | undefined }>,
  batch: number,
): Promise<{ writes: PreparedWrite[]; linked: Set<string> }> {
  /** Each actor's one write so far: its own step, or its steps merged (`mergedSteps`). */
  const latest = new Map<string, PreparedWrite>();
  /** Actors whose lane this batch holds. */
  const held = new Set<string>();
  /**
   * Receivers left out, for the rest of the batch: a command for one stays in its row, so a later
   * command of the same batch for it must too, or it could overtake that one (a `release` applied
   * before the `reserve` it follows).
   */
  const refused = new Set<string>();
  for (const { id, step } of own) {
    held.add(id);
    if (step?.kind === 'write') latest.set(id, step);
    else if (step?.kind !== 'done' || step.outcome.kind !== 'applied') refused.add(id);
  }
  const mayLink = (command: CommandEnvelope): boolean => {
    const id = actorId(command.actorType, command.actorKey);
    if (refused.has(id)) return false;
    const laneBatch = host.laneBatch(id);
    const may = host.mayReceive(command, id) && (held.has(id) || laneBatch === null || laneBatch < batch);
    if (!may) refused.add(id);
    return may;
  };
  /** The linked commands (`linkedKey`). */
  const linked = new Set<string>();
  let senders = [...latest.values()];
  for (let round = 0; round < linkRoundsMax && senders.length > 0; round += 1) {
    const groups = byReceiver(senders.flatMap(commandsSentBy).filter(mayLink), (command) => actorId(command.actorType, command.actorKey));
    const prepared = await Promise.all([...groups].map(async ([id, commands]) => {
      if (!held.has(id)) {
        held.add(id);
        await host.joinLane(id);
        // Asked again after the wait: the older batch may have blocked or quarantined the
        // receiver (its write refused, a command faulted), or a shard may be recovering now.
        if (!commands.every((command) => host.mayReceive(command, id))) return { id, commands, step: null };
      }
      return { id, commands, step: await host.prepare(id, commands, latest.get(id)) };
    }));
    senders = [];
    for (const { id, commands, step } of prepared) {
      if (step === null) {
        refused.add(id);
        continue;
      }
      for (const command of commands) linked.add(linkedKey(command));
      const before = latest.get(id);
      latest.set(id, before === undefined ? step : mergedSteps(before, step));
      // Only this step's sends are new (the earlier step's were linked, or left, already).
      senders.push(step);
    }
  }
  return { writes: [...latest.values()], linked };
}
