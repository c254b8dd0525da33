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
// - a linked transfer its transaction refused to take (`handBack`: beyond the transaction's stray
//   slots, or dust) becomes unmatched the same way, remembering that transaction for operations;
// - an unmatched deposit below its network's refund floor (src/domain/refund-floor.ts) is not
//   refunded: it is recorded with `refund: 'withheld'` (dust), and no refund row is written.
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
import { depositActorKey, depositActorType, depositHandBackKind, handBackReasons, type HandBackReason } from './deposit-keys.ts';
import { z } from 'zod';
import { amountSchema, cryptoAssetSchema, decoderOf, idText, networkSchema } from './commands.ts';
import type { ActorBehavior, CommandMap, CommandToSend, JsonValue, OutboxMessage, Outcome, ReadModelWrite } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';
import { outboxTopicRefundsChain, transactionActorType } from './transaction-actor.ts';

export { depositActorKey, depositActorType } from './deposit-keys.ts';
export const depositsCollection = 'deposits';
/** Chain refunds (the transaction actor's RefundRequested rows and unmatched deposits) share this topic. */
export const chainRefundTopic = outboxTopicRefundsChain;
/** Sweeps of per-transaction deposit addresses to the hot wallet (the watcher role's sweep worker). */
export const chainSweepTopic = 'sweeps.chain';

/** What the deposit actor needs from configuration: the refund floors. */
export interface DepositActorDeps {
  limits(): Pick<LimitsConfig, 'chainRefundFloors'>;
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

/** Why a transfer funds no transaction: the watcher's memo checks, or its transaction handed it back. */
export type UnmatchedReason = 'memo_missing' | 'memo_unknown' | 'transaction_not_found' | 'wrong_network' | 'not_a_payout' | HandBackReason;

export type DepositCommand =
  | { readonly kind: 'claim'; readonly transactionId: string; readonly transfer: ClaimedTransfer }
  | { readonly kind: 'unmatched'; readonly transfer: ClaimedTransfer; readonly reason: UnmatchedReason }
  /** From the linked transaction: it refused the transfer (see src/actors/deposit-keys.ts). */
  | { readonly kind: 'handBack'; readonly transactionId: string; readonly reason: HandBackReason }
  | { readonly kind: 'refundSettled'; readonly refundOnChainId: string };

/** An unmatched deposit's refund: on its way, or withheld (dust below the refund floor). */
export type UnmatchedRefund = 'pending' | 'withheld';

export type DepositReply =
  | { readonly result: 'enqueued'; readonly transactionId: string }
  /** `differs`: the same chain transaction was reported with other transfer details (ops look). */
  | { readonly result: 'alreadyProcessed'; readonly transactionId: string; readonly differs: boolean }
  | { readonly result: 'refused'; readonly linkedTo: string | null; readonly reason: 'linked_elsewhere' | 'unmatched' }
  | { readonly result: 'recorded'; readonly refund: UnmatchedRefund }
  | { readonly result: 'alreadyRecorded' }
  | { readonly result: 'settled' }
  | { readonly result: 'rejected'; readonly code: 'not_found' | 'not_unmatched' | 'refund_withheld' | 'refund_conflict' | 'unknown_command' | 'malformed' };

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
   * 'withheld': below the refund floor, never refunded automatically.
   */
  readonly refund: 'none' | 'pending' | 'settled' | 'withheld';
  readonly refundOnChainId: string | null;
  /** The floor a withheld refund was below (absent otherwise, and in snapshots from before floors). */
  readonly refundFloor?: Decimal;
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
  };
}

function reply(value: DepositReply): JsonValue {
  return toJsonValue(value);
}

