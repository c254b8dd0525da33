// Deposit intake: how a chain transfer becomes a fact of one transaction. Four doors lead here —
// the Stellar watcher (memo payments, pushed), the deposit poller (Solana/Celo transfers found at a
// transaction's own address), POST /payments/notify (Solana/Celo, reported by the partner) and the
// ops reconcile — and all of them end in one deposit actor claim, which links the transfer to at
// most one transaction and forwards DepositDetected (src/actors/deposit-actor.ts). Whether the
// deposit is on time and of the right amount is the transaction's decision, not ours.
//
// Binding (Solana, Celo; src/domain/deposit-binding.ts): a transfer counts for a transaction only
// if it reached the address frozen in that transaction's payment_context. A transaction with its
// own address is checked with `verifyInto(hash, its address)`; one from before per-transaction
// addresses (shared address) with the shared-address check, and a transfer older than the
// transaction (at second granularity) is refused.
//
// Checks before a claim, in order: the request's shape (network, id formats), the transaction
// (exists, is the partner's, is a payout, is on this network), then the chain (verify, binding).
// Unexpected errors propagate to the edge from notify (a 500) and become `failed` in reconcile, logged.
import type { Logger } from 'pino';
import { cryptoAssets, isOneOf, networks, type Network } from '../domain/assets.ts';
import { add, decimalFromExactString, type Decimal } from '../domain/money.ts';
import { parseUuid } from '../domain/ids.ts';
import { transactionIdFromReference } from '../domain/reference.ts';
import { bindingRefusal, depositBinding, type DepositBinding } from '../domain/deposit-binding.ts';
import {
  depositActorType,
  depositKeyOf,
  depositsCollection,
  type ClaimedTransfer,
  type DepositReply,
  type UnmatchedReason,
} from '../actors/deposit-actor.ts';
import { toJsonValue } from '../actors/state-codec.ts';
import { transactionsCollection } from '../actors/transaction-actor.ts';
import type { JsonValue } from '../actors/envelope.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import type { DepositVerifier, NotifyResult, ReconcileResult, Reconciler } from '../ports/ports.ts';
import type { ChainAdapter, ObservedTransfer, VerifyResult } from './chains.ts';
import { isOnChainIdOf, normalizeOnChainId } from './config.ts';
import { canFund } from './notify-match.ts';
import type { PerTransactionPorts } from './payment-context.ts';

/** The part of ActorClient the intake needs (tests may pass any implementation). */
export interface ActorAsker {
  ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, options?: { readonly commandId?: string; readonly timeoutMs?: number }): Promise<Reply>;
}

export interface DepositIntakeOptions {
  readonly store: SnapshotStore;
  readonly adapters: ReadonlyMap<Network, ChainAdapter>;
  /** Per-transaction deposit addresses by network (Solana, Celo); a network without one binds by its shared address. */
  readonly perTransaction?: PerTransactionPorts;
  readonly actors: ActorAsker;
  readonly log: Logger;
  readonly askTimeoutMs?: number;
}

/** What the transactions read model tells the intake about a transaction. */
interface TransactionView {
  readonly id: string;
  readonly partnerId: string;
  readonly direction: string;
  readonly status: string;
  readonly network: string;
  readonly createdAtMs: number;
  /** payment_context.depositAddress as frozen at acceptance; null in records written before it was kept. */
  readonly depositAddress: string | null;
}

/** What the poller's claim of a transfer found at a transaction's own address came to. */
export type AddressClaimOutcome = 'enqueued' | 'alreadyProcessed' | 'refused' | 'invalid' | 'not_found' | 'not_own_address';

const onChainIdLengthMax = 128;
/** Deposits of one chain transaction looked at by a reconcile. */
const knownDepositsMax = 16;
const reasonLengthMax = 200;

