// After a hot-cap run on our service: read back, through the partner-facing list endpoint, every
// BREB transaction of every user the workload used, and check each daily cap against them
// (method-day total, per-user count and amount). Also cross-check the acceptances the load
// generator saw (ids of 200 answers) against what the list shows: a 200 the list does not show, or
// a listed transaction nobody was told about, is reported too.
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import type { LimitsConfig } from '../../src/domain/limits.ts';
import { add, compare, parseAmount, toPlainString, zero, type Decimal } from '../../src/domain/money.ts';
import type { CapCheck } from '../lib/results.ts';
import { http, mapLimit, sleepMs } from '../lib/processes.ts';
import type { BenchPartner } from '../lib/service.ts';

const listPageSize = 100;
const listPagesMax = 20;
const attemptsMax = 5;
const concurrency = 16;
const releasedStatuses = new Set(['PAYMENT_EXPIRED', 'PAYMENT_FAILED']);

interface ListItem {
  readonly id: string;
  readonly status: string;
  readonly quote: { readonly paymentMethod: string; readonly targetAmount: number };
}

async function listPage(baseUrl: string, partner: BenchPartner, userId: string, page: number): Promise<{ total: number; items: ListItem[] }> {
  const url = `${baseUrl}/transactions/list?externalUserId=${encodeURIComponent(userId)}&page=${page}&pageSize=${listPageSize}`;
  for (let attempt = 1; ; attempt += 1) {
    const answer = await http(url, { headers: { 'x-api-key': partner.apiKey } });
    if (answer.status === 200) {
      const body = JSON.parse(answer.body) as { total: number; transactions: ListItem[] };
      return { total: body.total, items: body.transactions };
    }
    if (attempt >= attemptsMax || (answer.status !== 429 && answer.status !== 503)) {
      throw new Error(`list for ${partner.id}/${userId}: HTTP ${answer.status} ${answer.body.slice(0, 200)}`);
    }
    await sleepMs(Math.min(5_000, 1_000 * Number(answer.headers.get('retry-after') ?? '1')));
  }
}

async function userTransactions(baseUrl: string, partner: BenchPartner, userId: string): Promise<ListItem[]> {
  const items: ListItem[] = [];
  for (let page = 1; page <= listPagesMax; page += 1) {
    const result = await listPage(baseUrl, partner, userId, page);
    items.push(...result.items);
    if (page * listPageSize >= result.total) return items;
  }
  throw new Error(`list for ${partner.id}/${userId} has more than ${listPagesMax} pages`);
}

function copAmount(value: number): Decimal {
  const parsed = parseAmount(value, 2, { label: 'targetAmount' });
  if (!parsed.ok) throw new Error(`list targetAmount ${value}: ${parsed.error.reason}`);
  return parsed.value;
}

export async function checkServiceCaps(options: {
  readonly baseUrl: string;
  readonly partners: readonly BenchPartner[];
  readonly userIds: readonly string[];
  /** Further users to read (the pre-fill users of one partner). */
  readonly extraUsers: ReadonlyArray<{ readonly partner: BenchPartner; readonly userId: string }>;
  /** Ids of the acceptances answered 200 (pre-fill and load). */
  readonly acceptedIds: ReadonlySet<string>;
  readonly scenario: string;
  readonly connections: number;
  /** The service's limits (default: the spec's). */
  readonly limits?: LimitsConfig;
}): Promise<CapCheck> {
  const caps = (options.limits ?? defaultLimitsConfig).methods.BREB;
  const pairs = [...options.partners.flatMap((partner) => options.userIds.map((userId) => ({ partner, userId }))), ...options.extraUsers];
  const perUser = await mapLimit(pairs, concurrency, async ({ partner, userId }) => ({
    partner,
    userId,
    items: (await userTransactions(options.baseUrl, partner, userId)).filter(
      (item) => item.quote.paymentMethod === 'BREB' && !releasedStatuses.has(item.status),
    ),
  }));
  const violations: string[] = [];
  let total = zero(2);
  let accepted = 0;
  const listed = new Set<string>();
  for (const { partner, userId, items } of perUser) {
    let userAmount = zero(2);
    for (const item of items) {
      userAmount = add(userAmount, copAmount(item.quote.targetAmount));
      listed.add(item.id);
    }
    accepted += items.length;
    total = add(total, userAmount);
    if (caps.userDailyCountMax !== null && items.length > caps.userDailyCountMax) {
      violations.push(`user ${partner.id}/${userId}: ${items.length} transactions > ${caps.userDailyCountMax} per day`);
    }
    if (caps.userDailyAmountMax !== null && compare(userAmount, caps.userDailyAmountMax) > 0) {
      violations.push(`user ${partner.id}/${userId}: ${toPlainString(userAmount)} COP > ${toPlainString(caps.userDailyAmountMax)} per day`);
    }
  }
  if (caps.methodDailyAmountMax !== null && compare(total, caps.methodDailyAmountMax) > 0) {
    violations.push(`method BREB: ${toPlainString(total)} COP accepted > ${toPlainString(caps.methodDailyAmountMax)} per day`);
  }
  const unseen = [...options.acceptedIds].filter((id) => !listed.has(id)).length;
  const untold = [...listed].filter((id) => !options.acceptedIds.has(id)).length;
  if (unseen > 0) violations.push(`${unseen} acceptances answered 200 are missing from the list endpoint`);
  const notes = untold > 0 ? [`${untold} listed BREB transactions were accepted but their answer never reached the load generator (in flight when the load stopped, or timed out)`] : [];
  return {
    system: 'service',
    scenario: options.scenario,
    connections: options.connections,
    acceptedTransactions: accepted,
    acceptedAmount: toPlainString(total),
    methodDailyCap: caps.methodDailyAmountMax === null ? 'none' : toPlainString(caps.methodDailyAmountMax),
    usersChecked: pairs.length,
    violations,
    notes,
    ok: violations.length === 0,
    source: 'GET /transactions/list for every user of the workload, cross-checked with the 200 answers',
  };
}
