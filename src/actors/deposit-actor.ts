// The deposit actor: one per chain transfer (`deposit/<network>:<onChainId>`). It is the only
// writer of "which transaction does this transfer fund", so a transfer funds AT MOST ONE
// transaction ever, whoever reports it and however often (the Stellar watcher, a partner's notify,
// an operator's reconcile, in any order and concurrently):
// - the first `claim` wins: the link is recorded and `DepositDetected` goes to the transaction
//   actor in the same durable step;
// - a later claim for the same transaction is harmless (`alreadyProcessed`) and sends the recorded
//   transfer to the transaction again: the first `DepositDetected` is relayed once, fire and
//   forget, so a command lost on its way (a stream trimmed while its shard had no owner) would
//   otherwise leave the transfer linked and the transaction waiting, neither paid nor refunded. A
//   watcher's re-report, a partner's notify or an operator's reconcile repairs it; a transaction
//   that already knows the deposit treats it as a no-op;
// - a claim for another transaction is refused;
// - a transfer that matches no transaction (`unmatched`: its memo names none, or a transaction that
//   does not exist or is on another network) is recorded as an unmatched deposit and refunded in full
//   to its sender through the chain refund path; no transaction can claim it afterwards;
// - a linked transfer its transaction refused to take (`handBack`: late, beyond the transaction's
//   stray slots, or dust) becomes unmatched too, attributable to that transaction's partner: it
//   waits `open` for the partner's `refund` or `apply` (docs/unmatched-deposits.md), and is
//   refunded by the actor's timer when the hold ends with no decision; the rules are pure, in
//   src/domain/unmatched-deposits.ts;
// - an unmatched deposit below its network's refund floor (src/domain/refund-floor.ts) is not
//   refunded: it is recorded with `refund: 'withheld'` (dust), and no refund row is written.
// Every refund of an unmatched deposit is one refund row written in the step that moves `refund` to
// `pending`, and only a `held` deposit moves there: two refund calls, or a call racing the timer,
// write one row between them (the actor applies one command at a time).
//
// A transfer into a transaction's own deposit address (Solana, Celo: `transfer.depositAddress`)
// is keyed by that address too (`<network>:<onChainId>@<address>`): one chain transaction may pay
// several such addresses (a wallet's batch), and each part funds the transaction of its address.
// Its first claim also writes a sweep row (topic `sweeps.chain`): the address's balance goes to the
// hot wallet (src/chains/sweeps.ts), whatever the transaction then decides (payout or refund, both
// paid from the hot wallet).
import type { CryptoAsset, Network } from '../domain/assets.ts';
import type { LimitsConfig } from '../domain/limits.ts';
import { compare, toFixedString, type Decimal } from '../domain/money.ts';
import { isBelowRefundFloor, refundFloorOf } from '../domain/refund-floor.ts';
import {
  decideApply,
  decideRefund,
  holdEndsAtMs,
  initialRefund,
  unmatchedHoldMsDefault,
  unmatchedStateOf,
  type UnmatchedRefund,
} from '../domain/unmatched-deposits.ts';
import { depositActorKey, depositActorType, depositHandBackKind, handBackReasons, type HandBackReason } from './deposit-keys.ts';
import { z } from 'zod';
import { amountSchema, cryptoAssetSchema, decoderOf, idText, ignoredPayload, networkSchema } from './commands.ts';
import { timerCommandKind, type ActorBehavior, type CommandMap, type CommandToSend, type JsonValue, type OutboxMessage, type Outcome, type ReadModelWrite } from './envelope.ts';
import { unmatchedDepositsCollection, unmatchedDocument } from './unmatched-documents.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';
import { outboxTopicRefundsChain, transactionActorType } from './transaction-actor.ts';

export { depositActorKey, depositActorType } from './deposit-keys.ts';
export const depositsCollection = 'deposits';
/** Chain refunds (the transaction actor's RefundRequested rows and unmatched deposits) share this topic. */
export const chainRefundTopic = outboxTopicRefundsChain;
/** Sweeps of per-transaction deposit addresses to the hot wallet (the watcher role's sweep worker). */
export const chainSweepTopic = 'sweeps.chain';

