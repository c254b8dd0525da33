// One limit counter's reservation arithmetic (pure): which transactions a counter holds, with what
// amount and in which state, and its totals. The windows and caps that use it are in limits.ts.
//
// Why buckets: the service-wide method × day counter is one actor that every acceptance of the
// day reserves in, and its transactions stay in flight for their whole payment window. A state held
// as one object of every entry was copied whole by each reservation (and by the edge's early
// refusal check), so an acceptance cost grew with the day: 2.6 → 5.4 ms of shard CPU per
// acceptance over one bench run (bench/README.md, "hot-accept"). The entries are spread over
// `counterBucketCount` buckets by a hash of the transaction id; a change copies one bucket and the
// bucket list, and the snapshot codec re-encodes the changed bucket only.
//
// Why closed entries are bounded: completed and released entries are kept only so that a late
// duplicate (a stream redelivery, an outbox row re-sent after a crash, long after the runtime's
// bounded dedupe log forgot it) is recognised. Each bucket keeps its newest
// `closedEntriesPerBucketMax` completed and as many released entries; older completed ones are
// folded into `folded*` (they stay in the totals, only their ids go) and older released ones are
// dropped. What that risks is fail-safe: a duplicate of a forgotten transaction delivered later
// still is counted again, and holds that amount for good — a stricter cap, never a looser one
// (unless its acceptance was refused: the rejected transaction releases a grant that reaches it,
// src/actors/transaction-actor.ts); a late `release` of a forgotten completed transaction finds
// nothing to give back, as it should.
import type { Decimal } from './money.ts';
import { add, compare, subtract, toFixedString, zero } from './money.ts';

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`limits invariant violated: ${what}`);
}

/**
 * A transaction's place in one counter. `open`: reserved, in flight. `completed`: keeps its
 * reservation for good (release no longer applies). `released`: given back (expired, failed,
 * refused elsewhere); the entry stays as a tombstone so that a late reserve of the same
 * transaction does not count it again (within the bound above).
 */
export type CounterEntryStatus = 'open' | 'completed' | 'released';

export interface CounterEntry {
  readonly amount: Decimal;
  readonly status: CounterEntryStatus;
}

/** One bucket's entries by transaction id; insertion order is age (the oldest closed entry goes first). */
export type CounterBucket = Readonly<Record<string, CounterEntry>>;

/**
 * Buckets per counter. 64 keeps a change's copy at one 64-slot list plus 1/64 of the entries (a
 * bench day of 6,000 in-flight acceptances: ≈ 160 slots instead of 6,000), and the closed-entry
 * bound at 64 × 16 ≈ 1,000 per status, the bound a counter kept before buckets.
 */
export const counterBucketCount = 64;

/** Completed entries, and apart released ones, each bucket lists (see the module comment). */
export const closedEntriesPerBucketMax = 16;

/**
 * One counter (one window, one key). `reserved*` count the open and completed transactions, not
 * the released; `folded*` are the completed ones among them whose ids are no longer listed.
 */
export interface CounterState {
  readonly reservedAmount: Decimal;
  readonly reservedCount: number;
  readonly foldedAmount: Decimal;
  readonly foldedCount: number;
  /** `counterBucketCount` buckets; a transaction id is only ever in `bucketIndexOf(id)`. */
  readonly buckets: readonly CounterBucket[];
}

const emptyBucket: CounterBucket = Object.freeze({});
const emptyBuckets: readonly CounterBucket[] = Object.freeze(Array.from({ length: counterBucketCount }, () => emptyBucket));

export function emptyCounter(): CounterState {
  return { reservedAmount: zero(0), reservedCount: 0, foldedAmount: zero(0), foldedCount: 0, buckets: emptyBuckets };
}

/** FNV-1a (32 bits) over a text's UTF-16 code units, continuing from `hash` (its offset basis by default). */
export function fnv1a(text: string, hash = 0x811c9dc5): number {
  let value = hash;
  for (let index = 0; index < text.length; index += 1) {
    value ^= text.charCodeAt(index);
    value = Math.imul(value, 0x01000193);
  }
  return value >>> 0;
}

