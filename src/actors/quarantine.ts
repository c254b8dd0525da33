// Quarantine: an actor that cannot be applied is set aside, not retried forever. When decoding an
// actor's snapshot or handling one of its commands throws (a bug, or a state an older release
// wrote), that is the actor's fault, not the infrastructure's: retrying it changes nothing, and
// while its entries stayed pending the shard's recovery re-read them in a loop and no other actor
// of the worker was served. Now the actor is quarantined: the command that failed and every later
// command of that actor are dead-lettered (kept durably, in order, with the error) and
// acknowledged, one error line names the actor, and the shard goes on with everyone else.
//
// An operator lists and inspects quarantined actors (the admin service), deploys the fix, and asks
// for a replay: a `runtime.replay` command on the actor's own stream, so it is applied in stream
// order. The runtime reloads the actor from its snapshot and applies the dead letters, then the
// commands after them, as one ordinary durable write that also removes the dead letters and the
// quarantine record. If it fails again, the actor stays quarantined with the new error.
//
// Failures of the store or the bus (a load, a dedupe lookup, a commit that throws) are not the
// actor's fault: those entries stay pending and are retried, as before.
import { randomUUID } from 'node:crypto';
import type { Bus } from '../bus/bus.ts';
import { commandStreamKey, shardOf } from '../bus/shards.ts';
import type { JsonObject, ReadModelIndex, SnapshotStore } from '../store/store.ts';
import { encodeEnvelope, envelopeFromJson } from './codec.ts';
import type { CommandEnvelope, JsonValue } from './envelope.ts';

export const quarantinedActorsCollection = 'quarantined_actors';
export const deadLettersCollection = 'dead_letters';
/** The runtime's own command: apply a quarantined actor's dead letters again. */
export const replayCommandKind = 'runtime.replay';
/** Longest error text kept (the message of the first line, never a stack). */
const errorCharsMax = 500;
/** Dead letters applied by one replay (one store page); a longer backlog is replayed by asking again. */
export const replayDeadLettersMax = 1_000;

export const quarantineReadModelIndexes: readonly ReadModelIndex[] = [
  { collection: quarantinedActorsCollection, name: 'by_shard_since', equal: ['shard'], orderBy: 'sinceMs' },
  { collection: deadLettersCollection, name: 'by_actor_order', equal: ['actorId'], orderBy: 'order' },
];

/** Thrown (wrapping the cause) when decoding an actor's snapshot or handling its command fails. */
export class ActorFault extends Error {
  override readonly name = 'ActorFault';
  constructor(
    readonly phase: 'decode' | 'handle',
    readonly actorId: string,
    cause: unknown,
  ) {
    super(`${phase === 'decode' ? 'decoding the snapshot' : 'handling a command'} of ${actorId} failed: ${errorText(cause)}`);
  }
}

export function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const firstLine = text.split('\n', 1)[0] ?? '';
  return firstLine.length > errorCharsMax ? `${firstLine.slice(0, errorCharsMax - 1)}…` : firstLine;
}

export interface DeadLetter {
  /** Sorts the actor's dead letters in the order their commands arrived. */
  readonly order: string;
  readonly commandId: string;
  readonly kind: string;
  readonly atMs: number;
  /** The command as it was on the stream (its payload is not shown by the admin service). */
  readonly envelope: CommandEnvelope;
}

export interface QuarantineRecord {
  readonly actorId: string;
  readonly shard: number;
  readonly error: string;
  readonly sinceMs: number;
  readonly lastErrorAtMs: number;
}

/** What the runtime needs from the store to quarantine, list and release actors. */
export interface QuarantineStore {
  /** Records (or refreshes) the quarantine and writes the dead letters; idempotent per order. */
  quarantine(record: QuarantineRecord, letters: readonly DeadLetter[]): Promise<void>;
  /** The quarantined actors of a shard (loaded when the worker takes the shard). */
  quarantinedOf(shard: number, limit: number): Promise<QuarantineRecord[]>;
  deadLetters(actorId: string, limit: number): Promise<DeadLetter[]>;
  /** The actor's quarantine record, or null (read when a replay is asked for). */
  record(actorId: string): Promise<QuarantineRecord | null>;
}

function deadLetterId(actorId: string, order: string): string {
  // Actor ids are at most 256 bytes; the order keeps ids unique and short enough.
  return `${order}|${actorId}`.slice(0, 256);
}

/** The read-model writes that release an actor once its dead letters were applied. */
export function releaseWrites(actorId: string, letters: readonly DeadLetter[]): Array<{ collection: string; id: string; doc: null }> {
  return [
    ...letters.map((letter) => ({ collection: deadLettersCollection, id: deadLetterId(actorId, letter.order), doc: null })),
    { collection: quarantinedActorsCollection, id: actorId, doc: null },
  ];
}

