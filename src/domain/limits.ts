// Limits: the pure part. The limit configuration, the windows a transaction counts in, the checks,
// the reservation arithmetic of one counter, and the one catalogue of acceptance rejections.
// Counter actors (one writer per counter key, elsewhere) load a `CounterState`, call `reserve`,
// `release` or `commit` here, and persist the result. Decisions: docs/decisions-limits.md.
import type { FiatCurrency, Network, PaymentMethod } from './assets.ts';
import { fiatDecimals, methodCurrency } from './assets.ts';
import type { Decimal } from './money.ts';
import { add, compare, toFixedString, toPlainString } from './money.ts';
import { assertAmount, reserve, type CounterState } from './counter.ts';

// ---------------------------------------------------------------------------------------------
// Configuration (values come from src/config/limits.ts; nothing here is a default)

/** Caps of one payment method; `null` means no internal cap. Amounts are in the method's currency. */
export interface MethodCaps {
  readonly transactionAmountMax: Decimal | null;
  readonly userDailyAmountMax: Decimal | null;
  readonly methodDailyAmountMax: Decimal | null;
  readonly userDailyCountMax: number | null;
  /** Fixed offset of the payout country's civil day from UTC (no daylight saving time). */
  readonly dayUtcOffsetMinutes: number;
}

export interface LimitsConfig {
  readonly methods: Readonly<Record<PaymentMethod, MethodCaps>>;
  /** Source volume (USD-equivalent) a user may move per UTC month without KYC, when gated. */
  readonly kycFreeMonthlyVolumeMax: Decimal;
  /**
   * Total stablecoin amount a partner without KYB approval may have in completed plus in-flight
   * transactions (the spec's 100 "across completed transactions", held at acceptance so that
   * concurrent acceptances cannot pass it; docs/decisions-limits.md). The name predates the
   * reservation and is kept: operators' limits files use it.
   */
  readonly kybUnapprovedCompletedTotalMax: Decimal;
  /**
   * Per network, the smallest deposit refunded automatically, in token units (src/domain/refund-floor.ts):
   * below it a deposit we would refund is recorded as dust instead.
   */
  readonly chainRefundFloors: Readonly<Record<Network, Decimal>>;
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`limits invariant violated: ${what}`);
}

// ---------------------------------------------------------------------------------------------
// Acceptance rejections: one exhaustive union, one catalogue, one order of precedence.

export type AcceptanceRejection =
  | { readonly code: 'user_disabled' }
  /** The quote does not exist or is another partner's (the edge answers it first; the quote actor again). */
  | { readonly code: 'quote_not_found' }
  | { readonly code: 'quote_expired' }
  /** The quote backs a transaction already (single use, `src/domain/quote-use.ts`). */
  | { readonly code: 'quote_used'; readonly transactionId: string }
  /** Another acceptance of the quote is running; it may still create nothing and give it back. */
  | { readonly code: 'quote_in_use' }
  | { readonly code: 'transaction_cap'; readonly method: PaymentMethod; readonly cap: Decimal }
  | { readonly code: 'kyb_cap'; readonly cap: Decimal }
  | { readonly code: 'rail_unavailable'; readonly method: PaymentMethod }
  | { readonly code: 'account_unverifiable' }
  | { readonly code: 'liquidity_insufficient' }
  | { readonly code: 'user_daily_count_cap'; readonly method: PaymentMethod; readonly countCap: number }
  | { readonly code: 'user_daily_amount_cap'; readonly method: PaymentMethod; readonly cap: Decimal }
  | { readonly code: 'method_daily_cap'; readonly method: PaymentMethod };

export type AcceptanceRejectionCode = AcceptanceRejection['code'];

/**
 * The order in which acceptance checks run; the first failing one answers. `kyc_required` is not
 * a rejection (the answer is 200 with `kycRequired: true`) but it has its place in the order.
 * The quote's own checks come right after the user's: nothing else matters for a quote that does
 * not exist, has expired or is used (each needs a new quote). Its use is claimed in the quote actor
 * with the first counters, so it is a write as they are; a read check that fails refuses before.
 * Reads come before writes: every check up to `liquidity_insufficient` reads only, but for the
 * quote's claim and `kyb_cap`, which are asked with the method cap (they outrank it); from
 * `method_daily_cap` on, each check is a reservation in a counter, undone if a later one fails.
 * The method's daily cap comes first among them: like the rail's state and its liquidity it is a
 * fact about the method for everyone today, which neither KYC nor another user changes
 * (docs/decisions-limits.md).
 */
