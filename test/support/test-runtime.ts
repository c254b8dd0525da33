// One shard role over the in-process bus, for a test's own actor types on a store the test opened,
// with an ActorClient on its own reply stream. `stop()` stops them (not the store, nor a bus the
// test handed in).
import { MemoryBus } from '../../src/bus/memory-bus.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { Requester } from '../../src/bus/request-reply.ts';
import { replyStreamKey } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import type { ActorBehavior, LogLevel } from '../../src/actors/envelope.ts';
import type { SnapshotStore } from '../../src/store/store.ts';
import { startShardRole, type ShardRole } from '../../src/service/shard-role.ts';
import { teardown } from './teardown.ts';

export interface TestRuntime {
  readonly role: ShardRole;
  readonly client: ActorClient;
  stop(): Promise<void>;
}

export async function startTestRuntime(options: {
  readonly store: SnapshotStore;
  // Each test actor has a state type of its own; the runtime holds them as unknown.
  readonly behaviors: ReadonlyArray<unknown>;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /** A bus the test reads too (it closes it); otherwise one of the runtime's own. */
  readonly bus?: MemoryBus;
  readonly leaseTtlMs?: number;
  readonly linkedSteps?: boolean;
}): Promise<TestRuntime> {
  const { store, keyPrefix, shardCount } = options;
  const bus = options.bus ?? new MemoryBus();
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
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(options.linkedSteps === undefined ? {} : { linkedSteps: options.linkedSteps }),
  });
  const requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, 'client'), blockMs: 100 });
  const client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: () => Date.now() });
  return {
    role,
    client,
    stop: () => teardown(() => requester.close(), () => role.stop(), () => (options.bus === undefined ? bus.close() : undefined)),
  };
}
