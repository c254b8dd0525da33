// The Solana adapter: verifies SPL Token deposits that partners report (POST /payments/notify)
// and sends USDC from the hot wallet (refunds, onramp deliveries), over JSON-RPC with
// @solana/web3.js 1.x `Connection` (why 1.x, and every decision below: docs/solana-celo.md).
//
// verify: the transaction at the configured commitment (default finalized); a failed transaction
// is invalid; only SPL Token `transferChecked` of a configured mint into the deposit wallet's
// associated token account counts (top-level or inner instructions); the sender is the owner of
// the source token account (where a refund goes).
// send: transferChecked from the hot wallet's associated token account to the destination
// owner's (created idempotently, rent paid by the hot wallet). The signed transaction is recorded
// in the send journal before it is broadcast; a retry rebroadcasts the same bytes; a new
// transaction is built only when the recorded one can never land (blockhash expired and the
// signature absent at a finalized height past it, for the whole settle window every chain shares,
// src/chains/send-settle.ts) or failed finally on chain.
import { Connection, Transaction } from '@solana/web3.js';
import type { Keypair, MessageAccountKeys, PublicKey, SignatureStatus, VersionedTransactionResponse } from '@solana/web3.js';
import type { CryptoAsset } from '../domain/assets.ts';
import { fromBaseUnits, rescale } from '../domain/money.ts';
import type { JsonObject } from '../store/store.ts';
import type { ChainAdapter, ObservedTransfer, SendJournal, SendRequest, SendResult, VerifyResult } from './chains.ts';
import type { SolanaChainConfig } from './config.ts';
import {
  acknowledgeFailure, describeError, failed, fingerprintOf, loadAttempts, numberField, recordAttempt, sameFingerprint,
  sendAttemptsMaxDefault, stringField, unseenKey,
} from './send-helpers.ts';
import type { SendFingerprint } from './send-helpers.ts';
import { checkedSettleMs, unseenLongEnough } from './send-settle.ts';
import {
  associatedTokenAddress, base58Decode, base58Encode, commitmentReached, createAssociatedTokenAccountIdempotentInstruction,
  decodeTokenAccount, decodeTransferChecked, isPlainTransfer, isSignatureText, keypairFromSecret, parsePublicKey,
  setComputeUnitLimitInstruction, setComputeUnitPriceInstruction, token2022ProgramId, tokenAmountMax, tokenProgramId,
  transferCheckedInstruction,
} from './solana-helpers.ts';

export interface SolanaAssetConfig {
  /** The active mint (base58). Only classic SPL Token mints are supported. */
  readonly mint: string;
  readonly decimals: number;
}

export interface SolanaAdapterOptions {
  readonly rpcUrl: string;
  /** The deposit wallet: the OWNER public key; deposits go to its associated token account. */
  readonly depositAddress: string;
  /** Rotated-out deposit wallets: deposits to them still verify (transactions created before a rotation). */
  readonly previousDepositAddresses?: readonly string[];
  readonly assets: Readonly<Partial<Record<CryptoAsset, SolanaAssetConfig>>>;
  /** Commitment for verification and for reporting a send as confirmed. Default 'finalized'. */
  readonly commitment?: 'confirmed' | 'finalized';
  /** Name of the environment variable holding the hot wallet secret; unset: send() is refused. */
  readonly signerSecretEnv?: string;
  /** Where `signerSecretEnv` is read. Default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where signed transactions are recorded before broadcast; required for send(). */
  readonly journal?: SendJournal;
  /** Each JSON-RPC request is aborted after this. Default 10 s. */
  readonly rpcTimeoutMs?: number;
  /** Compute-unit limit of a send (attempt n uses limit + n). Default 100,000 (ATA creation + transfer need ~35,000). */
  readonly computeUnitLimit?: number;
  /** Optional priority fee for sends on a busy cluster. */
  readonly computeUnitPriceMicroLamports?: bigint;
  /** Transactions built per idempotency key at most (each after the previous can never land). Default 5. */
  readonly sendAttemptsMax?: number;
  /**
   * How long an attempt whose blockhash expired must stay unfound before a new transaction
   * replaces it (a lagging signature-lookup backend). Default 30 s (src/chains/send-settle.ts).
   */
  readonly unseenSettleMs?: number;
  /** Clock for `observedAtMs` when the node has no block time, journal timestamps and the settle window. */
  readonly nowMs?: () => number;
}

