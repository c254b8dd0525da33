// Onramp crypto inventory: how much of each asset the hot wallet can still deliver on each network.
// Acceptance refuses an onramp quote whose crypto amount is above it (`liquidity_insufficient`);
// the delivery worker holds the amount before the first send, consumes the hold once the crypto is
// delivered and releases it when the delivery finally fails, so the figure drops once per
// successful delivery.
//
// The figure belongs to the inventory actor of its network × asset (src/actors/inventory-actor.ts):
// one writer, exact holds by key, bounded open holds. This client asks it (hold, release, consume,
// set) and reads what it last wrote (the read model `onramp_inventory/<NETWORK>:<ASSET>`) for the
// acceptance check, which therefore costs one store read and no actor round trip. Decisions:
// docs/onramp.md.
import { randomUUID } from 'node:crypto';
import {
  inventoryActorKey,
  inventoryActorType,
  inventoryReadModelFormat,
  onrampInventoryCollection,
  type InventoryCommandPayload,
  type InventoryReply,
} from '../actors/inventory-actor.ts';
import type { ActorAsker } from '../chains/deposits.ts';
import { cryptoAssets, networks, type CryptoAsset, type Network } from '../domain/assets.ts';
import { decimalFromExactString, toFixedString, type Decimal } from '../domain/money.ts';
import { inventoryAmount, type HoldOutcome } from '../domain/onramp-inventory.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';

export { inventoryScale, openHoldsMaxDefault } from '../domain/onramp-inventory.ts';
export { onrampInventoryCollection } from '../actors/inventory-actor.ts';

/** Generous by default, so the sandbox and the demo never run dry; configurable per network/asset. */
export const defaultInventoryAmount: Decimal = decimalFromExactString('1000000');

export type HoldResult = HoldOutcome;

/** What acceptance reads: the figure and how many holds are open (null bound: never written yet). */
export interface InventoryStatus {
  readonly available: Decimal;
  readonly openHolds: number;
  readonly openHoldsMax: number | null;
}

export interface OnrampInventory {
  /** What can still be promised on `network` in `asset` (token units). */
  available(network: Network, asset: CryptoAsset): Promise<Decimal>;
  status(network: Network, asset: CryptoAsset): Promise<InventoryStatus>;
  /**
   * Takes `amount` for the delivery `key`, once: 'already_held' / 'already_closed' for a key seen
   * before (nothing taken again); 'insufficient' and 'too_many_holds' change nothing.
   */
  hold(key: string, network: Network, asset: CryptoAsset, amount: Decimal): Promise<HoldResult>;
  /** Gives an open hold's amount back (the delivery finally failed); a key not open is ignored. */
  release(key: string, network: Network, asset: CryptoAsset): Promise<void>;
  /** Closes an open hold for good (the crypto was delivered); a key not open is ignored. */
  consume(key: string, network: Network, asset: CryptoAsset): Promise<void>;
  /** Operations and tests: the figure is now `amount` (a top-up or a count of the wallet). */
  set(network: Network, asset: CryptoAsset, amount: Decimal): Promise<void>;
}

export interface ActorOnrampInventoryOptions {
  readonly store: Pick<SnapshotStore, 'get'>;
  readonly actors: ActorAsker;
  /** Starting figure of a network/asset nothing was recorded for. */
  readonly initial?: Partial<Record<`${Network}/${CryptoAsset}`, Decimal>>;
  readonly initialDefault?: Decimal;
  readonly askTimeoutMs?: number;
}

function checkedAmount(amount: Decimal, allowZero: boolean): string {
  const scaled = inventoryAmount(amount, allowZero);
  if (scaled === null) throw new RangeError(`inventory amounts are ${allowZero ? 'non-negative' : 'positive'} with at most 7 decimals`);
  return toFixedString(scaled);
}

export class ActorOnrampInventory implements OnrampInventory {
  private readonly askTimeoutMs: number;

