// Onramp acceptance, the part before the transaction actor: what the destination wallet is (chains:
// not one of our addresses, not the token, not a token account or contract), the crypto inventory
// check, and the PIX charge the payer pays. The edge calls `prepare` after its own read checks
// (user, quote expiry, caps, rail availability, the destination's shape) and before it asks the
// transaction actor, so the charge exists, idempotently, before the acceptance is answered:
//   - the charge's idempotency key is derived from the transaction id (`onramp-charge:<txId>`):
//     a retried acceptance (same Idempotency-Key → same transaction id) gets the same charge back;
//   - the charge id → transaction id mapping is written to `pix_charges` (and the reverse to
//     `onramp_charges`) before the charge is shown to anyone, so every payment notice for it can
//     be matched;
//   - payment_context is the charge plus the crypto leg (see `OnrampPaymentContext`), never a
//     deposit address.
// Decisions: docs/onramp.md.
import type { Logger } from 'pino';
import type { JsonValue } from '../actors/envelope.ts';
import { chainFamily } from '../domain/assets.ts';
import { compare, decimalFromExactString, toFixedString, toJsonNumber, type Decimal } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import type { ChainSetups } from '../chains/config.ts';
import type { DestinationCheck } from '../chains/destinations.ts';
import { RailUnavailableError, type PixCharge, type Rail } from '../rails/rails.ts';
import type { OnrampAcceptance, OnrampPreparation } from '../ports/ports.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import type { InventoryStatus, OnrampInventory } from './inventory.ts';

/** charge id → the transaction it pays (what a payment notice is matched by). */
export const pixChargesCollection = 'pix_charges';
/** transaction id → its charge (what the sandbox payer and operations look up). */
export const onrampChargesCollection = 'onramp_charges';

export function chargeIdempotencyKey(transactionId: string): string {
  return `onramp-charge:${transactionId}`;
}

/** The mapping kept for each charge (no payer data: the provider has it, we do not need it). */
export interface OnrampChargeRecord {
  readonly chargeId: string;
  readonly transactionId: string;
  readonly partnerId: string;
  /** BRL the payer is asked for. */
  readonly amount: Decimal;
  readonly expiresAtMs: number;
  readonly createdAtMs: number;
}

/** payment_context of an onramp transaction (docs/onramp.md, docs/api.md). */
export interface OnrampPaymentContext {
  readonly type: 'pix_charge';
  /** BRL to pay by PIX: the quote's fiat amount (what the BR Code asks for). */
  readonly amount: number;
  readonly currency: 'BRL';
  readonly paymentMethod: 'PIX';
  /** The dynamic BR Code "copia e cola" payload. */
  readonly brCode: string;
  readonly chargeId: string;
  /** Epoch ms; equals the quote's expiration_time. */
  readonly expiresAt: number;
  readonly blockchain: Quote['network'];
  readonly chainFamily: 'stellar' | 'solana' | 'evm';
  readonly chainId: string;
  readonly cryptoCurrency: Quote['cryptoCurrency'];
  /** Crypto the destination receives: the onramp quote's value. */
  readonly cryptoAmount: number;
  readonly decimals: number;
  /** Token mint/contract on Solana and Celo; null on Stellar (as in the payout payment_context). */
  readonly mintAddress: string | null;
  /** The wallet that receives the crypto (`account_number` of the acceptance). */
  readonly destination: string;
}

export function chargeRecordToDoc(record: OnrampChargeRecord): JsonObject {
  return { ...record, amount: toFixedString(record.amount) };
}

export function chargeRecordFromDoc(doc: JsonObject): OnrampChargeRecord | null {
  const { chargeId, transactionId, partnerId, amount, expiresAtMs, createdAtMs } = doc;
  if (typeof chargeId !== 'string' || typeof transactionId !== 'string' || typeof partnerId !== 'string' || typeof amount !== 'string') return null;
  if (typeof expiresAtMs !== 'number' || typeof createdAtMs !== 'number') return null;
  return { chargeId, transactionId, partnerId, amount: decimalFromExactString(amount), expiresAtMs, createdAtMs };
}

/** The charge a notice names → its record; null when we never created that charge. */
export async function chargeById(store: Pick<SnapshotStore, 'get'>, chargeId: string): Promise<OnrampChargeRecord | null> {
  const doc = await store.get(pixChargesCollection, chargeId);
  return doc === null ? null : chargeRecordFromDoc(doc);
}

export async function chargeOfTransaction(store: Pick<SnapshotStore, 'get'>, transactionId: string): Promise<OnrampChargeRecord | null> {
  const doc = await store.get(onrampChargesCollection, transactionId);
  return doc === null ? null : chargeRecordFromDoc(doc);
}

export function onrampPaymentContext(quote: Quote, charge: PixCharge, setups: ChainSetups, destination: string): OnrampPaymentContext | null {
  const setup = setups[quote.network];
  const asset = setup?.assets[quote.cryptoCurrency];
  if (setup === undefined || asset === undefined) return null;
  return {
    type: 'pix_charge',
    amount: toJsonNumber(charge.amount),
    currency: 'BRL',
    paymentMethod: 'PIX',
    brCode: charge.brCode,
    chargeId: charge.chargeId,
    expiresAt: charge.expiresAtMs,
    blockchain: quote.network,
    chainFamily: chainFamily[quote.network],
    chainId: setup.chainId,
    cryptoCurrency: quote.cryptoCurrency,
    cryptoAmount: toJsonNumber(quote.targetAmount),
    decimals: asset.decimals,
    mintAddress: quote.network === 'STELLAR' ? null : asset.identifier,
    destination,
  };
}

