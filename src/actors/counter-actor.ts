// Limit counters: one actor per window key (user × method × day, method × day, partner × user ×
// month of KYC volume, partner KYB total). Being the only writer of its key, a counter makes each
// cap exact under any concurrency: reservations are applied one at a time against durable state.
// Results go back to the asking transaction as a `reservation_result` command (the acceptance
// saga runs in the transaction actor).
//
// The method × day counter is one key for the whole service, so its snapshot is written on every
// command it answers, refusals included: the snapshot format (below) keeps that write small.
import { answerReserve, type CounterWindow, type ReservationOutcome, type WindowReservation } from '../domain/acceptance.ts';
import {
  commit,
  emptyCounter,
  release,
  type CounterEntry,
  type CounterEntryStatus,
  type CounterState,
  type LimitsConfig,
} from '../domain/limits.ts';
import { add, compare, decimal, decimalFromExactString, toFixedString, zero, type Decimal } from '../domain/money.ts';
import type { ActorBehavior, CommandToSend, JsonValue } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export type { CounterWindow, ReservationOutcome } from '../domain/acceptance.ts';

export const counterActorType = 'counter';

/** `reserve`: the window's reservation as the acceptance saga builds it (`windowReservation`). */
export type CounterCommand =
  | ({ readonly kind: 'reserve' } & WindowReservation)
  | { readonly kind: 'release'; readonly transactionId: string }
  | { readonly kind: 'commit'; readonly transactionId: string; readonly amount: Decimal };

export interface ReservationResultPayload {
  readonly window: CounterWindow;
  readonly outcome: ReservationOutcome;
}

/** The kind of the command a counter sends back to the transaction that asked. */
export const reservationResultKind = 'reservation_result';

export function counterCommand(command: CounterCommand): JsonValue {
  return toJsonValue(command);
}

function resultTo(transactionId: string, payload: ReservationResultPayload): CommandToSend {
  return { actorType: 'transaction', actorKey: transactionId, kind: reservationResultKind, payload: toJsonValue(payload) };
}

// ---------------------------------------------------------------------------------------------
// Snapshot format
//
// A counter is written whole on every command that sends a result, refusals included, and on the
// hot key (the service-wide method × day counter) it holds one entry per transaction of the day.
// As a JSON object per entry (format 1: `entries: { [id]: { amount: {decimal__}, completed } }`)
// every write walked, validated, packed and, for the version check, unpacked again hundreds of
// small objects. Format 2 keeps the same totals and writes the entries as ONE string, a line per
// entry: `<flag> <amount as fixed text> <transaction id>`, flag `o` (open), `c` (completed) or
// `r` (released: a tombstone, not in the totals); an id holding a newline is stored
// percent-encoded with the flag in upper case (`O`, `C`, `R`). A
// string costs the store a copy, not a walk. Format 1 snapshots still load (an upgrade in place).

const lineSeparator = '\n';
const statusFlags: Readonly<Record<CounterEntryStatus, string>> = { open: 'o', completed: 'c', released: 'r' };
const flagStatuses: Readonly<Record<string, CounterEntryStatus>> = { o: 'open', c: 'completed', r: 'released' };

function entryLine(transactionId: string, entry: CounterEntry): string {
  const escaped = transactionId.includes(lineSeparator);
  const flag = statusFlags[entry.status];
  const id = escaped ? encodeURIComponent(transactionId) : transactionId;
  return `${escaped ? flag.toUpperCase() : flag} ${toFixedString(entry.amount)} ${id}`;
}

function parseEntryLine(line: string): [string, CounterEntry] {
  const amountEnd = line.indexOf(' ', 2);
  const flag = line[0];
  const status = flag === undefined ? undefined : flagStatuses[flag.toLowerCase()];
  if (line[1] !== ' ' || amountEnd < 0 || flag === undefined || status === undefined) {
    throw new Error(`counter snapshot: bad entry line ${JSON.stringify(line.slice(0, 80))}`);
  }
  const parsed = decimalFromExactString(line.slice(2, amountEnd));
  const rawId = line.slice(amountEnd + 1);
  const transactionId = flag !== flag.toLowerCase() ? decodeURIComponent(rawId) : rawId;
  return [transactionId, { amount: decimal(parsed.units, parsed.scale), status }];
}

