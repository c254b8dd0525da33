// hot-accept: successful BREB acceptances by many users of many partners, all counting in the one
// service-wide BREB method-day counter (the hot key), with the caps raised (LIMITS_FILE) so that
// nothing is refused during the measured phase. It measures how fast the service ACCEPTS on a hot
// key; hot-cap (bench/http/workloads.ts) stays the at-the-cap exactness run, where most answers
// are refusals.
//
// A quote backs at most one transaction, so the service gets one fresh quote per acceptance,
// created before the phase (setup, not measured) and used in order: wrk's thread k sends requests
// k, k + T, … so no quote is sent twice while the list lasts. The list is sized for
// `acceptRateMax` acceptances per second; a run faster than that reuses quotes and shows 400
// (quote_used) answers as unexpected. The PostgreSQL baseline does not model single-use quotes
// (one quote per partner, read but not claimed): one write fewer per acceptance than ours.
import type { LoadRequest } from '../lib/load.ts';
import { mapLimit } from '../lib/processes.ts';
import type { BenchPartner } from '../lib/service.ts';
import { createQuote, quoteBodyBreb } from './workloads.ts';

/** Users per partner; each point uses its own user prefix, so per-user counters start empty. */
export const hotAcceptUsersPerPartner = 32;
const quoteSetupConcurrency = 64;

/** Caps high enough that a run never reaches them; the per-transaction cap stays the spec's. */
export const hotAcceptLimits = {
  methods: {
    BREB: { userDailyAmountMax: '1000000000000', methodDailyAmountMax: '1000000000000', userDailyCountMax: 1_000_000 },
  },
} as const;

/** `count` BREB quotes spread over the partners, in partner rotation (setup, not measured). */
export async function createQuoteList(baseUrl: string, partners: readonly BenchPartner[], count: number): Promise<Array<{ partner: BenchPartner; quoteId: string }>> {
  const indexes = Array.from({ length: count }, (_, index) => index);
  return mapLimit(indexes, quoteSetupConcurrency, async (index) => {
    const partner = partners[index % partners.length];
    if (partner === undefined) throw new Error('hot-accept needs at least one partner');
    return { partner, quoteId: await createQuote(baseUrl, partner, quoteBodyBreb) };
  });
}

/** One POST /transaction per quote, users rotating within each partner. */
export function hotAcceptRequests(quotes: ReadonlyArray<{ partner: BenchPartner; quoteId: string }>, partnerCount: number, userPrefix: string): LoadRequest[] {
  return quotes.map(({ partner, quoteId }, index) => {
    const user = Math.floor(index / Math.max(1, partnerCount)) % hotAcceptUsersPerPartner;
    return {
      method: 'POST',
      path: '/transaction',
      headers: { 'x-api-key': partner.apiKey },
      body: JSON.stringify({ quote_id: quoteId, user_id: `${userPrefix}u${user}`, account_number: `@bench${user}` }),
      tag: 'accept',
      collectField: 'id',
    };
  });
}

/** The users a point's workload used (for the cap check). */
export function hotAcceptUserIds(userPrefix: string): string[] {
  return Array.from({ length: hotAcceptUsersPerPartner }, (_, index) => `${userPrefix}u${index}`);
}
