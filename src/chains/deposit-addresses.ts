// Per-transaction deposit addresses (Solana, Celo). With one shared deposit address, nothing tied a
// transfer to the transaction a partner named in POST /payments/notify, so a partner who saw another
// partner's transfer on chain could claim it for its own transaction. Each transaction now gets its
// own address, derived without I/O from the transaction id (nothing is stored before the answer);
// a transfer funds a transaction only if it reached that transaction's address. Funds that land
// there are swept to the hot wallet, which pays every fee (nothing must be held at the address).
//
// Stellar keeps its one account: the memo already binds a payment to one transaction.
import type { CryptoAsset } from '../domain/assets.ts';
import type { SendResult, VerifyResult } from './chains.ts';

export interface SweepRequest {
  /** The transaction whose address is swept (its address is `addressFor(transactionId)`). */
  readonly transactionId: string;
  readonly asset: CryptoAsset;
  /** A retry with the same key never moves funds twice (same journal rules as ChainAdapter.send). */
  readonly idempotencyKey: string;
}

/**
 * What a network with per-transaction addresses offers besides ChainAdapter. Implemented by the
 * Solana and Celo adapters and by the sandbox chain for those networks.
 */
export interface PerTransactionDeposits {
  readonly network: 'SOLANA' | 'CELO';
  /**
   * The address a partner funds for `transactionId` (payment_context.depositAddress). Pure and
   * deterministic: the same id gives the same address in every process, on every restart.
   * Solana: the owner (wallet) address; deposits go to its associated token account for the mint.
   * Celo: the counterfactual (CREATE2) forwarder address; no code needs to exist there yet.
   */
  addressFor(transactionId: string): string;
  /**
   * The transfers of a configured asset INTO `address` made by chain transaction `onChainId`
   * (outcomes as ChainAdapter.verify). A transfer to any other address is not reported here.
   */
  verifyInto(onChainId: string, address: string): Promise<VerifyResult>;
  /**
   * Chain transaction ids that moved a configured asset into `address`, newest first, at most
   * `limit`: how the watcher finds deposits nobody notified.
   */
  transfersInto(address: string, limit: number): Promise<readonly string[]>;
  /**
   * Moves the whole balance of `asset` held at the transaction's address to the hot wallet (and,
   * on Solana, closes the token account, its rent going to the hot wallet too). Journaled like
   * ChainAdapter.send: a retry with the same key never moves funds twice. `nothing_to_sweep`: the
   * address holds nothing of `asset` (already swept, or never funded) and nothing was signed.
   */
  sweep(request: SweepRequest): Promise<SweepResult>;
  /**
   * Optional: confirms against the chain that the addresses `addressFor` gives can be swept by us
   * (Celo: the configured factory is deployed and deploys this build's forwarder). Resolves when
   * they can; rejects with DepositSetupError when they never will (a configuration to fix), and with
   * anything else when the chain cannot tell right now. Until it has resolved once, no address of
   * this network is handed to a partner (src/chains/deposit-setup-gate.ts).
   */
  verifySetup?(): Promise<void>;
}

/** The per-transaction deposit setup is wrong: addresses handed out could never be swept. */
export class DepositSetupError extends Error {
  override readonly name: string = 'DepositSetupError';
}

export type SweepResult = SendResult | { readonly status: 'nothing_to_sweep' };

/** Whether an adapter also offers per-transaction addresses (how a live adapter plugs in). */
export function isPerTransactionDeposits(value: object): value is PerTransactionDeposits {
  const candidate = value as Partial<Record<keyof PerTransactionDeposits, unknown>>;
  return (candidate.network === 'SOLANA' || candidate.network === 'CELO') &&
    typeof candidate.addressFor === 'function' &&
    typeof candidate.verifyInto === 'function' &&
    typeof candidate.transfersInto === 'function' &&
    typeof candidate.sweep === 'function';
}
