// The transaction actor: one per transaction id. It runs the acceptance saga (claim the quote and
// reserve in every limit counter the transaction falls in, the method × day counter first
// (`firstStage`), then create and mark the quote used; or give back what was claimed and reserved
// and reject), then applies the pure transaction state
// machine to every later fact (deposit, payout, expiry, refund), turning its events into
// webhooks, payout/refund/delivery effects and counter updates, all written in the same durable
// step as the new state. A chain deposit the state machine refuses to take although it is real
// money (beyond the stray slots, or dust below the refund floor) is handed back to its deposit
// actor, which refunds it or records it as dust (src/actors/deposit-keys.ts).
import {
  acceptanceCounterKeys,
  checkPerTransaction,
  checkPrecedence,
  describeAcceptanceRejection,
  type AcceptanceCheck,
  type AcceptanceCounterKeys,
  type AcceptanceRejection,
  type CounterState,
  type LimitsConfig,
} from '../domain/limits.ts';
import { compare, type Decimal } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import { claim, type QuoteUse } from '../domain/quote-use.ts';
import {
  decide,
  evolve,
  limitEffectFor,
  webhooksFor,
  type DecideContext,
  type TransactionCommand,
  type TransactionEvent,
  type TransactionState,
} from '../domain/transaction.ts';
import { depositActorKey, depositActorType, depositHandBackKind, handBackReasons, type HandBackReason } from './deposit-keys.ts';
import { transactionReference } from '../domain/reference.ts';
import {
  answerReserve,
  counterActorType,
  counterCommand,
  reservationResultKind,
  type CounterCommand,
  type CounterWindow,
  type ReservationOutcome,
  type ReservationResultPayload,
} from './counter-actor.ts';
import { quoteActorType, quoteClaimResultKind, quoteUseCommand, type QuoteClaimResultPayload } from './quote-actor.ts';
import type { ActorBehavior, CommandToSend, JsonValue, OutboxMessage, Outcome, ReadModelWrite, ReplyTarget } from './envelope.ts';
import { timerCommandKind } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export const transactionActorType = 'transaction';
export const transactionsCollection = 'transactions';
export const outboxTopicWebhooks = 'webhooks';
export const outboxTopicPayouts = 'payouts';
/** Refunds by the rail the deposit came in on: PIX (payout role) and on-chain (watcher role). */
export const outboxTopicRefundsPix = 'refunds.pix';
export const outboxTopicRefundsChain = 'refunds.chain';
export const outboxTopicDeliveries = 'deliveries';
/** Askers of one acceptance kept while its saga runs (retries of one request); the oldest go first. */
const acceptWaitersMax = 16;
/**
 * Solana/Celo payouts that may still receive their deposit: awaiting payment, or expired without
 * one (a late deposit is refunded). The watcher walks it to find deposits nobody notified
 * (src/chains/deposit-poller.ts); index `by_network_expiry` (src/store/store.ts).
 */
export const depositWatchCollection = 'deposit_watch';

/** What the edge sends to accept a quote (it has checked auth, scoping, shapes and the account). */
export interface AcceptPayload {
  readonly partnerId: string;
  readonly userId: string;
  readonly quote: Quote;
  readonly accountNumber: string | null;
  readonly qrCode: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
  readonly kycEnabled: boolean;
  readonly kycApproved: boolean;
  readonly kybApproved: boolean;
  /** The method's latest known liquidity in its currency; null when unknown (no check). */
  readonly liquidity: Decimal | null;
  readonly railAvailable: boolean;
  /** The deposit (or charge) instructions fixed for this transaction; returned on acceptance. */
  readonly paymentContext: JsonValue;
}

/**
 * What the saga asks: the quote (its single use, claimed in the quote actor) and every counter
 * window. A saga stored before quotes were single-use has no 'quote' step and claims nothing.
 */
type AcceptanceStep = CounterWindow | 'quote';

interface Reserving {
  readonly phase: 'reserving';
  readonly accept: AcceptPayload;
  readonly keys: AcceptanceCounterKeys;
  /** The quote, and every window the transaction counts in (the partner's KYB total unless KYB-approved). */
  readonly windows: readonly AcceptanceStep[];
  /**
   * The steps asked so far. Absent in snapshots written before the saga had stages, which
   * asked every window at once: then it is all of `windows`.
   */
  readonly sent?: readonly AcceptanceStep[];
  readonly results: Readonly<Partial<Record<AcceptanceStep, ReservationOutcome>>>;
  readonly waiting: readonly ReplyTarget[];
  readonly startedAtMs: number;
}