export interface OnrampChargesOptions {
  readonly store: Pick<SnapshotStore, 'get' | 'put'>;
  readonly rail: Pick<Rail, 'createPixCharge'>;
  readonly inventory: OnrampInventory;
  /** What the destination is (our own address, the token, a token account, a contract…): chains. */
  readonly destinations: DestinationCheck;
  readonly setups: () => ChainSetups;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Bound on the provider call; past it the edge answers 503 (a retry gets the same charge). */
  readonly railCallTimeoutMs?: number;
}

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

async function within<T>(ms: number, run: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class OnrampCharges implements OnrampAcceptance {
  private readonly railCallTimeoutMs: number;

  constructor(private readonly options: OnrampChargesOptions) {
    this.railCallTimeoutMs = options.railCallTimeoutMs ?? 10_000;
  }

  async prepare(request: { readonly partnerId: string; readonly transactionId: string; readonly quote: Quote; readonly destination: string }): Promise<OnrampPreparation> {
    const { quote, transactionId } = request;
    if (quote.direction !== 'onramp') throw new Error('OnrampCharges.prepare called with a payout quote');
    const log = this.options.log;
    const setups = this.options.setups();
    if (setups[quote.network]?.assets[quote.cryptoCurrency] === undefined) {
      return { ok: false, unavailable: `Onramp delivery of ${quote.cryptoCurrency} on ${quote.network}` };
    }
    // account_unverifiable (6 in the catalogue's order) before liquidity (7): a destination that
    // would swallow the crypto — ours, the token, a token account, a contract — is refused here.
    const destination = await this.options.destinations.check(quote.network, request.destination);
    if (!destination.ok) {
      if ('refused' in destination) return { ok: false, rejection: { code: 'account_unverifiable' }, detail: destination.reason };
      log.warn({ network: quote.network, error: destination.error }, 'onramp destination could not be looked up');
      return { ok: false, unavailable: destination.unavailable };
    }
    // liquidity_insufficient comes before the PIX charge: no charge for a delivery we cannot make.
    let inventory: InventoryStatus;
    try {
      inventory = await this.options.inventory.status(quote.network, quote.cryptoCurrency);
    } catch (error) {
      log.warn({ error: String(error), network: quote.network }, 'onramp inventory unreadable');
      return { ok: false, unavailable: 'The onramp inventory' };
    }
    if (compare(inventory.available, quote.targetAmount) < 0) return { ok: false, rejection: { code: 'liquidity_insufficient' } };
    // Deliveries in flight at their bound: this one could not be held until some finish. Retryable.
    if (inventory.openHoldsMax !== null && inventory.openHolds >= inventory.openHoldsMax) {
      log.warn({ network: quote.network, asset: quote.cryptoCurrency, openHolds: inventory.openHolds }, 'onramp deliveries in flight at their bound; acceptance refused');
      return { ok: false, unavailable: `Onramp deliveries on ${quote.network} (too many in flight)` };
    }

    let charge: PixCharge;
    try {
      charge = await within(
        this.railCallTimeoutMs,
        this.options.rail.createPixCharge({
          amount: quote.sourceAmount,
          expiresAtMs: quote.expiresAtMs,
          idempotencyKey: chargeIdempotencyKey(transactionId),
          description: `Onramp ${quote.cryptoCurrency} on ${quote.network}`,
        }),
      );
    } catch (error) {
      if (error instanceof RailUnavailableError) return { ok: false, rejection: { code: 'rail_unavailable', method: 'PIX' } };
      log.warn({ error: error instanceof Error ? error.name : 'unknown', transactionId }, 'PIX charge could not be created');
      return { ok: false, unavailable: 'PIX charges' };
    }
    if (compare(charge.amount, quote.sourceAmount) !== 0) {
      // A provider that changed the amount would make every payment a wrong amount.
      log.error({ transactionId, chargeId: charge.chargeId }, 'the PIX provider returned a charge of another amount');
      return { ok: false, unavailable: 'PIX charges' };
    }
    const context = onrampPaymentContext(quote, charge, setups, request.destination);
    if (context === null) return { ok: false, unavailable: `Onramp delivery on ${quote.network}` };

    const record: OnrampChargeRecord = {
      chargeId: charge.chargeId,
      transactionId,
      partnerId: request.partnerId,
      amount: charge.amount,
      expiresAtMs: charge.expiresAtMs,
      createdAtMs: this.options.clock.nowMs(),
    };
    try {
      // Rewriting on a retried acceptance is harmless: the same charge, the same transaction.
      await this.options.store.put(pixChargesCollection, charge.chargeId, chargeRecordToDoc(record));
      await this.options.store.put(onrampChargesCollection, transactionId, chargeRecordToDoc(record));
    } catch (error) {
      log.warn({ error: String(error), transactionId }, 'PIX charge mapping could not be written');
      return { ok: false, unavailable: 'PIX charges' };
    }
    return { ok: true, paymentContext: context as unknown as JsonValue };
  }
}