function viewOf(id: string, doc: JsonObject): TransactionView {
  const quote = doc.quote;
  const network = quote !== null && typeof quote === 'object' && !Array.isArray(quote) ? quote.network : undefined;
  return {
    id,
    partnerId: String(doc.partnerId),
    direction: String(doc.direction),
    status: String(doc.status),
    network: typeof network === 'string' ? network : '',
    createdAtMs: typeof doc.createdAtMs === 'number' ? doc.createdAtMs : 0,
    depositAddress: typeof doc.depositAddress === 'string' && doc.depositAddress !== '' ? doc.depositAddress : null,
  };
}

function sameAddress(network: Network, a: string, b: string): boolean {
  return network === 'CELO' ? a.toLowerCase() === b.toLowerCase() : a === b;
}

type Verified =
  | { readonly kind: 'found'; readonly transfer: ClaimedTransfer }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'invalid'; readonly reason: string };

const predatesReason = 'The transfer was made before this transaction was created, so it cannot fund it';

/** One chain transaction's transfers into our address as one deposit (same asset and sender). */
export function combineTransfers(
  network: Network,
  onChainId: string,
  transfers: readonly ObservedTransfer[],
): { ok: true; transfer: ClaimedTransfer } | { ok: false; reason: string } {
  const first = transfers[0];
  if (first === undefined) return { ok: false, reason: 'The transaction moves no funds to the deposit address' };
  let amount: Decimal = first.amount;
  for (const transfer of transfers.slice(1)) {
    if (transfer.asset !== first.asset || transfer.sender !== first.sender) {
      return { ok: false, reason: 'The transaction holds transfers of several assets or senders; contact support' };
    }
    amount = add(amount, transfer.amount);
  }
  if (amount.units <= 0n) return { ok: false, reason: 'The transaction moves no funds to the deposit address' };
  return { ok: true, transfer: { network, onChainId, asset: first.asset, amount, sender: first.sender, memo: first.memo } };
}

function capped(reason: string): string {
  return reason.length > reasonLengthMax ? `${reason.slice(0, reasonLengthMax - 1)}…` : reason;
}

type LinkOutcome =
  | { readonly kind: 'linked'; readonly reply: DepositReply & { result: 'enqueued' | 'alreadyProcessed' } }
  | { readonly kind: 'refused'; readonly linkedTo: string | null; readonly reason: 'linked_elsewhere' | 'unmatched' };

export class DepositIntake implements DepositVerifier, Reconciler {
  private readonly askTimeoutMs: number;

  constructor(private readonly options: DepositIntakeOptions) {
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
  }

  private async transaction(transactionId: string): Promise<TransactionView | null> {
    const doc = await this.options.store.get(transactionsCollection, transactionId);
    return doc === null ? null : viewOf(transactionId, doc);
  }

  private async claim(transactionId: string, transfer: ClaimedTransfer): Promise<LinkOutcome> {
    const reply = await this.options.actors.ask<DepositReply>(
      depositActorType,
      depositKeyOf(transfer),
      'claim',
      toJsonValue({ transactionId, transfer }),
      { timeoutMs: this.askTimeoutMs },
    );
    if (reply.result === 'enqueued' || reply.result === 'alreadyProcessed') {
      if (reply.result === 'alreadyProcessed' && reply.differs) {
        this.options.log.error({ network: transfer.network, onChainId: transfer.onChainId, transactionId }, 'a chain transaction was reported again with other transfer details; check it by hand');
      }
      return { kind: 'linked', reply };
    }
    if (reply.result === 'refused') return { kind: 'refused', linkedTo: reply.linkedTo, reason: reply.reason };
    throw new Error(`deposit actor answered ${reply.result} to a claim`);
  }

  private async recordUnmatched(transfer: ClaimedTransfer, reason: UnmatchedReason): Promise<void> {
    const reply = await this.options.actors.ask<DepositReply>(
      depositActorType,
      depositKeyOf(transfer),
      'unmatched',
      toJsonValue({ transfer, reason }),
      { timeoutMs: this.askTimeoutMs },
    );
    if (reply.result === 'rejected') throw new Error(`deposit actor rejected an unmatched deposit: ${reply.code}`);
    const dust = reply.result === 'recorded' && reply.refund === 'withheld';
    this.options.log.warn(
      { network: transfer.network, onChainId: transfer.onChainId, reason, result: reply.result },
      dust ? 'unmatched deposit below the refund floor; recorded as dust, not refunded' : 'unmatched deposit; it is refunded to its sender',
    );
  }

