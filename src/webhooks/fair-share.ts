// Who gets the free delivery slots of a dispatcher round (docs/webhooks.md, "Fairness"), as a pure
// function: no clock, no I/O.
//
// Slots go out one at a time, each to the partner with the fewest attempts in flight (counting the
// slots already given in this round); ties go to the partner served longest ago. So a partner with
// one event waiting and nothing in flight is served before one with 400 events and 7 in flight,
// and partners with equal load take turns (round-robin). Nobody gets more than it can start now:
// the dispatcher's `ready` already stops at the partner's share and at what its breaker admits.

export interface PartnerDemand {
  readonly partnerId: string;
  /** Attempts of this partner in flight in this dispatcher now. */
  readonly inFlight: number;
  /** Attempts it could start now (due events, within its share, admitted by its breaker). */
  readonly ready: number;
  /** When it was last given a slot, as a counter (0 = never; higher = more recently). */
  readonly lastServed: number;
}

/** The partner ids in the order `freeSlots` slots are given out (at most `freeSlots` entries). */
export function shareSlots(demands: readonly PartnerDemand[], freeSlots: number): string[] {
  const load = demands.map((demand) => ({ partnerId: demand.partnerId, inFlight: demand.inFlight, ready: demand.ready, lastServed: demand.lastServed }));
  let servedCounter = Math.max(0, ...demands.map((demand) => demand.lastServed));
  const order: string[] = [];
  while (order.length < freeSlots) {
    let best: (typeof load)[number] | undefined;
    for (const entry of load) {
      if (entry.ready <= 0) continue;
      if (
        best === undefined ||
        entry.inFlight < best.inFlight ||
        (entry.inFlight === best.inFlight && (entry.lastServed < best.lastServed || (entry.lastServed === best.lastServed && entry.partnerId < best.partnerId)))
      ) {
        best = entry;
      }
    }
    if (best === undefined) break;
    servedCounter += 1;
    best.inFlight += 1;
    best.ready -= 1;
    best.lastServed = servedCounter;
    order.push(best.partnerId);
  }
  return order;
}