interface Rejected {
  readonly phase: 'rejected';
  readonly reply: JsonValue;
}

interface Live {
  readonly phase: 'live';
  readonly tx: TransactionState;
  readonly keys: AcceptanceCounterKeys;
  readonly windows: readonly CounterWindow[];
  readonly paymentContext: JsonValue;
}

export type TransactionActorState = Reserving | Rejected | Live;

/** The acceptance reply: the edge maps it to HTTP once. */
export type AcceptReply =
  | {
      readonly ok: true;
      readonly kycRequired: false;
      readonly id: string;
      readonly transactionReference: string;
      readonly paymentContext: JsonValue;
    }
  | { readonly ok: true; readonly kycRequired: true }
  | {
      readonly ok: false;
      readonly code: string;
      readonly reason: string;
      readonly retryable: boolean;
      /**
       * Only in replies stored before the edge became the one place codes map to HTTP (snapshots of
       * refused sagas): the status then. The edge answers by the code; this is its fallback for a
       * code it no longer knows. Never written now.
       */
      readonly httpStatus?: number;
    };

export interface TransactionActorDeps {
  limits(): LimitsConfig;
}

/** The stablecoin leg of a transaction, which the KYC volume and the KYB cap count (1:1 USD). */
export function stablecoinAmount(quote: Quote): Decimal {
  return quote.direction === 'payout' ? quote.sourceAmount : quote.targetAmount;
}

/** The amount moved on the fiat rail, which the method caps count. */
export function railAmount(quote: Quote): Decimal {
  return quote.direction === 'payout' ? quote.targetAmount : quote.sourceAmount;
}

function rejectionReply(rejection: AcceptanceRejection): AcceptReply {
  const described = describeAcceptanceRejection(rejection);
  return { ok: false, code: described.code, reason: described.reason, retryable: described.retryable };
}

function acceptedReply(state: Live): AcceptReply {
  return {
    ok: true,
    kycRequired: false,
    id: state.tx.id,
    transactionReference: transactionReference(state.tx.id),
    paymentContext: state.paymentContext,
  };
}

function reply(value: AcceptReply): JsonValue {
  return value as unknown as JsonValue;
}

/** payment_context.depositAddress as frozen at acceptance; null for an onramp (its context is a PIX charge). */
export function frozenDepositAddress(paymentContext: JsonValue): string | null {
  if (paymentContext === null || typeof paymentContext !== 'object' || Array.isArray(paymentContext)) return null;
  const address = paymentContext.depositAddress;
  return typeof address === 'string' && address !== '' ? address : null;
}

/**
 * The read-model document behind GET /transaction/{id}, the list and ops lookups. `depositAddress`
 * is the frozen payment_context.depositAddress: the deposit intake binds a Solana/Celo transfer to
 * the transaction only if it reached that address (src/domain/deposit-binding.ts).
 */
export function transactionDocument(tx: TransactionState, depositAddress: string | null = null): { [key: string]: JsonValue } {
  return toJsonValue({
    id: tx.id,
    partnerId: tx.partnerId,
    userId: tx.userId,
    direction: tx.direction,
    status: tx.status,
    createdAtMs: tx.createdAtMs,
    updatedAtMs: tx.updatedAtMs,
    expiresAtMs: tx.expiresAtMs,
    accountNumber: tx.accountNumber,
    onChainId: tx.onChainId,
    refundOnChainId: tx.refundOnChainId,
    taxId: tx.taxId,
    externalId: tx.externalId,
    quote: tx.quote,
    depositAddress,
  }) as { [key: string]: JsonValue };
}

/** Whether the watcher should still look for this transaction's deposit (see depositWatchCollection). */
function awaitsDeposit(tx: TransactionState): boolean {
  return tx.deposit === null && (tx.status === 'AWAITING_PAYMENT' || tx.status === 'PAYMENT_EXPIRED');
}

/**
 * The transaction's `deposit_watch` entry: written at creation for a Solana/Celo payout, deleted
 * once it no longer awaits a deposit (one was seen, or nothing can come any more). Null: nothing
 * to write (not a payout on those networks, or no change since `before`).
 */