export const acceptanceCheckOrder = [
  'user_disabled',
  'quote_not_found',
  'quote_expired',
  'quote_used',
  'quote_in_use',
  'transaction_cap',
  'kyb_cap',
  'rail_unavailable',
  'account_unverifiable',
  'liquidity_insufficient',
  'method_daily_cap',
  'kyc_required',
  'user_daily_count_cap',
  'user_daily_amount_cap',
] as const satisfies readonly (AcceptanceRejectionCode | 'kyc_required')[];

export type AcceptanceCheck = (typeof acceptanceCheckOrder)[number];

type RejectionOf<C extends AcceptanceRejectionCode> = Extract<AcceptanceRejection, { code: C }>;

interface CatalogueEntry<C extends AcceptanceRejectionCode> {
  /** True when the same request (same quote) may succeed if tried again later. */
  readonly retryable: boolean;
  readonly reason: (rejection: RejectionOf<C>) => string;
}

function currencyOf(method: PaymentMethod): FiatCurrency {
  return methodCurrency[method];
}

/** Every acceptance rejection: retryability and reason text, in one place (its HTTP status is the edge's: src/edge/errors.ts). */
export const acceptanceRejectionCatalogue: { readonly [C in AcceptanceRejectionCode]: CatalogueEntry<C> } = {
  user_disabled: {
    retryable: false,
    reason: () => 'The user is disabled; no transaction can be accepted for this user',
  },
  quote_not_found: {
    retryable: false,
    // The same answer as the edge's own check (`quote_not_found` in src/edge/errors.ts).
    reason: () => 'The quote does not exist; request a new quote',
  },
  quote_expired: {
    retryable: false,
    reason: () => 'The quote has expired; request a new quote',
  },
  quote_used: {
    retryable: false,
    reason: (r) => `The quote was already accepted (transaction ${r.transactionId}); request a new quote`,
  },
  quote_in_use: {
    // The running acceptance may create nothing (a cap, kycRequired) and give the quote back.
    retryable: true,
    reason: () => 'Another acceptance of this quote is in progress; retry shortly or request a new quote',
  },
  transaction_cap: {
    retryable: false,
    reason: (r) =>
      `The amount exceeds the ${r.method} maximum of ${toFixedString(r.cap)} ${currencyOf(r.method)} per transaction`,
  },
  kyb_cap: {
    retryable: false,
    reason: (r) => `Partner is limited to a total of ${toPlainString(r.cap)} until KYB is approved`,
  },
  rail_unavailable: {
    retryable: true,
    reason: (r) => `Payments via ${r.method} are temporarily unavailable`,
  },
  account_unverifiable: {
    retryable: false,
    reason: () => 'The account number could not be verified',
  },
  liquidity_insufficient: {
    retryable: true,
    reason: () =>
      'Cannot process because liquidity is below the requested amount; try a smaller amount or another method.',
  },
  user_daily_count_cap: {
    retryable: false,
    reason: () => 'The maximum number of transactions for today was reached',
  },
  user_daily_amount_cap: {
    retryable: false,
    reason: (r) =>
      `The user reached today's ${r.method} limit of ${toFixedString(r.cap)} ${currencyOf(r.method)}`,
  },
  method_daily_cap: {
    retryable: false,
    reason: (r) => `${r.method} reached today's payout limit`,
  },
};

export interface RejectionDescription {
  readonly code: AcceptanceRejectionCode;
  readonly retryable: boolean;
  readonly reason: string;
}

/** What the edge sends: `{ code, reason, retryable }` (the edge adds the HTTP status). */
export function describeAcceptanceRejection(rejection: AcceptanceRejection): RejectionDescription {
  // The catalogue is keyed by code, so the entry found is the one for this rejection's variant;
  // TypeScript cannot correlate the two through the index, hence the widening.
  const entry = acceptanceRejectionCatalogue[rejection.code] as CatalogueEntry<AcceptanceRejectionCode> & {
    readonly reason: (r: AcceptanceRejection) => string;
  };
  return { code: rejection.code, retryable: entry.retryable, reason: entry.reason(rejection) };
}

/** Position in `acceptanceCheckOrder`: the lower one answers when several checks fail. */
export function checkPrecedence(check: AcceptanceCheck): number {
  return acceptanceCheckOrder.indexOf(check);
}

/** The rejection that answers among several found at once (lowest precedence position), if any. */
export function firstRejection(rejections: readonly AcceptanceRejection[]): AcceptanceRejection | undefined {
  let first: AcceptanceRejection | undefined;
  for (const candidate of rejections) {
    if (first === undefined || checkPrecedence(candidate.code) < checkPrecedence(first.code)) first = candidate;
  }
  return first;
}

