// The transaction actor: one per transaction id. It runs the acceptance saga (claim the quote and
// reserve in every limit counter the transaction falls in, every step asked at once in one round
// (`firstStage`), then create and mark the quote used; or give back what was claimed and reserved
// and reject), then applies the pure transaction state
// machine to every later fact (deposit, payout, expiry, refund), turning its events into
// webhooks, payout/refund/delivery effects and counter updates, all written in the same durable
// step as the new state. A chain deposit the state machine refuses to take although it is real
// money (beyond the stray slots, or dust below the refund floor) is handed back to its deposit
// actor, which refunds it or records it as dust (src/actors/deposit-keys.ts).
import {
  counterKeyOf,
  recordStep,
  releasesGrantAfterRelease,
  releasesLateGrant,
  startAcceptance as domainStartAcceptance,
  windowAmount,
  windowReservation,
  type AcceptanceAnswer,
  type AcceptanceStep,
  type CounterWindow,
  type ReservationOutcome,
  type SagaProgress,
} from '../domain/acceptance.ts';
import { describeAcceptanceRejection, type AcceptanceCounterKeys, type AcceptanceRejection, type LimitsConfig } from '../domain/limits.ts';
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
import { counterActorType, counterCommand, reservationResultKind, type CounterCommand } from './counter-actor.ts';
import { quoteClaimResultKind, quoteUseCommand } from './quote-actor.ts';
import { transactionCommands, type AcceptPayload, type TransactionCommands } from './transaction-commands.ts';
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
/**
 * One document per payout that finished (succeeded or failed), by payment method and finish time:
 * what corridor health is computed from (src/edge/corridor-health.ts, docs/corridor-health.md).
 * Index `by_method_finished` (src/store/store.ts).
 */
export const settlementSamplesCollection = 'settlement_samples';

export type { AcceptPayload } from './transaction-commands.ts';

interface Reserving {
  readonly phase: 'reserving';
  readonly accept: AcceptPayload;
  readonly keys: AcceptanceCounterKeys;
  /**
   * The saga's steps (`acceptanceSteps`): the quote, and every window the transaction counts in.
   * A saga stored before quotes were single-use has no 'quote' step and claims nothing.
   */
  readonly windows: readonly AcceptanceStep[];
  /**
   * The steps asked so far: all of `windows` from the start (one round). Fewer in a saga an
   * older two-stage release stored mid-way (the rest is asked once those grant). Absent in
   * snapshots written before the saga had stages, which asked every window at once: then it is
   * all of `windows`.
   */
  readonly sent?: readonly AcceptanceStep[];
  readonly results: Readonly<Partial<Record<AcceptanceStep, ReservationOutcome>>>;
  readonly waiting: readonly ReplyTarget[];
  readonly startedAtMs: number;
}

/**
 * What a refused saga asked: its steps, the counter keys and the quote they went to. A rejected
 * transaction keeps it so that a grant reaching it after the refusal goes back where it came from
 * (`lateGrant`). Kept here rather than carried by the answers (a counter naming its own key in
 * `reservation_result`): the transaction then releases only at counters its own state names, and
 * neither the counters' nor the quote's answers change shape, so nothing depends on which release
 * of those actors answered during a rolling upgrade. The price is a few keys in a refused
 * transaction's snapshot.
 */
interface Asked {
  readonly steps: readonly AcceptanceStep[];
  readonly keys: AcceptanceCounterKeys;
  readonly quoteId: string;
}

interface Rejected {
  readonly phase: 'rejected';
  readonly reply: JsonValue;
  /**
   * Absent when a read check refused before any step was asked (no grant can come), and in
   * rejected states stored before it was kept: such a transaction cannot tell where a late grant
   * came from and ignores it, as it always did.
   */
  readonly asked?: Asked;
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
  /** Sandbox mode: the test clocks' commands are taken (refused as `not_found` otherwise). */
  readonly sandbox?: boolean;
}

export { railAmount, stablecoinAmount } from '../domain/acceptance.ts';

function rejectionReply(rejection: AcceptanceRejection): AcceptReply {
  const described = describeAcceptanceRejection(rejection);
  return { ok: false, code: described.code, reason: described.reason, retryable: described.retryable };
}