function depositWatchWrite(before: TransactionState | null, tx: TransactionState, paymentContext: JsonValue): ReadModelWrite | null {
  if (tx.direction !== 'payout' || (tx.quote.network !== 'SOLANA' && tx.quote.network !== 'CELO')) return null;
  const address = frozenDepositAddress(paymentContext);
  const watched = address !== null && awaitsDeposit(tx);
  if (before !== null && awaitsDeposit(before) === watched) return null;
  const doc = watched
    ? { transactionId: tx.id, network: tx.quote.network, depositAddress: address, asset: tx.quote.cryptoCurrency, createdAtMs: tx.createdAtMs, expiresAtMs: tx.expiresAtMs }
    : null;
  return { collection: depositWatchCollection, id: tx.id, doc };
}

function windowsFor(accept: AcceptPayload, keys: AcceptanceCounterKeys): AcceptanceStep[] {
  const windows: AcceptanceStep[] = ['quote'];
  if (keys.userDay !== null) windows.push('userDay');
  if (keys.methodDay !== null) windows.push('methodDay');
  windows.push('kycMonth');
  if (!accept.kybApproved) windows.push('kyb');
  return windows;
}

function counterKey(keys: AcceptanceCounterKeys, window: CounterWindow): string {
  const key = window === 'userDay' ? keys.userDay : window === 'methodDay' ? keys.methodDay : window === 'kycMonth' ? keys.kycMonth : keys.kyb;
  if (key === null) throw new Error(`no counter key for window ${window}`);
  return key;
}

function toCounter(keys: AcceptanceCounterKeys, window: CounterWindow, command: Parameters<typeof counterCommand>[0]): CommandToSend {
  return { actorType: counterActorType, actorKey: counterKey(keys, window), kind: command.kind, payload: counterCommand(command) };
}

/** The amount a window counts: the stablecoin leg for KYC and KYB, the rail's amount otherwise. */
function windowAmount(quote: Quote, window: CounterWindow): Decimal {
  return window === 'kycMonth' || window === 'kyb' ? stablecoinAmount(quote) : railAmount(quote);
}

/**
 * The windows asked first. With a method × day counter: that one, plus the partner's KYB total
 * when it is not KYB-approved (`kyb_cap` outranks the method cap, so it must be asked no later).
 * Once the method's cap is spent, every acceptance of the day is refused there, and that load has
 * no bound (acceptances do: the cap itself bounds them), so a refusal then costs the method counter
 * (and, for a partner without KYB approval, a KYB reservation given back) and leaves nothing else
 * to release; the edge's early refusal answers most of them before any counter is asked. The
 * others (user × day, KYC month) are asked only after the method counter granted; their refusals
 * rank after the method cap (`acceptanceCheckOrder`), so asking later never changes the answer.
 * The price is one more round trip on the success path. Without a method counter (PIX) everything
 * is asked at once.
 */
function firstStage(windows: readonly AcceptanceStep[]): AcceptanceStep[] {
  if (!windows.includes('methodDay')) return [...windows];
  return windows.filter((window) => window === 'quote' || window === 'methodDay' || window === 'kyb');
}

function sentWindows(state: Reserving): readonly AcceptanceStep[] {
  return state.sent ?? state.windows;
}

/** The counter windows among the steps (what a live transaction releases or commits later). */
function counterWindows(steps: readonly AcceptanceStep[]): CounterWindow[] {
  return steps.filter((step): step is CounterWindow => step !== 'quote');
}

function reserveCommands(accept: AcceptPayload, keys: AcceptanceCounterKeys, windows: readonly AcceptanceStep[], transactionId: string): CommandToSend[] {
  return windows.map((window) =>
    window === 'quote'
      ? quoteUseCommand(accept.quote.id, 'claim', { transactionId, partnerId: accept.partnerId })
      : toCounter(keys, window, {
          kind: 'reserve',
          window,
          transactionId,
          amount: windowAmount(accept.quote, window),
          method: accept.quote.paymentMethod,
          standing: { kycEnabled: accept.kycEnabled, kycApproved: accept.kycApproved },
          kybApproved: accept.kybApproved,
        }),
  );
}