  /**
   * A transfer pushed by a watcher (Stellar memo payments). Resolves once the transfer is linked
   * or recorded as unmatched; throws when that could not be made durable (the watcher retries it).
   */
  async onWatchedTransfer(observed: ObservedTransfer): Promise<void> {
    const combined = combineTransfers(observed.network, observed.onChainId, [observed]);
    if (!combined.ok) return; // nothing moved: nothing to link or refund
    const transfer = combined.transfer;
    const transactionId = transactionIdFromReference(observed.memo);
    const unmatchedReason = await this.unmatchedReason(observed, transactionId);
    if (unmatchedReason !== null || transactionId === null) {
      await this.recordUnmatched(transfer, unmatchedReason ?? 'memo_unknown');
      return;
    }
    const outcome = await this.claim(transactionId, transfer);
    if (outcome.kind === 'refused') {
      this.options.log.info({ network: transfer.network, onChainId: transfer.onChainId, reason: outcome.reason }, 'watched transfer already settled elsewhere');
    }
  }

  private async unmatchedReason(observed: ObservedTransfer, transactionId: string | null): Promise<UnmatchedReason | null> {
    if (observed.memo === null || observed.memo === '') return 'memo_missing';
    if (transactionId === null) return 'memo_unknown';
    const transaction = await this.transaction(transactionId);
    if (transaction === null) return 'transaction_not_found';
    if (transaction.direction !== 'payout') return 'not_a_payout';
    if (transaction.network !== observed.network) return 'wrong_network';
    return null;
  }

  /** POST /payments/notify (Solana, Celo). */
  async notify(request: { readonly partnerId: string; readonly blockchain: Network; readonly onChainTx: string; readonly transactionId: string }): Promise<NotifyResult> {
    const network = request.blockchain;
    if (!isOneOf(networks, network)) return { result: 'invalid', reason: 'blockchain must be SOLANA or CELO' };
    if (network === 'STELLAR') {
      return { result: 'invalid', reason: 'Stellar deposits are detected automatically from the memo; do not notify them' };
    }
    const transactionId = parseUuid(request.transactionId);
    if (transactionId === null) return { result: 'invalid', reason: 'transaction_id must be a transaction UUID' };
    const onChainId = this.onChainIdOf(network, request.onChainTx);
    if (onChainId === null) return { result: 'invalid', reason: `on_chain_tx is not a valid ${network === 'SOLANA' ? 'Solana signature' : 'Celo transaction hash'}` };
    const doc = await this.options.store.get(transactionsCollection, transactionId);
    const transaction = doc === null ? null : viewOf(transactionId, doc);
    if (transaction === null || transaction.partnerId !== request.partnerId) return { result: 'not_found', reason: 'Transaction not found' };
    const mismatch = this.transactionMismatch(transaction, network);
    if (mismatch !== null) return { result: 'invalid', reason: mismatch };
    const verified = await this.verifyFor(transaction, network, onChainId);
    if (verified.kind === 'not_found') return { result: 'not_found', reason: 'The transfer was not found on chain (or is not final yet); try again shortly' };
    if (verified.kind === 'invalid') return { result: 'invalid', reason: verified.reason };
    const outcome = await this.claim(transactionId, verified.transfer);
    if (outcome.kind === 'refused') return { result: 'invalid', reason: 'This transfer is already linked to another transaction' };
    // Judged on the transaction as read before the claim (the notify budget, src/edge/notify-budget.ts).
    return doc !== null && canFund(doc, verified.transfer) ? { result: 'enqueued' } : { result: 'enqueued', mismatched: true };
  }