export type LimitCheck = { readonly ok: true } | { readonly ok: false; readonly rejection: AcceptanceRejection };

const passed: LimitCheck = { ok: true };

// ---------------------------------------------------------------------------------------------
// Stateless checks

/** Per-transaction cap on the amount moved on the method's rail (payout: the quote's target). */
export function checkPerTransaction(config: LimitsConfig, method: PaymentMethod, targetAmount: Decimal): LimitCheck {
  assertAmount(targetAmount);
  const cap = config.methods[method].transactionAmountMax;
  if (cap !== null && compare(targetAmount, cap) > 0) {
    return { ok: false, rejection: { code: 'transaction_cap', method, cap } };
  }
  return passed;
}

export interface KycStanding {
  /** KYC is enabled for the partner. */
  readonly kycEnabled: boolean;
  /** The user's KYC status is APPROVED. */
  readonly kycApproved: boolean;
}

export function kycGateApplies(standing: KycStanding): boolean {
  return standing.kycEnabled && !standing.kycApproved;
}

/** "Up to 25 per month": KYC is required when the month's volume including this one exceeds it. */
export function isKycRequired(
  config: LimitsConfig,
  standing: KycStanding,
  monthVolume: Decimal,
  sourceAmount: Decimal,
): boolean {
  assertAmount(monthVolume);
  assertAmount(sourceAmount);
  return kycGateApplies(standing) && compare(add(monthVolume, sourceAmount), config.kycFreeMonthlyVolumeMax) > 0;
}

// ---------------------------------------------------------------------------------------------
// Windows and counter keys (pure, from nowMs)

const minuteMs = 60_000;
/** 10000-01-01T00:00:00Z: ISO day keys keep four-digit years below this. */
const nowMsMax = 253_402_300_800_000;

function assertNowMs(nowMs: number): void {
  assert(Number.isSafeInteger(nowMs) && nowMs >= 0 && nowMs < nowMsMax, `nowMs ${nowMs}`);
}

/** The civil day at a fixed UTC offset, as 'YYYY-MM-DD'. */
export function civilDayKey(nowMs: number, utcOffsetMinutes: number): string {
  assertNowMs(nowMs);
  assert(Number.isInteger(utcOffsetMinutes) && Math.abs(utcOffsetMinutes) <= 14 * 60, 'utc offset');
  return new Date(nowMs + utcOffsetMinutes * minuteMs).toISOString().slice(0, 10);
}

/** The payout country's day for a method (BREB: Colombia, PIX: Brazil). */
export function methodDayKey(config: LimitsConfig, method: PaymentMethod, nowMs: number): string {
  return civilDayKey(nowMs, config.methods[method].dayUtcOffsetMinutes);
}

/** The UTC calendar month of the KYC gate, as 'YYYY-MM'. */
export function utcMonthKey(nowMs: number): string {
  assertNowMs(nowMs);
  return new Date(nowMs).toISOString().slice(0, 7);
}

/** Ids are free text from partners: encode so that no id can forge another key's separators. */
function keyPart(text: string): string {
  assert(text.length > 0, 'empty key part');
  return encodeURIComponent(text);
}

export function userDayCounterKey(partnerId: string, userId: string, method: PaymentMethod, dayKey: string): string {
  return `limits:user-day:${keyPart(partnerId)}:${keyPart(userId)}:${method}:${dayKey}`;
}

/** Service-wide: the method's daily payout cap is shared by all partners. */
export function methodDayCounterKey(method: PaymentMethod, dayKey: string): string {
  return `limits:method-day:${method}:${dayKey}`;
}

export function kycMonthCounterKey(partnerId: string, userId: string, monthKey: string): string {
  return `limits:kyc-month:${keyPart(partnerId)}:${keyPart(userId)}:${monthKey}`;
}

export function kybCounterKey(partnerId: string): string {
  return `limits:kyb:${keyPart(partnerId)}`;
}

export interface AcceptanceCounterKeys {
  /** null when the method has no per-user daily cap: nothing to count. */
  readonly userDay: string | null;
  /** null when the method has no daily cap. */
  readonly methodDay: string | null;
  readonly kycMonth: string;
  readonly kyb: string;
}

/**
 * The counters an acceptance at `nowMs` touches. The transaction stores these keys: release and
 * commit go to the same keys later, whatever the day is then.
 */
