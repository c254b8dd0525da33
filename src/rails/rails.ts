// The Rails port: the fiat side. Payouts over BREB (COP) and PIX (BRL), PIX charges for onramp,
// refunds of PIX payments, and liquidity. A production adapter per provider and the sandbox rail
// (configurable latency, failure rate, liquidity, outages) pass one contract suite.
import type { FiatCurrency, PaymentMethod } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';

export interface PayoutRequest {
  readonly method: PaymentMethod;
  readonly currency: FiatCurrency;
  readonly amount: Decimal;
  /** The recipient key (BreB key, PIX key) or null when paying a PIX QR. */
  readonly accountNumber: string | null;
  readonly qrCode: string | null;
  readonly taxId: string | null;
  /** Derived from the transaction id: the provider pays at most once per key. */
  readonly idempotencyKey: string;
}

export type PayoutResult =
  | { readonly status: 'succeeded'; readonly railReference: string }
  /** Accepted by the provider, outcome not known yet: ask again with the same key. */
  | { readonly status: 'pending'; readonly railReference: string }
  | { readonly status: 'failed'; readonly reason: string; readonly railReference: string | null }
  /** Could not reach the provider or it is unavailable: retry later with the same key. */
  | { readonly status: 'retry'; readonly reason: string };

export interface PixCharge {
  readonly chargeId: string;
  /** The BR Code "copia e cola" payload (dynamic). */
  readonly brCode: string;
  readonly amount: Decimal;
  readonly expiresAtMs: number;
}

export interface PixChargeRequest {
  readonly amount: Decimal;
  readonly expiresAtMs: number;
  /** Derived from the transaction id: the same charge comes back for a retry. */
  readonly idempotencyKey: string;
  readonly description: string;
}

export interface PixRefundRequest {
  /** The provider's id of the PIX payment being returned. */
  readonly providerPaymentId: string;
  readonly amount: Decimal;
  readonly idempotencyKey: string;
}

export type PixRefundResult =
  | { readonly status: 'succeeded'; readonly refundId: string }
  | { readonly status: 'pending'; readonly refundId: string }
  | { readonly status: 'retry'; readonly reason: string };

export interface LiquidityReading {
  readonly method: PaymentMethod;
  readonly amount: Decimal;
}

export interface Rail {
  payout(request: PayoutRequest): Promise<PayoutResult>;
  /** The outcome so far of the payout with this key (never pays); null when the provider never saw it. */
  payoutStatus(idempotencyKey: string): Promise<PayoutResult | null>;
  /** Liquidity available for payouts on `method`, in its currency. Throws when unreadable. */
  liquidity(method: PaymentMethod): Promise<LiquidityReading>;
  /** False while the provider reports an outage of `method`. */
  available(method: PaymentMethod): Promise<boolean>;
  createPixCharge(request: PixChargeRequest): Promise<PixCharge>;
  refundPixPayment(request: PixRefundRequest): Promise<PixRefundResult>;
}

/** The provider cannot be reached or reports an outage (calls without a 'retry' result throw it). */
export class RailUnavailableError extends Error {
  override readonly name = 'RailUnavailableError';
}

/** A caller broke the port's contract (a bug): bad amount, the same idempotency key with other content. */
export class RailUsageError extends Error {
  override readonly name = 'RailUsageError';
}
