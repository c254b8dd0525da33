// Contracts between the roles, as the edge and the admin service see them. Each is implemented by
// the role that owns the capability (chains → watcher role, rails → payout role) and reached
// in-process in `all` mode or over the internal gRPC link when roles run apart.
import type { CryptoAsset, Network, PaymentMethod } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import type { JsonValue } from '../actors/envelope.ts';

/** The latest known liquidity and availability of a payout rail (cached, bounded staleness). */
export interface LiquidityView {
  /** null when no successful read has happened yet. */
  latest(method: PaymentMethod): { readonly amount: Decimal; readonly readAtMs: number } | null;
  available(method: PaymentMethod): boolean;
}

export type NotifyResult =
  /**
   * `mismatched`: the verified deposit cannot fund its transaction as it stood before the claim (it
   * was past AWAITING_PAYMENT, or the amount, asset or network differ from the quote): it will be
   * refunded or kept as dust. The edge charges such a notify to the partner's notify budget.
   */
  | { readonly result: 'enqueued'; readonly mismatched?: boolean }
  | { readonly result: 'invalid'; readonly reason: string }
  | { readonly result: 'not_found'; readonly reason: string }
  /** The watcher role could not be reached over the chains link: the edge answers 503 (retryable). */
  | { readonly result: 'unavailable'; readonly reason: string };

/** POST /payments/notify: verify a Solana/Celo transfer on chain and hand it to the transaction. */
export interface DepositVerifier {
  notify(request: {
    readonly partnerId: string;
    readonly blockchain: Network;
    readonly onChainTx: string;
    readonly transactionId: string;
  }): Promise<NotifyResult>;
}

export type ReconcileResultCode = 'alreadyProcessed' | 'enqueued' | 'unresolved' | 'invalid' | 'notFound' | 'failed';

export interface ReconcileResult {
  readonly result: ReconcileResultCode;
  readonly transactionId: string | null;
  readonly transactionStatus: string | null;
  readonly reason: string | null;
}

/** POST /ops/transactions/reconcile-hash and the admin service's reconcile. */
export interface Reconciler {
  reconcile(request: { readonly blockchain: Network; readonly onChainTx: string; readonly transactionId: string | null }): Promise<ReconcileResult>;
}

/** Deposit instructions for a new transaction (payment_context), from the chains configuration. */
export interface PaymentContexts {
  forPayout(quote: Quote, transactionId: string): JsonValue;
}

/** What prepares an onramp acceptance: the destination wallet, the crypto inventory, then the PIX charge (src/onramp). */
export type OnrampPreparation =
  | { readonly ok: true; readonly paymentContext: JsonValue }
  | {
      readonly ok: false;
      readonly rejection: { readonly code: 'account_unverifiable' } | { readonly code: 'liquidity_insufficient' } | { readonly code: 'rail_unavailable'; readonly method: PaymentMethod };
      /** Appended to the catalogue's reason (why the destination is not a wallet). */
      readonly detail?: string;
    }
  /** Infrastructure trouble (store, provider error): the edge answers 503. */
  | { readonly ok: false; readonly unavailable: string };

/** POST /transaction with an onramp quote: checked and charged before the acceptance is answered. */
export interface OnrampAcceptance {
  prepare(request: { readonly partnerId: string; readonly transactionId: string; readonly quote: Quote; readonly destination: string }): Promise<OnrampPreparation>;
}

/** Whether a network/asset has an active deposit setup (the corridor list hides the others). */
export interface ChainAvailability {
  active(network: Network, asset: CryptoAsset): boolean;
}

export type SandboxResult =
  | { readonly ok: true; readonly body: JsonValue }
  | { readonly ok: false; readonly status: 400 | 404; readonly code: string; readonly reason: string };

/** The sandbox test helpers (sandbox mode only). */
export interface SandboxDriver {
  deposit(request: { readonly partnerId: string; readonly transactionId: string; readonly amount: Decimal | null }): Promise<SandboxResult>;
  pixPayment(request: { readonly partnerId: string; readonly transactionId: string; readonly amount: Decimal | null }): Promise<SandboxResult>;
  /** Whether `deposit` can pay on this network: false for a live one (a rehearsal of its deposits means nothing). */
  runsNetwork(network: Network): boolean;
}