/** What the deposit actor needs from configuration: the refund floors, and how long a deposit waits for its partner. */
export interface DepositActorDeps {
  limits(): Pick<LimitsConfig, 'chainRefundFloors'>;
  /** Default `unmatchedHoldMsDefault` (72 h). */
  unmatchedHoldMs?(): number;
}

/** The deposit actor's key of a transfer (qualified by the per-transaction address it reached, if any). */
export function depositKeyOf(transfer: ClaimedTransfer): string {
  return depositActorKey(transfer.network, transfer.onChainId, transfer.depositAddress ?? null);
}

/** A transfer into our deposit address (several transfers of one chain transaction combined). */
export interface ClaimedTransfer {
  readonly network: Network;
  readonly onChainId: string;
  readonly asset: CryptoAsset;
  /** Token units. */
  readonly amount: Decimal;
  readonly sender: string;
  readonly memo: string | null;
  /**
   * The transaction's own deposit address the transfer reached (Solana, Celo); null or absent for a
   * shared address (Stellar, and Solana/Celo transactions from before per-transaction addresses).
   */
  readonly depositAddress?: string | null;
}

/** Why a transfer funds no transaction: the watcher's memo checks, or its transaction handed it back (late, too many, dust). */
export type UnmatchedReason = 'memo_missing' | 'memo_unknown' | 'transaction_not_found' | 'wrong_network' | 'not_a_payout' | HandBackReason;

export type DepositCommand =
  | { readonly kind: 'claim'; readonly transactionId: string; readonly transfer: ClaimedTransfer }
  | { readonly kind: 'unmatched'; readonly transfer: ClaimedTransfer; readonly reason: UnmatchedReason }
  /**
   * From the linked transaction: it refused the transfer (see src/actors/deposit-keys.ts).
   * `partnerId`: the transaction's partner (absent from hand-backs written before attribution).
   */
  | { readonly kind: 'handBack'; readonly transactionId: string; readonly reason: HandBackReason; readonly partnerId?: string }
  | { readonly kind: 'refundSettled'; readonly refundOnChainId: string }
  /** The partner's decision: refund to the sender (`POST /unmatched-deposit/{id}/refund`). */
  | { readonly kind: 'refund'; readonly partnerId: string }
  /** The partner's decision: fund `transactionId`, created from a fresh quote (`…/apply`). */
  | { readonly kind: 'apply'; readonly partnerId: string; readonly transactionId: string };

export type { UnmatchedRefund } from '../domain/unmatched-deposits.ts';

export type DepositReply =
  | { readonly result: 'enqueued'; readonly transactionId: string }
  /** `differs`: the same chain transaction was reported with other transfer details (ops look). */
  | { readonly result: 'alreadyProcessed'; readonly transactionId: string; readonly differs: boolean }
  | { readonly result: 'refused'; readonly linkedTo: string | null; readonly reason: 'linked_elsewhere' | 'unmatched' }
  | { readonly result: 'recorded'; readonly refund: 'pending' | 'held' | 'withheld' }
  | { readonly result: 'alreadyRecorded' }
  | { readonly result: 'settled' }
  /** A partner's refund or apply was taken (or had been): the unmatched deposit as it is now. */
  | { readonly result: 'decided'; readonly deposit: JsonValue }
  | {
      readonly result: 'rejected';
      readonly code: 'not_found' | 'not_unmatched' | 'refund_withheld' | 'refund_conflict' | 'unmatched_deposit_not_open' | 'unknown_command' | 'malformed';
    };

export type DepositLink =
  | { readonly kind: 'transaction'; readonly transactionId: string }
  /** `transactionId`: the transaction that handed the transfer back, if any (for operations). */
  | { readonly kind: 'unmatched'; readonly reason: UnmatchedReason; readonly transactionId?: string };

