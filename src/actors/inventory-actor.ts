// The onramp inventory actor: one per network × asset (key `<NETWORK>:<ASSET>`), the only writer of
// that figure. Holds, releases and consumptions by key are applied one at a time against durable
// state (src/domain/onramp-inventory.ts), so two processes holding at the same instant both count,
// and a hold is given back exactly however many holds came after it. Each change also writes the
// read model `onramp_inventory/<NETWORK>:<ASSET>` (what acceptance reads, without asking the actor).
//
// The first command an actor ever gets carries `seed`: the figure to start from, which the client
// reads from that same read-model document — the figure the previous, store-document inventory left
// there (format without `format: 2`), or the configured starting amount when there is none. This
// is the explicit migration: the old document's amount is carried over, its key lists are not (see
// docs/onramp.md). Later seeds are ignored.
import { cryptoAssets, isOneOf, networks, type CryptoAsset, type Network } from '../domain/assets.ts';
import { decimalFromExactString, toFixedString, type Decimal } from '../domain/money.ts';
import {
  assertInventory,
  decideInventory,
  heldTotal,
  initialInventory,
  inventoryAmount,
  validHoldKey,
  type InventoryCommand,
  type InventoryLimits,
  type InventoryOutcome,
  type InventoryState,
} from '../domain/onramp-inventory.ts';
import { z } from 'zod';
import { decoderOf } from './commands.ts';
import type { ActorBehavior, CommandMap, JsonValue, Outcome, ReadModelWrite } from './envelope.ts';

export const inventoryActorType = 'onramp-inventory';
/** The read model: one document per network × asset (also where the previous inventory kept its figure). */
export const onrampInventoryCollection = 'onramp_inventory';
/** Marks a read-model document written by the actor (the previous inventory's had none). */
export const inventoryReadModelFormat = 2;

export function inventoryActorKey(network: Network, asset: CryptoAsset): string {
  return `${network}:${asset}`;
}

function parseActorKey(key: string): { network: Network; asset: CryptoAsset } | null {
  const [network, asset, extra] = key.split(':');
  return extra === undefined && isOneOf(networks, network) && isOneOf(cryptoAssets, asset) ? { network, asset } : null;
}

/** What a client sends: amounts as fixed decimal text. */
export interface InventoryCommandPayload {
  readonly key?: string;
  readonly amount?: string;
  /** The starting figure, used only by an actor that has no state yet. */
  readonly seed?: string;
}

export type InventoryReply =
  | { readonly ok: true; readonly outcome: InventoryOutcome; readonly available: string; readonly openHolds: number }
  | { readonly ok: false; readonly code: 'malformed_command' | 'not_seeded'; readonly reason: string };

function amountOf(text: unknown, allowZero: boolean): Decimal | null {
  if (typeof text !== 'string' || !/^\d{1,15}(\.\d{1,7})?$/.test(text)) return null;
  return inventoryAmount(decimalFromExactString(text), allowZero);
}

/** An inventory's commands: each takes the same payload shape; what each field means is checked below. */
export type InventoryCommands = { readonly [K in InventoryCommand['kind']]: InventoryCommandPayload };

const payloadSchema: z.ZodType<InventoryCommandPayload> = z.object({
  key: z.string().exactOptional(),
  amount: z.string().exactOptional(),
  seed: z.string().exactOptional(),
});

export const inventoryCommands: CommandMap<InventoryCommands> = {
  set: decoderOf(payloadSchema, { revive: false }),
  hold: decoderOf(payloadSchema, { revive: false }),
  release: decoderOf(payloadSchema, { revive: false }),
  consume: decoderOf(payloadSchema, { revive: false }),
};

function commandOf(kind: InventoryCommand['kind'], payload: InventoryCommandPayload): InventoryCommand | string {
  if (kind === 'set') {
    const amount = amountOf(payload.amount, true);
    return amount === null ? 'set needs amount: a non-negative decimal text with at most 7 decimals' : { kind, amount };
  }
  if (!validHoldKey(payload.key)) return 'key must be 1-200 printable characters';
  if (kind !== 'hold') return { kind, key: payload.key };
  const amount = amountOf(payload.amount, false);
  return amount === null ? 'hold needs amount: a positive decimal text with at most 7 decimals' : { kind, key: payload.key, amount };
}


// ---------------------------------------------------------------------------------------------
// Snapshot: the holds and closed keys as one string each, a line per entry
// (`<key, percent-encoded> <amount | closedAtMs>`): a string costs the store a copy, not a walk.