  constructor(private readonly options: ActorOnrampInventoryOptions) {
    for (const amount of [...Object.values(options.initial ?? {}), options.initialDefault ?? defaultInventoryAmount]) checkedAmount(amount, true);
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
  }

  async available(network: Network, asset: CryptoAsset): Promise<Decimal> {
    return (await this.status(network, asset)).available;
  }

  async status(network: Network, asset: CryptoAsset): Promise<InventoryStatus> {
    const doc = await this.options.store.get(onrampInventoryCollection, this.actorKey(network, asset));
    if (doc === null) return { available: this.initialOf(network, asset), openHolds: 0, openHoldsMax: null };
    if (doc['format'] !== inventoryReadModelFormat) return { available: legacyAmount(doc, network, asset), openHolds: 0, openHoldsMax: null };
    const { available, openHolds, openHoldsMax } = doc;
    if (typeof available !== 'string' || typeof openHolds !== 'number') throw new Error(`onramp inventory ${network}:${asset}: unreadable read model`);
    return { available: decimalFromExactString(available), openHolds, openHoldsMax: typeof openHoldsMax === 'number' ? openHoldsMax : null };
  }

  async hold(key: string, network: Network, asset: CryptoAsset, amount: Decimal): Promise<HoldResult> {
    const reply = await this.ask('hold', network, asset, { key, amount: checkedAmount(amount, false) });
    const outcome = reply.outcome;
    if (outcome !== 'held' && outcome !== 'already_held' && outcome !== 'already_closed' && outcome !== 'insufficient' && outcome !== 'too_many_holds') {
      throw new Error(`onramp inventory: unexpected answer ${outcome} to a hold`);
    }
    return outcome;
  }

  async release(key: string, network: Network, asset: CryptoAsset): Promise<void> {
    await this.ask('release', network, asset, { key });
  }

  async consume(key: string, network: Network, asset: CryptoAsset): Promise<void> {
    await this.ask('consume', network, asset, { key });
  }

  async set(network: Network, asset: CryptoAsset, amount: Decimal): Promise<void> {
    await this.ask('set', network, asset, { amount: checkedAmount(amount, true) });
  }

  /**
   * Each ask is a new command (its own id): the actor is idempotent by hold key from its state, and
   * a fresh id keeps a retried hold from being answered with an old reply ('too_many_holds' while
   * there is room again). A timeout throws; the caller retries.
   */
  private async ask(kind: 'hold' | 'release' | 'consume' | 'set', network: Network, asset: CryptoAsset, payload: InventoryCommandPayload): Promise<Extract<InventoryReply, { ok: true }>> {
    const seed = toFixedString((await this.status(network, asset)).available);
    const reply = await this.options.actors.ask<InventoryReply>(inventoryActorType, this.actorKey(network, asset), kind, { ...payload, seed }, {
      commandId: `inventory-${kind}:${randomUUID()}`,
      timeoutMs: this.askTimeoutMs,
    });
    if (!reply.ok) throw new Error(`onramp inventory refused ${kind}: ${reply.code} (${reply.reason})`);
    return reply;
  }

  private actorKey(network: Network, asset: CryptoAsset): string {
    if (!networks.includes(network) || !cryptoAssets.includes(asset)) throw new RangeError('unknown network or asset');
    return inventoryActorKey(network, asset);
  }

  private initialOf(network: Network, asset: CryptoAsset): Decimal {
    return this.options.initial?.[`${network}/${asset}`] ?? this.options.initialDefault ?? defaultInventoryAmount;
  }
}

/** The figure the previous inventory (a plain store document: amount and hold-key lists) left. */
function legacyAmount(doc: JsonObject, network: Network, asset: CryptoAsset): Decimal {
  const amount = doc['amount'];
  if (typeof amount !== 'string') throw new Error(`onramp inventory ${network}:${asset}: amount is not a decimal text`);
  return decimalFromExactString(amount);
}
