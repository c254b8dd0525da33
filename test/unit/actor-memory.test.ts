// What actors in memory are estimated to cost and how the byte cap picks the ones that leave
// memory (src/actors/actor-memory.ts, src/actors/resident-actors.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { actorBytesCap, actorHeapShare, estimateJsonBytes } from '../../src/actors/actor-memory.ts';
import { ResidentActors } from '../../src/actors/resident-actors.ts';
import { activeActor, actorBytes } from '../../src/actors/actor-step.ts';
import { tallyBehavior } from '../support/tally-actor.ts';
import type { AnyActorBehavior } from '../../src/actors/envelope.ts';

const behavior = tallyBehavior() as unknown as AnyActorBehavior;

test('the estimate grows with what a state holds: longer strings, more elements, more properties', () => {
  assert.ok(estimateJsonBytes('x'.repeat(1_000)) > estimateJsonBytes('x'.repeat(10)) + 900);
  assert.ok(estimateJsonBytes([1, 2, 3, 4]) > estimateJsonBytes([1]));
  assert.ok(estimateJsonBytes({ a: 1, b: { c: 'd' } }) > estimateJsonBytes({ a: 1 }));
  assert.ok(estimateJsonBytes(null) > 0);
  // A remembered command costs memory too: the same state with more ids is bigger.
  assert.ok(actorBytes({ count: 1 }, 10) > actorBytes({ count: 1 }, 0));
});

test('the byte cap: configured bytes when set, else a share of the heap limit', () => {
  assert.equal(actorBytesCap(1_000_000_000), Math.floor(1_000_000_000 * actorHeapShare));
  assert.equal(actorBytesCap(1_000_000_000, 5_000_000), 5_000_000);
  assert.equal(actorBytesCap(1_000_000_000, Number.NaN), Math.floor(1_000_000_000 * actorHeapShare));
});

function actorOf(id: string, state: { count: number; commandIds: string[] }, lastUsedMs: number) {
  return activeActor(id, behavior, { version: 1, state }, lastUsedMs);
}

test('past the byte cap the least recently used leave memory (busy ones stay) until both count and bytes are at 90 %', () => {
  const resident = new ResidentActors();
  const big = { count: 1, commandIds: ['x'.repeat(10_000)] };
  for (let index = 0; index < 20; index += 1) resident.set(actorOf(`tally/a${index}`, big, index));
  const perActor = resident.bytes / 20;
  assert.ok(perActor > 10_000, 'a 10 kB state is counted');
  const caps = { actorsMax: 1_000, bytesMax: Math.floor(perActor * 10) };
  assert.equal(resident.overfull(caps), true);
  const dropped = resident.passivateLeastRecent(caps, (id) => id === 'tally/a0');
  assert.ok(resident.bytes <= caps.bytesMax * 0.9, `bytes ${resident.bytes} brought under 90 % of ${caps.bytesMax}`);
  assert.equal(resident.size, 20 - dropped);
  assert.ok(resident.get('tally/a0') !== undefined, 'the busy actor stays, old as it is');
  assert.equal(resident.get('tally/a1'), undefined, 'the least recently used went first');
  assert.ok(resident.get('tally/a19') !== undefined, 'the most recently used stayed');
});

test('the count cap still holds for small actors, and the total follows writes and removals exactly', () => {
  const resident = new ResidentActors();
  for (let index = 0; index < 50; index += 1) resident.set(actorOf(`tally/s${index}`, { count: 0, commandIds: [] }, index));
  resident.passivateLeastRecent({ actorsMax: 40, bytesMax: Number.MAX_SAFE_INTEGER }, () => false);
  assert.equal(resident.size, 36);
  const one = resident.get('tally/s49');
  assert.ok(one !== undefined);
  const before = resident.bytes;
  resident.resize(one, one.approxBytes + 1_000);
  assert.equal(resident.bytes, before + 1_000);
  resident.delete('tally/s49');
  resident.set(actorOf('tally/s49', { count: 0, commandIds: [] }, 99));
  resident.set(actorOf('tally/s49', { count: 0, commandIds: [] }, 100)); // replacing is not adding twice
  const sum = [...resident.values()].reduce((total, actor) => total + actor.approxBytes, 0);
  assert.equal(resident.bytes, sum);
  assert.equal(resident.passivateIdle(50, () => false), 35, 'idle passivation: every one last used before 50');
  assert.deepEqual([...resident.ids()], ['tally/s49']);
  assert.equal(resident.bytes, [...resident.values()].reduce((total, actor) => total + actor.approxBytes, 0));
});