export interface DepositActorState {
  readonly transfer: ClaimedTransfer;
  readonly link: DepositLink;
  readonly claimedAtMs: number;
  /**
   * Unmatched deposits only: progress of their refund (a linked one is refunded by its transaction);
   * 'held': waiting for its partner's decision; 'withheld': below the refund floor, never refunded
   * automatically (src/domain/unmatched-deposits.ts).
   */
  readonly refund: UnmatchedRefund;
  readonly refundOnChainId: string | null;
  /** The floor a withheld refund was below (absent otherwise, and in snapshots from before floors). */
  readonly refundFloor?: Decimal;
  /** The partner the deposit is attributable to (null or absent: none can be named). */
  readonly partnerId?: string | null;
  /** When it became unmatched (absent in snapshots from before; `claimedAtMs` stands in). */
  readonly unmatchedAtMs?: number;
  /** When its partner's hold ends (a `held` deposit only). */
  readonly holdEndsAtMs?: number | null;
  /** The transaction a partner applied it to (it is linked there now). */
  readonly appliedTo?: string | null;
  /** Last change (absent in snapshots from before). */
  readonly updatedAtMs?: number;
  /** An applied deposit: why it had been unmatched, and the transaction it had been meant for. */
  readonly unmatchedReason?: UnmatchedReason;
  readonly unmatchedFrom?: string | null;
}

function sameTransfer(a: ClaimedTransfer, b: ClaimedTransfer): boolean {
  return a.asset === b.asset && compare(a.amount, b.amount) === 0 && a.sender === b.sender;
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`deposit invariant violated: ${what}`);
}

function assertInvariants(state: DepositActorState, key: string): void {
  assert(depositKeyOf(state.transfer) === key, 'the key is the transfer');
  assert(state.transfer.amount.units > 0n, 'a deposit moved a positive amount');
  assert(state.link.kind === 'unmatched' || state.refund === 'none', 'only unmatched deposits are refunded here');
  assert((state.refund === 'settled') === (state.refundOnChainId !== null), 'refund id iff settled');
  assert((state.refund === 'withheld') === (state.refundFloor !== undefined), 'a withheld refund names its floor');
  assert(state.refund !== 'withheld' || isBelowRefundFloor(state.transfer.amount, state.refundFloor ?? null), 'only dust is withheld');
  assert(state.refund !== 'held' || (typeof state.partnerId === 'string' && typeof state.holdEndsAtMs === 'number'), 'a held deposit has a partner and a hold');
  const appliedTo = state.appliedTo ?? null;
  assert(appliedTo === null || (state.link.kind === 'transaction' && state.link.transactionId === appliedTo), 'an applied deposit funds its transaction');
}

/** Whether the transfer was ever unmatched (then it has an `unmatched_deposits` document). */
function everUnmatched(state: DepositActorState): boolean {
  return state.link.kind === 'unmatched' || (state.appliedTo ?? null) !== null;
}

function unmatchedReasonOf(state: DepositActorState): string {
  return state.link.kind === 'unmatched' ? state.link.reason : (state.unmatchedReason ?? 'unmatched');
}

/** The `unmatched_deposits` read model of an unmatched (or applied) deposit. */
export function unmatchedDepositDocument(state: DepositActorState): { [key: string]: JsonValue } {
  const unmatchedAtMs = state.unmatchedAtMs ?? state.claimedAtMs;
  const appliedTo = state.appliedTo ?? null;
  return unmatchedDocument({
    depositKey: depositKeyOf(state.transfer),
    network: state.transfer.network,
    onChainId: state.transfer.onChainId,
    asset: state.transfer.asset,
    amount: state.transfer.amount,
    sender: state.transfer.sender,
    reason: unmatchedReasonOf(state),
    partnerId: state.partnerId ?? null,
    transactionId: state.link.kind === 'unmatched' ? (state.link.transactionId ?? null) : (state.unmatchedFrom ?? null),
    state: unmatchedStateOf(state.refund, appliedTo),
    appliedTo,
    refundOnChainId: state.refundOnChainId,
    refundFloor: state.refundFloor ?? null,
    holdEndsAtMs: state.holdEndsAtMs ?? null,
    createdAtMs: unmatchedAtMs,
    updatedAtMs: state.updatedAtMs ?? unmatchedAtMs,
  });
}

