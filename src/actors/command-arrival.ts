// What a batch of stream entries holds, sorted on arrival (runtime.ts, `applyBatch`): each entry's
// envelopes decoded (one, or a batch of them in one entry: codec.ts; a local entry's as they came
// from the sending write, local-entry.ts) and their payloads checked
// against their actor type's command map, grouped by actor in stream order (an entry's commands
// in their order within it). A stream entry is untrusted input: one that does not decode, names no known actor type
// or carries a kind or payload its map refuses is set apart (acknowledged and dropped by the
// runtime, its asker answered at once) and never reaches the actor, nor activates it. Pure.
import type { BusEntry } from '../bus/bus.ts';
import { batchRequestsMax } from '../bus/request-reply.ts';
import { decodeEntryEnvelopes } from './codec.ts';
import { decodeArrived } from './commands.ts';
import { isLocalEntry } from './local-entry.ts';
import {
  actorId,
  malformedCommandCode,
  type AnyActorBehavior,
  type CommandEnvelope,
  type CommandPayloads,
  type Decoded,
  type JsonValue,
  type MalformedCommandReply,
  type TypedCommand,
} from './envelope.ts';
import { replayCommandKind } from './quarantine.ts';

/** A command as `handle` receives it: its payload decoded by the actor type's map. */
export type ArrivedCommand = TypedCommand<CommandPayloads>;

export interface MalformedArrival {
  readonly entry: BusEntry;
  /** Null when the entry is not an envelope of a known actor type at all. */
  readonly command: CommandEnvelope | null;
  readonly reason: string;
}

export interface SortedArrivals {
  /** Per actor id, its commands in stream order. An entry of several commands appears once per command. */
  readonly byActor: Map<string, Array<{ entry: BusEntry; command: CommandEnvelope }>>;
  /** The decoded form of each command of `byActor`, as `handle` gets it. */
  readonly decoded: Map<CommandEnvelope, ArrivedCommand>;
  readonly malformed: MalformedArrival[];
}

export function sortArrivals(entries: readonly BusEntry[], behaviors: ReadonlyMap<string, AnyActorBehavior>): SortedArrivals {
  const byActor = new Map<string, Array<{ entry: BusEntry; command: CommandEnvelope }>>();
  const decoded = new Map<CommandEnvelope, ArrivedCommand>();
  const malformed: MalformedArrival[] = [];
  for (const entry of entries) {
    // A local entry carries its envelopes as its sender's outbox row holds them (local-entry.ts).
    const commands = isLocalEntry(entry) ? entry.envelopes : decodeEntryEnvelopes(entry.payload);
    if (commands === null) {
      malformed.push({ entry, command: null, reason: `not a command envelope, nor a batch of 1 to ${batchRequestsMax} of them` });
      continue;
    }
    for (const command of commands) {
      const behavior = command === null ? undefined : behaviors.get(command.actorType);
      if (command === null || behavior === undefined) {
        malformed.push({ entry, command: null, reason: 'not a command envelope of a known actor type' });
        continue;
      }
      const typed = decodeCommand(behavior, command);
      if (!typed.ok) {
        malformed.push({ entry, command, reason: typed.reason });
        continue;
      }
      decoded.set(command, typed.value);
      const id = actorId(command.actorType, command.actorKey);
      const list = byActor.get(id);
      if (list === undefined) byActor.set(id, [{ entry, command }]);
      else list.push({ entry, command });
    }
  }
  return { byActor, decoded, malformed };
}

/** The runtime's own `replay` command passes to the quarantine unchanged; every other is decoded. */
export function decodeCommand(behavior: AnyActorBehavior, command: CommandEnvelope): Decoded<ArrivedCommand> {
  return command.kind === replayCommandKind ? { ok: true, value: command } : decodeArrived(behavior, command);
}

/** The answer a sender waiting on a malformed command gets at once. */
export function malformedReply(reason: string): JsonValue {
  const reply: MalformedCommandReply = { ok: false, code: malformedCommandCode, reason };
  return { ...reply };
}
