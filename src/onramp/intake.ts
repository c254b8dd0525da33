// The PIX payment notice intake: the provider (the sandbox rail today, a provider webhook or poller
// later, behind the same `PixPaymentNotice`) tells us a charge was paid. The notice is first stored
// in the inbox (`pix_notices`, pix-inbox.ts) — durable before anything else happens — then applied:
// the intake matches the charge to its transaction (`pix_charges`) and hands the payment to the
// transaction actor as `PixPaymentReceived {providerPaymentId, amount}`. The command id is derived
// from the provider's payment id (`pix-payment:<id>`), so a notice delivered or applied twice is
// applied once: the actor replays its first reply. If applying fails on the way (bus, shard, no
// reply in time), the notice stays pending in the inbox and the inbox worker applies it later
// (notice-worker.ts): a notice acknowledged to the provider is never lost. The domain decides what
// the payment means (exact amount → PROCESSING_PAYMENT and a crypto delivery; short/over →
// WRONG_AMOUNT and a PIX refund; late → PAYMENT_EXPIRED and a refund). Decisions: docs/onramp.md.
import type { Logger } from 'pino';
import { toJsonValue } from '../actors/state-codec.ts';
import { transactionActorType, type DomainReply } from '../actors/transaction-actor.ts';
import type { ActorAsker } from '../chains/deposits.ts';
import { compare, isPositive, rescale } from '../domain/money.ts';
import type { PixPaymentReceivedCommand } from '../domain/transaction.ts';
import type { SnapshotStore } from '../store/store.ts';
import { chargeById } from './charges.ts';
import { PixInbox, type InboxEntry, type PixInboxOptions, type PixPaymentNotice } from './pix-inbox.ts';

export type { PixPaymentNotice } from './pix-inbox.ts';

/** Bound on provider ids we key by (they end up in command ids and store ids). */
export const providerIdLengthMax = 200;

export type PixNoticeResult =
  /** The transaction applied it (or had applied it before); `status` is its status now. */
  | { readonly result: 'applied'; readonly transactionId: string; readonly status: string }
  /** The transaction refused it (a conflicting repeat, too many stray payments, …): operations. */
  | { readonly result: 'refused'; readonly transactionId: string; readonly code: string }
  /** The notice does not validate (bad ids or amount, or a payment id seen with other content): nothing was done. */
  | { readonly result: 'invalid'; readonly reason: string }
  /** No charge of ours has this id: nothing can be matched; operations return the money. */
  | { readonly result: 'unknown_charge' }
  /** Stored in the inbox, not applied yet (the transaction could not be reached): applied later. */
  | { readonly result: 'queued'; readonly reason: string };

export function pixPaymentCommandId(providerPaymentId: string): string {
  return `pix-payment:${providerPaymentId}`;
}

export interface PixNoticeIntakeOptions {
  readonly store: Pick<SnapshotStore, 'get' | 'put' | 'putIfAbsent' | 'list'>;
  readonly actors: ActorAsker;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  readonly askTimeoutMs?: number;
  /** Retry delays of notices that could not be applied (see PixInbox). */
  readonly inbox?: Omit<PixInboxOptions, 'store'>;
}

function validId(text: string): boolean {
  return typeof text === 'string' && text.length > 0 && text.length <= providerIdLengthMax && !/[\u0000-\u001f]/.test(text);
}

export class PixNoticeIntake {
  private readonly askTimeoutMs: number;
  readonly inbox: PixInbox;

  constructor(private readonly options: PixNoticeIntakeOptions) {
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
    this.inbox = new PixInbox({ store: options.store, ...options.inbox });
  }

  /**
   * Validates, stores in the inbox, then applies. Throws only when the notice could not be stored
   * (the store is down): the provider must not take it as received, and sends it again. Once
   * stored, it never throws: a failed application answers `queued` and is retried by the worker.
   */
  async receive(notice: PixPaymentNotice): Promise<PixNoticeResult> {
    if (!validId(notice.chargeId) || !validId(notice.providerPaymentId)) return { result: 'invalid', reason: 'charge and payment ids must be 1-200 printable characters' };
    if (!isPositive(notice.amount) || compare(rescale(notice.amount, 2, 'floor'), notice.amount) !== 0) {
      return { result: 'invalid', reason: 'the amount must be positive with at most 2 decimals' };
    }
    const exact = { ...notice, amount: rescale(notice.amount, 2, 'floor') };
    const recorded = await this.inbox.record(exact, this.options.clock.nowMs());
    if (recorded.kind === 'conflict') {
      this.options.log.error({ providerPaymentId: notice.providerPaymentId }, 'PIX notice with a payment id received before for another charge or amount; the first one stands');
      return { result: 'invalid', reason: 'this payment id was received before with another charge or amount' };
    }
    return this.apply(recorded.entry);
  }

  /** Applies a stored notice and records the outcome in the inbox. Never throws (see `receive`). */
  async apply(entry: InboxEntry): Promise<PixNoticeResult> {
    const { log, clock } = this.options;
    let outcome: Exclude<PixNoticeResult, { result: 'queued' | 'invalid' }>;
    try {
      outcome = await this.applyOnce(entry.notice);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      try {
        await this.inbox.retryLater(entry, reason, clock.nowMs());
      } catch (storeError) {
        // Still pending as stored before: the worker takes it when its next attempt is due.
        log.warn({ providerPaymentId: entry.notice.providerPaymentId, error: String(storeError) }, 'could not record a failed PIX notice attempt');
      }
      log.warn({ providerPaymentId: entry.notice.providerPaymentId, attempts: entry.attempts + 1, error: reason }, 'PIX notice stored but not applied yet; the inbox worker retries it');
      return { result: 'queued', reason };
    }
    const state = outcome.result === 'applied' ? 'applied' : outcome.result === 'refused' ? 'refused' : 'unknown_charge';
    try {
      await this.inbox.settle(entry, state, { ...outcome }, clock.nowMs());
    } catch (error) {
      // The transaction has it; the notice stays pending and is applied again later (a no-op).
      log.warn({ providerPaymentId: entry.notice.providerPaymentId, error: String(error) }, 'could not mark a PIX notice applied; it will be applied again (no effect)');
    }
    return outcome;
  }

  /** Throws only on infrastructure failure (store, no actor reply). */
  private async applyOnce(notice: PixPaymentNotice): Promise<Exclude<PixNoticeResult, { result: 'queued' | 'invalid' }>> {
    const charge = await chargeById(this.options.store, notice.chargeId);
    if (charge === null) {
      this.options.log.error({ chargeId: notice.chargeId, providerPaymentId: notice.providerPaymentId }, 'PIX payment for a charge we do not know; return it by hand');
      return { result: 'unknown_charge' };
    }
    const command: PixPaymentReceivedCommand = {
      kind: 'PixPaymentReceived',
      providerPaymentId: notice.providerPaymentId,
      amount: notice.amount,
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