/** The `deposits` read model: what operations see about a transfer. */
export function depositDocument(state: DepositActorState): { [key: string]: JsonValue } {
  return {
    network: state.transfer.network,
    onChainId: state.transfer.onChainId,
    asset: state.transfer.asset,
    amount: toFixedString(state.transfer.amount),
    sender: state.transfer.sender,
    memo: state.transfer.memo,
    status: state.link.kind === 'transaction' ? 'linked' : 'unmatched',
    // Unmatched: the transaction that handed it back (too many deposits, dust), else null.
    transactionId: state.link.transactionId ?? null,
    unmatchedReason: state.link.kind === 'unmatched' ? state.link.reason : null,
    refund: state.refund,
    refundOnChainId: state.refundOnChainId,
    refundFloor: state.refundFloor === undefined ? null : toFixedString(state.refundFloor),
    claimedAtMs: state.claimedAtMs,
    depositAddress: state.transfer.depositAddress ?? null,
    partnerId: state.partnerId ?? null,
    appliedTo: state.appliedTo ?? null,
  };
}

function reply(value: DepositReply): JsonValue {
  return toJsonValue(value);
}

function persisted(state: DepositActorState, key: string, result: DepositReply, extra: Omit<Outcome<DepositActorState>, 'state' | 'reply' | 'readModels'> = {}): Outcome<DepositActorState> {
  assertInvariants(state, key);
  const readModels: ReadModelWrite[] = [{ collection: depositsCollection, id: key, doc: depositDocument(state) }];
  if (everUnmatched(state)) {
    const doc = unmatchedDepositDocument(state);
    readModels.push({ collection: unmatchedDepositsCollection, id: String(doc['id']), doc });
  }
  return { ...extra, state, reply: reply(result), readModels };
}

function claim(state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'claim' }>, key: string, nowMs: number): Outcome<DepositActorState> {
  if (state !== null) {
    if (state.link.kind === 'unmatched') return { reply: reply({ result: 'refused', linkedTo: null, reason: 'unmatched' }) };
    if (state.link.transactionId !== command.transactionId) {
      return { reply: reply({ result: 'refused', linkedTo: state.link.transactionId, reason: 'linked_elsewhere' }) };
    }
    return {
      reply: reply({ result: 'alreadyProcessed', transactionId: command.transactionId, differs: !sameTransfer(state.transfer, command.transfer) }),
      send: [depositDetected(state.transfer, command.transactionId)],
    };
  }
  const { transfer } = command;
  const next: DepositActorState = {
    transfer,
    link: { kind: 'transaction', transactionId: command.transactionId },
    claimedAtMs: nowMs,
    refund: 'none',
    refundOnChainId: null,
  };
  return persisted(next, key, { result: 'enqueued', transactionId: command.transactionId }, {
    send: [depositDetected(transfer, command.transactionId)],
    outbox: sweepRows(transfer, command.transactionId, key, nowMs),
  });
}

/** The sweep of a per-transaction address the transfer reached (none for a shared address). */
function sweepRows(transfer: ClaimedTransfer, transactionId: string, key: string, nowMs: number): OutboxMessage[] {
  const address = transfer.depositAddress ?? null;
  if (address === null) return [];
  const payload = toJsonValue({
    type: 'SweepRequested',
    atMs: nowMs,
    network: transfer.network,
    asset: transfer.asset,
    transactionId,
    address,
    depositKey: key,
  });
  return [{ topic: chainSweepTopic, partitionKey: transactionId, payload }];
}

/** The recorded transfer, told to the transaction it funds (the stored transfer, never a re-report's). */
function depositDetected(transfer: ClaimedTransfer, transactionId: string): CommandToSend {
  const payload = toJsonValue({
    kind: 'DepositDetected',
    onChainId: transfer.onChainId,
    amount: transfer.amount,
    network: transfer.network,
    asset: transfer.asset,
    sender: transfer.sender,
    // Where a refused transfer goes back to (a per-transaction address qualifies the key).
    depositKey: depositKeyOf(transfer),
  });
  return { actorType: transactionActorType, actorKey: transactionId, kind: 'DepositDetected', payload };
}

