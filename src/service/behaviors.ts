// The actor types of the service and what each needs from configuration.
import type { ActorBehavior } from '../actors/envelope.ts';
import { counterBehavior } from '../actors/counter-actor.ts';
import { depositBehavior } from '../actors/deposit-actor.ts';
import { kycBehavior } from '../actors/kyc-actor.ts';
import { quoteBehavior, type QuoteActorDeps } from '../actors/quote-actor.ts';
import { transactionBehavior } from '../actors/transaction-actor.ts';
import type { LimitsConfig } from '../domain/limits.ts';

export interface BehaviorDeps extends QuoteActorDeps {
  limits(): LimitsConfig;
}

export function serviceBehaviors(deps: BehaviorDeps): Array<ActorBehavior<unknown>> {
  return [
    quoteBehavior(deps),
    counterBehavior(deps),
    transactionBehavior(deps),
    kycBehavior(),
    depositBehavior(deps),
  ] as unknown as Array<ActorBehavior<unknown>>;
}