  /**
   * A transfer the deposit poller found at a transaction's own address (nobody notified it): the
   * same checks and the same claim as notify. Only a transaction with its own address is polled.
   */
  async claimAtOwnAddress(transactionId: string, network: 'SOLANA' | 'CELO', onChainTx: string): Promise<AddressClaimOutcome> {
    const onChainId = this.onChainIdOf(network, onChainTx);
    const transaction = await this.transaction(transactionId);
    if (onChainId === null || transaction === null || this.transactionMismatch(transaction, network) !== null) return 'invalid';
    if (this.bindingOf(transaction, network).kind !== 'own') return 'not_own_address';
    const verified = await this.verifyFor(transaction, network, onChainId);
    if (verified.kind !== 'found') return verified.kind;
    const outcome = await this.claim(transactionId, verified.transfer);
    return outcome.kind === 'refused' ? 'refused' : outcome.reply.result;
  }

  /** How a transfer may fund this transaction (see the header). */
  private bindingOf(transaction: TransactionView, network: Network): DepositBinding {
    const port = this.options.perTransaction?.get(network);
    const ownAddress = port === undefined ? null : port.addressFor(transaction.id);
    return depositBinding(transaction.depositAddress, ownAddress, transaction.createdAtMs, (a, b) => sameAddress(network, a, b));
  }

  /** The chain's transfers of `onChainId` that may fund `transaction`, as one deposit. */
  private async verifyFor(transaction: TransactionView, network: Network, onChainId: string): Promise<Verified> {
    const binding = this.bindingOf(transaction, network);
    const port = this.options.perTransaction?.get(network);
    let result: VerifyResult;
    if (binding.kind === 'own' && port !== undefined) {
      result = await port.verifyInto(onChainId, binding.address);
    } else if (binding.kind === 'shared' && binding.address !== null && port !== undefined) {
      // The exact shared address frozen at acceptance (a rotated-out one included).
      result = await port.verifyInto(onChainId, binding.address);
    } else {
      const adapter = this.options.adapters.get(network);
      if (adapter === undefined) return { kind: 'invalid', reason: `${network} is not available` };
      result = await adapter.verify(onChainId);
    }
    if (result.status === 'not_found') return { kind: 'not_found' };
    if (result.status === 'invalid') return { kind: 'invalid', reason: capped(result.reason) };
    const ours = result.transfers.filter((transfer) => transfer.network === network && transfer.onChainId === onChainId);
    const chainTimeMs = Math.min(...ours.map((transfer) => transfer.observedAtMs));
    if (ours.length > 0 && bindingRefusal(binding, chainTimeMs) !== null) return { kind: 'invalid', reason: predatesReason };
    const combined = combineTransfers(network, onChainId, ours);
    if (!combined.ok) return { kind: 'invalid', reason: combined.reason };
    const depositAddress = binding.kind === 'own' ? binding.address : null;
    return { kind: 'found', transfer: depositAddress === null ? combined.transfer : { ...combined.transfer, depositAddress } };
  }

  private onChainIdOf(network: Network, text: string): string | null {
    if (typeof text !== 'string' || text.length === 0 || text.length > onChainIdLengthMax) return null;
    const normalized = normalizeOnChainId(network, text.trim());
    return isOnChainIdOf(network, normalized) ? normalized : null;
  }

  private transactionMismatch(transaction: TransactionView, network: Network): string | null {
    if (transaction.direction !== 'payout') return 'The transaction is not a payout; it has no on-chain deposit';
    if (transaction.network !== network) return `The transaction is funded on ${transaction.network}, not ${network}`;
    return null;
  }