/** Gives back a granted step: the quote's claim, or a counter's reservation. */
function releaseCommand(state: Reserving, step: AcceptanceStep, transactionId: string): CommandToSend {
  return step === 'quote'
    ? quoteUseCommand(state.accept.quote.id, 'release', { transactionId })
    : toCounter(state.keys, step, { kind: 'release', transactionId });
}

/** Read-only checks, in the catalogue's order of precedence; the first failure answers. */
function preChecks(accept: AcceptPayload, limits: LimitsConfig, nowMs: number): AcceptanceRejection | null {
  const { quote } = accept;
  if (nowMs >= quote.expiresAtMs) return { code: 'quote_expired' };
  const perTransaction = checkPerTransaction(limits, quote.paymentMethod, railAmount(quote));
  if (!perTransaction.ok) return perTransaction.rejection;
  if (!accept.railAvailable) return { code: 'rail_unavailable', method: quote.paymentMethod };
  if (quote.direction === 'payout' && accept.liquidity !== null && compare(accept.liquidity, quote.targetAmount) < 0) {
    return { code: 'liquidity_insufficient' };
  }
  return null;
}

function startAcceptance(accept: AcceptPayload, command: { replyTo?: ReplyTarget }, nowMs: number, limits: LimitsConfig, transactionId: string): Outcome<TransactionActorState> {
  const rejection = preChecks(accept, limits, nowMs);
  if (rejection !== null) {
    const answer = reply(rejectionReply(rejection));
    return { state: { phase: 'rejected', reply: answer }, reply: answer };
  }
  const keys = acceptanceCounterKeys(limits, {
    partnerId: accept.partnerId,
    userId: accept.userId,
    method: accept.quote.paymentMethod,
    nowMs,
  });
  const windows = windowsFor(accept, keys);
  const sent = firstStage(windows);
  return {
    state: {
      phase: 'reserving',
      accept,
      keys,
      windows,
      sent,
      results: {},
      waiting: command.replyTo ? [command.replyTo] : [],
      startedAtMs: nowMs,
    },
    send: reserveCommands(accept, keys, sent, transactionId),
  };
}

/** One step answered (the quote or a counter). Waits for the rest of the stage, then asks the next stage or finishes. */
function recordResult(
  state: Reserving,
  result: { readonly window: AcceptanceStep; readonly outcome: ReservationOutcome },
  transactionId: string,
  nowMs: number,
): Outcome<TransactionActorState> {
  const sent = sentWindows(state);
  // Each counter answers once per reserve (commands dedupe by id); a window not asked, or asked
  // and already answered, has nothing to add.
  if (!sent.includes(result.window) || state.results[result.window] !== undefined) return {};
  const results = { ...state.results, [result.window]: result.outcome };
  const next: Reserving = { ...state, results };
  if (sent.some((window) => results[window] === undefined)) return { state: next };
  const refused = sent.some((window) => results[window]?.ok === false);
  const unsent = state.windows.filter((window) => !sent.includes(window));
  if (refused || unsent.length === 0) return finishAcceptance(next, transactionId, nowMs);
  return { state: { ...next, sent: [...sent, ...unsent] }, send: reserveCommands(state.accept, state.keys, unsent, transactionId) };
}

const windowCheck: Readonly<Record<AcceptanceStep, AcceptanceCheck>> = {
  quote: 'quote_used',
  kyb: 'kyb_cap',
  kycMonth: 'kyc_required',
  userDay: 'user_daily_count_cap',
  methodDay: 'method_daily_cap',
};

