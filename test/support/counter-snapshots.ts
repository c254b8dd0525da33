// A limit counter as a store keeps it: its snapshot and its parts (one record per non-empty
// bucket, src/actors/actor-parts.ts), through JSON text, and loaded back as the runtime loads it.
import { counterPartNames, counterParts, decodeCounter, encodeCounter, type CounterDecodeMemo } from '../../src/actors/counter-actor.ts';
import type { JsonValue } from '../../src/actors/envelope.ts';
import type { CounterState } from '../../src/domain/limits.ts';
import { actorPartId, actorPartsCollection } from '../../src/actors/actor-parts.ts';
import type { SnapshotStore } from '../../src/store/store.ts';

export interface StoredCounter {
  readonly head: JsonValue;
  readonly parts: Map<number, string>;
}

export function storedCounter(state: CounterState): StoredCounter {
  const head = JSON.parse(JSON.stringify(encodeCounter(state))) as JsonValue;
  const texts = counterParts(state);
  // Only the parts the snapshot names have records.
  const parts = new Map(counterPartNames(head).map((index) => [index, `${texts[index] ?? ''}`]));
  return { head, parts };
}

export function loadCounter(stored: StoredCounter, memo?: CounterDecodeMemo): CounterState {
  return decodeCounter(stored.head, stored.parts, memo);
}

/** A format-3 snapshot of the counter (every bucket's lines in the snapshot), as the previous release wrote it. */
export function formatThree(state: CounterState): JsonValue {
  const { bucketSizes: _sizes, ...totals } = encodeCounter(state) as Record<string, JsonValue>;
  return JSON.parse(JSON.stringify({ ...totals, bucketLines: [...counterParts(state)] })) as JsonValue;
}

/** Every entry line of a counter as the store holds it (its snapshot and the parts it names); null when not written. */
export async function storedCounterLines(store: Pick<SnapshotStore, 'load' | 'get'>, id: string): Promise<string | null> {
  const snapshot = await store.load(id);
  if (snapshot === null || snapshot.state === null) return null;
  const texts = await Promise.all(counterPartNames(snapshot.state).map(async (index) => String((await store.get(actorPartsCollection, actorPartId(id, index)))?.['text'])));
  return texts.join('\n');
}