  private async verify(
    network: Network,
    onChainId: string,
  ): Promise<{ kind: 'found'; transfer: ClaimedTransfer } | { kind: 'not_found' } | { kind: 'invalid'; reason: string }> {
    const adapter = this.options.adapters.get(network);
    if (adapter === undefined) return { kind: 'invalid', reason: `${network} is not available` };
    const result = await adapter.verify(onChainId);
    if (result.status === 'not_found') return { kind: 'not_found' };
    if (result.status === 'invalid') return { kind: 'invalid', reason: capped(result.reason) };
    const ours = result.transfers.filter((transfer) => transfer.network === network && transfer.onChainId === onChainId);
    const combined = combineTransfers(network, onChainId, ours);
    return combined.ok ? { kind: 'found', transfer: combined.transfer } : { kind: 'invalid', reason: combined.reason };
  }

  /** POST /ops/transactions/reconcile-hash and the admin service's reconcile. */
  async reconcile(request: { readonly blockchain: Network; readonly onChainTx: string; readonly transactionId: string | null }): Promise<ReconcileResult> {
    try {
      return await this.reconcileUnchecked(request);
    } catch (error) {
      this.options.log.error({ network: request.blockchain, error: error instanceof Error ? error.message : String(error) }, 'reconcile failed unexpectedly');
      return { result: 'failed', transactionId: request.transactionId, transactionStatus: null, reason: 'Reconciliation failed unexpectedly; try again later' };
    }
  }

  private async reconcileUnchecked(request: { readonly blockchain: Network; readonly onChainTx: string; readonly transactionId: string | null }): Promise<ReconcileResult> {
    const answer = async (result: ReconcileResult['result'], transactionId: string | null, reason: string | null): Promise<ReconcileResult> => ({
      result,
      transactionId,
      transactionStatus: transactionId === null ? null : ((await this.transaction(transactionId))?.status ?? null),
      reason,
    });
    const network = request.blockchain;
    if (!isOneOf(networks, network)) return answer('invalid', null, 'blockchain must be STELLAR, SOLANA or CELO');
    const onChainId = this.onChainIdOf(network, request.onChainTx);
    if (onChainId === null) return answer('invalid', null, `on_chain_tx is not a valid ${network} transaction id`);
    let givenId: string | null = null;
    if (request.transactionId !== null) {
      givenId = parseUuid(request.transactionId);
      if (givenId === null) return answer('invalid', null, 'transaction_id must be a transaction UUID');
    }

    // What the chain transaction is linked to already: one deposit for a shared address (Stellar;
    // Solana/Celo before per-transaction addresses), one per address it paid otherwise.
    const known = await this.knownDeposits(network, onChainId);
    const linkedToGiven = givenId === null ? undefined : known.find((doc) => doc.transactionId === givenId);
    const atSharedAddress = known.find((doc) => typeof doc.depositAddress !== 'string');
    const onlyOne = known.length === 1 ? known[0] : undefined;
    const settled = linkedToGiven ?? atSharedAddress ?? (givenId === null ? onlyOne : undefined);
    if (settled !== undefined) return this.alreadyKnown(settled, givenId, answer);
    if (givenId === null && known.length > 1) {
      return answer('unresolved', null, 'The transfer funds several transactions (one per deposit address); give transaction_id');
    }
    if (network === 'STELLAR') return this.reconcileStellar(onChainId, givenId, answer);
    if (givenId === null) return answer('unresolved', null, 'transaction_id is required for a SOLANA or CELO hash that is not linked yet');

    // Solana/Celo: the transaction says which address the transfer must have reached.
    const transaction = await this.transaction(givenId);
    if (transaction === null) return answer('notFound', givenId, 'No such transaction');
    const mismatch = this.transactionMismatch(transaction, network);
    if (mismatch !== null) return answer('invalid', givenId, mismatch);
    const verified = await this.verifyFor(transaction, network, onChainId);
    if (verified.kind === 'not_found') return answer('notFound', givenId, 'The hash was not found on chain (or is not final yet)');
    if (verified.kind === 'invalid') return answer('invalid', givenId, verified.reason);
    return this.claimForReconcile(givenId, verified.transfer, answer);
  }