interface CounterSnapshot {
  readonly reservedAmount: JsonValue;
  readonly reservedCount: number;
  readonly entryLines: string;
}

/**
 * States are immutable and a counter that refuses keeps its state object, so the encoding of the
 * last state is reused for every refusal that follows it.
 */
const encodedCounters = new WeakMap<CounterState, JsonValue>();

export function encodeCounter(state: CounterState): JsonValue {
  const cached = encodedCounters.get(state);
  if (cached !== undefined) return cached;
  const lines: string[] = [];
  for (const [transactionId, entry] of Object.entries(state.entries)) lines.push(entryLine(transactionId, entry));
  const snapshot: CounterSnapshot = {
    reservedAmount: toJsonValue(state.reservedAmount),
    reservedCount: state.reservedCount,
    entryLines: lines.join(lineSeparator),
  };
  const json = snapshot as unknown as JsonValue;
  encodedCounters.set(state, json);
  return json;
}

/** Format 1: `entries` is an object of `{ amount: {decimal__}, completed }` per transaction id. */
function legacyEntries(json: JsonValue | undefined): Array<[string, CounterEntry]> {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error('counter snapshot: no entries');
  return Object.entries(json).map(([transactionId, entry]) => {
    const { amount, completed } = fromJsonValue<{ amount: Decimal; completed: boolean }>(entry);
    return [transactionId, { amount, status: completed === true ? 'completed' : 'open' }];
  });
}

export function decodeCounter(json: JsonValue): CounterState {
  const snapshot = json as Partial<CounterSnapshot> & { readonly entries?: JsonValue };
  const lines = typeof snapshot.entryLines !== 'string' ? null : snapshot.entryLines === '' ? [] : snapshot.entryLines.split(lineSeparator);
  const pairs = lines === null ? legacyEntries(snapshot.entries) : lines.map(parseEntryLine);
  // fromEntries defines own properties, so no id (not even `__proto__`) can touch the prototype.
  const entries: Readonly<Record<string, CounterEntry>> = Object.fromEntries(pairs);
  const state: CounterState = {
    reservedAmount: fromJsonValue<Decimal>(snapshot.reservedAmount ?? null),
    reservedCount: Number(snapshot.reservedCount),
    entries,
  };
  // The totals are the sum and number of the entries (the domain keeps them so); a snapshot that
  // disagrees is corrupt, and loading it would let the cap drift.
  const counted = pairs.filter(([, entry]) => entry.status !== 'released');
  const sum = counted.reduce((total, [, entry]) => add(total, entry.amount), zero(0));
  if (Object.keys(entries).length !== pairs.length || state.reservedCount !== counted.length || compare(sum, state.reservedAmount) !== 0) {
    throw new Error(`counter snapshot: totals ${state.reservedCount} / ${toFixedString(state.reservedAmount)} disagree with ${counted.length} counted entries`);
  }
  if (lines !== null) encodedCounters.set(state, json);
  return state;
}

export function counterBehavior(deps: { limits(): LimitsConfig }): ActorBehavior<CounterState> {
  return {
    type: counterActorType,
    encode: encodeCounter,
    decode: decodeCounter,
    handle(current, envelope) {
      const state = current ?? emptyCounter();
      const command = fromJsonValue<CounterCommand>(envelope.payload);
      switch (command.kind) {
        case 'reserve': {
          const answer = answerReserve(state, deps.limits(), command);
          return {
            ...(answer.state !== state ? { state: answer.state } : {}),
            send: [resultTo(command.transactionId, { window: command.window, outcome: answer.outcome })],
          };
        }
        case 'release': {
          const next = release(state, command.transactionId);
          return next === state ? {} : { state: next };
        }
        case 'commit': {
          const next = commit(state, { transactionId: command.transactionId, amount: command.amount });
          return next === state ? {} : { state: next };
        }
      }
    },
  };
}