/** The bucket of a transaction id: FNV-1a over its UTF-16 code units. Persisted layouts depend on it: never change it. */
export function bucketIndexOf(transactionId: string): number {
  return fnv1a(transactionId) % counterBucketCount;
}

export function counterEntry(state: CounterState, transactionId: string): CounterEntry | undefined {
  const bucket = state.buckets[bucketIndexOf(transactionId)];
  return bucket !== undefined && Object.hasOwn(bucket, transactionId) ? bucket[transactionId] : undefined;
}

/** Every listed entry, bucket by bucket (within a bucket, oldest first). */
export function* counterEntries(state: CounterState): Generator<[string, CounterEntry]> {
  for (const bucket of state.buckets) yield* Object.entries(bucket);
}

export interface Reservation {
  readonly transactionId: string;
  readonly amount: Decimal;
  /** Largest reservedAmount allowed after this reservation; null = unbounded. */
  readonly cap: Decimal | null;
  /** Largest reservedCount allowed after this reservation; null = unbounded. */
  readonly countCap: number | null;
}

export type ReserveResult =
  | { readonly ok: true; readonly state: CounterState }
  | { readonly ok: false; readonly exceeded: 'count' | 'amount' };

export function assertAmount(amount: Decimal): void {
  assert(amount.units >= 0n, `negative amount ${toFixedString(amount)}`);
}

function assertCounter(state: CounterState): void {
  assertAmount(state.reservedAmount);
  assertAmount(state.foldedAmount);
  assert(Number.isSafeInteger(state.reservedCount) && state.reservedCount >= 0, `count ${state.reservedCount}`);
  assert(Number.isSafeInteger(state.foldedCount) && state.foldedCount >= 0 && state.foldedCount <= state.reservedCount, `folded ${state.foldedCount}`);
  assert(state.buckets.length === counterBucketCount, `${state.buckets.length} buckets`);
}

function assertSameAmount(entry: CounterEntry, amount: Decimal, transactionId: string): void {
  // A transaction's amount never changes; a second, different amount for the same id is a bug.
  assert(compare(entry.amount, amount) === 0, `transaction ${transactionId} counted with two amounts`);
}

/**
 * A bucket keeps its newest `closedEntriesPerBucketMax` completed and released entries; the
 * completed ones beyond it are returned to be folded into the totals' `folded*`.
 */
function boundClosed(bucket: CounterBucket): { readonly bucket: CounterBucket; readonly foldedAmount: Decimal; readonly foldedCount: number } {
  let completed = 0;
  let released = 0;
  for (const entry of Object.values(bucket)) {
    if (entry.status === 'completed') completed += 1;
    else if (entry.status === 'released') released += 1;
  }
  let completedToFold = Math.max(0, completed - closedEntriesPerBucketMax);
  let releasedToDrop = Math.max(0, released - closedEntriesPerBucketMax);
  if (completedToFold === 0 && releasedToDrop === 0) return { bucket, foldedAmount: zero(0), foldedCount: 0 };
  let foldedAmount = zero(0);
  let foldedCount = 0;
  const kept: Array<[string, CounterEntry]> = [];
  for (const [id, entry] of Object.entries(bucket)) {
    if (entry.status === 'completed' && completedToFold > 0) {
      completedToFold -= 1;
      foldedAmount = add(foldedAmount, entry.amount);
      foldedCount += 1;
    } else if (entry.status === 'released' && releasedToDrop > 0) {
      releasedToDrop -= 1;
    } else {
      kept.push([id, entry]);
    }
  }
  // fromEntries defines own properties, so no id (not even `__proto__`) can touch the prototype.
  return { bucket: Object.fromEntries(kept), foldedAmount, foldedCount };
}

