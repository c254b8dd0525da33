// An actor whose state is kept partly in records of its own (src/actors/actor-parts.ts), with the
// in-process bus and the embedded store: each write writes only the parts that changed, in the same
// commit as the snapshot; a reactivated actor gets its parts back; a snapshot of an earlier format
// (naming no parts) has all its parts written at its first write; a part gone missing quarantines
// the actor instead of loading a state that lost entries.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shardOf } from '../../src/bus/shards.ts';
import { actorPartId, actorPartsCollection } from '../../src/actors/actor-parts.ts';
import type { ActorBehavior, JsonValue } from '../../src/actors/envelope.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import type { BatchCommitResult, CommitWrite } from '../../src/store/store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { startTestRuntime, type TestRuntime } from '../support/test-runtime.ts';

/** Four shelves of items; each non-empty shelf is a part (its items, one per line). */
type Shelves = readonly (readonly string[])[];
const shelfCount = 4;

// The texts of a state's shelves, kept per shelf array: an unchanged shelf gives the same string.
const shelfTexts = new WeakMap<readonly string[], string>();
function shelfText(shelf: readonly string[]): string {
  let text = shelfTexts.get(shelf);
  if (text === undefined) {
    text = shelf.join('\n');
    shelfTexts.set(shelf, text);
  }
  return text;
}

function shelfBehavior(): ActorBehavior<Shelves> {
  const empty: Shelves = Array.from({ length: shelfCount }, () => []);
  return {
    type: 'shelf',
    encode: (state) => ({ sizes: state.map((shelf) => shelf.length) }),
    // Only the earlier format (every shelf in the snapshot) decodes without parts.
    decode: (json) => (json as { inline: string[][] }).inline,
    parts: {
      of: (state) => state.map(shelfText),
      named(json) {
        const sizes = (json as { sizes?: number[] }).sizes;
        return sizes === undefined ? [] : sizes.flatMap((size, index) => (size > 0 ? [index] : []));
      },
      decode(json, parts) {
        const { sizes, inline } = json as { sizes?: number[]; inline?: string[][] };
        if (sizes === undefined) return inline ?? empty;
        return sizes.map((size, index) => {
          if (size === 0) return [];
          const text = parts.get(index);
          if (text === undefined) throw new Error(`shelf ${index} has no part`);
          const shelf = text.split('\n');
          if (shelf.length !== size) throw new Error(`shelf ${index} holds ${shelf.length} items, the snapshot says ${size}`);
          shelfTexts.set(shelf, text);
          return shelf;
        });
      },
    },
    handle(state, command) {
      const current = state ?? empty;
      const { shelf, item } = command.payload as { shelf: number; item?: string };
      if (command.kind === 'get') return { reply: current.map((items) => [...items]) };
      const next = current.slice();
      next[shelf] = command.kind === 'put' ? [...(current[shelf] ?? []), item ?? ''] : [];
      return { state: next, reply: 'ok' };
    },
  };
}

/** The embedded store, noting the part records each commit writes. */
class WatchedStore extends LmdbStore {
  readonly partWrites: string[][] = [];
  override commitBatch(writes: readonly CommitWrite[]): Promise<BatchCommitResult[]> {
    for (const write of writes) {
      if (write.actorKey.startsWith('shelf/')) this.partWrites.push(write.readModels.filter((model) => model.collection === actorPartsCollection).map((model) => model.id));
    }
    return super.commitBatch(writes);
  }
}

let dir: string;
let store: WatchedStore;
let runtime: TestRuntime | undefined;
const keyPrefix = 'parts:';
const shardCount = 4;
const logged: Array<{ level: string; message: string; fields: Record<string, unknown> | undefined }> = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'actor-parts-'));
  store = new WatchedStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  // An actor written by a release before parts: every shelf inline in its snapshot.
  const legacy = await store.commit({
    actorKey: 'shelf/legacy',
    expectedVersion: 0,
    newVersion: 1,
    state: { inline: [['a', 'b'], [], ['c'], []] },
    fence: { shard: shardOf('shelf/legacy', shardCount), token: 0 },
    appliedCommands: [],
    outbox: [],
    readModels: [],
  });
  assert.equal(legacy, 'ok');
  runtime = await startTestRuntime({ store, behaviors: [shelfBehavior()], keyPrefix, shardCount, log: (level, message, fields) => logged.push({ level, message, fields }) });
});

