// A deliberately non-idempotent test actor: every applied command appends its id to a list. If
// the runtime ever applied a command twice, the id would appear twice — so crash tests can compare
// the command log with the final state exactly.
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { startShardRole, type ShardRole, type ShardRoleOptions } from '../../src/service/shard-role.ts';

export interface TallyState {
  readonly count: number;
  readonly commandIds: readonly string[];
}

export const tallyActorType = 'tally';

export function tallyBehavior(): ActorBehavior<TallyState> {
  return {
    type: tallyActorType,
    encode: (state) => ({ count: state.count, commandIds: [...state.commandIds] }),
    decode: (json) => json as unknown as TallyState,
    handle(state, command) {
      const current = state ?? { count: 0, commandIds: [] };
      const next = { count: current.count + 1, commandIds: [...current.commandIds, command.commandId] };
      return { state: next, reply: { count: next.count } };
    },
  };
}

/** What a test chooses of a tally shard role; the rest comes from `startTallyShardRole`. */
export type TallyShardRoleOptions = Omit<ShardRoleOptions, 'behaviors' | 'clock' | 'readBlockMs'> & Partial<Pick<ShardRoleOptions, 'readBlockMs'>>;

/** A shard role holding tally actors, on the wall clock, reading every 100 ms unless told otherwise. */
export function startTallyShardRole(options: TallyShardRoleOptions): Promise<ShardRole> {
  return startShardRole({
    behaviors: [tallyBehavior()] as unknown as Array<ActorBehavior<unknown>>,
    clock: { nowMs: () => Date.now() },
    readBlockMs: 100,
    ...options,
  });
}
