// The onramp crypto inventory of one network × asset, as pure state and decisions: how much the hot
// wallet can still deliver (`available`), the holds taken for deliveries in flight (by key, with
// their amounts), and the keys of holds recently closed. One actor applies these decisions, one at
// a time, so the figure is exact under any number of processes (src/actors/inventory-actor.ts).
//
// A hold takes its amount out of `available`; it is closed exactly once, either released (the
// delivery finally failed: the amount comes back) or consumed (the crypto was delivered: it stays
// out). Holding, releasing and consuming are idempotent by key, from the state alone:
//   - an open key held again is `already_held` (nothing taken twice);
//   - a closed key held again is `already_closed` (a stale attempt of a finished delivery takes
//     nothing), as long as the key is remembered: closed keys are kept for `closedKeyRetentionMs`
//     and at most `closedKeysMax` of them (the oldest forgotten first). A hold arriving later than
//     that for a finished delivery would be taken again: an under-count (safe: less is promised),
//     never an over-count;
//   - releasing or consuming a key that is not open changes nothing.
// Open holds are bounded (`openHoldsMax`): beyond it a hold is refused (`too_many_holds`), never
// a key dropped. Decisions: docs/onramp.md.
import { add, compare, isPositive, rescale, subtract, zero, type Decimal } from './money.ts';

/** Amounts are kept at 7 decimals, the most any supported token has. */
export const inventoryScale = 7;
/** Default bound on open holds per network × asset (deliveries in flight at once). */
export const openHoldsMaxDefault = 5_000;
/** Closed keys remembered per network × asset, at most. */
export const closedKeysMax = 5_000;
/** How long a closed key is remembered (a stale attempt older than this is not expected). */
export const closedKeyRetentionMs = 60 * 60_000;
/** Hold keys are ids we derive (`delivery:<transaction id>`): bounded. */
export const holdKeyLengthMax = 200;

export interface InventoryState {
  /** What can still be promised and held, token units at `inventoryScale`; never negative. */
  readonly available: Decimal;
  /** Open holds: key → amount taken. */
  readonly holds: Readonly<Record<string, Decimal>>;
  /** Recently closed keys and when they were closed (epoch ms), oldest first. */
  readonly closed: ReadonlyArray<readonly [key: string, closedAtMs: number]>;
}

export type InventoryCommand =
  | { readonly kind: 'hold'; readonly key: string; readonly amount: Decimal }
  | { readonly kind: 'release'; readonly key: string }
  | { readonly kind: 'consume'; readonly key: string }
  /** Operations: the figure is now `amount` (a top-up or a count of the wallet); holds stay open. */
  | { readonly kind: 'set'; readonly amount: Decimal };

export type HoldOutcome = 'held' | 'already_held' | 'already_closed' | 'insufficient' | 'too_many_holds';
export type CloseOutcome = 'released' | 'consumed' | 'not_open';

export type InventoryOutcome = HoldOutcome | CloseOutcome | 'set';

export interface InventoryDecision {
  /** The state after the command; the same object when nothing changed. */
  readonly state: InventoryState;
  readonly outcome: InventoryOutcome;
}

export interface InventoryLimits {
  readonly openHoldsMax: number;
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`inventory invariant violated: ${what}`);
}

/** The amount at the inventory's scale; null when it has more decimals (or is not positive). */
export function inventoryAmount(amount: Decimal, allowZero = false): Decimal | null {
  if (amount.units < 0n || (!allowZero && !isPositive(amount)) || amount.scale > inventoryScale) return null;
  return rescale(amount, inventoryScale, 'floor');
}

export function validHoldKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= holdKeyLengthMax && !/[\u0000-\u001f]/.test(key);
}

/** A new inventory with `available` and nothing held. */
export function initialInventory(available: Decimal): InventoryState {
  const scaled = inventoryAmount(available, true);
  assert(scaled !== null, 'the starting figure is non-negative with at most 7 decimals');
  return { available: scaled, holds: {}, closed: [] };
}

/** Checks what must hold after every decision; a failure is a bug (the shard reloads). */
export function assertInventory(state: InventoryState, limits: InventoryLimits): void {
  assert(state.available.scale === inventoryScale && state.available.units >= 0n, 'available is non-negative at scale 7');
  const holds = Object.values(state.holds);
  assert(holds.every((amount) => amount.scale === inventoryScale && amount.units > 0n), 'every hold is positive at scale 7');
  assert(holds.length <= limits.openHoldsMax, 'open holds within their bound');
  assert(state.closed.length <= closedKeysMax, 'closed keys within their bound');
  assert(state.closed.every(([key]) => !isOpen(state, key)), 'a key is open or closed, not both');
}

/** Own keys only: a key named like an Object.prototype member (`toString`) is not "held". */
function openAmount(state: InventoryState, key: string): Decimal | undefined {
  return Object.hasOwn(state.holds, key) ? state.holds[key] : undefined;
}

function isOpen(state: InventoryState, key: string): boolean {
  return openAmount(state, key) !== undefined;
}

function isClosed(state: InventoryState, key: string): boolean {
  return state.closed.some(([closed]) => closed === key);
}

/** `key` closed now, after the keys past their retention and (to make room) the oldest beyond the bound. */
function withClosed(closed: InventoryState['closed'], key: string, nowMs: number): InventoryState['closed'] {
  const kept = closed.filter(([, closedAtMs]) => nowMs - closedAtMs < closedKeyRetentionMs);
  return [...kept.slice(Math.max(0, kept.length - closedKeysMax + 1)), [key, nowMs]];
}

function close(state: InventoryState, key: string, nowMs: number, giveBack: boolean): InventoryState {
  const amount = openAmount(state, key);
  assert(amount !== undefined, 'closing an open hold');
  return {
    available: giveBack ? add(state.available, amount) : state.available,
    holds: Object.fromEntries(Object.entries(state.holds).filter(([held]) => held !== key)),
    closed: withClosed(state.closed, key, nowMs),
  };
}

/** One command against the state. Pure: time comes in as `nowMs`. */
export function decideInventory(state: InventoryState, command: InventoryCommand, limits: InventoryLimits, nowMs: number): InventoryDecision {
  switch (command.kind) {
    case 'hold': {
      if (isOpen(state, command.key)) return { state, outcome: 'already_held' };
      if (isClosed(state, command.key)) return { state, outcome: 'already_closed' };
      const amount = inventoryAmount(command.amount);
      assert(amount !== null, 'a hold is positive with at most 7 decimals');
      if (compare(state.available, amount) < 0) return { state, outcome: 'insufficient' };
      if (Object.keys(state.holds).length >= limits.openHoldsMax) return { state, outcome: 'too_many_holds' };
      return { state: { ...state, available: subtract(state.available, amount), holds: { ...state.holds, [command.key]: amount } }, outcome: 'held' };
    }
    case 'release':
    case 'consume': {
      if (!isOpen(state, command.key)) return { state, outcome: 'not_open' };
      const released = command.kind === 'release';
      return { state: close(state, command.key, nowMs, released), outcome: released ? 'released' : 'consumed' };
    }
    case 'set': {
      const amount = inventoryAmount(command.amount, true);
      assert(amount !== null, 'the figure is non-negative with at most 7 decimals');
      return { state: { ...state, available: amount }, outcome: 'set' };
    }
  }
}

/** Total held by open holds (for operations). */
export function heldTotal(state: InventoryState): Decimal {
  return Object.values(state.holds).reduce((total, amount) => add(total, amount), zero(inventoryScale));
}