/** Every asked counter answered: create the transaction, or release what was reserved and reject. */
function finishAcceptance(state: Reserving, transactionId: string, nowMs: number): Outcome<TransactionActorState> {
  const failures = sentWindows(state)
    .map((window) => ({ window, outcome: state.results[window] }))
    .filter((item) => item.outcome !== undefined && !item.outcome.ok)
    .sort((a, b) => {
      const rank = (item: typeof a): number =>
        item.outcome !== undefined && !item.outcome.ok && 'rejection' in item.outcome
          ? checkPrecedence(item.outcome.rejection.code)
          : checkPrecedence(windowCheck[item.window]);
      return rank(a) - rank(b);
    });
  // Only granted steps are given back: a refusal reserved (or claimed) nothing, a step never asked
  // holds nothing. The quote is given back too: only a created transaction uses it. (A result
  // written before the KYB total was reserved says "granted" for a KYB check that held nothing: its
  // release finds no entry and changes nothing.)
  const releaseAll = (): CommandToSend[] =>
    sentWindows(state)
      .filter((window) => state.results[window]?.ok === true)
      .map((window) => releaseCommand(state, window, transactionId));
  const first = failures[0];
  const answerAll = (answer: JsonValue) => state.waiting.map((to) => ({ to, payload: answer }));
  if (first !== undefined && first.outcome !== undefined && !first.outcome.ok) {
    const answer = 'rejection' in first.outcome ? reply(rejectionReply(first.outcome.rejection)) : reply({ ok: true, kycRequired: true });
    return { state: { phase: 'rejected', reply: answer }, replies: answerAll(answer), send: releaseAll() };
  }
  const { accept } = state;
  const created = applyDomain(null, {
    kind: 'Create',
    transactionId,
    partnerId: accept.partnerId,
    userId: accept.userId,
    quote: accept.quote,
    accountNumber: accept.accountNumber,
    qrCode: accept.qrCode,
    taxId: accept.taxId,
    externalId: accept.externalId,
  }, { nowMs });
  if (!created.ok) {
    const answer = reply(
      created.rejection.code === 'quote_expired'
        ? rejectionReply({ code: 'quote_expired' })
        : { ok: false, code: 'invalid_request', reason: `The transaction could not be created (${created.rejection.code})`, retryable: false },
    );
    return { state: { phase: 'rejected', reply: answer }, replies: answerAll(answer), send: releaseAll() };
  }
  const live: Live = { phase: 'live', tx: created.state, keys: state.keys, windows: counterWindows(state.windows), paymentContext: accept.paymentContext };
  const effects = effectsOf(null, live, created.events);
  // The quote now backs this transaction for good (a saga stored before quotes were single-use
  // claimed nothing and has nothing to mark).
  const used = state.windows.includes('quote') ? [quoteUseCommand(accept.quote.id, 'consume', { transactionId })] : [];
  return { ...effects, send: [...effects.send, ...used], state: live, replies: answerAll(reply(acceptedReply(live))) };
}

// ---------------------------------------------------------------------------------------------
// Early refusal (the edge, docs/decisions-limits.md "Early refusal at a spent method cap")
//
// Once a method's daily cap is spent, every acceptance of the day is refused by the method × day
// counter, and that load has no bound. The edge reads the first stage's counters as last
// committed and runs the saga's own steps on them (start, each counter's answer, the quote's
// answer to the claim, the ranking of refusals): when the saga is certain to refuse, the edge
// answers so at once, and neither the transaction, the quote nor the counters are written. The
// answer is the actor's: for a transaction id no counter has seen, the saga's answer depends on
// nothing else than those committed totals and the quote's committed use (a transaction a counter
// has seen is counted already, and `reserve` grants it again, so it is never refused early; the
// same holds for the quote's claim). A grant, or a stage that would go on, is left to the actor,
// which decides.

/** The saga's first stage, as the edge runs it before asking (see above). */
export interface EarlyRefusalStage {
  /** The counters to read: the first stage's. */
  readonly counters: readonly string[];
  /**
   * The saga's answer when it would refuse in this stage, given each counter's committed state
   * (`counterOf(key)`, the empty counter for one never written) and the quote's committed use
   * (null: unclaimed); null when it would not.
   */
  refusal(counterOf: (key: string) => CounterState, quoteUse: QuoteUse | null): AcceptReply | null;
}

/**
 * The first stage of the saga, when it holds the method × day counter (the only unbounded refusal
 * load); null when no early refusal applies (no such counter, or a refusal before any counter,
 * which the actor answers itself).
 */