export function quarantineOnStore(store: Pick<SnapshotStore, 'get' | 'put' | 'list'>): QuarantineStore {
  return {
    async quarantine(record, letters) {
      for (const letter of letters) {
        await store.put(deadLettersCollection, deadLetterId(record.actorId, letter.order), {
          actorId: record.actorId,
          order: letter.order,
          commandId: letter.commandId,
          kind: letter.kind,
          atMs: letter.atMs,
          envelope: letter.envelope,
        });
      }
      await store.put(quarantinedActorsCollection, record.actorId, { ...record });
    },
    async quarantinedOf(shard, limit) {
      const page = await store.list(quarantinedActorsCollection, { where: { shard }, orderBy: 'sinceMs', limit });
      return page.items.map((item) => recordOf(item.doc));
    },
    deadLetters: (actorId, limit) => listDeadLetters(store, actorId, limit),
    async record(actorId) {
      const doc = await store.get(quarantinedActorsCollection, actorId);
      return doc === null ? null : recordOf(doc);
    },
  };
}

/** An actor's dead letters, oldest first (at most `limit`, itself at most the store's page size). */
export async function listDeadLetters(store: Pick<SnapshotStore, 'list'>, actorId: string, limit: number): Promise<DeadLetter[]> {
  const page = await store.list(deadLettersCollection, { where: { actorId }, orderBy: 'order', direction: 'asc', limit });
  return page.items.map((item) => deadLetterOf(item.doc));
}

function deadLetterOf(doc: JsonObject): DeadLetter {
  return {
    order: String(doc['order']),
    commandId: String(doc['commandId']),
    kind: String(doc['kind']),
    atMs: Number(doc['atMs']),
    envelope: envelopeOf(doc['envelope']),
  };
}

function envelopeOf(json: JsonValue | undefined): CommandEnvelope {
  const envelope = envelopeFromJson(json);
  // Written from an envelope (`quarantine`): anything else is a corrupt store, refused loudly.
  if (envelope === null) throw new Error('dead letter: the stored command is not a command envelope');
  return envelope;
}

// ---------------------------------------------------------------------------------------------
// For operators (the admin service): list, inspect, replay.

export interface QuarantineSummary extends QuarantineRecord {
  readonly deadLetters: ReadonlyArray<{ readonly order: string; readonly commandId: string; readonly kind: string; readonly atMs: number }>;
}

export async function listQuarantined(store: Pick<SnapshotStore, 'list'>, limit: number): Promise<QuarantineRecord[]> {
  const page = await store.list(quarantinedActorsCollection, { limit });
  return page.items.map((item) => recordOf(item.doc));
}

/** The quarantine of one actor and its dead letters (kinds and ids, never payloads); null if none. */
export async function quarantineDetail(store: Pick<SnapshotStore, 'get' | 'list'>, actorId: string, lettersMax: number): Promise<QuarantineSummary | null> {
  const doc = await store.get(quarantinedActorsCollection, actorId);
  if (doc === null) return null;
  const letters = await listDeadLetters(store, actorId, lettersMax);
  return {
    ...recordOf(doc),
    deadLetters: letters.map((letter) => ({ order: letter.order, commandId: letter.commandId, kind: letter.kind, atMs: letter.atMs })),
  };
}

function recordOf(doc: JsonObject): QuarantineRecord {
  return {
    actorId: String(doc['actorId']),
    shard: Number(doc['shard']),
    error: String(doc['error']),
    sinceMs: Number(doc['sinceMs']),
    lastErrorAtMs: Number(doc['lastErrorAtMs']),
  };
}

/** Where a replay request goes: the actor's own shard stream, so it is applied in stream order. */
export interface ReplayTarget {
  readonly bus: Pick<Bus, 'append'>;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly nowMs: number;
}

/** Asks the actor's owner to apply its dead letters again (after the fix is deployed). */
export async function requestReplay(target: ReplayTarget, actorId: string): Promise<void> {
  const slash = actorId.indexOf('/');
  if (slash <= 0 || slash === actorId.length - 1) throw new RangeError(`not an actor id (type/key): ${actorId}`);
  const envelope: CommandEnvelope = {
    commandId: `replay:${randomUUID()}`,
    actorType: actorId.slice(0, slash),
    actorKey: actorId.slice(slash + 1),
    kind: replayCommandKind,
    payload: null,
    sentAtMs: target.nowMs,
  };
  await target.bus.append(commandStreamKey(target.keyPrefix, shardOf(actorId, target.shardCount)), encodeEnvelope(envelope), {});
}
