// Acceptance: the pure decisions of the acceptance saga, in one place. The transaction actor runs
// the saga (it sends the asks, keeps the codec, the outbox topics and the projection) and the edge
// runs the same functions on what it read to answer early; neither holds a rule of its own.
//
// The saga: read checks first (`preChecks`, in the catalogue's order of precedence), then the
// steps: the quote's single use (claimed in the quote actor) and every counter window the
// transaction counts in (`acceptanceSteps`), all asked at once (`firstStage`). Once every step
// asked answered: a refusal releases every granted step and answers with the refusal that ranks
// first; otherwise any step not yet asked is asked (a saga an earlier release stored mid-way), or,
// all granted, the transaction is created and the quote consumed. Invariants (asserted, a violation throws): a step is asked at most once, and a
// refusal releases exactly the steps that were granted — no more (a release of what another
// transaction holds is a no-op, but a release of what was never asked hides a bug), no less (a
// granted window never released would hold the cap for good).
// Decisions: docs/decisions-limits.md.
import type { PaymentMethod } from './assets.ts';
import {
  acceptanceCounterKeys,
  checkPerTransaction,
  checkPrecedence,
  reserveKyb,
  reserveKycMonth,
  reserveMethodDay,
  reserveUserDay,
  type AcceptanceCheck,
  type AcceptanceCounterKeys,
  type AcceptanceRejection,
  type CounterState,
  type KycStanding,
  type LimitsConfig,
} from './limits.ts';
import { compare, type Decimal } from './money.ts';
import type { Quote } from './quote.ts';
import { claim, type QuoteUse } from './quote-use.ts';
import { releasedStatuses } from './transaction/effects.ts';
import type { TransactionStatus } from './transaction/types.ts';

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`acceptance invariant violated: ${what}`);
}

// ---------------------------------------------------------------------------------------------
// Inputs and amounts

/** The counter windows a transaction may count in (one counter actor per window key). */
export type CounterWindow = 'userDay' | 'methodDay' | 'kycMonth' | 'kyb';

/** A step of the saga: the quote's claim, or one counter window's reservation. */
export type AcceptanceStep = CounterWindow | 'quote';

/** What one step answered: granted, refused with a rejection, or (the KYC month) KYC required. */
export type ReservationOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly rejection: AcceptanceRejection }
  | { readonly ok: false; readonly kycRequired: true };

/** What acceptance decides on (the edge has checked auth, scoping, shapes and the account). */
export interface AcceptanceRequest {
  readonly partnerId: string;
  readonly userId: string;
  readonly quote: Quote;
  readonly kycEnabled: boolean;
  readonly kycApproved: boolean;
  readonly kybApproved: boolean;
  /** The method's latest known liquidity in its currency; null when unknown (no check). */
  readonly liquidity: Decimal | null;
  readonly railAvailable: boolean;
}

/** The stablecoin leg of a transaction, which the KYC volume and the KYB cap count (1:1 USD). */
export function stablecoinAmount(quote: Quote): Decimal {
  return quote.direction === 'payout' ? quote.sourceAmount : quote.targetAmount;
}

/** The amount moved on the fiat rail, which the method caps count. */
export function railAmount(quote: Quote): Decimal {
  return quote.direction === 'payout' ? quote.targetAmount : quote.sourceAmount;
}

/** The amount a window counts: the stablecoin leg for KYC and KYB, the rail's amount otherwise. */
export function windowAmount(quote: Quote, window: CounterWindow): Decimal {
  return window === 'kycMonth' || window === 'kyb' ? stablecoinAmount(quote) : railAmount(quote);
}

// ---------------------------------------------------------------------------------------------
// Read checks

/** What the read checks look at. `quoteUse`: the quote's committed use, when the caller read it. */
export interface ReadCheckInput {
  readonly quote: Quote;
  readonly railAvailable: boolean;
  readonly liquidity: Decimal | null;
  /**
   * The edge reads the quote's use with the quote and refuses as the quote actor's claim would at
   * that moment; the actor passes nothing (its claim is a step, which decides).
   */
  readonly quoteUse?: { readonly use: QuoteUse | null; readonly transactionId: string };
}