interface InventorySnapshot {
  readonly available: string;
  readonly holdLines: string;
  readonly closedLines: string;
}

function lines(text: string): string[] {
  return text === '' ? [] : text.split('\n');
}

function splitLine(line: string): [string, string] {
  const space = line.indexOf(' ');
  if (space <= 0) throw new Error(`inventory snapshot: bad line ${JSON.stringify(line.slice(0, 80))}`);
  return [decodeURIComponent(line.slice(0, space)), line.slice(space + 1)];
}

export function encodeInventory(state: InventoryState): JsonValue {
  const snapshot: InventorySnapshot = {
    available: toFixedString(state.available),
    holdLines: Object.entries(state.holds).map(([key, amount]) => `${encodeURIComponent(key)} ${toFixedString(amount)}`).join('\n'),
    closedLines: state.closed.map(([key, closedAtMs]) => `${encodeURIComponent(key)} ${closedAtMs}`).join('\n'),
  };
  return { ...snapshot };
}

export function decodeInventory(json: JsonValue): InventoryState {
  const snapshot: Partial<InventorySnapshot> = json !== null && typeof json === 'object' && !Array.isArray(json) ? json : {};
  if (typeof snapshot.available !== 'string' || typeof snapshot.holdLines !== 'string' || typeof snapshot.closedLines !== 'string') {
    throw new Error('inventory snapshot: missing fields');
  }
  const holds = Object.fromEntries(lines(snapshot.holdLines).map((line) => {
    const [key, amount] = splitLine(line);
    return [key, decimalFromExactString(amount)];
  }));
  const closed = lines(snapshot.closedLines).map((line): readonly [string, number] => {
    const [key, atMs] = splitLine(line);
    return [key, Number(atMs)];
  });
  return { available: decimalFromExactString(snapshot.available), holds, closed };
}

// ---------------------------------------------------------------------------------------------

export interface InventoryActorDeps {
  /** Bound on open holds per network × asset (deliveries in flight at once). */
  readonly openHoldsMax: () => number;
}

function readModel(actorKey: string, at: { network: Network; asset: CryptoAsset }, state: InventoryState, limits: InventoryLimits, nowMs: number): ReadModelWrite {
  return {
    collection: onrampInventoryCollection,
    id: actorKey,
    doc: {
      format: inventoryReadModelFormat,
      network: at.network,
      asset: at.asset,
      available: toFixedString(state.available),
      held: toFixedString(heldTotal(state)),
      openHolds: Object.keys(state.holds).length,
      openHoldsMax: limits.openHoldsMax,
      updatedAtMs: nowMs,
    },
  };
}

function refused(code: 'malformed_command' | 'not_seeded', reason: string): Outcome<InventoryState> {
  const reply: InventoryReply = { ok: false, code, reason };
  return { reply: { ...reply } };
}

export function inventoryBehavior(deps: InventoryActorDeps): ActorBehavior<InventoryState, InventoryCommands> {
  return {
    type: inventoryActorType,
    encode: encodeInventory,
    decode: decodeInventory,
    commands: inventoryCommands,
    handle(current, envelope, ctx) {
      const at = parseActorKey(envelope.actorKey);
      if (at === null) return refused('malformed_command', 'the actor key is not <NETWORK>:<ASSET>');
      const payload = envelope.payload;
      const command = commandOf(envelope.kind, payload);
      if (typeof command === 'string') return refused('malformed_command', command);
      let state = current;
      if (state === null) {
        const start = amountOf(payload.seed, true) ?? (command.kind === 'set' ? command.amount : null);
        if (start === null) return refused('not_seeded', 'the first command of an inventory carries its starting figure (seed)');
        state = initialInventory(start);
      }
      const limits: InventoryLimits = { openHoldsMax: deps.openHoldsMax() };
      const decision = decideInventory(state, command, limits, ctx.nowMs);
      assertInventory(decision.state, limits);
      const reply: InventoryReply = {
        ok: true,
        outcome: decision.outcome,
        available: toFixedString(decision.state.available),
        openHolds: Object.keys(decision.state.holds).length,
      };
      // A new actor is written even when the command changed nothing: its seed is now fixed.
      if (decision.state === current) return { reply: { ...reply } };
      return { state: decision.state, reply: { ...reply }, readModels: [readModel(envelope.actorKey, at, decision.state, limits, ctx.nowMs)] };
    },
  };
}
