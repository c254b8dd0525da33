// What the Celo adapter reads from ERC-20 Transfer logs, decided from the logs alone (no RPC):
// which transfers of a receipt pay one of the deposit addresses (only an accepted token's
// `Transfer` with 3 topics — ERC-721 shares the signature with 4 — whose `to` is a recipient; the
// sender is the log's `from`), why none does, and which transactions a log scan found, newest
// first. Kept apart from the adapter (celo.ts), which fetches receipts and logs at depth.
import { decodeEventLog, erc20Abi } from 'viem';
import type { Address, Hex, Log, TransactionReceipt } from 'viem';
import type { CryptoAsset } from '../domain/assets.ts';
import { fromBaseUnits } from '../domain/money.ts';
import type { ObservedTransfer } from './chains.ts';
import { erc20TransferTopic, parseAddress, sameAddress } from './celo-helpers.ts';

/** An accepted token: its contract and decimals. */
export interface AssetContract {
  readonly asset: CryptoAsset;
  readonly contract: Address;
  readonly decimals: number;
}

/**
 * The accepted tokens of the adapter's options, checked: each contract an address, decimals in
 * [0, 18], at least one token.
 */
export function assetContracts(assets: Readonly<Partial<Record<CryptoAsset, { readonly contract: string; readonly decimals: number }>>>): AssetContract[] {
  const tokens = Object.entries(assets).map(([asset, config]) => {
    const contract = config === undefined ? null : parseAddress(config.contract);
    if (config === undefined || contract === null) throw new Error(`CELO assets.${asset}.contract is not an address`);
    if (!Number.isInteger(config.decimals) || config.decimals < 0 || config.decimals > 18) {
      throw new Error(`CELO assets.${asset}.decimals must be an integer in [0, 18]`);
    }
    return { asset: asset as CryptoAsset, contract, decimals: config.decimals };
  });
  if (tokens.length === 0) throw new Error('CELO needs at least one asset');
  return tokens;
}

type Mismatch = 'wrong_token' | 'wrong_recipient';
const mismatchReasons: ReadonlyArray<readonly [Mismatch, string]> = [
  ['wrong_token', 'the token contract is not an accepted asset'],
  ['wrong_recipient', 'the transfer goes to another address than the deposit address'],
];

/** An accepted token's Transfer to one of `recipients`, or null (noting why not). */
function transferOf(
  log: TransactionReceipt['logs'][number], tokens: readonly AssetContract[], recipients: readonly Address[], mismatches: Set<Mismatch>,
): { token: AssetContract; from: Address; value: bigint } | null {
  // ERC-721 shares the event signature but indexes the token id: 4 topics, not 3.
  if (log.topics[0]?.toLowerCase() !== erc20TransferTopic || log.topics.length !== 3) return null;
  let args: { from: Address; to: Address; value: bigint };
  try {
    args = decodeEventLog({ abi: erc20Abi, eventName: 'Transfer', topics: log.topics, data: log.data, strict: true }).args;
  } catch {
    return null;
  }
  const token = tokens.find((candidate) => sameAddress(candidate.contract, log.address));
  const toDeposit = recipients.some((address) => sameAddress(args.to, address));
  if (token === undefined) {
    if (toDeposit) mismatches.add('wrong_token');
    return null;
  }
  if (!toDeposit) {
    mismatches.add('wrong_recipient');
    return null;
  }
  return { token, from: args.from, value: args.value };
}

/**
 * The transfers of accepted tokens to one of `recipients` in a mined, successful receipt, or the
 * most specific reason there is none.
 */
export function transfersOfReceipt(
  receipt: TransactionReceipt, tokens: readonly AssetContract[], recipients: readonly Address[], observedAtMs: number,
): { readonly transfers: ObservedTransfer[] } | { readonly reason: string } {
  const mismatches = new Set<Mismatch>();
  const transfers: ObservedTransfer[] = [];
  for (const log of receipt.logs) {
    const transfer = transferOf(log, tokens, recipients, mismatches);
    if (transfer === null) continue;
    transfers.push({
      network: 'CELO',
      onChainId: receipt.transactionHash,
      asset: transfer.token.asset,
      amount: fromBaseUnits(transfer.value, transfer.token.decimals),
      sender: transfer.from,
      memo: null,
      observedAtMs,
    });
  }
  if (transfers.length > 0) return { transfers };
  return { reason: mismatchReasons.find(([kind]) => mismatches.has(kind))?.[1] ?? 'no ERC-20 transfer to the deposit address' };
}

/** The transactions of scanned Transfer logs, newest log first (a hash may repeat). */
export function transactionsNewestFirst(logs: readonly Pick<Log<bigint, number, false>, 'removed' | 'topics' | 'blockNumber' | 'logIndex' | 'transactionHash'>[]): Hex[] {
  const positions = logs.flatMap((log) => (
    // ERC-721's Transfer has 4 topics; a removed log was reorganised away.
    log.removed || log.topics.length !== 3 ? [] : [{ block: log.blockNumber, index: log.logIndex, hash: log.transactionHash }]
  ));
  positions.sort((a, b) => (a.block === b.block ? b.index - a.index : a.block < b.block ? 1 : -1));
  return positions.map((position) => position.hash);
}
