// Shard groups: consecutive shards whose command streams share one Redis Cluster hash tag.
//
// Why: XREADGROUP cannot span slots (CROSSSLOT). With one tag per shard, a worker owning 32 shards
// read 32 slots, one XREADGROUP each (and on a wake-up one blocking read per slot plus the
// UNBLOCKs of the others): 6.7 Redis commands per quote on a 3-master cluster against 3.0 on one
// server. Streams of a group share a slot, so one XREADGROUP reads the whole group, and workers take
// shards group by group (shard-share.ts): a worker's read touches about SHARDS ÷ workers ÷ 8 slots.
//
// The group of a shard is `floor(shard / shardsPerGroup)`: it depends on the shard alone, so every
// edge and worker agrees on it from SHARDS (the last group is smaller when SHARDS is not a multiple
// of 8). A group's tag is `g<group>.<n>`, `n` the smallest non-negative integer that puts the tag's
// slot in a window at the group's target slot. Targets follow the base-2 van der Corput sequence
// (0, ½, ¼, ¾, ⅛, …) of the slot space: for any number of groups they are spread almost evenly, so a
// cluster's masters (each owns a contiguous range of slots by default) get balanced shares of
// groups whatever SHARDS is. The search is deterministic and pure: every process finds the same
// tags, computed once per group and kept.
import calculateSlot from 'cluster-key-slot';

/** Shards per group: 64 shards make 8 groups, a third of them (or so) on each of 3 masters. */
export const shardsPerGroup = 8;
/** Redis Cluster's slot count. */
export const clusterSlots = 16_384;
/** Width of the slot window a group's tag must land in (about 256 tries to find one). */
const slotWindow = 64;
const tags = new Map<number, string>();

/** The group of a shard. */
export function shardGroupOf(shard: number): number {
  return Math.floor(shard / shardsPerGroup);
}

/** The shards of a group among `0 .. shardCount-1`, ascending. */
export function shardsOfGroup(group: number, shardCount: number): number[] {
  const first = group * shardsPerGroup;
  const end = Math.min(shardCount, first + shardsPerGroup);
  return Array.from({ length: Math.max(0, end - first) }, (_, index) => first + index);
}

/** How many groups `shardCount` shards make. */
export function shardGroupCount(shardCount: number): number {
  return Math.ceil(shardCount / shardsPerGroup);
}

/** Base-2 van der Corput: the bits of `index` mirrored behind the binary point, in [0, 1). */
export function vanDerCorput(index: number): number {
  let value = 0;
  let weight = 0.5;
  for (let rest = index; rest > 0; rest = Math.floor(rest / 2)) {
    if (rest % 2 === 1) value += weight;
    weight /= 2;
  }
  return value;
}

/** The first slot of the window a group's tag is searched for. */
export function targetSlotOfGroup(group: number): number {
  return Math.floor(vanDerCorput(group) * clusterSlots);
}

/** The hash tag text of a group (without braces): `g<group>.<n>`. */
export function shardGroupTag(group: number): string {
  const known = tags.get(group);
  if (known !== undefined) return known;
  const target = targetSlotOfGroup(group);
  for (let suffix = 0; ; suffix += 1) {
    const tag = `g${group}.${suffix}`;
    // Distance above the target, wrapping at the end of the slot space.
    if ((calculateSlot(tag) - target + clusterSlots) % clusterSlots < slotWindow) {
      tags.set(group, tag);
      return tag;
    }
  }
}