export function earlyRefusalStage(accept: AcceptPayload, limits: LimitsConfig, nowMs: number, transactionId: string): EarlyRefusalStage | null {
  const started = startAcceptance(accept, {}, nowMs, limits, transactionId);
  const first = started.state;
  if (first?.phase !== 'reserving' || !sentWindows(first).includes('methodDay')) return null;
  const asks = started.send ?? [];
  return {
    counters: asks.filter((ask) => ask.actorType === counterActorType).map((ask) => ask.actorKey),
    refusal(counterOf, quoteUse) {
      let state: TransactionActorState | undefined = first;
      for (const ask of asks) {
        if (state?.phase !== 'reserving') break;
        if (ask.actorType === quoteActorType) {
          // The edge asks only for the partner's own quote, so the claim is answered by its use.
          state = recordResult(state, { window: 'quote', outcome: claim(quoteUse, transactionId).outcome }, transactionId, nowMs).state;
          continue;
        }
        const command = fromJsonValue<CounterCommand>(ask.payload);
        if (command.kind !== 'reserve') return null;
        const { outcome } = answerReserve(counterOf(ask.actorKey), limits, command);
        state = recordResult(state, { window: command.window, outcome }, transactionId, nowMs).state;
      }
      return state?.phase === 'rejected' ? (state.reply as unknown as AcceptReply) : null;
    },
  };
}

function applyDomain(
  state: TransactionState | null,
  command: TransactionCommand,
  ctx: DecideContext,
): { ok: true; state: TransactionState; events: readonly TransactionEvent[] } | { ok: false; rejection: { code: string } } {
  const decision = decide(state, command, ctx);
  if (!decision.ok) return { ok: false, rejection: decision.rejection };
  let next = state;
  for (const event of decision.events) next = evolve(next, event);
  if (next === null) throw new Error('a decision without events on a missing transaction');
  return { ok: true, state: next, events: decision.events };
}

/**
 * Webhooks, payout/refund/delivery requests, counter updates and the read model for `events`,
 * applied from `before` (null for a new transaction). Webhook data is the state right after each
 * event, so several events in one decision yield webhooks of their own moments, in order.
 */
function effectsOf(
  before: TransactionState | null,
  live: Live,
  events: readonly TransactionEvent[],
): { outbox: OutboxMessage[]; send: CommandToSend[]; readModels: ReadModelWrite[] } {
  const outbox: OutboxMessage[] = [];
  const send: CommandToSend[] = [];
  const tx = live.tx;
  const toCounters = (windows: readonly CounterWindow[], command: (window: CounterWindow) => Parameters<typeof counterCommand>[0]): void => {
    for (const window of windows) send.push(toCounter(live.keys, window, command(window)));
  };
  let current = before;
  for (const event of events) {
    current = evolve(current, event);
    for (const webhook of webhooksFor(event, current)) {
      outbox.push({ topic: outboxTopicWebhooks, partitionKey: tx.id, payload: toJsonValue({ partnerId: tx.partnerId, ...webhook }) });
    }
    const effect = limitEffectFor(event);
    // At most one of these per transaction: each leaves a status it cannot return to
    // (AWAITING_PAYMENT or PROCESSING_PAYMENT), see `limitEffectFor`.
    // Every window, the KYB total included: a transaction accepted before the KYB total was
    // reserved at acceptance has no KYB entry, and its release there changes nothing.
    if (effect === 'release') toCounters(live.windows, () => ({ kind: 'release', transactionId: tx.id }));
    if (effect === 'keep') {
      toCounters(live.windows, (window) => ({ kind: 'commit', transactionId: tx.id, amount: windowAmount(tx.quote, window) }));
    }
    const common = { transactionId: tx.id, partnerId: tx.partnerId, direction: tx.direction };
    if (event.type === 'PayoutRequested') outbox.push({ topic: outboxTopicPayouts, partitionKey: tx.id, payload: toJsonValue({ ...common, ...event }) });
    if (event.type === 'RefundRequested') outbox.push({ topic: event.deposit.rail === 'pix' ? outboxTopicRefundsPix : outboxTopicRefundsChain, partitionKey: tx.id, payload: toJsonValue({ ...common, ...event }) });
    if (event.type === 'DeliveryRequested') outbox.push({ topic: outboxTopicDeliveries, partitionKey: tx.id, payload: toJsonValue({ ...common, ...event }) });
  }
  const watch = depositWatchWrite(before, tx, live.paymentContext);
  const readModels: ReadModelWrite[] = [{ collection: transactionsCollection, id: tx.id, doc: transactionDocument(tx, frozenDepositAddress(live.paymentContext)) }];
  if (watch !== null) readModels.push(watch);
  return { outbox, send, readModels };
}

