// The PIX payment notice intake: the provider (the sandbox rail today, a provider webhook or poller
// later, behind the same `PixPaymentNotice`) tells us a charge was paid; the intake matches the
// charge to its transaction (`pix_charges`) and hands the payment to the transaction actor as
// `PixPaymentReceived {providerPaymentId, amount}`. The command id is derived from the provider's
// payment id (`pix-payment:<id>`), so a notice delivered twice is applied once: the actor replays
// its first reply. The domain decides what the payment means (exact amount → PROCESSING_PAYMENT and
// a crypto delivery; short/over → WRONG_AMOUNT and a PIX refund; late → PAYMENT_EXPIRED and a
// refund). Decisions: docs/onramp.md.
import type { Logger } from 'pino';
import { toJsonValue } from '../actors/state-codec.ts';
import { transactionActorType, type DomainReply } from '../actors/transaction-actor.ts';
import type { ActorAsker } from '../chains/deposits.ts';
import { compare, isPositive, rescale, type Decimal } from '../domain/money.ts';
import type { PixPaymentReceivedCommand } from '../domain/transaction.ts';
import type { SnapshotStore } from '../store/store.ts';
import { chargeById } from './charges.ts';

/** Bound on provider ids we key by (they end up in command ids and store ids). */
export const providerIdLengthMax = 200;

/** A payment of one of our PIX charges, as the provider reports it. */
export interface PixPaymentNotice {
  readonly chargeId: string;
  /** The provider's id of this payment; a refund names it. */
  readonly providerPaymentId: string;
  /** BRL paid (at most 2 decimals). */
  readonly amount: Decimal;
}

export type PixNoticeResult =
  /** The transaction applied it (or had applied it before); `status` is its status now. */
  | { readonly result: 'applied'; readonly transactionId: string; readonly status: string }
  /** The transaction refused it (a conflicting repeat, too many stray payments, …): operations. */
  | { readonly result: 'refused'; readonly transactionId: string; readonly code: string }
  /** The notice does not validate (bad ids or amount): nothing was done. */
  | { readonly result: 'invalid'; readonly reason: string }
  /** No charge of ours has this id: nothing can be matched; operations return the money. */
  | { readonly result: 'unknown_charge' };

export function pixPaymentCommandId(providerPaymentId: string): string {
  return `pix-payment:${providerPaymentId}`;
}

export interface PixNoticeIntakeOptions {
  readonly store: Pick<SnapshotStore, 'get'>;
  readonly actors: ActorAsker;
  readonly log: Logger;
  readonly askTimeoutMs?: number;
}

function validId(text: string): boolean {
  return typeof text === 'string' && text.length > 0 && text.length <= providerIdLengthMax && !/[\u0000-\u001f]/.test(text);
}

export class PixNoticeIntake {
  private readonly askTimeoutMs: number;

  constructor(private readonly options: PixNoticeIntakeOptions) {
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
  }

  /** Throws only on infrastructure failure (store, no actor reply): the provider retries the notice. */
  async receive(notice: PixPaymentNotice): Promise<PixNoticeResult> {
    if (!validId(notice.chargeId) || !validId(notice.providerPaymentId)) return { result: 'invalid', reason: 'charge and payment ids must be 1-200 printable characters' };
    if (!isPositive(notice.amount) || compare(rescale(notice.amount, 2, 'floor'), notice.amount) !== 0) {
      return { result: 'invalid', reason: 'the amount must be positive with at most 2 decimals' };
    }
    const charge = await chargeById(this.options.store, notice.chargeId);
    if (charge === null) {
      this.options.log.error({ chargeId: notice.chargeId, providerPaymentId: notice.providerPaymentId }, 'PIX payment for a charge we do not know; return it by hand');
      return { result: 'unknown_charge' };
    }
    const command: PixPaymentReceivedCommand = {
      kind: 'PixPaymentReceived',
      providerPaymentId: notice.providerPaymentId,
      amount: rescale(notice.amount, 2, 'floor'),
    };
    const reply = await this.options.actors.ask<DomainReply>(transactionActorType, charge.transactionId, command.kind, toJsonValue(command), {
      commandId: pixPaymentCommandId(notice.providerPaymentId),
      timeoutMs: this.askTimeoutMs,
    });
    if (!reply.ok) {
      this.options.log.error({ transactionId: charge.transactionId, providerPaymentId: notice.providerPaymentId, code: reply.code }, 'the transaction refused a PIX payment; check it by hand');
      return { result: 'refused', transactionId: charge.transactionId, code: reply.code };
    }
    this.options.log.info({ transactionId: charge.transactionId, providerPaymentId: notice.providerPaymentId, status: reply.status }, 'PIX payment applied');
    return { result: 'applied', transactionId: charge.transactionId, status: reply.status };
  }
}