interface AssetAccounts {
  readonly asset: CryptoAsset;
  readonly mint: PublicKey;
  readonly decimals: number;
  /** The deposit wallet's associated token account for this mint (sends never go here). */
  readonly depositAccount: PublicKey;
  /** The current and the rotated-out deposit wallets' associated token accounts for this mint. */
  readonly depositAccounts: readonly PublicKey[];
}

interface PreparedSend {
  readonly request: SendRequest;
  readonly accounts: AssetAccounts;
  readonly amountBaseUnits: bigint;
  readonly destinationOwner: PublicKey;
  readonly fingerprint: SendFingerprint;
  readonly journal: SendJournal;
  readonly signer: Keypair;
}

/** One instruction, top-level or inner, with indexes into the transaction's account keys. */
interface IndexedInstruction {
  readonly programIdIndex: number;
  readonly accountIndexes: readonly number[];
  readonly data: Uint8Array;
}

interface MatchedTransfer {
  readonly accounts: AssetAccounts;
  readonly amountBaseUnits: bigint;
  readonly sourceIndex: number;
  readonly authorityIndex: number;
}

type Mismatch = 'wrong_mint' | 'wrong_destination' | 'unchecked_transfer' | 'token_2022' | 'decimals';

// Most specific first: the reason an operator or partner can act on.
const mismatchReasons: ReadonlyArray<readonly [Mismatch, string]> = [
  ['decimals', 'transferChecked decimals differ from the configured decimals of the mint'],
  ['wrong_mint', 'the transferred mint is not an accepted asset'],
  ['wrong_destination', 'the transfer goes to another token account than the deposit account'],
  ['unchecked_transfer', 'only SPL Token transferChecked is accepted (this is an unchecked transfer)'],
  ['token_2022', 'Token-2022 transfers are not accepted'],
];

const rpcTimeoutMsDefault = 10_000;
const computeUnitLimitDefault = 100_000;

export class SolanaAdapter implements ChainAdapter {
  readonly network = 'SOLANA' as const;
  private readonly connection: Connection;
  private readonly commitment: 'confirmed' | 'finalized';
  private readonly depositOwners: readonly PublicKey[];
  private readonly assets: readonly AssetAccounts[];
  private readonly signer: Keypair | null;
  private readonly journal: SendJournal | null;
  private readonly attemptsMax: number;
  private readonly unseenSettleMs: number;
  private readonly nowMs: () => number;

