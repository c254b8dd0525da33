// A deliberately non-idempotent test actor: every applied command appends its id to a list. If
// the runtime ever applied a command twice, the id would appear twice — so crash tests can compare
// the command log with the final state exactly.
import type { ActorBehavior } from '../../src/actors/envelope.ts';

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