/** The reply that carries a refusal of the saga (a rejection, or KYC required). */
export function answerReply(answer: AcceptanceAnswer): AcceptReply {
  return answer.kind === 'rejected' ? rejectionReply(answer.rejection) : { ok: true, kycRequired: true };
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
  return toJsonValue(value);
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
    // What a settlement receipt names (src/domain/receipt.ts): the deposit, the payout or delivery,
    // the primary refund and their times. Absent in documents written before receipts.
    deposit: tx.deposit,
    settlement: tx.settlement,
    refund: tx.refund,
    refundTimes: tx.refundTimes ?? null,
  }) as { [key: string]: JsonValue };
}

/** The payout's settlement sample once it finished in these events (see settlementSamplesCollection), else null. */
function settlementSampleWrite(tx: TransactionState, events: readonly TransactionEvent[]): ReadModelWrite | null {
  if (tx.direction !== 'payout' || !events.some((event) => event.type === 'PayoutCompleted' || event.type === 'PayoutFailed')) return null;
  const { settlement, quote } = tx;
  if (settlement.finishedAtMs === null) return null;
  const doc = {
    transactionId: tx.id,
    paymentMethod: quote.paymentMethod,
    network: quote.network,
    cryptoCurrency: quote.cryptoCurrency,
    targetCurrency: quote.targetCurrency,
    succeeded: settlement.state === 'succeeded',
    depositAtMs: tx.deposit?.receivedAtMs ?? null,
    finishedAtMs: settlement.finishedAtMs,
  };
  return { collection: settlementSamplesCollection, id: tx.id, doc };
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

function toCounter(keys: AcceptanceCounterKeys, window: CounterWindow, command: CounterCommand): CommandToSend {
  return { actorType: counterActorType, actorKey: counterKeyOf(keys, window), kind: command.kind, payload: counterCommand(command) };
}

/** The saga's progress as the domain reads it (a snapshot from before stages asked every step at once). */
function progressOf(state: Reserving): SagaProgress {
  return { steps: state.windows, sent: state.sent ?? state.windows, results: state.results };
}

function reserveCommands(accept: AcceptPayload, keys: AcceptanceCounterKeys, steps: readonly AcceptanceStep[], transactionId: string): CommandToSend[] {
  return steps.map((step) =>
    step === 'quote'
      ? quoteUseCommand(accept.quote.id, 'claim', { transactionId, partnerId: accept.partnerId, quote: accept.quote })
      : toCounter(keys, step, { kind: 'reserve', ...windowReservation(accept, step, transactionId) }),
  );
}

/** Gives back a granted step: the quote's claim, or a counter's reservation. */
/** A counter's grant to a created transaction that released its windows since (`releasesGrantAfterRelease`): given back. */
function grantAfterRelease(state: Live, result: { readonly window: AcceptanceStep; readonly outcome: ReservationOutcome }, transactionId: string): Outcome<TransactionActorState> {
  const { window, outcome } = result;
  // Only a window this transaction reserved can have been granted to it (and has a counter key).
  if (window === 'quote' || !state.windows.includes(window) || !releasesGrantAfterRelease(state.tx.status, window, outcome)) return {};
  return { send: [toCounter(state.keys, window, { kind: 'release', transactionId })] };
}

function releaseCommand(asked: Asked, step: AcceptanceStep, transactionId: string): CommandToSend {
  return step === 'quote'
    ? quoteUseCommand(asked.quoteId, 'release', { transactionId })
    : toCounter(asked.keys, step, { kind: 'release', transactionId });
}

/**
 * A step granted after the saga refused (`releasesLateGrant`: a reserve or a claim delivered again
 * once its counter or quote forgot it counted the transaction again) is given back; anything else
 * changes nothing. The state does not change: a copy handled again sends the same release again,
 * under the id the runtime derives from the answer's (`sentCommands`), and a release of what the
 * transaction does not hold changes nothing. (If that id is the one the refusal itself sent this
 * step's release under, and the counter still remembers it, the counter skips it as a repeat.)
 */
function lateGrant(state: Rejected, result: { readonly window: AcceptanceStep; readonly outcome: ReservationOutcome }, transactionId: string): Outcome<TransactionActorState> {
  const asked = state.asked;
  if (asked === undefined || !releasesLateGrant(asked.steps, result.window, result.outcome)) return {};
  return { send: [releaseCommand(asked, result.window, transactionId)] };
}

function startAcceptance(accept: AcceptPayload, command: { replyTo?: ReplyTarget }, nowMs: number, limits: LimitsConfig, transactionId: string): Outcome<TransactionActorState> {
  const started = domainStartAcceptance(accept, limits, nowMs);
  if (started.kind === 'refuse') {
    const answer = reply(rejectionReply(started.rejection));
    return { state: { phase: 'rejected', reply: answer }, reply: answer };
  }
  const { keys, progress, ask } = started;
  return {
    state: {
      phase: 'reserving',
      accept,
      keys,
      windows: progress.steps,
      sent: progress.sent,
      results: {},
      waiting: command.replyTo ? [command.replyTo] : [],
      startedAtMs: nowMs,
    },
    send: reserveCommands(accept, keys, ask, transactionId),
  };
}

/** One step answered (the quote or a counter): the domain decides (`recordStep`); this sends and answers. */
function recordResult(
  state: Reserving,
  result: { readonly window: AcceptanceStep; readonly outcome: ReservationOutcome },
  transactionId: string,
  nowMs: number,
): Outcome<TransactionActorState> {
  const decision = recordStep(progressOf(state), result.window, result.outcome);
  const answerAll = (answer: JsonValue) => state.waiting.map((to) => ({ to, payload: answer }));
  const asked: Asked = { steps: progressOf(state).sent, keys: state.keys, quoteId: state.accept.quote.id };
  const releaseAll = (steps: readonly AcceptanceStep[]): CommandToSend[] => steps.map((step) => releaseCommand(asked, step, transactionId));
  switch (decision.kind) {
    case 'ignore':
      return {};
    case 'giveBack':
      return { send: [releaseCommand(asked, decision.step, transactionId)] };
    case 'wait':
      return { state: { ...state, results: decision.progress.results } };
    case 'ask':
      return {
        state: { ...state, sent: decision.progress.sent, results: decision.progress.results },
        send: reserveCommands(state.accept, state.keys, decision.ask, transactionId),
      };
    case 'refuse': {
      const answer = reply(answerReply(decision.answer));
      return { state: { phase: 'rejected', reply: answer, asked }, replies: answerAll(answer), send: releaseAll(decision.release) };
    }
    case 'create':
      break;
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
    // Not created after all: everything granted goes back, as for a refusal.
    const answer = reply(
      created.rejection.code === 'quote_expired'
        ? rejectionReply({ code: 'quote_expired' })
        : { ok: false, code: 'invalid_request', reason: `The transaction could not be created (${created.rejection.code})`, retryable: false },
    );
    return { state: { phase: 'rejected', reply: answer, asked }, replies: answerAll(answer), send: releaseAll(decision.release) };
  }
  const live: Live = { phase: 'live', tx: created.state, keys: state.keys, windows: decision.counters, paymentContext: accept.paymentContext };
  const effects = effectsOf(null, live, created.events);
  // The quote now backs this transaction for good.
  const used = decision.consumeQuote ? [quoteUseCommand(accept.quote.id, 'consume', { transactionId })] : [];
  return { ...effects, send: [...effects.send, ...used], state: live, replies: answerAll(reply(acceptedReply(live))) };
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
  const readModels: ReadModelWrite[] = [{ collection: transactionsCollection, id: tx.id, doc: transactionDocument(tx, frozenDepositAddress(live.paymentContext)) }];
  const sample = settlementSampleWrite(tx, events);
  if (sample !== null) readModels.push(sample);
  const watch = depositWatchWrite(before, tx, live.paymentContext);
  if (watch !== null) readModels.push(watch);
  return { outbox, send, readModels };
}

export type DomainReply = { readonly ok: true; readonly status: string } | { readonly ok: false; readonly code: string };

/**
 * A chain deposit the transaction refused but that is real money on our address goes back to its
 * deposit actor, which treats it as unmatched (refund, or dust below the floor). Any other refusal
 * sends nothing. The refusal itself writes nothing; the hand-back is a durable outbox command.
 */
function handBackOf(tx: TransactionState, command: TransactionCommand, code: string): CommandToSend[] {
  if (command.kind !== 'DepositDetected' || !handBackReasons.includes(code as HandBackReason)) return [];
  const payload = toJsonValue({ transactionId: tx.id, reason: code, partnerId: tx.partnerId });
  const depositKey = command.depositKey ?? depositActorKey(command.network, command.onChainId);
  return [{ actorType: depositActorType, actorKey: depositKey, kind: depositHandBackKind, payload }];
}

function handleLive(state: Live, command: TransactionCommand, nowMs: number, limits: LimitsConfig): Outcome<TransactionActorState> {
  const applied = applyDomain(state.tx, command, { nowMs, chainRefundFloors: limits.chainRefundFloors });
  if (!applied.ok) {
    const send = handBackOf(state.tx, command, applied.rejection.code);
    return { reply: { ok: false, code: applied.rejection.code }, ...(send.length > 0 ? { send } : {}) };
  }
  const live: Live = { ...state, tx: applied.state };
  return { ...effectsOf(state.tx, live, applied.events), state: live, reply: { ok: true, status: applied.state.status } };
}

/**
 * A test clock (sandbox only): the payment window of a transaction awaiting payment ends now. Its
 * expiry (and its quote's, which it always equals) moves to now and the real expiry follows, with
 * its events, webhooks and the refund of any later deposit. Anything but a transaction awaiting
 * payment is left as it is.
 */
function sandboxExpire(state: Live, nowMs: number, deps: TransactionActorDeps): Outcome<TransactionActorState> {
  if (deps.sandbox !== true) return { reply: { ok: false, code: 'not_found' } };
  if (state.tx.status !== 'AWAITING_PAYMENT') return { reply: { ok: false, code: 'not_awaiting_payment' } };
  // The transaction's expiry is its quote's (an invariant of the domain): both move together.
  const expiresAtMs = Math.min(state.tx.expiresAtMs, nowMs);
  const advanced: Live = { ...state, tx: { ...state.tx, expiresAtMs, quote: { ...state.tx.quote, expiresAtMs } } };
  return handleLive(advanced, { kind: 'Expire' }, nowMs, deps.limits());
}

export function transactionBehavior(deps: TransactionActorDeps): ActorBehavior<TransactionActorState, TransactionCommands> {
  return {
    type: transactionActorType,
    encode: (state) => toJsonValue(state),
    decode: (json) => fromJsonValue<TransactionActorState>(json),
    commands: transactionCommands,
    timerAtMs: (state) => (state.phase === 'live' && state.tx.status === 'AWAITING_PAYMENT' ? state.tx.expiresAtMs : null),
    // The saga answers `accept` once the counters have replied; a repeat (an Idempotency-Key retry
    // after a timeout or failover) joins those waiting, or gets the outcome once there is one.
    deferredReplyKinds: new Set(['accept']),
    // A step's answer is recorded in the saga's results and ignored once recorded (or once the saga
    // created the transaction), so handled again it changes nothing and sends nothing; after a
    // refusal a grant sends its step a release again, which the counter or the quote takes as a
    // no-op. So the dedupe log need keep no copy of it (four answers per acceptance:
    // bench/README.md, "hot-accept").
    dedupeByState: (kind) => kind === reservationResultKind || kind === quoteClaimResultKind,
    handle(state, command, ctx) {
      const transactionId = command.actorKey;
      if (command.kind === 'accept') {
        if (state === null) {
          return startAcceptance(command.payload, command, ctx.nowMs, deps.limits(), transactionId);
        }
        if (state.phase === 'reserving') {
          return command.replyTo ? { state: { ...state, waiting: [...state.waiting, command.replyTo].slice(-acceptWaitersMax) } } : {};
        }
        return { reply: state.phase === 'rejected' ? state.reply : reply(acceptedReply(state)) };
      }
      if (command.kind === 'reservation_result' || command.kind === 'quote_claim_result') {
        // Every asked counter (and the quote) answers once per ask, and the saga settles only when
        // all asked have answered, so a result outside 'reserving' is a duplicate: of the answer
        // recorded, or of an ask delivered again after its counter forgot it. A live transaction
        // holds every step, so it ignores it — unless it released them since (expired, failed),
        // and a rejected one holds none: both give a grant back.
        if (state === null) return {};
        const result = command.kind === 'reservation_result' ? command.payload : { window: 'quote' as const, outcome: command.payload.outcome };
        if (state.phase === 'live') return grantAfterRelease(state, result, transactionId);
        if (state.phase === 'rejected') return lateGrant(state, result, transactionId);
        return recordResult(state, result, transactionId, ctx.nowMs);
      }
      if (state === null || state.phase !== 'live') {
        return { reply: { ok: false, code: 'not_found' } };
      }
      if (command.kind === 'sandbox_expire') return sandboxExpire(state, ctx.nowMs, deps);
      if (command.kind === timerCommandKind) {
        if (state.tx.status !== 'AWAITING_PAYMENT') return {};
        return handleLive(state, { kind: 'Expire' }, ctx.nowMs, deps.limits());
      }
      // Every other kind of the map is a fact of the transaction's life, its payload the domain command.
      return handleLive(state, command.payload, ctx.nowMs, deps.limits());
    },
  };
}