  /** The `deposits` documents of one chain transaction (bounded: a batch paying many addresses is rare). */
  private async knownDeposits(network: Network, onChainId: string): Promise<JsonObject[]> {
    const page = await this.options.store.list(depositsCollection, { where: { network, onChainId }, orderBy: 'claimedAtMs', limit: knownDepositsMax });
    return page.items.map((item) => item.doc);
  }

  private async reconcileStellar(
    onChainId: string,
    givenId: string | null,
    answer: (result: ReconcileResult['result'], transactionId: string | null, reason: string | null) => Promise<ReconcileResult>,
  ): Promise<ReconcileResult> {
    const verified = await this.verify('STELLAR', onChainId);
    if (verified.kind === 'not_found') return answer('notFound', givenId, 'The hash was not found on chain (or is not final yet)');
    if (verified.kind === 'invalid') return answer('invalid', givenId, verified.reason);
    const fromMemo = transactionIdFromReference(verified.transfer.memo);
    if (fromMemo === null) return answer('unresolved', givenId, 'The memo does not name a transaction; the watcher refunds such deposits');
    if (givenId !== null && givenId !== fromMemo) return answer('invalid', givenId, 'The memo names another transaction');
    const transaction = await this.transaction(fromMemo);
    if (transaction === null) return answer('unresolved', null, 'The memo does not name an existing transaction; the watcher refunds such deposits');
    const mismatch = this.transactionMismatch(transaction, 'STELLAR');
    if (mismatch !== null) return answer('invalid', fromMemo, mismatch);
    return this.claimForReconcile(fromMemo, verified.transfer, answer);
  }

  private async claimForReconcile(
    transactionId: string,
    transfer: ClaimedTransfer,
    answer: (result: ReconcileResult['result'], transactionId: string | null, reason: string | null) => Promise<ReconcileResult>,
  ): Promise<ReconcileResult> {
    const outcome = await this.claim(transactionId, transfer);
    if (outcome.kind === 'refused') {
      return answer('invalid', transactionId, outcome.linkedTo === null ? 'The transfer is an unmatched deposit being refunded' : `The transfer is linked to transaction ${outcome.linkedTo}`);
    }
    return answer(outcome.reply.result, transactionId, null);
  }

  private async alreadyKnown(
    known: JsonObject,
    givenId: string | null,
    answer: (result: ReconcileResult['result'], transactionId: string | null, reason: string | null) => Promise<ReconcileResult>,
  ): Promise<ReconcileResult> {
    if (known.status !== 'linked' || typeof known.transactionId !== 'string') {
      const refund = known.refund === 'settled'
        ? `refunded (${String(known.refundOnChainId)})`
        : known.refund === 'withheld' ? 'not refunded: below the refund floor' : 'refund pending';
      return answer('unresolved', givenId, `Recorded as an unmatched deposit (${String(known.unmatchedReason)}); ${refund}`);
    }
    if (givenId !== null && givenId !== known.transactionId) {
      return answer('invalid', givenId, `The transfer is linked to transaction ${known.transactionId}`);
    }
    // Claimed again: the deposit actor re-tells the transaction (a no-op where it already knows the
    // deposit), which repairs a DepositDetected lost on its way. This is the operator's tool for it.
    const transfer = recordedTransfer(known);
    if (transfer !== null) await this.claim(known.transactionId, transfer);
    return answer('alreadyProcessed', known.transactionId, null);
  }
}

/** The transfer a `deposits` document records (null if the document is not one we wrote). */
function recordedTransfer(doc: JsonObject): ClaimedTransfer | null {
  const { network, onChainId, asset, amount, sender, memo, depositAddress } = doc;
  if (!isOneOf(networks, network) || !isOneOf(cryptoAssets, asset)) return null;
  if (typeof onChainId !== 'string' || typeof amount !== 'string' || typeof sender !== 'string') return null;
  if (memo !== null && typeof memo !== 'string') return null;
  const transfer: ClaimedTransfer = { network, onChainId, asset, amount: decimalFromExactString(amount), sender, memo };
  return typeof depositAddress === 'string' ? { ...transfer, depositAddress } : transfer;
}
