// The actor types of the service and what each needs from configuration.
import type { AnyActorBehavior } from '../actors/envelope.ts';
import { counterBehavior } from '../actors/counter-actor.ts';
import { depositBehavior } from '../actors/deposit-actor.ts';
import { inventoryBehavior } from '../actors/inventory-actor.ts';
import { kycBehavior } from '../actors/kyc-actor.ts';
import { quoteBehavior, type QuoteActorDeps } from '../actors/quote-actor.ts';
import { transactionBehavior } from '../actors/transaction-actor.ts';
import type { LimitsConfig } from '../domain/limits.ts';
import { openHoldsMaxDefault } from '../domain/onramp-inventory.ts';
import type { DataKeyring } from '../store/data-encryption.ts';

export interface BehaviorDeps extends QuoteActorDeps {
  limits(): LimitsConfig;
  /** Bound on open onramp inventory holds per network × asset (default `openHoldsMaxDefault`). */
  onrampOpenHoldsMax?(): number;
  /** The keys the KYC record's personal fields are sealed under (src/store/data-keys.ts). */
  readonly dataKeys: DataKeyring;
  /** Sandbox mode: the transaction actor takes the test clocks' commands (docs/sandbox.md). */
  readonly sandbox?: boolean;
}

/** Every actor type of the service, each with its command map (decoded on arrival by the runtime). */
export function serviceBehaviors(deps: BehaviorDeps): AnyActorBehavior[] {
  return [
    quoteBehavior(deps),
    counterBehavior(deps),
    transactionBehavior(deps),
    kycBehavior(deps.dataKeys),
    depositBehavior(deps),
    inventoryBehavior({ openHoldsMax: () => deps.onrampOpenHoldsMax?.() ?? openHoldsMaxDefault }),
  ];
}
