// Offers: short-lived records a partner asks for and may later act on, kept for a bounded time and
// counted per partner (the quote offers of src/ports/quote-offers.ts are the one user). Nothing
// contends on an offer: it is written once (a second write of the same id keeps the first, so a
// retried request never changes what was promised) and read by its partner. Losing one only means
// the partner asks again, so the stores keep them in memory (Redis or this process), never in the
// durable store. Two adapters keep the same contract (test/integration/offers-contract.test.ts):
// `RedisOffers` for a deployment on Redis, `MemoryOffers` for the embedded single-process mode.

/** What an offer must carry: its id, its partner, and when it stops being valid. */
export interface OfferFields {
  readonly id: string;
  readonly partnerId: string;
  readonly expiresAtMs: number;
}

/** How an offer is written to and read from its store (text, readable in `redis-cli`). */
export interface OfferCodec<T> {
  encode(offer: T): string;
  decode(text: string): T;
}

export interface OffersConfig {
  /**
   * Offers of one partner still valid at once (`QUOTE_OFFERS_PER_PARTNER_MAX`): a partner's share of
   * the memory offers take. Past it, `offer` answers `partner_full` and stores nothing.
   */
  readonly perPartnerMax: number;
  /**
   * How long an offer is kept after its expiry (`QUOTE_OFFER_GRACE_MS`), so that acting on one just
   * expired finds it and is told so, rather than being told it never existed.
   */
  readonly graceMs: number;
}

export type OfferOutcome<T> =
  /** `offer`: what is stored under its id now (the earlier offer when one was there already). */
  | { readonly ok: true; readonly offer: T }
  /** The partner already has `perPartnerMax` valid offers. */
  | { readonly ok: false; readonly reason: 'partner_full'; readonly perPartnerMax: number };

/** The port. A lookup under another partner misses: another partner's offer does not exist for you. */
export interface Offers<T extends OfferFields> {
  /** Stores `offer` until its expiry plus the grace, unless one with its id is stored already. */
  offer(offer: T): Promise<OfferOutcome<T>>;
  /** The partner's offer with this id, or null (never made, another partner's, or past its grace). */
  find(partnerId: string, id: string): Promise<T | null>;
  /** Answers the offers already made, then refuses new ones (`BusError` `unavailable`: a 503). */
  close(): Promise<void>;
}

export const offersPerPartnerMaxDefault = 20_000;
export const offerGraceMsDefault = 3_600_000;

const partnerIdPattern = /^[A-Za-z0-9_-]{1,64}$/;
const offerIdPattern = /^[A-Za-z0-9_-]{1,128}$/;

/** Partner and offer ids become key parts (the partner is a Redis Cluster hash tag): checked, never escaped. */
export function assertOfferKey(partnerId: string, id: string): void {
  if (!partnerIdPattern.test(partnerId)) throw new RangeError(`offer partner id must be 1-64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(partnerId.slice(0, 80))}`);
  if (!offerIdPattern.test(id)) throw new RangeError(`offer id must be 1-128 of A-Z a-z 0-9 _ -, got ${JSON.stringify(id.slice(0, 140))}`);
}

export function assertOffersConfig(config: OffersConfig): void {
  if (!Number.isSafeInteger(config.perPartnerMax) || config.perPartnerMax < 1) throw new RangeError(`perPartnerMax must be a positive integer, got ${config.perPartnerMax}`);
  if (!Number.isSafeInteger(config.graceMs) || config.graceMs < 0) throw new RangeError(`graceMs must be a non-negative integer, got ${config.graceMs}`);
}

/** A lookup id that cannot be a stored one (not the key pattern) simply misses. */
export function isOfferKey(partnerId: string, id: string): boolean {
  return partnerIdPattern.test(partnerId) && offerIdPattern.test(id);
}

/** How long an offer made at `nowMs` stays valid (at least 1 ms: an offer is never stored already spent). */
export function validForMs(offer: OfferFields, nowMs: number): number {
  return Math.max(1, Math.ceil(offer.expiresAtMs - nowMs));
}
