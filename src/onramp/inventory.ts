// Onramp crypto inventory: how much of each asset the hot wallet can still deliver on each network.
// Acceptance refuses an onramp quote whose crypto amount is above it (`liquidity_insufficient`);
// the delivery worker holds the amount before the first send and gives it back only when the
// delivery finally fails, so the figure drops once per successful delivery.
//
// The figure is book-kept in the store (collection `onramp_inventory`, one document per
// network/asset), starting from a configured amount, so every process of a deployment sees the same
// number and a restart keeps it. Each hold and release is written together with the key that caused
// it (the document remembers the last `appliedKeysMax` keys), so a crash between a hold and the
// send, or a retried release, never moves the figure twice. Decisions: docs/onramp.md.
//
// Concurrency: one process serialises its inventory steps. Two processes holding *different* keys
// at the same instant may lose one decrement (last write wins), as with the sandbox rail's
// liquidity; the chain's own balance check still refuses a send the wallet cannot cover.
import { cryptoAssets, networks, type CryptoAsset, type Network } from '../domain/assets.ts';
import { add, compare, decimalFromExactString, rescale, subtract, toFixedString, type Decimal } from '../domain/money.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';

export const onrampInventoryCollection = 'onramp_inventory';
/** Keys remembered per document so a hold or release applies once. */
export const appliedKeysMax = 1_000;
/** Amounts are kept at 7 decimals, the most any supported token has. */
export const inventoryScale = 7;

/** Generous by default, so the sandbox and the demo never run dry; configurable per network/asset. */
export const defaultInventoryAmount: Decimal = decimalFromExactString('1000000');

export type HoldResult = 'held' | 'already_held' | 'insufficient';

export interface OnrampInventory {
  /** What can still be promised on `network` in `asset` (token units). */
  available(network: Network, asset: CryptoAsset): Promise<Decimal>;
  /** Takes `amount` for the delivery `key`, once; 'insufficient' changes nothing. */
  hold(key: string, network: Network, asset: CryptoAsset, amount: Decimal): Promise<HoldResult>;
  /** Gives a held amount back (the delivery finally failed); once per key; unknown keys are ignored. */
  release(key: string, network: Network, asset: CryptoAsset, amount: Decimal): Promise<void>;
  /** Operations and tests: the figure is now `amount` (a top-up or a count of the wallet). */
  set(network: Network, asset: CryptoAsset, amount: Decimal): Promise<void>;
}

interface InventoryRecord {
  readonly amount: Decimal;
  readonly held: readonly string[];
  readonly released: readonly string[];
}

export interface StoredInventoryOptions {
  readonly store: Pick<SnapshotStore, 'get' | 'put' | 'putIfAbsent'>;
  /** Starting figure of a network/asset the store has no record of. */
  readonly initial?: Partial<Record<`${Network}/${CryptoAsset}`, Decimal>>;
  readonly initialDefault?: Decimal;
}

function strings(value: JsonObject[string] | undefined): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function atScale(amount: Decimal): Decimal {
  const scaled = rescale(amount, inventoryScale, 'floor');
  if (compare(scaled, amount) !== 0) throw new RangeError(`inventory amounts have at most ${inventoryScale} decimals`);
  return scaled;
}

export class StoredOnrampInventory implements OnrampInventory {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: StoredInventoryOptions) {
    for (const amount of Object.values(options.initial ?? {})) if (amount.units < 0n) throw new RangeError('inventory must not be negative');
  }

  async available(network: Network, asset: CryptoAsset): Promise<Decimal> {
    return (await this.record(network, asset)).amount;
  }

  hold(key: string, network: Network, asset: CryptoAsset, amount: Decimal): Promise<HoldResult> {
    return this.serially(async () => {
      const current = await this.record(network, asset);
      if (current.held.includes(key)) return 'already_held';
      if (compare(current.amount, amount) < 0) return 'insufficient';
      await this.write(network, asset, { ...current, amount: subtract(current.amount, atScale(amount)), held: [...current.held, key] });
      return 'held';
    });
  }

  release(key: string, network: Network, asset: CryptoAsset, amount: Decimal): Promise<void> {
    return this.serially(async () => {
      const current = await this.record(network, asset);
      if (!current.held.includes(key) || current.released.includes(key)) return;
      await this.write(network, asset, { ...current, amount: add(current.amount, atScale(amount)), released: [...current.released, key] });
    });
  }

  set(network: Network, asset: CryptoAsset, amount: Decimal): Promise<void> {
    if (amount.units < 0n) return Promise.reject(new RangeError('inventory must not be negative'));
    const scaled = atScale(amount);
    return this.serially(async () => {
      const current = await this.record(network, asset);
      await this.write(network, asset, { ...current, amount: scaled });
    });
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private initialOf(network: Network, asset: CryptoAsset): Decimal {
    return atScale(this.options.initial?.[`${network}/${asset}`] ?? this.options.initialDefault ?? defaultInventoryAmount);
  }

  private async record(network: Network, asset: CryptoAsset): Promise<InventoryRecord> {
    if (!networks.includes(network) || !cryptoAssets.includes(asset)) throw new RangeError('unknown network or asset');
    const id = `${network}:${asset}`;
    let doc = await this.options.store.get(onrampInventoryCollection, id);
    if (doc === null) {
      const initial: JsonObject = { amount: toFixedString(this.initialOf(network, asset)), held: [], released: [] };
      const put = await this.options.store.putIfAbsent(onrampInventoryCollection, id, initial);
      doc = put.status === 'inserted' ? initial : put.doc;
    }
    const amount = doc['amount'];
    if (typeof amount !== 'string') throw new Error(`onramp inventory ${id}: amount is not a decimal text`);
    return { amount: decimalFromExactString(amount), held: strings(doc['held']), released: strings(doc['released']) };
  }

  private async write(network: Network, asset: CryptoAsset, record: InventoryRecord): Promise<void> {
    await this.options.store.put(onrampInventoryCollection, `${network}:${asset}`, {
      amount: toFixedString(record.amount),
      held: record.held.slice(-appliedKeysMax),
      released: record.released.slice(-appliedKeysMax),
    });
  }
}
