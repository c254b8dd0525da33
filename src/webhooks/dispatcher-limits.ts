// The bounds of a webhook dispatcher (dispatcher.ts): how long a claim lasts, how many rows it
// claims, holds, parks and reads per round, how many attempts run at once, overall and per
// partner. Each has a default here and is checked once, when a dispatcher is built.

export interface DispatcherLimits {
  /** Claim length; must exceed attemptTimeoutMs + claimMarginMs. */
  readonly leaseMs: number;
  /** Slack for clock skew between dispatchers and for the work around an attempt. */
  readonly claimMarginMs: number;
  readonly pollIntervalMs: number;
  /** Rows claimed per store call, and calls per round. */
  readonly claimBatchMax: number;
  readonly claimPagesPerRoundMax: number;
  /** Rows held (claimed, waiting or in flight) by this dispatcher. */
  readonly heldRowsMax: number;
  /** Rows of one partition held at once (the per-partition queue). */
  readonly heldPerPartitionMax: number;
  /** Rows of one partner held at once; its further rows are parked. */
  readonly heldPerPartnerMax: number;
  /** Rows parked (claimed, not held: beyond a partner's or partition's share). */
  readonly parkedRowsMax: number;
  /** Concurrent HTTP attempts. */
  readonly inFlightMax: number;
  /** Concurrent HTTP attempts to one partner (its share of `inFlightMax`). */
  readonly inFlightPerPartnerMax: number;
  /** Rows read per recording page, and pages per round. */
  readonly recordPageRowsMax: number;
  readonly recordPagesPerRoundMax: number;
  /** Pending rows read per round to find partition heads. */
  readonly headScanRowsMax: number;
}

export const defaultDispatcherLimits: DispatcherLimits = {
  leaseMs: 60_000,
  claimMarginMs: 5_000,
  pollIntervalMs: 250,
  claimBatchMax: 100,
  claimPagesPerRoundMax: 5,
  heldRowsMax: 2_000,
  heldPerPartitionMax: 32,
  heldPerPartnerMax: 100,
  parkedRowsMax: 8_000,
  inFlightMax: 64,
  inFlightPerPartnerMax: 8,
  recordPageRowsMax: 400,
  recordPagesPerRoundMax: 5,
  headScanRowsMax: 10_000,
};

/**
 * Throws a RangeError unless every bound is a safe integer (at least 1; `claimMarginMs` at least 0)
 * and a claim outlasts an attempt with its margin: a claim that could expire mid-attempt would let
 * another dispatcher send the same event at the same time.
 */
export function checkDispatcherLimits(limits: DispatcherLimits, attemptTimeoutMs: number): void {
  if (limits.leaseMs <= attemptTimeoutMs + limits.claimMarginMs) {
    throw new RangeError('leaseMs must be greater than attemptTimeoutMs + claimMarginMs');
  }
  for (const [name, value] of Object.entries(limits)) {
    const least = name === 'claimMarginMs' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < least) throw new RangeError(`dispatcher ${name} must be an integer of at least ${least}, got ${String(value)}`);
  }
}
