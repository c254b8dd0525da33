// Actor state kept in records of its own beside the snapshot ("parts"). An actor's snapshot is
// written whole on every write, and the store's version check reads it whole; for an actor whose
// state grows with the traffic it takes (the service-wide method × day limit counter holds every
// acceptance of the day in flight) that made each write cost the whole day (bench/README.md,
// "hot-accept"). Such an actor's behavior splits its state into a small head (the snapshot) and
// numbered parts (texts). The runtime writes a part as a read-model record in the same commit as
// the head, only when its text changed since the actor's last durable write, and loads the parts
// the head names when it activates the actor. A head and its parts are written atomically (one
// commit), so a loaded head always finds the parts it was written with.
//
// A part that is empty ('') has no record: a part that becomes empty is deleted. Retention never
// deletes an actor with parts (only quotes are deleted); an actor deleted and written anew would
// start from no parts and write every part it names, so an orphaned record is never read.
import { createHash } from 'node:crypto';
import { identifierBytesMax, type ActorSnapshot } from '../store/store.ts';
import type { AnyActorBehavior, JsonValue, ReadModelWrite } from './envelope.ts';
import { ActorFault } from './quarantine.ts';

export type { ActorParts } from './envelope.ts';

type JsonObject = { [key: string]: JsonValue };
/** A part's record as read (null: none). */
export type PartDoc = JsonObject | null;

/** The read-model collection of actors' parts: one document `{ text }` per non-empty part. */
export const actorPartsCollection = 'actor_parts';

/**
 * The record id of an actor's part: `<actor id>#<index>`, readable by an operator; or, when that
 * would pass the store's identifier bound (an actor id of up to 256 bytes was valid before parts,
 * e.g. a user's counter with a long user id), `#<sha-256 of the actor id>#<index>`, which always
 * fits (and, starting with `#`, never equals a readable one: actor ids start with their type).
 */
export function actorPartId(actorId: string, index: number): string {
  const readable = `${actorId}#${index}`;
  if (Buffer.byteLength(readable, 'utf8') <= identifierBytesMax) return readable;
  return `#${createHash('sha256').update(actorId).digest('hex')}#${index}`;
}

/** The part record's document for a text (null: no record). */
function partDoc(text: string): JsonObject | null {
  return text === '' ? null : { text };
}

/** A part record's text; a record of another shape is corrupt. */
export function partText(doc: JsonObject | null, id: string): string {
  if (doc === null) throw new Error(`actor part ${id} is missing`);
  const text = doc['text'];
  if (typeof text !== 'string' || text === '') throw new Error(`actor part ${id} holds no text`);
  return text;
}

/** The read-model writes that turn the stored parts into the wanted ones (the changed ones only). */
export function partWrites(actorId: string, stored: readonly string[], wanted: readonly string[]): ReadModelWrite[] {
  const writes: ReadModelWrite[] = [];
  const count = Math.max(stored.length, wanted.length);
  for (let index = 0; index < count; index += 1) {
    const text = wanted[index] ?? '';
    if (text !== (stored[index] ?? '')) writes.push({ collection: actorPartsCollection, id: actorPartId(actorId, index), doc: partDoc(text) });
  }
  return writes;
}

/** The stored parts as an array by index ('' where none), from those loaded. */
export function partsArray(loaded: ReadonlyMap<number, string>): string[] {
  const parts: string[] = [];
  for (const [index, text] of loaded) parts[index] = text;
  for (let index = 0; index < parts.length; index += 1) parts[index] ??= '';
  return parts;
}

/** The part records an actor's snapshot names (read once, when the actor is activated). */
export async function namedPartDocs(
  read: (partId: string) => Promise<PartDoc>,
  id: string,
  behavior: AnyActorBehavior,
  snapshot: ActorSnapshot | null,
): Promise<Map<number, PartDoc>> {
  const docs = new Map<number, PartDoc>();
  if (behavior.parts === undefined || snapshot === null || snapshot.state === null) return docs;
  let names: readonly number[];
  try {
    names = behavior.parts.named(snapshot.state);
  } catch (error) {
    throw new ActorFault('decode', id, error);
  }
  const loaded = await Promise.all(names.map((index) => read(actorPartId(id, index))));
  names.forEach((index, at) => docs.set(index, loaded[at] ?? null));
  return docs;
}
