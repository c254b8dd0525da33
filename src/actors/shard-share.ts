// Which shards a worker takes and gives back, group by group (pure; the worker's lease rounds in
// shard-worker.ts apply it).
//
// The fair share is still counted in shards (ceil(SHARDS ÷ workers)): every guarantee of the lease
// rounds is unchanged. Only the choice of WHICH shards prefers whole shard groups
// (src/bus/shard-groups.ts): the streams of a group share one Redis Cluster slot, so a worker
// holding whole groups reads them with one XREADGROUP each, and every group it splits with another
// worker costs both of them a read (and, idle, a blocking connection) more.
import { shardGroupOf } from '../bus/shard-groups.ts';
import { shardCountMax } from '../bus/shards.ts';

/** More than any group number (shard numbers stay below shardCountMax). */
const groupsMax = shardCountMax;

function byGroup(shards: Iterable<number>): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  for (const shard of [...shards].sort((a, b) => a - b)) {
    const group = shardGroupOf(shard);
    const members = groups.get(group);
    if (members === undefined) groups.set(group, [shard]);
    else members.push(shard);
  }
  return groups;
}

/**
 * The free shards in the order to try to take them, `want` being how many the fair share still
 * allows (the caller stops there; an acquire lost to another worker just moves on):
 *   1. the free shards of groups this worker already reads (no new read), fullest group first;
 *   2. groups whose free shards all fit in what is left, largest first (a whole free group);
 *   3. the rest, smallest group first: the one group that must be split leaves the fewest behind.
 * Among equals, groups from `startGroup` on come first (then the lower ones): workers joining at
 * once, each starting at a group of its own (from its id), then do not race for the same shards in
 * the same order, which would also split each group between them.
 */
export function shardsToTake(owned: Iterable<number>, free: Iterable<number>, want: number, startGroup = 0): number[] {
  const ownedByGroup = byGroup(owned);
  const freeByGroup = byGroup(free);
  const order: number[] = [];
  let left = want;
  const take = (group: number): void => {
    const shards = freeByGroup.get(group) ?? [];
    order.push(...shards);
    left -= shards.length;
    freeByGroup.delete(group);
  };
  const sizeOf = (group: number): number => freeByGroup.get(group)?.length ?? 0;
  const rank = (group: number): number => (group < startGroup ? group + groupsMax : group);
  const read = [...freeByGroup.keys()].filter((group) => ownedByGroup.has(group));
  read.sort((a, b) => (ownedByGroup.get(b)?.length ?? 0) - (ownedByGroup.get(a)?.length ?? 0) || rank(a) - rank(b));
  read.forEach(take);
  const largestFirst = [...freeByGroup.keys()].sort((a, b) => sizeOf(b) - sizeOf(a) || rank(a) - rank(b));
  for (const group of largestFirst) if (sizeOf(group) <= left) take(group);
  const smallestFirst = [...freeByGroup.keys()].sort((a, b) => sizeOf(a) - sizeOf(b) || rank(a) - rank(b));
  smallestFirst.forEach(take);
  return order;
}

/**
 * `count` of the owned shards to give back: whole groups first, those of which this worker holds
 * the fewest shards first (each is a read saved for the fewest shards moved), the highest group
 * first among equals; then, if that does not add up, the highest shards of the smallest group
 * that is larger than what is left (one split, as small as it can be).
 */
export function shardsToGiveBack(owned: Iterable<number>, count: number): number[] {
  const groups = byGroup(owned);
  const given: number[] = [];
  let left = count;
  const smallestFirst = [...groups].sort(([groupA, a], [groupB, b]) => a.length - b.length || groupB - groupA);
  for (const [group, shards] of smallestFirst) {
    if (shards.length > left) continue;
    given.push(...shards);
    left -= shards.length;
    groups.delete(group);
  }
  if (left > 0) {
    const [, split] = [...groups].sort(([groupA, a], [groupB, b]) => a.length - b.length || groupB - groupA)[0] ?? [0, []];
    given.push(...split.slice(split.length - left));
  }
  return given.sort((a, b) => a - b);
}