interface ReadCheck {
  readonly check: AcceptanceCheck;
  run(input: ReadCheckInput, limits: LimitsConfig, nowMs: number): AcceptanceRejection | null;
}

/** The read-only checks, in the catalogue's order of precedence (`acceptanceCheckOrder`). */
const readChecks: readonly ReadCheck[] = [
  { check: 'quote_expired', run: (input, _limits, nowMs) => (nowMs >= input.quote.expiresAtMs ? { code: 'quote_expired' } : null) },
  {
    // quote_used and quote_in_use share a place: `claim` answers either.
    check: 'quote_used',
    run: (input) => {
      if (input.quoteUse === undefined) return null;
      const claimed = claim(input.quoteUse.use, input.quoteUse.transactionId).outcome;
      return claimed.ok ? null : claimed.rejection;
    },
  },
  {
    check: 'transaction_cap',
    run: (input, limits) => {
      const perTransaction = checkPerTransaction(limits, input.quote.paymentMethod, railAmount(input.quote));
      return perTransaction.ok ? null : perTransaction.rejection;
    },
  },
  { check: 'rail_unavailable', run: (input) => (input.railAvailable ? null : { code: 'rail_unavailable', method: input.quote.paymentMethod }) },
  {
    check: 'liquidity_insufficient',
    run: ({ quote, liquidity }) =>
      quote.direction === 'payout' && liquidity !== null && compare(liquidity, quote.targetAmount) < 0 ? { code: 'liquidity_insufficient' } : null,
  },
];

/**
 * The read checks in order of precedence; the first failure answers (null: all pass). `before`
 * stops short of a check: the edge runs those ranked before `account_unverifiable` (which it checks
 * itself, on the recipient), then asks the actor, which runs them all again (authoritative).
 */