export function acceptanceCounterKeys(
  config: LimitsConfig,
  at: { readonly partnerId: string; readonly userId: string; readonly method: PaymentMethod; readonly nowMs: number },
): AcceptanceCounterKeys {
  const caps = config.methods[at.method];
  const dayKey = methodDayKey(config, at.method, at.nowMs);
  const userDayCapped = caps.userDailyAmountMax !== null || caps.userDailyCountMax !== null;
  return {
    userDay: userDayCapped ? userDayCounterKey(at.partnerId, at.userId, at.method, dayKey) : null,
    methodDay: caps.methodDailyAmountMax !== null ? methodDayCounterKey(at.method, dayKey) : null,
    kycMonth: kycMonthCounterKey(at.partnerId, at.userId, utcMonthKey(at.nowMs)),
    kyb: kybCounterKey(at.partnerId),
  };
}

// ---------------------------------------------------------------------------------------------
// Reservation arithmetic of one counter: src/domain/counter.ts (re-exported here, where the
// windows that use it are).

export {
  closedEntriesPerBucketMax,
  commit,
  counterEntries,
  counterEntry,
  emptyCounter,
  release,
  reserve,
  type CounterEntry,
  type CounterEntryStatus,
  type CounterState,
  type Reservation,
  type ReserveResult,
} from './counter.ts';

// ---------------------------------------------------------------------------------------------
// Reservations per window, with the rejection each overrun means

export interface CountedTransaction {
  readonly transactionId: string;
  readonly amount: Decimal;
}

export type WindowReserveResult =
  | { readonly ok: true; readonly state: CounterState }
  | { readonly ok: false; readonly rejection: AcceptanceRejection };

/** user × method × day: count cap, then amount cap. Amount in the method's currency. */
export function reserveUserDay(
  state: CounterState,
  config: LimitsConfig,
  method: PaymentMethod,
  transaction: CountedTransaction,
): WindowReserveResult {
  const caps = config.methods[method];
  const result = reserve(state, { ...transaction, cap: caps.userDailyAmountMax, countCap: caps.userDailyCountMax });
  if (result.ok) return result;
  if (result.exceeded === 'count') {
    assert(caps.userDailyCountMax !== null, 'count exceeded without a count cap');
    return { ok: false, rejection: { code: 'user_daily_count_cap', method, countCap: caps.userDailyCountMax } };
  }
  assert(caps.userDailyAmountMax !== null, 'amount exceeded without a cap');
  return { ok: false, rejection: { code: 'user_daily_amount_cap', method, cap: caps.userDailyAmountMax } };
}

/** method × day (all partners): amount cap. Amount in the method's currency. */
export function reserveMethodDay(
  state: CounterState,
  config: LimitsConfig,
  method: PaymentMethod,
  transaction: CountedTransaction,
): WindowReserveResult {
  const result = reserve(state, { ...transaction, cap: config.methods[method].methodDailyAmountMax, countCap: null });
  if (result.ok) return result;
  return { ok: false, rejection: { code: 'method_daily_cap', method } };
}

/**
 * partner (all time, without KYB approval): completed plus in-flight stablecoin amount, capped.
 * A reservation like the other windows: held at acceptance, released on expiry or failure, kept
 * on completion. Counting completed transactions only (a check at acceptance) let concurrent
 * acceptances all pass on the same completed total. A KYB-approved partner is not counted: its
 * transactions never ask (and a grant here holds nothing).
 */
export function reserveKyb(
  state: CounterState,
  config: LimitsConfig,
  kybApproved: boolean,
  transaction: CountedTransaction,
): WindowReserveResult {
  if (kybApproved) return { ok: true, state };
  const cap = config.kybUnapprovedCompletedTotalMax;
  const result = reserve(state, { ...transaction, cap, countCap: null });
  if (result.ok) return result;
  return { ok: false, rejection: { code: 'kyb_cap', cap } };
}

export type KycReserveResult =
  | { readonly ok: true; readonly state: CounterState }
  | { readonly ok: false; readonly kycRequired: true };

/**
 * partner × user × UTC month: the volume is always counted (so enabling KYC mid-month sees it);
 * the gate applies only when KYC is enabled for the partner and the user is not approved.
 * Amount in the source asset, 1:1 with USD.
 */
export function reserveKycMonth(
  state: CounterState,
  config: LimitsConfig,
  standing: KycStanding,
  transaction: CountedTransaction,
): KycReserveResult {
  const cap = kycGateApplies(standing) ? config.kycFreeMonthlyVolumeMax : null;
  const result = reserve(state, { ...transaction, cap, countCap: null });
  if (result.ok) return result;
  return { ok: false, kycRequired: true };
}

/** Scale of amounts in the method's currency (for callers converting configuration). */
export function methodCurrencyDecimals(method: PaymentMethod): number {
  return fiatDecimals[methodCurrency[method]];
}
