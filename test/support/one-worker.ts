// One shard worker owning every shard, on the in-process bus and an embedded store the test made,
// with no lease round (and so no outbox sweep) after start-up: what reaches an actor is what the
// worker's batches linked or its relay delivered. For tests of how commands travel between actors
// of one worker (local-delivery.test.ts, linked-steps.test.ts).
import assert from 'node:assert/strict';
import type { MemoryBus } from '../../src/bus/memory-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { Requester } from '../../src/bus/request-reply.ts';
import { commandStreamKeys, replyStreamKey } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { workerStatsCollection } from '../../src/actors/store-adapter.ts';
import type { SnapshotStore } from '../../src/store/store.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { eventually } from './eventually.ts';

/** Tells `tally/<target>` to add one for every `forward` it gets; keeps no state of its own. */
export function forwarderBehavior(): ActorBehavior<null> {
  return {
    type: 'forwarder',
    encode: () => null,
    decode: () => null,
    handle(_state, command) {
      const target = (command.payload as { target: string }).target;
      return { send: [{ actorType: 'tally', actorKey: target, kind: 'add', payload: null }], reply: 'forwarded' };
    },
  };
}

export interface OneWorker {
  readonly role: ShardRole;
  readonly requester: Requester;
  readonly client: ActorClient;
}

export async function startOneWorker(options: {
  readonly bus: MemoryBus;
  readonly store: SnapshotStore;
  /** Behaviors of any state types (the runtime holds them as `ActorBehavior<unknown>`). */
  readonly behaviors: ReadonlyArray<object>;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly linkedSteps?: boolean;
}): Promise<OneWorker> {
  const { bus, store, keyPrefix, shardCount } = options;
  const role = await startShardRole({
    bus,
    leases: new MemoryLeases(),
    store,
    behaviors: options.behaviors as unknown as Array<ActorBehavior<unknown>>,
    workerId: 'w1',
    keyPrefix,
    shardCount,
    clock: { nowMs: () => Date.now() },
    readBlockMs: 100,
    leaseTtlMs: 600_000,
    ...(options.linkedSteps === undefined ? {} : { linkedSteps: options.linkedSteps }),
  });
  try {
    // The round that follows start-up (its own lease acquisitions start it) has passed: the next
    // one, and with it the next sweep, is minutes away.
    await eventually(async () => assert.notEqual(await store.get(workerStatsCollection, 'w1'), null, 'a first lease round'));
    const requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, 'client'), blockMs: 100 });
    const client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: () => Date.now() });
    return { role, requester, client };
  } catch (error) {
    await role.stop(); // the test's `after` never sees a role it was not handed
    throw error;
  }
}

/** Entries appended to every command stream so far. */
export async function commandStreamEntries(bus: MemoryBus, keyPrefix: string, shardCount: number): Promise<number> {
  const lengths = await Promise.all(commandStreamKeys(keyPrefix, shardCount).map((stream) => bus.length(stream)));
  return lengths.reduce((sum, length) => sum + length, 0);
}