function persisted(state: DepositActorState, key: string, result: DepositReply, extra: Omit<Outcome<DepositActorState>, 'state' | 'reply' | 'readModels'> = {}): Outcome<DepositActorState> {
  assertInvariants(state, key);
  const readModels: ReadModelWrite[] = [{ collection: depositsCollection, id: key, doc: depositDocument(state) }];
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

/**
 * The transfer becomes (or is recorded as) unmatched: refunded in full to its sender through the
 * chain refund path, unless it is below its network's refund floor (then withheld: no refund row).
 */
function becomeUnmatched(
  transfer: ClaimedTransfer, link: Extract<DepositLink, { kind: 'unmatched' }>, claimedAtMs: number, key: string, nowMs: number, deps: DepositActorDeps,
): Outcome<DepositActorState> {
  const floor = refundFloorOf(deps.limits().chainRefundFloors, transfer.network);
  if (floor !== null && isBelowRefundFloor(transfer.amount, floor)) {
    const dust: DepositActorState = { transfer, link, claimedAtMs, refund: 'withheld', refundOnChainId: null, refundFloor: floor };
    return persisted(dust, key, { result: 'recorded', refund: 'withheld' });
  }
  const next: DepositActorState = { transfer, link, claimedAtMs, refund: 'pending', refundOnChainId: null };
  // Same shape as the transaction actor's RefundRequested rows, plus where to report settlement.
  const refundRow = toJsonValue({
    transactionId: null,
    partnerId: null,
    direction: 'payout',
    type: 'RefundRequested',
    atMs: nowMs,
    deposit: { rail: 'chain', id: transfer.onChainId, amount: transfer.amount, network: transfer.network, asset: transfer.asset, sender: transfer.sender, receivedAtMs: nowMs },
    reason: link.reason === 'too_many_deposits' ? 'too_many_deposits' : 'unmatched',
    settleTo: { actorType: depositActorType, actorKey: key },
  });
  const outbox: OutboxMessage[] = [{ topic: chainRefundTopic, partitionKey: key, payload: refundRow }];
  return persisted(next, key, { result: 'recorded', refund: 'pending' }, { outbox });
}

function unmatched(
  state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'unmatched' }>, key: string, nowMs: number, deps: DepositActorDeps,
): Outcome<DepositActorState> {
  if (state !== null) {
    return state.link.kind === 'unmatched'
      ? { reply: reply({ result: 'alreadyRecorded' }) }
      : { reply: reply({ result: 'refused', linkedTo: state.link.transactionId, reason: 'linked_elsewhere' }) };
  }
  return becomeUnmatched(command.transfer, { kind: 'unmatched', reason: command.reason }, nowMs, key, nowMs, deps);
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
  return becomeUnmatched(state.transfer, link, state.claimedAtMs, key, nowMs, deps);
}

function refundSettled(state: DepositActorState | null, command: Extract<DepositCommand, { kind: 'refundSettled' }>, key: string): Outcome<DepositActorState> {
  if (state === null) return { reply: reply({ result: 'rejected', code: 'not_found' }) };
  if (state.link.kind !== 'unmatched') return { reply: reply({ result: 'rejected', code: 'not_unmatched' }) };
  if (state.refund === 'withheld') return { reply: reply({ result: 'rejected', code: 'refund_withheld' }) };
  if (state.refund === 'settled') {
    return { reply: reply(state.refundOnChainId === command.refundOnChainId ? { result: 'settled' } : { result: 'rejected', code: 'refund_conflict' }) };
  }
  return persisted({ ...state, refund: 'settled', refundOnChainId: command.refundOnChainId }, key, { result: 'settled' });
}

/** A deposit actor's commands, by kind (the payload without its kind: the envelope names it). */
export type DepositCommands = { readonly [K in DepositCommand['kind']]: Omit<Extract<DepositCommand, { kind: K }>, 'kind'> };

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
  [depositHandBackKind]: decoderOf(z.object({ transactionId: idText, reason: z.enum(handBackReasons) })),
  refundSettled: decoderOf(z.object({ refundOnChainId: idText })),
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
          return refundSettled(state, { ...envelope.payload, kind: 'refundSettled' }, key);
      }
    },
  };
}