after(() => teardown(
  () => runtime?.stop(),
  () => store?.close(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

function live(): TestRuntime {
  assert.ok(runtime !== undefined);
  return runtime;
}
const passivate = (): number => live().role.runtime.passivateIdle(-1);
const put = (key: string, shelf: number, item: string): Promise<unknown> => live().client.ask('shelf', key, 'put', { shelf, item });
const get = (key: string): Promise<JsonValue> => live().client.ask('shelf', key, 'get', { shelf: 0 });
const partId = (key: string, shelf: number): string => actorPartId(`shelf/${key}`, shelf);

test('a write writes the parts that changed, in the same commit as the snapshot; the snapshot stays small', async () => {
  const from = store.partWrites.length;
  await put('s1', 0, 'apple');
  await put('s1', 2, 'pear');
  await put('s1', 2, 'plum');
  assert.deepEqual(store.partWrites.slice(from), [[partId('s1', 0)], [partId('s1', 2)], [partId('s1', 2)]], 'one part per write: the one that changed');
  assert.deepEqual(await store.get(actorPartsCollection, partId('s1', 2)), { text: 'pear\nplum' });
  assert.equal(await store.get(actorPartsCollection, partId('s1', 1)), null, 'an empty shelf has no record');
  assert.deepEqual((await store.load('shelf/s1'))?.state, { sizes: [1, 0, 2, 0] });
});

test('an actor that left memory comes back with its parts; a part emptied is deleted', async () => {
  await put('s2', 1, 'fig');
  await put('s2', 3, 'kiwi');
  passivate();
  assert.deepEqual(await get('s2'), [[], ['fig'], [], ['kiwi']]);
  const from = store.partWrites.length;
  await live().client.ask('shelf', 's2', 'clear', { shelf: 1 });
  assert.deepEqual(store.partWrites.slice(from), [[partId('s2', 1)]]);
  assert.equal(await store.get(actorPartsCollection, partId('s2', 1)), null, 'deleted with the write that emptied it');
  passivate();
  await put('s2', 3, 'lime');
  assert.deepEqual(await get('s2'), [[], [], [], ['kiwi', 'lime']]);
});

test('a snapshot of the earlier format (naming no parts) has every non-empty part written at its first write', async () => {
  assert.deepEqual(await get('legacy'), [['a', 'b'], [], ['c'], []], 'read as it was written');
  const from = store.partWrites.length;
  await put('legacy', 3, 'd');
  assert.deepEqual(store.partWrites.slice(from), [[partId('legacy', 0), partId('legacy', 2), partId('legacy', 3)]]);
  passivate();
  assert.deepEqual(await get('legacy'), [['a', 'b'], [], ['c'], ['d']], 'loaded from its parts now');
});

test('a part record gone missing quarantines the actor: its commands are set aside, not applied to a state without it', async () => {
  await put('s3', 0, 'one');
  await put('s3', 1, 'two');
  passivate();
  assert.equal(await store.remove(actorPartsCollection, partId('s3', 1)), true);
  await live().client.tell('shelf', 's3', 'put', { shelf: 0, item: 'three' }, 'put-after-loss');
  await eventually(async () => assert.ok(logged.some((line) => line.message.startsWith('actor quarantined') && line.fields?.['actorId'] === 'shelf/s3')));
  assert.match(String(logged.find((line) => line.fields?.['actorId'] === 'shelf/s3')?.fields?.['error']), /actor part shelf\/s3#1 is missing/);
  assert.deepEqual((await store.load('shelf/s3'))?.state, { sizes: [1, 1, 0, 0] }, 'nothing written');
});
