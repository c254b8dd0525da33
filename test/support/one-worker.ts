// One shard worker owning every shard, on the in-process bus and an embedded store the test made,
// with no lease round (and so no outbox sweep) after start-up: what reaches an actor is what the
// worker's batches linked or its relay delivered. For tests of how commands travel between actors
// of one worker (local-delivery.test.ts, linked-steps.test.ts).
import assert from 'node:assert/strict';
import type { MemoryBus } from '../../src/bus/memory-bus.ts';
import { commandStreamKeys } from '../../src/bus/shards.ts';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { workerStatsCollection } from '../../src/actors/store-adapter.ts';
import type { SnapshotStore } from '../../src/store/store.ts';
import { eventually } from './eventually.ts';
import { startTestRuntime, type TestRuntime } from './test-runtime.ts';

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

/**
 * The test's runtime (test-runtime.ts) on the test's bus, with leases that outlive the test: once
 * the round that follows start-up has passed, the next one, and with it the next sweep, is
 * minutes away.
 */
export async function startOneWorker(options: {
  readonly bus: MemoryBus;
  readonly store: SnapshotStore;
  /** Behaviors of any state types (the runtime holds them as `ActorBehavior<unknown>`). */
  readonly behaviors: ReadonlyArray<object>;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly linkedSteps?: boolean;
}): Promise<TestRuntime> {
  const runtime = await startTestRuntime({ ...options, leaseTtlMs: 600_000 });
  try {
    await eventually(async () => assert.notEqual(await options.store.get(workerStatsCollection, 'w1'), null, 'a first lease round'));
    return runtime;
  } catch (error) {
    await runtime.stop(); // the test's `after` never sees a runtime it was not handed
    throw error;
  }
}

/** Entries appended to every command stream so far. */
export async function commandStreamEntries(bus: MemoryBus, keyPrefix: string, shardCount: number): Promise<number> {
  const lengths = await Promise.all(commandStreamKeys(keyPrefix, shardCount).map((stream) => bus.length(stream)));
  return lengths.reduce((sum, length) => sum + length, 0);
}