/** The state with `transactionId`'s entry set, totals moved by the given change, its bucket bounded. */
function withEntry(state: CounterState, transactionId: string, entry: CounterEntry, totals: { readonly amount: Decimal; readonly count: number }): CounterState {
  const index = bucketIndexOf(transactionId);
  const bounded = boundClosed({ ...state.buckets[index], [transactionId]: entry });
  const buckets = state.buckets.slice();
  buckets[index] = bounded.bucket;
  const next: CounterState = {
    reservedAmount: totals.amount,
    reservedCount: totals.count,
    foldedAmount: add(state.foldedAmount, bounded.foldedAmount),
    foldedCount: state.foldedCount + bounded.foldedCount,
    buckets,
  };
  assertCounter(next);
  return next;
}

/**
 * Count a transaction in this counter if the caps allow. Idempotent: a transaction already counted
 * is not counted again (and is not re-checked against the caps). The count cap is checked first.
 */
export function reserve(state: CounterState, reservation: Reservation): ReserveResult {
  const { transactionId, amount, cap, countCap } = reservation;
  assertCounter(state);
  assertAmount(amount);
  assert(transactionId.length > 0, 'empty transaction id');
  const existing = counterEntry(state, transactionId);
  if (existing !== undefined) {
    // Counted already, or released already (then this reserve is a late duplicate of the one that
    // was released; the transaction is over): either way nothing changes.
    assertSameAmount(existing, amount, transactionId);
    return { ok: true, state };
  }
  const reservedCount = state.reservedCount + 1;
  const reservedAmount = add(state.reservedAmount, amount);
  if (countCap !== null && reservedCount > countCap) return { ok: false, exceeded: 'count' };
  if (cap !== null && compare(reservedAmount, cap) > 0) return { ok: false, exceeded: 'amount' };
  const next = withEntry(state, transactionId, { amount, status: 'open' }, { amount: reservedAmount, count: reservedCount });
  assert(cap === null || compare(next.reservedAmount, cap) <= 0, 'reserved above cap');
  assert(countCap === null || next.reservedCount <= countCap, 'count above cap');
  return { ok: true, state: next };
}

/**
 * Give back an expired or failed transaction's reservation; the entry stays, marked released
 * (within the bound). Idempotent: releasing an unknown id, releasing twice, or releasing a
 * completed transaction (which keeps its reservation) is a no-op.
 */
export function release(state: CounterState, transactionId: string): CounterState {
  assertCounter(state);
  const existing = counterEntry(state, transactionId);
  if (existing === undefined || existing.status !== 'open') return state;
  return withEntry(
    state,
    transactionId,
    { amount: existing.amount, status: 'released' },
    { amount: subtract(state.reservedAmount, existing.amount), count: state.reservedCount - 1 },
  );
}

/**
 * A transaction completed: it keeps its reservation for good. This marks the entry its acceptance
 * reserved; a transaction the counter does not hold gets a completed entry (a KYB counter written
 * before the KYB cap was reserved at acceptance held completions only, and its transactions
 * accepted then still complete this way). Idempotent; never capped, because completion is a fact
 * and the caps were checked at acceptance.
 */
export function commit(state: CounterState, completion: { readonly transactionId: string; readonly amount: Decimal }): CounterState {
  const { transactionId, amount } = completion;
  assertCounter(state);
  assertAmount(amount);
  assert(transactionId.length > 0, 'empty transaction id');
  const existing = counterEntry(state, transactionId);
  const completed: CounterEntry = { amount, status: 'completed' };
  if (existing !== undefined) {
    assertSameAmount(existing, amount, transactionId);
    if (existing.status === 'completed') return state;
    if (existing.status === 'open') return withEntry(state, transactionId, completed, { amount: state.reservedAmount, count: state.reservedCount });
    // Released, then completed after all: completion is a fact, so it counts again.
  }
  return withEntry(state, transactionId, completed, { amount: add(state.reservedAmount, amount), count: state.reservedCount + 1 });
}
