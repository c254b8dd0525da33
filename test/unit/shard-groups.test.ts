// Shard groups (src/bus/shard-groups.ts, src/bus/shards.ts) and the group-preferring share
// (src/actors/shard-share.ts). What an operator would notice: a worker's command streams on few
// Redis Cluster slots (one XREADGROUP per group), groups spread evenly over a cluster's masters,
// names every process derives alike from SHARDS, and a worker fleet that splits as few groups as
// the fair share allows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import calculateSlot from 'cluster-key-slot';
import { commandStreamKey, commandStreamKeys, legacyCommandStreamKey, shardOfCommandStream } from '../../src/bus/shards.ts';
import { shardGroupCount, shardGroupOf, shardGroupTag, shardsOfGroup, shardsPerGroup, vanDerCorput } from '../../src/bus/shard-groups.ts';
import { shardsToGiveBack, shardsToTake } from '../../src/actors/shard-share.ts';

const prefix = 'pay:';

/** The master (0-based) owning a slot when `masters` masters split 0..16383 as redis-cli does. */
function masterOf(slot: number, masters: number): number {
  for (let master = 0; master < masters; master += 1) {
    const end = Math.floor(((master + 1) * 16_384) / masters) - 1;
    if (slot <= end) return master;
  }
  return masters - 1;
}

test('a shard group is 8 consecutive shards, derived from the shard alone', () => {
  assert.equal(shardsPerGroup, 8);
  assert.deepEqual([0, 7, 8, 63].map(shardGroupOf), [0, 0, 1, 7]);
  assert.deepEqual(shardsOfGroup(1, 64), [8, 9, 10, 11, 12, 13, 14, 15]);
  assert.deepEqual(shardsOfGroup(2, 20), [16, 17, 18, 19]);
  assert.equal(shardGroupCount(64), 8);
  assert.equal(shardGroupCount(20), 3);
});

test('the streams of one group share one slot; different groups do not', () => {
  const streams = commandStreamKeys(prefix, 64);
  const slots = streams.map((stream) => calculateSlot(stream));
  for (let shard = 0; shard < 64; shard += 1) assert.equal(slots[shard], slots[shardGroupOf(shard) * 8], `shard ${shard}`);
  assert.equal(new Set(slots).size, 8);
  // The prefix is outside the hash tag: every deployment's group lands on the same slot.
  assert.equal(calculateSlot(commandStreamKey('other:', 9)), slots[9]);
});

test('stream names are fixed: a change would strand entries of a live deployment', () => {
  assert.equal(commandStreamKey(prefix, 0), 'pay:cmd:{g0.227}:0');
  assert.equal(commandStreamKey(prefix, 13), 'pay:cmd:{g1.241}:13');
  assert.equal(commandStreamKey(prefix, 63), 'pay:cmd:{g7.34}:63');
  assert.equal(legacyCommandStreamKey(prefix, 13), 'pay:cmd:{13}');
});

test('shardOfCommandStream reads new and old names, and refuses a name with another group tag', () => {
  for (const shard of [0, 9, 63, 700]) {
    assert.equal(shardOfCommandStream(prefix, commandStreamKey(prefix, shard)), shard);
    assert.equal(shardOfCommandStream(prefix, legacyCommandStreamKey(prefix, shard)), shard);
  }
  assert.equal(shardOfCommandStream(prefix, `pay:cmd:{${shardGroupTag(0)}}:9`), null);
  assert.equal(shardOfCommandStream(prefix, 'pay:cmd:{g1.241}:x'), null);
  assert.equal(shardOfCommandStream(prefix, 'pay:cmd:{g1.241}13'), null);
  assert.equal(shardOfCommandStream(prefix, 'pay:reply:{edge}'), null);
  assert.equal(shardOfCommandStream(prefix, 'pay:cmd:{01}'), null);
});

test('groups spread over the slot space: balanced on 3 to 8 masters from 64 shards (8 groups) up', () => {
  assert.deepEqual([0, 1, 2, 3, 4].map(vanDerCorput), [0, 0.5, 0.25, 0.75, 0.125]);
  // Fewer groups than masters cannot be balanced, and a sequence that does not know the group count
  // is uneven for a few groups (3 groups on 3 masters: 2/1/0): docs/bus.md says so.
  for (const shardCount of [64, 128, 256, 1024]) {
    const groups = shardGroupCount(shardCount);
    for (const masters of [3, 4, 5, 6, 8]) {
      const perMaster = new Array<number>(masters).fill(0);
      for (let group = 0; group < groups; group += 1) {
        const master = masterOf(calculateSlot(shardGroupTag(group)), masters);
        perMaster[master] = (perMaster[master] ?? 0) + 1;
      }
      const most = Math.max(...perMaster);
      const least = Math.min(...perMaster);
      // Van der Corput points: at most about log2(groups) apart from an even split.
      assert.ok(most - least <= Math.max(1, Math.ceil(Math.log2(groups) / 2)), `${shardCount} shards on ${masters} masters: ${perMaster.join('/')}`);
    }
  }
  // The default: 8 groups on 3 masters are 3/3/2.
  const defaults = [0, 0, 0];
  for (let group = 0; group < 8; group += 1) {
    const master = masterOf(calculateSlot(shardGroupTag(group)), 3);
    defaults[master] = (defaults[master] ?? 0) + 1;
  }
  assert.deepEqual([...defaults].sort(), [2, 3, 3]);
});

