// POST /sandbox/pix-payments: the payer pays an onramp transaction's PIX charge. The sandbox rail
// records the payment (a new provider payment id per call, as a real second payment would have)
// and its notice goes through the same intake a provider's notice would (stored in the inbox first,
// then applied). The body says what the
// transaction made of it. A payment after the charge's expiry is let through on purpose: it is how
// a late payment (refunded by the domain) is exercised. Decisions: docs/onramp.md.
//
// Fake money never moves real money: a transaction whose crypto would be delivered on a live chain
// (not the sandbox chain) is refused (400) before anything is faked, and every payment faked here
// is first marked durably as the sandbox's (sandbox-funding.ts), so the delivery worker never sends
// for it on a live chain either (docs/security.md, "Fake money never moves real money").
import { fromJsonValue } from '../actors/state-codec.ts';
import { transactionsCollection } from '../actors/transaction-actor.ts';
import type { Network } from '../domain/assets.ts';
import { toJsonNumber } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import { RailUsageError } from '../rails/rails.ts';
import type { SandboxRail } from '../rails/sandbox-rail.ts';
import type { SandboxDriver, SandboxResult } from '../ports/ports.ts';
import type { SnapshotStore } from '../store/store.ts';
import { chargeOfTransaction } from './charges.ts';
import type { PixNoticeIntake } from './intake.ts';
import { markSandboxPixPayment } from './sandbox-funding.ts';

function refused(status: 400 | 404, code: string, reason: string): SandboxResult {
  return { ok: false, status, code, reason };
}

export interface SandboxPixPaymentsOptions {
  readonly store: Pick<SnapshotStore, 'get' | 'putIfAbsent'>;
  readonly rail: Pick<SandboxRail, 'simulatePixPayment'>;
  readonly intake: Pick<PixNoticeIntake, 'receive'>;
  /** The networks on the sandbox chain; a transaction delivered on any other one is refused. */
  readonly sandboxNetworks: ReadonlySet<Network>;
  readonly clock: { nowMs(): number };
}

export function sandboxPixPayments(options: SandboxPixPaymentsOptions): SandboxDriver['pixPayment'] {
  return async (request) => {
    const doc = await options.store.get(transactionsCollection, request.transactionId);
    if (doc === null || doc['partnerId'] !== request.partnerId) return refused(404, 'not_found', 'Transaction not found');
    if (doc['direction'] !== 'onramp') return refused(404, 'not_found', 'Not an onramp transaction; use /sandbox/deposits');
    const { network } = fromJsonValue<Quote>(doc['quote'] ?? null);
    if (!options.sandboxNetworks.has(network)) {
      return refused(400, 'invalid_request', `${network} is a live network here: a sandbox PIX payment never pays for crypto delivered on it`);
    }
    const charge = await chargeOfTransaction(options.store, request.transactionId);
    if (charge === null) return refused(400, 'invalid_request', 'The transaction has no PIX charge');
    // Before the payment exists, so before the transaction can ask for a delivery.
    await markSandboxPixPayment(options.store, { transactionId: request.transactionId, chargeId: charge.chargeId, markedAtMs: options.clock.nowMs() });
    let payment;
    try {
      payment = await options.rail.simulatePixPayment({ chargeId: charge.chargeId, amount: request.amount });
    } catch (error) {
      if (error instanceof RailUsageError) return refused(400, 'invalid_request', error.message);
      throw error;
    }
    if (payment === null) return refused(400, 'invalid_request', 'The PIX provider does not know this charge');
    const notice = await options.intake.receive({ chargeId: payment.chargeId, providerPaymentId: payment.providerPaymentId, amount: payment.amount });
    // `queued`: the notice is stored and will be applied by the inbox worker (the transaction could
    // not be reached just now); the payment is not lost.
    const outcome =
      notice.result === 'applied'
        ? { status: notice.status }
        : notice.result === 'queued'
          ? { status: null, queued: true }
          : notice.result === 'refused'
            ? { status: null, refused: notice.code }
            : { status: null, refused: notice.result };
    return {
      ok: true,
      body: {
        transaction_id: request.transactionId,
        charge_id: payment.chargeId,
        provider_payment_id: payment.providerPaymentId,
        amount: toJsonNumber(payment.amount),
        currency: 'BRL',
        ...outcome,
      },
    };
  };
}

/** The chains' sandbox driver with PIX payments handled here. */
export function withPixPayments(base: SandboxDriver, pixPayment: SandboxDriver['pixPayment']): SandboxDriver {
  return { deposit: (request) => base.deposit(request), pixPayment, runsNetwork: (network) => base.runsNetwork(network) };
}