/** The refund row of an unmatched deposit: the transaction actor's RefundRequested shape, plus where to report settlement. */
function refundRowOf(state: DepositActorState, key: string, nowMs: number): OutboxMessage {
  const { transfer } = state;
  const reason = state.link.kind === 'unmatched' && state.link.reason === 'too_many_deposits' ? 'too_many_deposits' : 'unmatched';
  const payload = toJsonValue({
    transactionId: null,
    partnerId: null,
    direction: 'payout',
    type: 'RefundRequested',
    atMs: nowMs,
    deposit: { rail: 'chain', id: transfer.onChainId, amount: transfer.amount, network: transfer.network, asset: transfer.asset, sender: transfer.sender, receivedAtMs: nowMs },
    reason,
    settleTo: { actorType: depositActorType, actorKey: key },
  });
  return { topic: chainRefundTopic, partitionKey: key, payload };
}

/**
 * The transfer becomes (or is recorded as) unmatched. Below its network's refund floor it is
 * withheld (dust: no refund row); attributable to a partner it is held for that partner's decision
 * until the hold ends; otherwise it is refunded in full to its sender through the chain refund path.
 */
function becomeUnmatched(
  transfer: ClaimedTransfer,
  link: Extract<DepositLink, { kind: 'unmatched' }>,
  claimedAtMs: number,
  partnerId: string | null,
  key: string,
  nowMs: number,
  deps: DepositActorDeps,
): Outcome<DepositActorState> {
  const floor = refundFloorOf(deps.limits().chainRefundFloors, transfer.network);
  const refund = initialRefund(partnerId, floor !== null && isBelowRefundFloor(transfer.amount, floor));
  const holdMs = deps.unmatchedHoldMs?.() ?? unmatchedHoldMsDefault;
  const next: DepositActorState = {
    transfer,
    link,
    claimedAtMs,
    refund,
    refundOnChainId: null,
    ...(refund === 'withheld' && floor !== null ? { refundFloor: floor } : {}),
    partnerId,
    unmatchedAtMs: nowMs,
    holdEndsAtMs: holdEndsAtMs(refund, nowMs, holdMs),
    appliedTo: null,
    updatedAtMs: nowMs,
  };
  const outbox = refund === 'pending' ? [refundRowOf(next, key, nowMs)] : [];
  return persisted(next, key, { result: 'recorded', refund }, outbox.length > 0 ? { outbox } : {});
}

function unmatched(
  state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'unmatched' }>, key: string, nowMs: number, deps: DepositActorDeps,
): Outcome<DepositActorState> {
  if (state !== null) {
    return state.link.kind === 'unmatched'
      ? { reply: reply({ result: 'alreadyRecorded' }) }
      : { reply: reply({ result: 'refused', linkedTo: state.link.transactionId, reason: 'linked_elsewhere' }) };
  }
  return becomeUnmatched(command.transfer, { kind: 'unmatched', reason: command.reason }, nowMs, null, key, nowMs, deps);
}

/** The linked transaction refused the transfer: it funds nothing, so it is treated as unmatched. */
function handBack(
  state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'handBack' }>, key: string, nowMs: number, deps: DepositActorDeps,
): Outcome<DepositActorState> {
  if (state === null) return { reply: reply({ result: 'rejected', code: 'not_found' }) };
  if (state.link.kind === 'unmatched') return { reply: reply({ result: 'alreadyRecorded' }) }; // a repeat
  // Only the transaction the transfer is linked to can give it back.
  if (state.link.transactionId !== command.transactionId) {
    return { reply: reply({ result: 'refused', linkedTo: state.link.transactionId, reason: 'linked_elsewhere' }) };
  }
  const link = { kind: 'unmatched', reason: command.reason, transactionId: command.transactionId } as const;
  return becomeUnmatched(state.transfer, link, state.claimedAtMs, command.partnerId ?? null, key, nowMs, deps);
}

