// In-process offers for the embedded single-process mode and tests: the contract of offers.ts, with
// time from an injectable clock. Per partner, the offers sit in one array ordered by expiry (an
// insertion finds its place by binary search), so the partner's valid offers are counted exactly
// and the ones past their grace are dropped from the front on each write.
import { BusError, systemClock, type Clock } from './bus.ts';
import { assertOfferKey, assertOffersConfig, isOfferKey, validForMs, type OfferCodec, type OfferFields, type OfferOutcome, type Offers, type OffersConfig } from './offers.ts';

interface Held {
  readonly id: string;
  readonly text: string;
  /** Valid until then (counted against the partner's share). */
  readonly validUntilMs: number;
  /** Kept until then (validity plus the grace). */
  readonly keptUntilMs: number;
}

export interface MemoryOffersOptions<T> extends OffersConfig {
  readonly codec: OfferCodec<T>;
  readonly clock?: Clock;
}

/** The first index in `held` (sorted by validUntilMs) whose validUntilMs is above `ms`. */
function firstAfter(held: readonly Held[], ms: number): number {
  let low = 0;
  let high = held.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((held[middle]?.validUntilMs ?? 0) > ms) high = middle;
    else low = middle + 1;
  }
  return low;
}

export class MemoryOffers<T extends OfferFields> implements Offers<T> {
  private readonly clock: Clock;
  private readonly codec: OfferCodec<T>;
  private readonly config: OffersConfig;
  /** Per partner: its offers by expiry; and by id (the same records). */
  private readonly byPartner = new Map<string, { readonly byExpiry: Held[]; readonly byId: Map<string, Held> }>();
  private closed = false;

  constructor(options: MemoryOffersOptions<T>) {
    assertOffersConfig(options);
    this.clock = options.clock ?? systemClock;
    this.codec = options.codec;
    this.config = { perPartnerMax: options.perPartnerMax, graceMs: options.graceMs };
  }

  offer(offer: T): Promise<OfferOutcome<T>> {
    return settle(() => {
      if (this.closed) throw new BusError('unavailable', 'quote offers are closed (the process is stopping)');
      assertOfferKey(offer.partnerId, offer.id);
      const nowMs = this.clock.nowMs();
      const partner = this.partner(offer.partnerId, nowMs);
      const existing = partner.byId.get(offer.id);
      if (existing !== undefined) return { ok: true, offer: this.codec.decode(existing.text) };
      const { byExpiry, byId } = partner;
      if (byExpiry.length - firstAfter(byExpiry, nowMs) >= this.config.perPartnerMax) {
        return { ok: false, reason: 'partner_full', perPartnerMax: this.config.perPartnerMax };
      }
      const validUntilMs = nowMs + validForMs(offer, nowMs);
      const held: Held = { id: offer.id, text: this.codec.encode(offer), validUntilMs, keptUntilMs: validUntilMs + this.config.graceMs };
      byExpiry.splice(firstAfter(byExpiry, validUntilMs), 0, held);
      byId.set(offer.id, held);
      return { ok: true, offer };
    });
  }

  find(partnerId: string, id: string): Promise<T | null> {
    return settle(() => {
      if (!isOfferKey(partnerId, id)) return null;
      const held = this.byPartner.get(partnerId)?.byId.get(id);
      return held === undefined || held.keptUntilMs <= this.clock.nowMs() ? null : this.codec.decode(held.text);
    });
  }

  close(): Promise<void> {
    this.closed = true;
    this.byPartner.clear();
    return Promise.resolve();
  }

  /** The partner's offers, with those past their grace dropped (the grace is the same for all, so they lead). */
  private partner(partnerId: string, nowMs: number): { readonly byExpiry: Held[]; readonly byId: Map<string, Held> } {
    let partner = this.byPartner.get(partnerId);
    if (partner === undefined) {
      partner = { byExpiry: [], byId: new Map() };
      this.byPartner.set(partnerId, partner);
    }
    let gone = 0;
    while (gone < partner.byExpiry.length && (partner.byExpiry[gone]?.keptUntilMs ?? Infinity) <= nowMs) {
      partner.byId.delete(partner.byExpiry[gone]?.id ?? '');
      gone += 1;
    }
    if (gone > 0) partner.byExpiry.splice(0, gone);
    return partner;
  }
}

/** Errors become rejections, as an I/O adapter's would. */
function settle<R>(body: () => R): Promise<R> {
  try {
    return Promise.resolve(body());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