/** Groups a set of shards touches: the XREADGROUPs one read of them costs on a cluster. */
function groupsOf(shards: Iterable<number>): number {
  return new Set([...shards].map(shardGroupOf)).size;
}

/** Simulates lease rounds of `workers` workers (each in turn: give back, then take) until nothing moves. */
function converge(shardCount: number, owners: Array<Set<number>>): Array<Set<number>> {
  for (let round = 0; round < 20; round += 1) {
    let moved = false;
    for (const owned of owners) {
      const fair = Math.ceil(shardCount / owners.length);
      if (owned.size > fair) {
        for (const shard of shardsToGiveBack(owned, owned.size - fair)) owned.delete(shard);
        moved = true;
        continue;
      }
      const held = new Set(owners.flatMap((set) => [...set]));
      const free = Array.from({ length: shardCount }, (_, shard) => shard).filter((shard) => !held.has(shard));
      for (const shard of shardsToTake(owned, free, fair - owned.size)) {
        if (owned.size >= fair) break;
        owned.add(shard);
        moved = true;
      }
    }
    if (!moved) break;
  }
  return owners;
}

test('scale out 1 → 2 → 3 → 4 and in to 2: fair shares hold, whole groups move', () => {
  const shardCount = 64;
  const first = converge(shardCount, [new Set()]);
  assert.equal(first[0]?.size, 64);
  const two = converge(shardCount, [...first, new Set()]);
  assert.deepEqual(two.map((set) => set.size), [32, 32]);
  assert.deepEqual(two.map(groupsOf), [4, 4], 'two workers: four whole groups each');
  const three = converge(shardCount, [...two, new Set()]);
  assert.ok(three.every((set) => set.size <= 22));
  assert.equal(three.reduce((sum, set) => sum + set.size, 0), 64);
  // 64 shards cannot split into thirds of whole groups: two groups are shared, no more.
  assert.equal(three.reduce((sum, set) => sum + groupsOf(set), 0), 10);
  const four = converge(shardCount, [...three, new Set()]);
  assert.deepEqual(four.map((set) => set.size), [16, 16, 16, 16]);
  assert.equal(four.reduce((sum, set) => sum + groupsOf(set), 0) <= 10, true);
  // Two leave (their leases lapse or are released): the others take their shards back.
  const back = converge(shardCount, [four[0] ?? new Set(), four[1] ?? new Set()]);
  assert.deepEqual(back.map((set) => set.size), [32, 32]);
  assert.equal(back.reduce((sum, set) => sum + set.size, 0), 64);
});

test('shardsToTake: first the groups already read, then whole free groups that fit, then the smallest split', () => {
  // Owns 0..5; shards 6, 7 free (its group), group 1 free whole, group 2 half free.
  const free = [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23];
  assert.deepEqual(shardsToTake([0, 1, 2, 3, 4, 5], free, 10), [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23]);
  // Room for 4 from nothing: the half-free group fits whole; the whole group would be split.
  assert.deepEqual(shardsToTake([], [8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23], 4).slice(0, 4), [20, 21, 22, 23]);
  // Room for 2: no group fits, the smallest one is split.
  assert.deepEqual(shardsToTake([], [8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22], 2).slice(0, 2), [20, 21]);
});

test('shardsToGiveBack: whole groups first (the fewest held first), then one split as small as it can be', () => {
  const owned = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17];
  // 16, 17 are a partial group: given first; then the highest whole group.
  assert.deepEqual(shardsToGiveBack(owned, 2), [16, 17]);
  assert.deepEqual(shardsToGiveBack(owned, 10), [8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
  // 5: no whole group fits after the partial one; the rest is cut from the highest full group.
  assert.deepEqual(shardsToGiveBack(owned, 5), [13, 14, 15, 16, 17]);
  assert.deepEqual(shardsToGiveBack(owned, 0), []);
});

test('shardsToTake: workers joining at once start at different groups, so they do not race for the same shards', () => {
  const free = Array.from({ length: 32 }, (_, index) => 32 + index); // groups 4..7
  const groupsInOrder = (order: number[]): number[] => [...new Set(order.map(shardGroupOf))];
  assert.deepEqual(groupsInOrder(shardsToTake([], free, 16, 0)), [4, 5, 6, 7]);
  assert.deepEqual(groupsInOrder(shardsToTake([], free, 16, 6)), [6, 7, 4, 5]);
  // Two takers of 16 each, starting at groups 4 and 6, take disjoint whole groups.
  const first = new Set(shardsToTake([], free, 16, 4).slice(0, 16));
  const second = shardsToTake([], free, 16, 6).slice(0, 16);
  assert.ok(second.every((shard) => !first.has(shard)));
});