/** What a partner's decision is judged on (src/domain/unmatched-deposits.ts). */
function factsOf(state: DepositActorState): { partnerId: string | null; refund: UnmatchedRefund; appliedTo: string | null } {
  return { partnerId: state.partnerId ?? null, refund: state.refund, appliedTo: state.appliedTo ?? null };
}

/** Starts the refund of a held deposit: one refund row, written in the step that leaves `held`. */
function startRefund(state: DepositActorState, key: string, nowMs: number): Outcome<DepositActorState> {
  const next: DepositActorState = { ...state, refund: 'pending', holdEndsAtMs: null, updatedAtMs: nowMs };
  return persisted(next, key, { result: 'decided', deposit: unmatchedDepositDocument(next) }, { outbox: [refundRowOf(next, key, nowMs)] });
}

/** The partner asks for the refund. A repeat (or a concurrent call applied after) starts nothing. */
function partnerRefund(state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'refund' }>, key: string, nowMs: number): Outcome<DepositActorState> {
  if (state === null || !everUnmatched(state)) return { reply: reply({ result: 'rejected', code: 'not_found' }) };
  const decision = decideRefund(factsOf(state), command.partnerId);
  if (decision.kind === 'refused') return { reply: reply({ result: 'rejected', code: decision.code }) };
  if (decision.kind === 'already') return { reply: reply({ result: 'decided', deposit: unmatchedDepositDocument(state) }) };
  return startRefund(state, key, nowMs);
}

/**
 * The partner applies the deposit to `transactionId` (created from a fresh quote; the edge checked
 * that the amount, network and asset are the quote's): the transfer is linked there now and told to
 * that transaction, as a first claim would. If that transaction refuses it, it hands it back and
 * the deposit is unmatched again (held anew), so it is never lost.
 */
function partnerApply(state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'apply' }>, key: string, nowMs: number): Outcome<DepositActorState> {
  if (state === null || !everUnmatched(state)) return { reply: reply({ result: 'rejected', code: 'not_found' }) };
  const decision = decideApply(factsOf(state), command.partnerId, command.transactionId);
  if (decision.kind === 'refused') return { reply: reply({ result: 'rejected', code: decision.code }) };
  if (decision.kind === 'already') {
    return { reply: reply({ result: 'decided', deposit: unmatchedDepositDocument(state) }), send: [depositDetected(state.transfer, command.transactionId)] };
  }
  const { refundFloor: _floor, ...rest } = state;
  const next: DepositActorState = {
    ...rest,
    link: { kind: 'transaction', transactionId: command.transactionId },
    refund: 'none',
    holdEndsAtMs: null,
    appliedTo: command.transactionId,
    unmatchedReason: unmatchedReasonOf(state) as UnmatchedReason,
    unmatchedFrom: state.link.kind === 'unmatched' ? (state.link.transactionId ?? null) : null,
    updatedAtMs: nowMs,
  };
  return persisted(next, key, { result: 'decided', deposit: unmatchedDepositDocument(next) }, { send: [depositDetected(state.transfer, command.transactionId)] });
}

/** The hold ended with no decision: refunded through the same path as the partner's call. */
function holdEnded(state: DepositActorState | null, key: string, nowMs: number): Outcome<DepositActorState> {
  if (state === null || state.refund !== 'held' || typeof state.holdEndsAtMs !== 'number' || nowMs < state.holdEndsAtMs) return {};
  return startRefund(state, key, nowMs);
}

function refundSettled(state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'refundSettled' }>, key: string, nowMs: number): Outcome<DepositActorState> {
  if (state === null) return { reply: reply({ result: 'rejected', code: 'not_found' }) };
  if (state.link.kind !== 'unmatched') return { reply: reply({ result: 'rejected', code: 'not_unmatched' }) };
  if (state.refund === 'withheld') return { reply: reply({ result: 'rejected', code: 'refund_withheld' }) };
  if (state.refund === 'settled') {
    return { reply: reply(state.refundOnChainId === command.refundOnChainId ? { result: 'settled' } : { result: 'rejected', code: 'refund_conflict' }) };
  }
  // Only a refund on its way settles (a held deposit has no refund row yet).
  if (state.refund !== 'pending') return { reply: reply({ result: 'rejected', code: 'not_unmatched' }) };
  return persisted({ ...state, refund: 'settled', refundOnChainId: command.refundOnChainId, updatedAtMs: nowMs }, key, { result: 'settled' });
}

