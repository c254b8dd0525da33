// payment_context: everything a partner needs to fund a payout on chain, exactly the spec's table.
// Built at acceptance from the chains configuration of this process (so a rotated deposit address
// applies to new transactions) and frozen in the transaction: GET and replays return the same one.
// On Solana and Celo the depositAddress is the transaction's own (`addressFor(transactionId)` of
// the network's PerTransactionDeposits, src/chains/deposit-addresses.ts): a transfer funds a
// transaction only if it reached that address. A network without that port (a live adapter that
// does not offer it yet) falls back to its shared address; deposits there are bound under the
// legacy rule (src/domain/deposit-binding.ts).
import type { JsonValue } from '../actors/envelope.ts';
import { chainFamily, type Network } from '../domain/assets.ts';
import { notifyDescriptors } from '../domain/corridors.ts';
import { toJsonNumber } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import { transactionReference } from '../domain/reference.ts';
import type { ChainAvailability, PaymentContexts } from '../ports/ports.ts';
import type { ChainSetups } from './config.ts';
import type { PerTransactionDeposits } from './deposit-addresses.ts';

/** The per-transaction address ports by network (Solana, Celo). */
export type PerTransactionPorts = ReadonlyMap<Network, PerTransactionDeposits>;

export interface PaymentContextJson {
  amount: number;
  blockchain: Network;
  chainFamily: 'stellar' | 'solana' | 'evm';
  chainId: string;
  cryptoCurrency: string;
  decimals: number | null;
  depositAddress: string;
  memo: string | null;
  memoType: 'text' | null;
  mintAddress: string | null;
  notify: { endpoint: string | null; required: boolean };
  rpcUrl: string | null;
}

/** Thrown when a quote names a network or asset this process has no deposit setup for (a bug or a config change). */
export class NoDepositSetupError extends Error {
  override readonly name = 'NoDepositSetupError';
}

export function paymentContextFor(
  setups: ChainSetups,
  quote: Quote,
  transactionId: string,
  perTransaction: PerTransactionPorts = new Map(),
  addressesReady: (network: Network) => boolean = () => true,
): PaymentContextJson {
  if (quote.direction !== 'payout') throw new NoDepositSetupError('payment_context of an onramp transaction is the PIX charge, not a deposit');
  const setup = setups[quote.network];
  const asset = setup?.assets[quote.cryptoCurrency];
  if (setup === undefined || asset === undefined) {
    throw new NoDepositSetupError(`no deposit setup for ${quote.cryptoCurrency} on ${quote.network}`);
  }
  // An address we could not sweep is never handed out (src/chains/deposit-setup-gate.ts).
  if (perTransaction.has(quote.network) && !addressesReady(quote.network)) {
    throw new NoDepositSetupError(`the deposit addresses of ${quote.network} are not verified yet`);
  }
  const stellar = quote.network === 'STELLAR';
  const notify = notifyDescriptors[quote.network];
  return {
    // The payout quote's value: the exact amount to send, fee included (payment_context.amount).
    amount: toJsonNumber(quote.sourceAmount),
    blockchain: quote.network,
    chainFamily: chainFamily[quote.network],
    chainId: setup.chainId,
    cryptoCurrency: quote.cryptoCurrency,
    decimals: asset.decimals,
    depositAddress: perTransaction.get(quote.network)?.addressFor(transactionId) ?? setup.depositAddress,
    memo: stellar ? transactionReference(transactionId) : null,
    memoType: stellar ? 'text' : null,
    mintAddress: stellar ? null : asset.identifier,
    notify: { endpoint: notify.endpoint, required: notify.required },
    rpcUrl: setup.publicRpcUrl,
  };
}

export function createPaymentContexts(
  setups: () => ChainSetups,
  perTransaction: PerTransactionPorts = new Map(),
  addressesReady: (network: Network) => boolean = () => true,
): PaymentContexts {
  return {
    forPayout: (quote, transactionId) => paymentContextFor(setups(), quote, transactionId, perTransaction, addressesReady) as unknown as JsonValue,
  };
}

export function createChainAvailability(setups: () => ChainSetups): ChainAvailability {
  return { active: (network, asset) => setups()[network]?.assets[asset] !== undefined };
}
