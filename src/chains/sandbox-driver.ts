// The sandbox test helpers of the partner API (the SandboxDriver port): pay a payout
// transaction's deposit on the sandbox chain, as its payment_context says (the memo on Stellar,
// the transaction's own address on Solana and Celo), so a partner can try the whole flow without
// a wallet. A live network, or an amount the token cannot hold, is refused with the API's error.
import { compare, rescale, toJsonNumber } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import { transactionReference } from '../domain/reference.ts';
import type { SnapshotStore } from '../store/store.ts';
import { fromJsonValue } from '../actors/state-codec.ts';
import { transactionsCollection } from '../actors/transaction-actor.ts';
import type { SandboxDriver, SandboxResult } from '../ports/ports.ts';
import type { ChainSetups } from './config.ts';
import type { SandboxChain } from './sandbox-chain.ts';
import { shortDepositAmount, spendingShortDeposit } from './sandbox-short-deposits.ts';

function sandboxError(status: 400 | 404, code: string, reason: string): SandboxResult {
  return { ok: false, status, code, reason };
}

/** The driver over the store's transactions and the sandbox chain (null when every network is live). */
export function createSandboxDriver(store: SnapshotStore, setups: ChainSetups, sandboxChain: SandboxChain | null): SandboxDriver {
  return {
  runsNetwork: (network) => sandboxChain !== null && setups[network]?.mode === 'sandbox',
  async deposit(request) {
    const doc = await store.get(transactionsCollection, request.transactionId);
    if (doc === null || doc.partnerId !== request.partnerId) return sandboxError(404, 'not_found', 'Transaction not found');
    if (doc.direction !== 'payout') return sandboxError(404, 'not_found', 'Not a payout transaction; use /sandbox/pix-payments');
    const quote = fromJsonValue<Quote>(doc.quote ?? null);
    const setup = setups[quote.network];
    if (sandboxChain === null || setup?.mode !== 'sandbox') {
      return sandboxError(400, 'invalid_request', `${quote.network} is a live network here; fund it on chain`);
    }
    const decimals = setup.assets[quote.cryptoCurrency]?.decimals;
    if (decimals === undefined) return sandboxError(400, 'invalid_request', `${quote.cryptoCurrency} has no token on the sandbox ${quote.network}`);
    // A partner's rehearsal (sandbox-short-deposits.ts) wins over the amount asked: it is what
    // "the next deposit arrives short" means. Its mark is spent only if this deposit is made.
    return spendingShortDeposit(store, request.transactionId, async (short) => {
      const amount = short ? shortDepositAmount(quote.sourceAmount, decimals) : (request.amount ?? quote.sourceAmount);
      if (amount.units <= 0n) return sandboxError(400, 'invalid_request', 'amount must be positive');
      const exact = rescale(amount, Math.max(decimals, amount.scale), 'floor');
      if (compare(rescale(amount, decimals, 'floor'), exact) !== 0) {
        return sandboxError(400, 'invalid_request', `amount has more than ${decimals} decimals`);
      }
      const stellar = quote.network === 'STELLAR';
      // The address the transaction's payment_context gave (its own on Solana and Celo).
      const frozenAddress = typeof doc.depositAddress === 'string' ? doc.depositAddress : null;
      const transfer = await sandboxChain.deposit({
        network: quote.network,
        asset: quote.cryptoCurrency,
        amount: rescale(amount, decimals, 'floor'),
        memo: stellar ? transactionReference(request.transactionId) : null,
        ...(frozenAddress !== null && !stellar ? { destination: frozenAddress } : {}),
    });
    return {
      ok: true,
      body: {
        blockchain: quote.network,
        on_chain_tx: transfer.onChainId,
        amount: toJsonNumber(transfer.amount),
        crypto_currency: transfer.asset,
        sender: transfer.sender,
        deposit_address: transfer.destination,
        memo: transfer.memo,
        notify: stellar ? { endpoint: null, required: false } : { endpoint: '/payments/notify', required: true },
      },
    } satisfies SandboxResult;
    });
  },
  async pixPayment(request) {
    const doc = await store.get(transactionsCollection, request.transactionId);
    if (doc === null || doc.partnerId !== request.partnerId) return sandboxError(404, 'not_found', 'Transaction not found');
    if (doc.direction !== 'onramp') return sandboxError(404, 'not_found', 'Not an onramp transaction');
    // The PIX side of the sandbox belongs to the rails; the composition root wires it there.
    return sandboxError(400, 'invalid_request', 'Sandbox PIX payments are not available in this build yet');
  },
  };
}
