// What a transaction's events mean outside it: the partner's webhooks and the limit counters.
import type { TransactionEvent, TransactionState, TransactionStatus } from './types.ts';

// ---------------------------------------------------------------------------------------------
// Webhooks and limit effects

export type WebhookEventName = 'transaction.created' | 'transaction.updated';

/** Exactly the spec's webhook data object; `bankCode` and `origin` do not exist here. */
export interface WebhookData {
  readonly id: string;
  readonly status: TransactionStatus;
  readonly quoteId: string;
  readonly accountNumber: string | null;
  readonly onChainId: string | null;
  readonly refundOnChainId: string | null;
  readonly taxId: string | null;
  readonly externalId: string | null;
  readonly partnerUserId: string;
}

export interface Webhook {
  readonly event: WebhookEventName;
  readonly data: WebhookData;
}

export function webhookData(state: TransactionState): WebhookData {
  return {
    id: state.id,
    status: state.status,
    quoteId: state.quote.id,
    accountNumber: state.accountNumber,
    onChainId: state.onChainId,
    refundOnChainId: state.refundOnChainId,
    taxId: state.taxId,
    externalId: state.externalId,
    partnerUserId: state.userId,
  };
}

/**
 * The webhooks one event causes, built from the state right after that event (so a decision with
 * several events yields their webhooks in order, each with the data of its moment):
 * - Created → transaction.created.
 * - The transaction's own on-chain deposit detected (matched, wrong amount or late) →
 *   transaction.created again, carrying its onChainId; then transaction.updated if the status
 *   changed. PIX payments are not on-chain: status change only.
 * - Every status change → transaction.updated (refundOnChainId is null at that moment).
 * - The primary refund settled → transaction.updated, same status, refundOnChainId set.
 * - Stray deposits and their refunds, and effect requests → nothing.
 */
export function webhooksFor(event: TransactionEvent, stateAfter: TransactionState): Webhook[] {
  const data = webhookData(stateAfter);
  const created: Webhook = { event: 'transaction.created', data };
  const updated: Webhook = { event: 'transaction.updated', data };
  const onChain = 'deposit' in event && event.deposit.rail === 'chain';
  switch (event.type) {
    case 'Created':
      return [created];
    case 'DepositMatched':
    case 'DepositMismatched':
      return onChain ? [created, updated] : [updated];
    case 'DepositLate':
      return onChain ? [created] : [];
    case 'Expired':
    case 'PayoutCompleted':
    case 'PayoutFailed':
    case 'CryptoDelivered':
    case 'DeliveryFailed':
      return [updated];
    case 'RefundSettled':
      return stateAfter.deposit?.id === event.depositId ? [updated] : [];
    case 'StrayDepositReceived':
    case 'PayoutRequested':
    case 'DeliveryRequested':
    case 'RefundRequested':
      return [];
  }
}

/**
 * What an event does to the limit reservations (daily caps, KYC monthly volume, KYB cap):
 * accepting reserves; expiry, failure and a wrong amount release (no payout happens);
 * completion keeps the reservation, which then also counts toward the KYB cap.
 */
export type LimitEffect = 'reserve' | 'release' | 'keep';

/**
 * The statuses a transaction reaches only through an event whose effect is 'release', and never
 * leaves (the transition table): a transaction in one of them holds no reservation any more.
 */
export const releasedStatuses: ReadonlySet<TransactionStatus> = new Set<TransactionStatus>(['PAYMENT_EXPIRED', 'PAYMENT_FAILED', 'WRONG_AMOUNT']);

export function limitEffectFor(event: TransactionEvent): LimitEffect | null {
  switch (event.type) {
    case 'Created':
      return 'reserve';
    case 'Expired':
    case 'PayoutFailed':
    case 'DeliveryFailed':
    case 'DepositMismatched':
      return 'release';
    case 'PayoutCompleted':
    case 'CryptoDelivered':
      return 'keep';
    case 'DepositMatched':
    case 'DepositLate':
    case 'StrayDepositReceived':
    case 'PayoutRequested':
    case 'DeliveryRequested':
    case 'RefundRequested':
    case 'RefundSettled':
      return null;
  }
}
