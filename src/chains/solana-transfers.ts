// Which SPL Token transfers of a fetched Solana transaction pay a deposit target, decided from the
// transaction alone (no RPC): only a `transferChecked` of a configured mint, at its configured
// decimals, into one of the target's token accounts counts, top-level or inner (CPI). When none
// does, the reason names the most specific mismatch seen, the one an operator or partner can act
// on. Kept apart from the adapter (solana.ts), which fetches the transaction and finds the sender.
import type { MessageAccountKeys, PublicKey, VersionedTransactionResponse } from '@solana/web3.js';
import type { CryptoAsset } from '../domain/assets.ts';
import { associatedTokenAddress, base58Decode, decodeTransferChecked, isPlainTransfer, token2022ProgramId, tokenProgramId } from './solana-helpers.ts';

/** A configured asset: its mint and decimals, and the shared deposit wallet's token account for it. */
export interface AssetAccounts {
  readonly asset: CryptoAsset;
  readonly mint: PublicKey;
  readonly decimals: number;
  /** The shared deposit wallet's associated token account for this mint (sends never go here). */
  readonly depositAccount: PublicKey;
}

/** One instruction, top-level or inner, with indexes into the transaction's account keys. */
interface IndexedInstruction {
  readonly programIdIndex: number;
  readonly accountIndexes: readonly number[];
  readonly data: Uint8Array;
}

export interface MatchedTransfer {
  readonly accounts: AssetAccounts;
  readonly amountBaseUnits: bigint;
  readonly sourceIndex: number;
  readonly authorityIndex: number;
}

type Mismatch = 'wrong_mint' | 'wrong_destination' | 'unchecked_transfer' | 'token_2022' | 'decimals';

/** Where verified deposits must go: the owners, and their token account for each configured asset. */
export interface DepositTarget {
  readonly owners: readonly PublicKey[];
  readonly accounts: ReadonlyMap<CryptoAsset, readonly PublicKey[]>;
  /** How a reason names it: the shared "deposit account" or "this transaction's deposit account". */
  readonly label: string;
}

// Most specific first: the reason an operator or partner can act on.
function mismatchReasons(label: string): ReadonlyArray<readonly [Mismatch, string]> {
  return [
    ['decimals', 'transferChecked decimals differ from the configured decimals of the mint'],
    ['wrong_mint', 'the transferred mint is not an accepted asset'],
    ['wrong_destination', `the transfer goes to another token account than ${label}`],
    ['unchecked_transfer', 'only SPL Token transferChecked is accepted (this is an unchecked transfer)'],
    ['token_2022', 'Token-2022 transfers are not accepted'],
  ];
}

/** A transferChecked of an accepted mint into its deposit account, or null (noting why not). */
function classify(
  instruction: IndexedInstruction, keys: MessageAccountKeys, assets: readonly AssetAccounts[], target: DepositTarget, mismatches: Set<Mismatch>,
): MatchedTransfer | null {
  const program = keys.get(instruction.programIdIndex);
  if (program === undefined) return null;
  const accountAt = (position: number): PublicKey | undefined => {
    const index = instruction.accountIndexes[position];
    return index === undefined ? undefined : keys.get(index);
  };
  if (program.equals(token2022ProgramId)) {
    if (decodeTransferChecked(instruction.data) !== null) mismatches.add('token_2022');
    return null;
  }
  if (!program.equals(tokenProgramId)) return null;
  if (isPlainTransfer(instruction.data)) {
    const destination = accountAt(1);
    if (destination !== undefined && [...target.accounts.values()].some((accounts) => accounts.some((account) => account.equals(destination)))) {
      mismatches.add('unchecked_transfer');
    }
    return null;
  }
  const decoded = decodeTransferChecked(instruction.data);
  const mint = accountAt(1);
  const destination = accountAt(2);
  const sourceIndex = instruction.accountIndexes[0];
  const authorityIndex = instruction.accountIndexes[3];
  if (decoded === null || mint === undefined || destination === undefined || sourceIndex === undefined || authorityIndex === undefined) {
    return null;
  }
  const accounts = assets.find((asset) => asset.mint.equals(mint));
  if (accounts === undefined) {
    if (target.owners.some((owner) => destination.equals(associatedTokenAddress(owner, mint)))) mismatches.add('wrong_mint');
    return null;
  }
  if (!(target.accounts.get(accounts.asset) ?? []).some((account) => account.equals(destination))) {
    mismatches.add('wrong_destination');
    return null;
  }
  if (decoded.decimals !== accounts.decimals) {
    mismatches.add('decimals');
    return null;
  }
  return { accounts, amountBaseUnits: decoded.amount, sourceIndex, authorityIndex };
}

/** The account keys of the message, with those loaded from lookup tables (version 0). */
export function accountKeysOf(response: VersionedTransactionResponse): MessageAccountKeys {
  const message = response.transaction.message;
  if (message.version === 'legacy') return message.getAccountKeys();
  const loaded = response.meta?.loadedAddresses;
  return loaded === undefined ? message.getAccountKeys() : message.getAccountKeys({ accountKeysFromLookups: loaded });
}

/** Top-level instructions, then every inner (CPI) instruction: a smart wallet's transfer counts too. */
function instructionsOf(response: VersionedTransactionResponse): IndexedInstruction[] {
  const outer = response.transaction.message.compiledInstructions.map((instruction) => ({
    programIdIndex: instruction.programIdIndex,
    accountIndexes: instruction.accountKeyIndexes,
    data: instruction.data,
  }));
  const inner = (response.meta?.innerInstructions ?? []).flatMap((group) => group.instructions.map((instruction) => ({
    programIdIndex: instruction.programIdIndex,
    accountIndexes: instruction.accounts,
    data: base58Decode(instruction.data) ?? new Uint8Array(0),
  })));
  return [...outer, ...inner];
}

/**
 * The transfers of `response` into `target`, or why there is none. The account keys are the
 * caller's too: it resolves the sender of each transfer from them.
 */
export function matchTransfers(
  response: VersionedTransactionResponse, keys: MessageAccountKeys, assets: readonly AssetAccounts[], target: DepositTarget,
): { readonly matched: readonly MatchedTransfer[] } | { readonly reason: string } {
  const mismatches = new Set<Mismatch>();
  const matched: MatchedTransfer[] = [];
  for (const instruction of instructionsOf(response)) {
    const match = classify(instruction, keys, assets, target, mismatches);
    if (match !== null) matched.push(match);
  }
  if (matched.length > 0) return { matched };
  const reason = mismatchReasons(target.label).find(([kind]) => mismatches.has(kind))?.[1] ??
    `no SPL Token transferChecked into ${target.label}`;
  return { reason };
}
