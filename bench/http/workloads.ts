// The HTTP workloads, as request lists the load generator cycles through (bench/lib/load.ts):
// every request carries one bench partner's key, so the per-partner rate limit (200/s sustained)
// is spread over all partners and never the bottleneck (a 429 would show as an unexpected status).
//
// hot-cap: POST /transaction on BREB, 50,000 COP each, for `usersPerPartner` users of every
// partner, half the requests from one "hot" user per partner. Every acceptance reserves in the
// service-wide BREB method-day counter (25,000,000 COP), so all requests contend on one key.
// Before the measured phase the counter is pre-filled to 20,000,000 COP (four 5,000,000 COP
// acceptances), so the run starts NEAR the cap whatever its throughput: exactly 100 more
// acceptances fit, every later request is refused with the method's daily cap.
import { randomUUID } from 'node:crypto';
import type { LoadRequest } from '../lib/load.ts';
import { http, mapLimit } from '../lib/processes.ts';
import type { BenchPartner } from '../lib/service.ts';

export const brebAmountCop = 50_000;
export const pixAmountBrl = 100;
export const usersPerPartner = 8;
export const hotUserId = 'hot';
const setupConcurrency = 16;

export const prefillAmountCop = 5_000_000;
export const prefillUsers = ['prefill-0', 'prefill-1', 'prefill-2', 'prefill-3'] as const;
export const quoteBodyPrefill = { amount: prefillAmountCop, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
export const quoteBodyBreb = { amount: brebAmountCop, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };
export const quoteBodyPix = { amount: pixAmountBrl, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' };

function key(partner: BenchPartner): Record<string, string> {
  return { 'x-api-key': partner.apiKey };
}

function partnerAt(partners: readonly BenchPartner[], index: number): BenchPartner {
  const partner = partners[index % partners.length];
  if (partner === undefined) throw new Error('a workload needs at least one partner');
  return partner;
}

/** POST /quote (payout, BREB, 50,000 COP on Stellar): the same body every time, partners rotating. */
export function quoteRequests(partners: readonly BenchPartner[]): LoadRequest[] {
  const body = JSON.stringify(quoteBodyBreb);
  return partners.map((partner) => ({ method: 'POST', path: '/quote', headers: key(partner), body, tag: 'quote' }));
}

export interface HotCapRequestMeta {
  readonly partnerId: string;
  readonly userId: string;
}

export interface HotCapWorkload {
  readonly requests: LoadRequest[];
  /** Who request k is for (same index as `requests`). */
  readonly meta: HotCapRequestMeta[];
  readonly userIds: readonly string[];
}

/** POST /transaction on each partner's BREB quote; `quoteIds` maps partner id → quote id. */
export function hotCapRequests(partners: readonly BenchPartner[], quoteIds: ReadonlyMap<string, string>, userPrefix = ''): HotCapWorkload {
  const requests: LoadRequest[] = [];
  const meta: HotCapRequestMeta[] = [];
  const length = partners.length * usersPerPartner * 2;
  for (let index = 0; index < length; index += 1) {
    const partner = partnerAt(partners, index);
    const slot = Math.floor(index / partners.length);
    const userId = slot % 2 === 0 ? `${userPrefix}${hotUserId}` : `${userPrefix}u${(slot >> 1) % usersPerPartner}`;
    const quoteId = quoteIds.get(partner.id);
    if (quoteId === undefined) throw new Error(`no quote for ${partner.id}`);
    requests.push({
      method: 'POST',
      path: '/transaction',
      headers: key(partner),
      body: JSON.stringify({ quote_id: quoteId, user_id: userId, account_number: `@bench${(slot >> 1) % usersPerPartner}` }),
      tag: 'accept',
      collectField: 'id',
    });
    meta.push({ partnerId: partner.id, userId });
  }
  const userIds = [`${userPrefix}${hotUserId}`, ...Array.from({ length: usersPerPartner }, (_, index) => `${userPrefix}u${index}`)];
  return { requests, meta, userIds };
}

/** POST /transaction on each partner's PIX quote (no internal caps): warms the acceptance path without spending the BREB cap. */
export function pixAcceptRequests(partners: readonly BenchPartner[], pixQuoteIds: ReadonlyMap<string, string>, tag = 'accept-pix'): LoadRequest[] {
  return partners.flatMap((partner, partnerIndex) =>
    Array.from({ length: 4 }, (_, slot) => {
      const quoteId = pixQuoteIds.get(partner.id);
      if (quoteId === undefined) throw new Error(`no PIX quote for ${partner.id}`);
      return {
        method: 'POST' as const,
        path: '/transaction',
        headers: key(partner),
        body: JSON.stringify({ quote_id: quoteId, user_id: `pix-${partnerIndex}-${slot}`, account_number: randomUUID() }),
        tag,
      };
    }),
  );
}

export interface SeededTransaction {
  readonly partner: BenchPartner;
  readonly id: string;
}

/** GET /transaction/{id} over transactions created beforehand. */
export function getRequests(seeded: readonly SeededTransaction[]): LoadRequest[] {
  return seeded.map((item) => ({ method: 'GET', path: `/transaction/${item.id}`, headers: key(item.partner), tag: 'get' }));
}

/** A small deterministic PRNG (mulberry32), so a mixed workload is the same in every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * A partner's day: 45% POST /quote (payout on three networks, COP and BRL), 10% /quote/reverse,
 * 5% /quote/onramp, 15% POST /transaction (PIX), 15% GET /transaction/{id}, 5% GET
 * /transactions/list, 5% GET /public/corridors. 1,000 requests in a fixed seeded order.
 */
export function mixedRequests(partners: readonly BenchPartner[], pixQuoteIds: ReadonlyMap<string, string>, seeded: readonly SeededTransaction[]): LoadRequest[] {
  const random = seededRandom(20_251_006);
  const networks = ['STELLAR', 'SOLANA', 'CELO'] as const;
  const requests: LoadRequest[] = [];
  for (let index = 0; index < 1_000; index += 1) {
    const partner = partnerAt(partners, index);
    const network = networks[index % networks.length] ?? 'STELLAR';
    const draw = random();
    if (draw < 0.45) {
      const cop = index % 2 === 0;
      const body = cop
        ? { amount: 20_000 + (index % 50) * 1_000, crypto_currency: 'USDC', network, payment_method: 'BREB', target_currency: 'COP' }
        : { amount: 50 + (index % 40), crypto_currency: 'USDC', network, payment_method: 'PIX', target_currency: 'BRL' };
      requests.push({ method: 'POST', path: '/quote', headers: key(partner), body: JSON.stringify(body), tag: 'quote' });
    } else if (draw < 0.55) {
      const body = { source_amount: 10 + (index % 20), crypto_currency: 'USDC', network, payment_method: 'BREB', target_currency: 'COP' };
      requests.push({ method: 'POST', path: '/quote/reverse', headers: key(partner), body: JSON.stringify(body), tag: 'quote-reverse' });
    } else if (draw < 0.6) {
      const body = { fiat_amount: 100 + (index % 30), crypto_currency: 'USDC', network, payment_method: 'PIX', target_currency: 'BRL' };
      requests.push({ method: 'POST', path: '/quote/onramp', headers: key(partner), body: JSON.stringify(body), tag: 'quote-onramp' });
    } else if (draw < 0.75) {
      const quoteId = pixQuoteIds.get(partner.id);
      if (quoteId === undefined) throw new Error(`no PIX quote for ${partner.id}`);
      const body = { quote_id: quoteId, user_id: `mixed-${index % 97}`, account_number: randomUUID() };
      requests.push({ method: 'POST', path: '/transaction', headers: key(partner), body: JSON.stringify(body), tag: 'accept-pix' });
    } else if (draw < 0.9) {
      const item = seeded[index % Math.max(1, seeded.length)];
      if (item !== undefined) requests.push({ method: 'GET', path: `/transaction/${item.id}`, headers: key(item.partner), tag: 'get' });
    } else if (draw < 0.95) {
      requests.push({ method: 'GET', path: `/transactions/list?externalUserId=seed-${index % 10}&pageSize=20`, headers: key(partner), tag: 'list' });
    } else {
      requests.push({ method: 'GET', path: '/public/corridors', headers: {}, tag: 'corridors' });
    }
  }
  return requests;
}

/** A new quote of `partner` (setup, not measured). */
export async function createQuote(baseUrl: string, partner: BenchPartner, body: object): Promise<string> {
  const answer = await http(`${baseUrl}/quote`, { method: 'POST', headers: key(partner), body: JSON.stringify(body) });
  if (answer.status !== 200) throw new Error(`setup quote for ${partner.id}: HTTP ${answer.status} ${answer.body.slice(0, 200)}`);
  const quoteId = (JSON.parse(answer.body) as { quote_id?: unknown }).quote_id;
  if (typeof quoteId !== 'string') throw new Error('setup quote without quote_id');
  return quoteId;
}

/** One quote per partner (setup, not measured). */
export async function createQuotes(baseUrl: string, partners: readonly BenchPartner[], body: object): Promise<Map<string, string>> {
  const ids = await mapLimit(partners, setupConcurrency, async (partner) => [partner.id, await createQuote(baseUrl, partner, body)] as const);
  return new Map(ids);
}

/**
 * `count` PIX transactions spread over partners and ten users per partner (setup, not measured),
 * each on a quote of its own (a quote is accepted at most once).
 */
export async function seedTransactions(baseUrl: string, partners: readonly BenchPartner[], count: number): Promise<SeededTransaction[]> {
  const indexes = Array.from({ length: count }, (_, index) => index);
  return mapLimit(indexes, setupConcurrency, async (index) => {
    const partner = partnerAt(partners, index);
    const quoteId = await createQuote(baseUrl, partner, quoteBodyPix);
    const body = { quote_id: quoteId, user_id: `seed-${Math.floor(index / partners.length) % 10}`, account_number: randomUUID() };
    const answer = await http(`${baseUrl}/transaction`, { method: 'POST', headers: key(partner), body: JSON.stringify(body) });
    const id = answer.status === 200 ? (JSON.parse(answer.body) as { id?: unknown }).id : null;
    if (typeof id !== 'string') throw new Error(`seed transaction: HTTP ${answer.status} ${answer.body.slice(0, 200)}`);
    return { partner, id };
  });
}

/**
 * Pre-fills the BREB method-day counter (setup, not measured): one acceptance of 5,000,000 COP per
 * pre-fill user of `partner`, in order, each on the quote `quoteFor` gives (our service accepts a
 * quote once: a new one each; the PostgreSQL baseline may reuse one). Returns the accepted ids
 * (they count in the cap check).
 */
export async function prefillCap(baseUrl: string, partner: BenchPartner, quoteFor: () => Promise<string>): Promise<string[]> {
  const ids: string[] = [];
  for (const userId of prefillUsers) {
    const body = { quote_id: await quoteFor(), user_id: userId, account_number: '@prefill' };
    const answer = await http(`${baseUrl}/transaction`, { method: 'POST', headers: key(partner), body: JSON.stringify(body) });
    const id = answer.status === 200 ? (JSON.parse(answer.body) as { id?: unknown }).id : null;
    if (typeof id !== 'string') throw new Error(`pre-fill acceptance: HTTP ${answer.status} ${answer.body.slice(0, 200)}`);
    ids.push(id);
  }
  return ids;
}
