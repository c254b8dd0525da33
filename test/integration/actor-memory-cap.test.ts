// A shard worker keeps its actors within a byte budget, not only a count: actors with large states
// leave memory (least recently used first) once their estimated bytes pass the cap, and come back
// from their snapshots unchanged when asked again. What a partner would notice is the second half:
// nothing an actor held is lost when memory is tight; an operator sees the first in /metrics.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { Requester } from '../../src/bus/request-reply.ts';
import { replyStreamKey } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { shardMetrics } from '../../src/service/role-metrics.ts';
import { teardown } from '../support/teardown.ts';
import { eventually } from '../support/eventually.ts';

/** An actor that keeps the notes it is given (its state grows with them) and reads them back. */
function notebookBehavior(): ActorBehavior<{ readonly notes: readonly string[] }> {
  return {
    type: 'notebook',
    encode: (state) => ({ notes: [...state.notes] }),
    decode: (json) => ({ notes: (json as { notes: string[] }).notes }),
    handle(state, command) {
      if (command.kind === 'read') return { reply: { notes: state?.notes.length ?? 0, last: state?.notes.at(-1) ?? null } };
      const notes = [...(state?.notes ?? []), (command.payload as { note: string }).note];
      return { state: { notes }, reply: { notes: notes.length } };
    },
  };
}

const keyPrefix = 'mem:';
const bytesMax = 200_000;
let dir: string;
let store: LmdbStore;
let bus: MemoryBus;
let role: ShardRole;
let requester: Requester;
let client: ActorClient;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'actor-memory-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  bus = new MemoryBus();
  role = await startShardRole({
    bus,
    leases: new MemoryLeases(),
    store,
    behaviors: [notebookBehavior()] as unknown as Array<ActorBehavior<unknown>>,
    workerId: 'w1',
    keyPrefix,
    shardCount: 2,
    clock: { nowMs: () => Date.now() },
    readBlockMs: 100,
    actorBytesInMemoryMax: bytesMax,
  });
  requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, 'client'), blockMs: 100 });
  client = new ActorClient({ bus, requester, keyPrefix, shardCount: 2, nowMs: () => Date.now() });
});

after(() => teardown(
  () => requester?.close(),
  () => role?.stop(),
  () => bus?.close(),
  () => store?.close(),
  () => { rmSync(dir, { recursive: true, force: true }); },
));

test('actors past the byte cap leave memory (far fewer than the count cap) and come back whole from their snapshots', async () => {
  const note = (index: number): string => `note ${index} `.padEnd(8_000, '.');
  for (let index = 0; index < 60; index += 1) {
    assert.deepEqual(await client.ask('notebook', `n${index}`, 'add', { note: note(index) }), { notes: 1 });
    // The worker passivates once a batch's replies are out: the cap holds after each batch.
    await eventually(() => {
      const { estimated, max } = role.runtime.actorBytes();
      assert.equal(max, bytesMax);
      assert.ok(estimated <= bytesMax, `after ${index + 1} actors: ${estimated} estimated bytes within the cap`);
    });
  }
  const kept = role.runtime.actorCount();
  assert.ok(kept < 30, `60 actors of about 8 kB each, a 200 kB cap: ${kept} kept in memory`);
  // Every notebook, in memory or not, answers with what it was given.
  for (let index = 0; index < 60; index += 1) {
    assert.deepEqual(await client.ask('notebook', `n${index}`, 'read', null), { notes: 1, last: note(index) });
  }
  const metrics = shardMetrics(role.runtime).map((family) => family.name);
  assert.ok(metrics.includes('shard_actor_bytes_in_memory') && metrics.includes('shard_actor_bytes_in_memory_max'));
});