export function preChecks(input: ReadCheckInput, limits: LimitsConfig, nowMs: number, before?: AcceptanceCheck): AcceptanceRejection | null {
  const limit = before === undefined ? Infinity : checkPrecedence(before);
  for (const { check, run } of readChecks) {
    if (checkPrecedence(check) >= limit) break;
    const rejection = run(input, limits, nowMs);
    if (rejection !== null) return rejection;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Steps and the reservation of each window

/** The quote, and every window the transaction counts in (the partner's KYB total unless KYB-approved). */
export function acceptanceSteps(request: Pick<AcceptanceRequest, 'kybApproved'>, keys: AcceptanceCounterKeys): AcceptanceStep[] {
  const steps: AcceptanceStep[] = ['quote'];
  if (keys.userDay !== null) steps.push('userDay');
  if (keys.methodDay !== null) steps.push('methodDay');
  steps.push('kycMonth');
  if (!request.kybApproved) steps.push('kyb');
  return steps;
}

/**
 * The steps asked first: all of them, in one round. A refusal ranks the answers of every step and
 * gives back what was granted, so asking everything at once answers exactly as asking in stages
 * would; what it changes is that a refused acceptance may hold a window it would not have reached
 * (a user's day, a KYC month) until its release — a concurrent acceptance of the same user can
 * then be refused there, never granted past a cap. What it saves is a round trip and a versioned
 * transaction write on every accepted transaction: the success path (bench/README.md,
 * "hot-accept": ≈ 1.25× the acceptances per second of the two-stage saga, same run conditions). The unbounded refusal load
 * of a spent method cap is answered by the edge before any step is asked (`earlyRefusalStage`),
 * and only the acceptances racing the cap's last units pay for the extra reservations. (Sagas
 * stored by an earlier release mid-way through their first stage ask the rest when it answers:
 * `recordStep` asks every step not yet sent.)
 */
export function firstStage(steps: readonly AcceptanceStep[]): AcceptanceStep[] {
  return [...steps];
}

/**
 * The steps whose refusal outranks every other step's (the quote's claim, the KYB total, the
 * method's day): when one of them refuses, nothing another step answers changes the answer.
 */
export function decisiveSteps(steps: readonly AcceptanceStep[]): AcceptanceStep[] {
  return steps.filter((step) => step === 'quote' || step === 'methodDay' || step === 'kyb');
}

/** The counter windows among the steps (what a live transaction releases or commits later). */
export function counterWindows(steps: readonly AcceptanceStep[]): CounterWindow[] {
  return steps.filter((step): step is CounterWindow => step !== 'quote');
}

/** The counter key of a window; a window without a key is never a step (`acceptanceSteps`). */
export function counterKeyOf(keys: AcceptanceCounterKeys, window: CounterWindow): string {
  const key = window === 'userDay' ? keys.userDay : window === 'methodDay' ? keys.methodDay : window === 'kycMonth' ? keys.kycMonth : keys.kyb;
  assert(key !== null, `no counter key for window ${window}`);
  return key;
}

/** What a transaction asks one counter window to reserve. */
export interface WindowReservation {
  readonly window: CounterWindow;
  readonly transactionId: string;
  readonly amount: Decimal;
  readonly method: PaymentMethod;
  /** The KYC month's gate (absent: not gated). */
  readonly standing?: KycStanding;
  /** The KYB total's (absent: not approved). */
  readonly kybApproved?: boolean;
}

export function windowReservation(request: AcceptanceRequest, window: CounterWindow, transactionId: string): WindowReservation {
  return {
    window,
    transactionId,
    amount: windowAmount(request.quote, window),
    method: request.quote.paymentMethod,
    standing: { kycEnabled: request.kycEnabled, kycApproved: request.kycApproved },
    kybApproved: request.kybApproved,
  };
}

/**
 * A counter's answer to a reservation and its state after it (the same object when nothing
 * changed: a refusal, or a transaction counted already). The counter actor applies it; the edge
 * runs it on a counter's committed state to refuse early.
 */
export function answerReserve(
  state: CounterState,
  limits: LimitsConfig,
  reservation: WindowReservation,
): { readonly outcome: ReservationOutcome; readonly state: CounterState } {
  const counted = { transactionId: reservation.transactionId, amount: reservation.amount };
  switch (reservation.window) {
    case 'userDay':
      return windowAnswer(state, reserveUserDay(state, limits, reservation.method, counted));
    case 'methodDay':
      return windowAnswer(state, reserveMethodDay(state, limits, reservation.method, counted));
    case 'kycMonth': {
      const result = reserveKycMonth(state, limits, reservation.standing ?? { kycEnabled: false, kycApproved: false }, counted);
      return result.ok ? { outcome: { ok: true }, state: result.state } : { outcome: { ok: false, kycRequired: true }, state };
    }
    case 'kyb':
      // Completed plus in flight, reserved like the other windows (docs/decisions-limits.md).
      return windowAnswer(state, reserveKyb(state, limits, reservation.kybApproved ?? false, counted));
  }
}

function windowAnswer(
  state: CounterState,
  result: { readonly ok: true; readonly state: CounterState } | { readonly ok: false; readonly rejection: AcceptanceRejection },
): { readonly outcome: ReservationOutcome; readonly state: CounterState } {
  return result.ok ? { outcome: { ok: true }, state: result.state } : { outcome: { ok: false, rejection: result.rejection }, state };
}

// ---------------------------------------------------------------------------------------------
// The saga's decisions

/** A refusal's answer: a rejection, or KYC required (answered as 200 with `kycRequired: true`). */
export type AcceptanceAnswer = { readonly kind: 'rejected'; readonly rejection: AcceptanceRejection } | { readonly kind: 'kycRequired' };

/** Where a running saga stands (what the actor persists of it, and reads back). */
export interface SagaProgress {
  /** Every step of this acceptance, asked or not. */
  readonly steps: readonly AcceptanceStep[];
  /** The steps asked so far. */
  readonly sent: readonly AcceptanceStep[];
  readonly results: Readonly<Partial<Record<AcceptanceStep, ReservationOutcome>>>;
}

export type StartDecision =
  /** A read check failed: nothing is asked. */
  | { readonly kind: 'refuse'; readonly rejection: AcceptanceRejection }
  | { readonly kind: 'ask'; readonly keys: AcceptanceCounterKeys; readonly progress: SagaProgress; readonly ask: readonly AcceptanceStep[] };

export type StepDecision =
  /** A step not asked, or answered already (a duplicate): nothing changes. */
  | { readonly kind: 'ignore' }
  /**
   * A grant of a step the saga recorded as refused: the counter (or the quote) counted the
   * transaction again after it forgot the ask, and nothing else would give that back (the saga's
   * release covers the steps it recorded as granted). Released at once; the progress is unchanged.
   */
  | { readonly kind: 'giveBack'; readonly step: AcceptanceStep }
  /** Steps asked are still to answer. */
  | { readonly kind: 'wait'; readonly progress: SagaProgress }
  /** Every step asked granted, and some were not asked yet (a saga stored mid-way by the two-stage release): ask them. */
  | { readonly kind: 'ask'; readonly progress: SagaProgress; readonly ask: readonly AcceptanceStep[] }
  /** Refused: answer, and give back every granted step. */
  | { readonly kind: 'refuse'; readonly progress: SagaProgress; readonly answer: AcceptanceAnswer; readonly release: readonly AcceptanceStep[] }
  /**
   * Every step granted: create the transaction, which counts in `counters` from now on, and
   * consume the quote (`consumeQuote`: false for a saga stored before quotes were single-use,
   * which claimed nothing). If the transaction cannot be created after all, `release` gives back
   * every granted step, as a refusal does.
   */
  | {
      readonly kind: 'create';
      readonly progress: SagaProgress;
      readonly counters: readonly CounterWindow[];
      readonly consumeQuote: boolean;
      readonly release: readonly AcceptanceStep[];
    };

/** The check a refused step answers for when its outcome names no rejection (KYC required). */
const stepCheck: Readonly<Record<AcceptanceStep, AcceptanceCheck>> = {
  quote: 'quote_used',
  kyb: 'kyb_cap',
  kycMonth: 'kyc_required',
  userDay: 'user_daily_count_cap',
  methodDay: 'method_daily_cap',
};

function hasDuplicates(steps: readonly AcceptanceStep[]): boolean {
  return new Set(steps).size !== steps.length;
}

function assertProgress(progress: SagaProgress): void {
  assert(!hasDuplicates(progress.steps), 'a step listed twice');
  assert(!hasDuplicates(progress.sent), 'a step asked twice');
  assert(progress.sent.every((step) => progress.steps.includes(step)), 'a step asked that is not one of the saga');
  for (const step of Object.keys(progress.results) as AcceptanceStep[]) {
    assert(progress.results[step] === undefined || progress.sent.includes(step), `a result for ${step}, never asked`);
  }
}

/** The granted steps, which a refusal gives back: a refused step reserved nothing, one never asked holds nothing. */
function grantedSteps(progress: SagaProgress): AcceptanceStep[] {
  return progress.sent.filter((step) => progress.results[step]?.ok === true);
}

/** The refusal that answers among the steps' answers: the one ranked first in `acceptanceCheckOrder`. */
function firstRefusal(progress: SagaProgress): AcceptanceAnswer | null {
  let best: { readonly rank: number; readonly answer: AcceptanceAnswer } | null = null;
  for (const step of progress.sent) {
    const outcome = progress.results[step];
    if (outcome === undefined || outcome.ok) continue;
    const rank = checkPrecedence('rejection' in outcome ? outcome.rejection.code : stepCheck[step]);
    const answer: AcceptanceAnswer = 'rejection' in outcome ? { kind: 'rejected', rejection: outcome.rejection } : { kind: 'kycRequired' };
    if (best === null || rank < best.rank) best = { rank, answer };
  }
  return best?.answer ?? null;
}

/** Starts an acceptance: a read check refuses, or every step is asked (`firstStage`). */
export function startAcceptance(request: AcceptanceRequest, limits: LimitsConfig, nowMs: number): StartDecision {
  const rejection = preChecks(request, limits, nowMs);
  if (rejection !== null) return { kind: 'refuse', rejection };
  const keys = acceptanceCounterKeys(limits, { partnerId: request.partnerId, userId: request.userId, method: request.quote.paymentMethod, nowMs });
  const steps = acceptanceSteps(request, keys);
  const ask = firstStage(steps);
  const progress: SagaProgress = { steps, sent: ask, results: {} };
  assertProgress(progress);
  return { kind: 'ask', keys, progress, ask };
}

/** One step answered: waits for the other steps asked, then refuses, creates, or asks any step not yet asked. */
export function recordStep(progress: SagaProgress, step: AcceptanceStep, outcome: ReservationOutcome): StepDecision {
  assertProgress(progress);
  // Each step answers once per ask (commands dedupe by id); a step not asked, or asked and already
  // answered, has nothing to add — but a grant where a refusal was recorded is a re-count to give back.
  const recorded = progress.results[step];
  if (progress.sent.includes(step) && recorded !== undefined && !recorded.ok && outcome.ok) return { kind: 'giveBack', step };
  if (!progress.sent.includes(step) || recorded !== undefined) return { kind: 'ignore' };
  const next: SagaProgress = { ...progress, results: { ...progress.results, [step]: outcome } };
  if (next.sent.some((sent) => next.results[sent] === undefined)) return { kind: 'wait', progress: next };
  const answer = firstRefusal(next);
  if (answer !== null) {
    const release = grantedSteps(next);
    assert(release.every((granted) => next.results[granted]?.ok === true), 'a release of a step not granted');
    return { kind: 'refuse', progress: next, answer, release };
  }
  const unsent = next.steps.filter((candidate) => !next.sent.includes(candidate));
  if (unsent.length > 0) {
    const asked: SagaProgress = { ...next, sent: [...next.sent, ...unsent] };
    assertProgress(asked);
    return { kind: 'ask', progress: asked, ask: unsent };
  }
  assert(next.steps.every((granted) => next.results[granted]?.ok === true), 'created with a step not granted');
  return { kind: 'create', progress: next, counters: counterWindows(next.steps), consumeQuote: next.steps.includes('quote'), release: grantedSteps(next) };
}

/**
 * A step's answer reaching a saga that already refused (its transaction 'rejected', never
 * created), with `asked` the steps that saga asked: whether to give that step back. Every step
 * answers once per ask, so such an answer is either a redelivered copy of the answer the saga
 * recorded, or the answer to an ask delivered again after the counter (or the quote) forgot it: its
 * dedupe log is bounded, and so are a counter's tombstones (src/domain/counter.ts). The second kind
 * counted the transaction again, and nothing else would ever give that back (the cap would stay
 * held all day, the quote `quote_in_use` until it expires). The two cannot be told apart, and a
 * release is idempotent, so every grant of a step asked is given back: a refused transaction
 * holds nothing. A refusal holds nothing; a step never asked is not this saga's to release.
 */
export function releasesLateGrant(asked: readonly AcceptanceStep[], step: AcceptanceStep, outcome: ReservationOutcome): boolean {
  return outcome.ok && asked.includes(step);
}

/**
 * A counter's grant that reaches a created transaction which has released its reservations since
 * (expired, failed, wrong amount: `releasedStatuses`): a `reserve` delivered again after the
 * counter's dedupe log forgot it, and after the release, counted the transaction again. Nothing
 * else would ever release that hold, so the transaction gives it back like a refused saga does.
 * A transaction still holding its windows (awaiting payment, processing, completed: completion
 * commits them) ignores a grant, and the quote's claim is not a counter's: a created transaction
 * used its quote for good, so a repeated claim of it holds nothing new.
 */
export function releasesGrantAfterRelease(status: TransactionStatus, step: AcceptanceStep, outcome: ReservationOutcome): boolean {
  return outcome.ok && step !== 'quote' && releasedStatuses.has(status);
}

// ---------------------------------------------------------------------------------------------
// Early refusal (the edge, docs/decisions-limits.md "Early refusal at a spent method cap")
//
// Once a method's daily cap is spent, every acceptance of the day is refused by the method × day
// counter, and that load has no bound. The edge reads the decisive steps' counters
// (`decisiveSteps`: the quote, the KYB total, the method's day) as last committed and runs the
// saga's own steps on them (start, each counter's answer, the quote's
// answer to the claim, the ranking of refusals): when the saga is certain to refuse, the edge
// answers so at once, and neither the transaction, the quote nor the counters are written. The
// answer is the actor's: for a transaction id no counter has seen, the saga's answer depends on
// nothing else than those committed totals and the quote's committed use (a transaction a counter
// has seen is counted already, and `reserve` grants it again, so it is never refused early; the
// same holds for the quote's claim, and a transaction that used its quote is never refused early
// at all: its actor answers a retry). When the decisive steps all grant, the actor decides.

/** The saga's decisive steps, as the edge runs them before asking (see above). */
export interface EarlyRefusalStage {
  /** The counters to read: the decisive steps'. */
  readonly counters: readonly string[];
  /**
   * The saga's answer when a decisive step would refuse, given each counter's committed state
   * (`counterOf(key)`, the empty counter for one never written) and the quote's committed use
   * (null: unclaimed); null when it would not.
   */
  refusal(counterOf: (key: string) => CounterState, quoteUse: QuoteUse | null): AcceptanceAnswer | null;
}

/**
 * The decisive steps of the saga, when they hold the method × day counter (the only unbounded
 * refusal load); null when no early refusal applies (no such counter, or a refusal before any counter,
 * which the actor answers itself).
 */
export function earlyRefusalStage(request: AcceptanceRequest, limits: LimitsConfig, nowMs: number, transactionId: string): EarlyRefusalStage | null {
  const started = startAcceptance(request, limits, nowMs);
  if (started.kind !== 'ask' || !started.ask.includes('methodDay')) return null;
  const { keys } = started;
  const decisive = decisiveSteps(started.ask);
  return {
    counters: counterWindows(decisive).map((window) => counterKeyOf(keys, window)),
    refusal(counterOf, quoteUse) {
      // The quote was used by this very transaction: it was accepted, and a retry with the same
      // ids is its actor's to answer, from its state. The counters may no longer list it (a
      // completed entry is folded into the totals after a while: src/domain/counter.ts). (A quote
      // it only holds is an acceptance still running: its counter entries are open, never folded.)
      if (quoteUse?.transactionId === transactionId && quoteUse.status === 'used') return null;
      // The saga over the decisive steps alone: a refusal among them is the saga's answer whatever
      // the other steps answer (they rank after); all granted, the actor decides.
      let progress: SagaProgress = { steps: decisive, sent: decisive, results: {} };
      for (const step of decisive) {
        // The edge asks only for the partner's own quote, so the claim is answered by its use.
        const outcome =
          step === 'quote'
            ? claim(quoteUse, transactionId).outcome
            : answerReserve(counterOf(counterKeyOf(keys, step)), limits, windowReservation(request, step, transactionId)).outcome;
        const decision = recordStep(progress, step, outcome);
        if (decision.kind === 'refuse') return decision.answer;
        if (decision.kind !== 'wait') return null;
        progress = decision.progress;
      }
      return null;
    },
  };
}