/** A deposit actor's commands, by kind (the payload without its kind: the envelope names it). */
export type DepositCommands = { readonly [K in DepositCommand['kind']]: Omit<Extract<DepositCommand, { kind: K }>, 'kind'> } & {
  /** The runtime's: a held deposit's hold ended (`timerAtMs`). */
  readonly timer: JsonValue;
};

const transferSchema: z.ZodType<ClaimedTransfer> = z.object({
  network: networkSchema,
  onChainId: idText,
  asset: cryptoAssetSchema,
  amount: amountSchema.refine((amount) => amount.units > 0n, { message: 'expected a positive amount' }),
  sender: idText,
  // Absent in a command that had none (toJsonValue drops an undefined memo).
  memo: z.string().nullable().default(null),
  depositAddress: z.string().nullable().exactOptional(),
});

const unmatchedReasons = ['memo_missing', 'memo_unknown', 'transaction_not_found', 'wrong_network', 'not_a_payout', ...handBackReasons] as const;

export const depositCommands: CommandMap<DepositCommands> = {
  claim: decoderOf(z.object({ transactionId: idText, transfer: transferSchema })),
  unmatched: decoderOf(z.object({ transfer: transferSchema, reason: z.enum(unmatchedReasons) })),
  [depositHandBackKind]: decoderOf(z.object({ transactionId: idText, reason: z.enum(handBackReasons), partnerId: idText.exactOptional() })),
  refundSettled: decoderOf(z.object({ refundOnChainId: idText })),
  refund: decoderOf(z.object({ partnerId: idText })),
  apply: decoderOf(z.object({ partnerId: idText, transactionId: idText })),
  [timerCommandKind]: ignoredPayload,
};

/** A transfer is this actor's only if it names its key (the shape is checked on arrival). */
function ownTransfer(transfer: ClaimedTransfer, key: string): boolean {
  return depositKeyOf(transfer) === key;
}

export function depositBehavior(deps: DepositActorDeps): ActorBehavior<DepositActorState, DepositCommands> {
  return {
    type: depositActorType,
    encode: (state) => toJsonValue(state),
    decode: (json) => fromJsonValue<DepositActorState>(json),
    commands: depositCommands,
    timerAtMs: (state) => (state.refund === 'held' ? (state.holdEndsAtMs ?? null) : null),
    handle(state, envelope, ctx) {
      const key = envelope.actorKey;
      const malformed = { reply: reply({ result: 'rejected', code: 'malformed' }) };
      switch (envelope.kind) {
        case 'claim':
          return ownTransfer(envelope.payload.transfer, key) ? claim(state, { ...envelope.payload, kind: 'claim' }, key, ctx.nowMs) : malformed;
        case 'unmatched':
          return ownTransfer(envelope.payload.transfer, key) ? unmatched(state, { ...envelope.payload, kind: 'unmatched' }, key, ctx.nowMs, deps) : malformed;
        case 'handBack':
          return handBack(state, { ...envelope.payload, kind: 'handBack' }, key, ctx.nowMs, deps);
        case 'refundSettled':
          return refundSettled(state, { ...envelope.payload, kind: 'refundSettled' }, key, ctx.nowMs);
        case 'refund':
          return partnerRefund(state, { ...envelope.payload, kind: 'refund' }, key, ctx.nowMs);
        case 'apply':
          return partnerApply(state, { ...envelope.payload, kind: 'apply' }, key, ctx.nowMs);
        case timerCommandKind:
          return holdEnded(state, key, ctx.nowMs);
      }
    },
  };
}
