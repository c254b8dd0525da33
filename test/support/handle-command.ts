// An actor's `handle` as the runtime calls it: the command decoded first by the actor type's
// command map (src/actors/commands.ts). Unit tests that drive a behavior command by command use
// this, so they see what the actor sees; a malformed command is a bug in the test and throws.
import { decodeArrived } from '../../src/actors/commands.ts';
import type { ActorBehavior, ActorContext, CommandEnvelope, CommandPayloads, Outcome } from '../../src/actors/envelope.ts';

export function handleCommand<S, C extends CommandPayloads>(behavior: ActorBehavior<S, C>, state: S | null, command: CommandEnvelope, ctx: ActorContext): Outcome<S> {
  const decoded = decodeArrived(behavior, command);
  if (!decoded.ok) throw new Error(`the runtime would drop this ${behavior.type} command as malformed: ${decoded.reason}`);
  return behavior.handle(state, decoded.value, ctx);
}