  constructor(private readonly options: SolanaAdapterOptions) {
    if (!/^https?:\/\//.test(options.rpcUrl)) throw new Error('SOLANA rpcUrl must be an http(s) URL');
    const owners = [options.depositAddress, ...(options.previousDepositAddresses ?? [])].map((text, index) => {
      const owner = parsePublicKey(text);
      if (owner === null) throw new Error(`SOLANA ${index === 0 ? 'depositAddress' : 'previousDepositAddresses'} is not a base58 public key`);
      return owner;
    });
    const [owner] = owners;
    if (owner === undefined) throw new Error('SOLANA depositAddress is missing');
    this.depositOwners = owners;
    this.assets = Object.entries(options.assets).map(([asset, config]) => {
      const mint = config === undefined ? null : parsePublicKey(config.mint);
      if (config === undefined || mint === null) throw new Error(`SOLANA assets.${asset}.mint is not a base58 public key`);
      if (!Number.isInteger(config.decimals) || config.decimals < 0 || config.decimals > 18) {
        throw new Error(`SOLANA assets.${asset}.decimals must be an integer in [0, 18]`);
      }
      return {
        asset: asset as CryptoAsset,
        mint,
        decimals: config.decimals,
        depositAccount: associatedTokenAddress(owner, mint),
        depositAccounts: owners.map((depositOwner) => associatedTokenAddress(depositOwner, mint)),
      };
    });
    if (this.assets.length === 0) throw new Error('SOLANA needs at least one asset');
    this.commitment = options.commitment ?? 'finalized';
    this.attemptsMax = options.sendAttemptsMax ?? sendAttemptsMaxDefault;
    if (!Number.isInteger(this.attemptsMax) || this.attemptsMax < 1 || this.attemptsMax > 100) {
      throw new Error('SOLANA sendAttemptsMax must be an integer in [1, 100]');
    }
    this.unseenSettleMs = checkedSettleMs(options.unseenSettleMs, 'SOLANA unseenSettleMs');
    this.journal = options.journal ?? null;
    this.nowMs = options.nowMs ?? Date.now;
    this.signer = loadSigner(options.signerSecretEnv, options.env ?? process.env);
    const timeoutMs = options.rpcTimeoutMs ?? rpcTimeoutMsDefault;
    this.connection = new Connection(options.rpcUrl, {
      commitment: this.commitment,
      disableRetryOnRateLimit: true, // bounded waits: the caller retries, not the library
      fetch: async (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
    });
  }

  /** The hot wallet's public key (null without a signer): fund it with SOL and the assets. */
  get hotWallet(): PublicKey | null {
    return this.signer?.publicKey ?? null;
  }

  /** The token account deposits of `asset` must be sent to. */
  depositTokenAccount(asset: CryptoAsset): PublicKey | null {
    return this.assets.find((candidate) => candidate.asset === asset)?.depositAccount ?? null;
  }

  // ---- verify ----

  /** Rejects only when the RPC node cannot be reached or answers malformed data. */
  async verify(onChainId: string): Promise<VerifyResult> {
    if (!isSignatureText(onChainId)) return { status: 'invalid', reason: 'not a Solana transaction signature' };
    const response = await this.connection.getTransaction(onChainId, {
      commitment: this.commitment,
      maxSupportedTransactionVersion: 0,
    });
    if (response === null) return this.notFound(onChainId);
    const meta = response.meta;
    if (meta === null) return { status: 'not_found', reason: 'the RPC node has no status for this transaction' };
    if (meta.err !== null) return { status: 'invalid', reason: 'the transaction failed on chain' };
    const keys = accountKeysOf(response);
    const mismatches = new Set<Mismatch>();
    const matched: MatchedTransfer[] = [];
    for (const instruction of instructionsOf(response)) {
      const match = this.classify(instruction, keys, mismatches);
      if (match !== null) matched.push(match);
    }
    if (matched.length === 0) {
      const reason = mismatchReasons.find(([kind]) => mismatches.has(kind))?.[1] ??
        'no SPL Token transferChecked into the deposit account';
      return { status: 'invalid', reason };
    }
    const observedAtMs = response.blockTime == null ? this.nowMs() : response.blockTime * 1000;
    const transfers: ObservedTransfer[] = [];
    for (const transfer of matched) {
      transfers.push({
        network: 'SOLANA',
        onChainId,
        asset: transfer.accounts.asset,
        amount: fromBaseUnits(transfer.amountBaseUnits, transfer.accounts.decimals),
        sender: await this.senderOf(response, keys, transfer),
        memo: null,
        observedAtMs,
      });
    }
    return { status: 'found', transfers };
  }

  private async notFound(signature: string): Promise<VerifyResult> {
    const { value } = await this.connection.getSignatureStatuses([signature], { searchTransactionHistory: true });
    const status = value[0] ?? null;
    if (status === null) return { status: 'not_found', reason: 'transaction not found' };
    return { status: 'not_found', reason: `not yet ${this.commitment} (${status.confirmationStatus ?? 'processed'})` };
  }

  /** A transferChecked of an accepted mint into its deposit account, or null (noting why not). */
  private classify(instruction: IndexedInstruction, keys: MessageAccountKeys, mismatches: Set<Mismatch>): MatchedTransfer | null {
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
      if (destination !== undefined && this.assets.some((asset) => asset.depositAccounts.some((account) => account.equals(destination)))) {
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
    const accounts = this.assets.find((asset) => asset.mint.equals(mint));
    if (accounts === undefined) {
      if (this.depositOwners.some((owner) => destination.equals(associatedTokenAddress(owner, mint)))) mismatches.add('wrong_mint');
      return null;
    }
    if (!accounts.depositAccounts.some((account) => account.equals(destination))) {
      mismatches.add('wrong_destination');
      return null;
    }
    if (decoded.decimals !== accounts.decimals) {
      mismatches.add('decimals');
      return null;
    }
    return { accounts, amountBaseUnits: decoded.amount, sourceIndex, authorityIndex };
  }

  /**
   * The owner of the source token account: from the node's token balances, else from the account
   * itself, else (the account no longer exists or is unreadable) the signing authority.
   */
  private async senderOf(response: VersionedTransactionResponse, keys: MessageAccountKeys, transfer: MatchedTransfer): Promise<string> {
    const balances = [...(response.meta?.preTokenBalances ?? []), ...(response.meta?.postTokenBalances ?? [])];
    const owner = balances.find((balance) => balance.accountIndex === transfer.sourceIndex)?.owner;
    if (owner !== undefined) return owner;
    const source = keys.get(transfer.sourceIndex);
    if (source !== undefined) {
      const account = await this.connection.getAccountInfo(source, this.commitment);
      const decoded = account !== null && account.owner.equals(tokenProgramId) ? decodeTokenAccount(account.data) : null;
      if (decoded !== null) return decoded.owner.toBase58();
    }
    const authority = keys.get(transfer.authorityIndex);
    if (authority === undefined) throw new Error('transferChecked authority index out of range');
    return authority.toBase58();
  }

  // ---- send ----

  async send(request: SendRequest): Promise<SendResult> {
    const prepared = this.prepare(request);
    if ('status' in prepared) return prepared;
    // Once a signed transaction is recorded, an infrastructure error is 'pending', never
    // 'failed': the transaction may be moving money, and only this key may try again.
    let inFlight: string | null = null;
    try {
      const key = request.idempotencyKey;
      const attempts = await loadAttempts(prepared.journal, 'SOLANA', key, this.attemptsMax);
      const first = attempts[0];
      if (first !== undefined && !sameFingerprint(first, prepared.fingerprint)) {
        return failed('idempotency key already used with a different asset, amount or destination', false);
      }
      const latest = attempts.at(-1);
      if (latest !== undefined) inFlight = stringField(latest, 'signature');
      if (latest === undefined) {
        const record = await this.newAttempt(prepared, 0);
        inFlight = stringField(record, 'signature');
        return await this.broadcastAndReport(record);
      }
      return await this.advance(prepared, attempts, (signature) => {
        inFlight = signature;
      });
    } catch (error) {
      if (inFlight !== null) return { status: 'pending', onChainId: inFlight };
      return failed(`Solana RPC or journal unavailable (${describeError(error)})`, true);
    }
  }

  private prepare(request: SendRequest): PreparedSend | SendResult {
    if (request.network !== 'SOLANA') return failed(`this adapter sends on SOLANA, not ${request.network}`, false);
    const accounts = this.assets.find((asset) => asset.asset === request.asset);
    if (accounts === undefined) return failed(`${request.asset} is not configured on SOLANA`, false);
    const atDecimals = rescale(request.amount, accounts.decimals, 'floor');
    if (rescale(atDecimals, request.amount.scale, 'floor').units !== request.amount.units) {
      return failed(`amount has more than ${accounts.decimals} decimals`, false);
    }
    if (atDecimals.units <= 0n || atDecimals.units > tokenAmountMax) return failed('amount out of range', false);
    const destinationOwner = parsePublicKey(request.destination);
    if (destinationOwner === null) return failed('destination is not a Solana address', false);
    if (this.journal === null) return failed('no send journal configured', false);
    if (this.signer === null) return failed('the SOLANA hot wallet key is not configured', false);
    return {
      request,
      accounts,
      amountBaseUnits: atDecimals.units,
      destinationOwner,
      fingerprint: fingerprintOf(request, atDecimals.units, destinationOwner.toBase58()),
      journal: this.journal,
      signer: this.signer,
    };
  }

  private async advance(prepared: PreparedSend, attempts: JsonObject[], onAttempt: (signature: string) => void): Promise<SendResult> {
    const signatures = attempts.map((attempt) => stringField(attempt, 'signature'));
    const { value: statuses } = await this.connection.getSignatureStatuses(signatures, { searchTransactionHistory: true });
    // Only the latest attempt can have landed (a new one is built only when the previous cannot),
    // but a success anywhere decides.
    for (const [index, signature] of signatures.entries()) {
      const status = statuses[index] ?? null;
      if (status !== null && status.err === null) return this.report(signature, status);
    }
    const latestIndex = attempts.length - 1;
    const latest = attempts[latestIndex];
    const signature = signatures[latestIndex];
    if (latest === undefined || signature === undefined) throw new Error('no attempt to advance');
    const status = statuses[latestIndex] ?? null;
    if (status !== null) {
      // Landed with an error. Not final yet: it may still be rolled back onto a fork.
      if (!commitmentReached(status.confirmationStatus, this.commitment)) return { status: 'pending', onChainId: signature };
      return this.afterFinalFailure(prepared, attempts, 'the transfer failed on chain', onAttempt);
    }
    if (await this.definitivelyAbsent(latest)) return this.replaceOnceSettled(prepared, attempts, onAttempt);
    return this.broadcastAndReport(latest);
  }

  /**
   * The latest attempt looks dead (blockhash expired at a finalized height, signature unfound). A
   * lagging lookup backend could be hiding it, so it is rebuilt only after the settle window;
   * 'pending' until then.
   */
  private async replaceOnceSettled(prepared: PreparedSend, attempts: JsonObject[], onAttempt: (signature: string) => void): Promise<SendResult> {
    const attempt = attempts.length - 1;
    const latest = attempts[attempt];
    if (latest === undefined) throw new Error('no attempt to replace');
    const sightingKey = unseenKey('SOLANA', prepared.request.idempotencyKey, attempt);
    if (!(await unseenLongEnough(prepared.journal, sightingKey, this.nowMs(), this.unseenSettleMs))) {
      return { status: 'pending', onChainId: stringField(latest, 'signature') };
    }
    return this.nextAttempt(prepared, attempts, onAttempt);
  }

  private async afterFinalFailure(
    prepared: PreparedSend, attempts: JsonObject[], reason: string, onAttempt: (signature: string) => void,
  ): Promise<SendResult> {
    const attempt = attempts.length - 1;
    const retryable = attempts.length < this.attemptsMax;
    const firstReport = await acknowledgeFailure(prepared.journal, 'SOLANA', prepared.request.idempotencyKey, attempt, reason);
    if (firstReport || !retryable) {
      return failed(retryable ? `${reason}; a retry with the same key sends a new transaction` : `${reason}; no attempts left`, retryable);
    }
    return this.nextAttempt(prepared, attempts, onAttempt);
  }

  private async nextAttempt(prepared: PreparedSend, attempts: JsonObject[], onAttempt: (signature: string) => void): Promise<SendResult> {
    if (attempts.length >= this.attemptsMax) {
      return failed(`no transaction landed after ${attempts.length} attempts`, false);
    }
    const record = await this.newAttempt(prepared, attempts.length);
    onAttempt(stringField(record, 'signature'));
    return this.broadcastAndReport(record);
  }

  /**
   * A transaction whose blockhash has expired can never be processed. The finalized block height
   * is read FIRST: if it is past lastValidBlockHeight, any landing happened at or below it, so it
   * is already finalized and the signature lookup that follows would find it.
   */
  private async definitivelyAbsent(attempt: JsonObject): Promise<boolean> {
    const finalizedHeight = await this.connection.getBlockHeight('finalized');
    if (finalizedHeight <= numberField(attempt, 'lastValidBlockHeight')) return false;
    const { value } = await this.connection.getSignatureStatuses([stringField(attempt, 'signature')], { searchTransactionHistory: true });
    return (value[0] ?? null) === null;
  }

  /** Builds, signs and records attempt n; returns the recorded one (another caller's, if it won). */
  private async newAttempt(prepared: PreparedSend, attempt: number): Promise<JsonObject> {
    const { accounts, signer } = prepared;
    const { blockhash, lastValidBlockHeight } = await this.connection.getLatestBlockhash('finalized');
    const transaction = new Transaction({ feePayer: signer.publicKey, blockhash, lastValidBlockHeight });
    // Ed25519 signatures are deterministic: a rebuilt transaction under the same blockhash would
    // be byte-identical to the failed one (and refused as already processed). The limit differs
    // per attempt, so every attempt has its own signature.
    transaction.add(setComputeUnitLimitInstruction((this.options.computeUnitLimit ?? computeUnitLimitDefault) + attempt));
    if (this.options.computeUnitPriceMicroLamports !== undefined) {
      transaction.add(setComputeUnitPriceInstruction(this.options.computeUnitPriceMicroLamports));
    }
    const destinationAccount = associatedTokenAddress(prepared.destinationOwner, accounts.mint);
    transaction.add(
      createAssociatedTokenAccountIdempotentInstruction(signer.publicKey, destinationAccount, prepared.destinationOwner, accounts.mint),
      transferCheckedInstruction({
        source: associatedTokenAddress(signer.publicKey, accounts.mint),
        mint: accounts.mint,
        destination: destinationAccount,
        owner: signer.publicKey,
      }, prepared.amountBaseUnits, accounts.decimals),
    );
    transaction.sign(signer);
    if (transaction.signature === null) throw new Error('transaction was not signed');
    const record: JsonObject = {
      kind: 'solana-transfer',
      attempt,
      request: prepared.fingerprint,
      signature: base58Encode(transaction.signature),
      transactionBase64: transaction.serialize().toString('base64'),
      blockhash,
      lastValidBlockHeight,
      recordedAtMs: this.nowMs(),
    };
    return recordAttempt(prepared.journal, 'SOLANA', prepared.request.idempotencyKey, attempt, record);
  }

  /** Sends the recorded bytes (never re-signed) and reports where the signature stands. */
  private async broadcastAndReport(record: JsonObject): Promise<SendResult> {
    const signature = stringField(record, 'signature');
    const bytes = Buffer.from(stringField(record, 'transactionBase64'), 'base64');
    // No preflight: the outcome is read from the chain, and a preflight "already processed"
    // answer on a rebroadcast would be an error to interpret by its message.
    await this.connection.sendRawTransaction(bytes, { skipPreflight: true });
    const { value } = await this.connection.getSignatureStatuses([signature], { searchTransactionHistory: true });
    const status = value[0] ?? null;
    return status === null || status.err !== null ? { status: 'pending', onChainId: signature } : this.report(signature, status);
  }

  private report(signature: string, status: SignatureStatus): SendResult {
    return commitmentReached(status.confirmationStatus, this.commitment)
      ? { status: 'confirmed', onChainId: signature }
      : { status: 'pending', onChainId: signature };
  }
}

/** What a live Solana adapter needs besides its CHAINS_FILE section. */
export interface SolanaAdapterDependencies {
  readonly journal: SendJournal;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly nowMs?: () => number;
}

/** The adapter for the SOLANA section of CHAINS_FILE (src/chains/config.ts). */
export function solanaAdapterFromConfig(config: SolanaChainConfig, dependencies: SolanaAdapterDependencies): SolanaAdapter {
  const assets: Partial<Record<CryptoAsset, SolanaAssetConfig>> = {};
  if (config.assets.USDC !== undefined) assets.USDC = { mint: config.assets.USDC.mint, decimals: config.assets.USDC.decimals };
  return new SolanaAdapter({
    rpcUrl: config.rpcUrl,
    depositAddress: config.depositAddress,
    ...(config.previousDepositAddresses === undefined ? {} : { previousDepositAddresses: config.previousDepositAddresses }),
    assets,
    commitment: config.commitment,
    signerSecretEnv: config.signerSecretEnv,
    journal: dependencies.journal,
    ...(dependencies.env === undefined ? {} : { env: dependencies.env }),
    ...(dependencies.nowMs === undefined ? {} : { nowMs: dependencies.nowMs }),
  });
}

function loadSigner(envName: string | undefined, env: Readonly<Record<string, string | undefined>>): Keypair | null {
  if (envName === undefined) return null;
  const secret = env[envName];
  if (secret === undefined || secret === '') return null;
  const keypair = keypairFromSecret(secret);
  // The message names the variable, never its content.
  if (keypair === null) throw new Error(`${envName} does not hold a Solana secret key (JSON byte array or base58)`);
  return keypair;
}

function accountKeysOf(response: VersionedTransactionResponse): MessageAccountKeys {
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