const domainCommandKinds = new Set([
  'DepositDetected',
  'PixPaymentReceived',
  'PayoutSucceeded',
  'PayoutFailed',
  'CryptoDelivered',
  'CryptoDeliveryFailed',
  'RefundSettled',
]);

export type DomainReply = { readonly ok: true; readonly status: string } | { readonly ok: false; readonly code: string };

/**
 * A chain deposit the transaction refused but that is real money on our address goes back to its
 * deposit actor, which treats it as unmatched (refund, or dust below the floor). Any other refusal
 * sends nothing. The refusal itself writes nothing; the hand-back is a durable outbox command.
 */
function handBackOf(tx: TransactionState, command: TransactionCommand, code: string): CommandToSend[] {
  if (command.kind !== 'DepositDetected' || !handBackReasons.includes(code as HandBackReason)) return [];
  const payload = toJsonValue({ transactionId: tx.id, reason: code });
  const depositKey = command.depositKey ?? depositActorKey(command.network, command.onChainId);
  return [{ actorType: depositActorType, actorKey: depositKey, kind: depositHandBackKind, payload }];
}

function handleLive(state: Live, kind: string, payload: JsonValue, nowMs: number, limits: LimitsConfig): Outcome<TransactionActorState> {
  if (kind === timerCommandKind && state.tx.status !== 'AWAITING_PAYMENT') return {};
  const command: TransactionCommand = kind === timerCommandKind ? { kind: 'Expire' } : fromJsonValue<TransactionCommand>(payload);
  if (command.kind !== kind && kind !== timerCommandKind) return { reply: { ok: false, code: 'malformed_command' } };
  const applied = applyDomain(state.tx, command, { nowMs, chainRefundFloors: limits.chainRefundFloors });
  if (!applied.ok) {
    const send = handBackOf(state.tx, command, applied.rejection.code);
    return { reply: { ok: false, code: applied.rejection.code }, ...(send.length > 0 ? { send } : {}) };
  }
  const live: Live = { ...state, tx: applied.state };
  return { ...effectsOf(state.tx, live, applied.events), state: live, reply: { ok: true, status: applied.state.status } };
}

export function transactionBehavior(deps: TransactionActorDeps): ActorBehavior<TransactionActorState> {
  return {
    type: transactionActorType,
    encode: (state) => toJsonValue(state),
    decode: (json) => fromJsonValue<TransactionActorState>(json),
    timerAtMs: (state) => (state.phase === 'live' && state.tx.status === 'AWAITING_PAYMENT' ? state.tx.expiresAtMs : null),
    // The saga answers `accept` once the counters have replied; a repeat (an Idempotency-Key retry
    // after a timeout or failover) joins those waiting, or gets the outcome once there is one.
    deferredReplyKinds: new Set(['accept']),
    handle(state, command, ctx) {
      const transactionId = command.actorKey;
      if (command.kind === 'accept') {
        if (state === null) {
          return startAcceptance(fromJsonValue<AcceptPayload>(command.payload), command, ctx.nowMs, deps.limits(), transactionId);
        }
        if (state.phase === 'reserving') {
          return command.replyTo ? { state: { ...state, waiting: [...state.waiting, command.replyTo].slice(-acceptWaitersMax) } } : {};
        }
        return { reply: state.phase === 'rejected' ? state.reply : reply(acceptedReply(state)) };
      }
      if (command.kind === reservationResultKind || command.kind === quoteClaimResultKind) {
        // Every asked counter (and the quote) answers exactly once (commands dedupe by id), and the
        // saga settles only when all asked have answered, so a result outside 'reserving' is a
        // duplicate.
        if (state === null || state.phase !== 'reserving') return {};
        const result =
          command.kind === reservationResultKind
            ? fromJsonValue<ReservationResultPayload>(command.payload)
            : { window: 'quote' as const, outcome: fromJsonValue<QuoteClaimResultPayload>(command.payload).outcome };
        return recordResult(state, result, transactionId, ctx.nowMs);
      }
      if (state === null || state.phase !== 'live') {
        return { reply: { ok: false, code: 'not_found' } };
      }
      if (command.kind === timerCommandKind || domainCommandKinds.has(command.kind)) {
        return handleLive(state, command.kind, command.payload, ctx.nowMs, deps.limits());
      }
      return { reply: { ok: false, code: 'unknown_command' } };
    },
  };
}

