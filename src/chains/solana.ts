// The Solana adapter: verifies SPL Token deposits that partners report (POST /payments/notify)
// and sends USDC from the hot wallet (refunds, onramp deliveries), over JSON-RPC with
// @solana/web3.js 1.x `Connection` (why 1.x, and every decision below: docs/solana-celo.md).
//
// verify: the transaction at the configured commitment (default finalized); a failed transaction
// is invalid; only SPL Token `transferChecked` of a configured mint into the deposit wallet's
// associated token account counts (top-level or inner instructions); the sender is the owner of
// the source token account (where a refund goes).
// Per-transaction deposit addresses (PerTransactionDeposits): each transaction's deposit wallet is
// derived from a master secret (src/chains/solana-deposit-keys.ts); verifyInto is verify with that
// wallet's token account as the only destination; sweep moves its balance to the hot wallet and
// closes it, through the same journal as send.
// send: transferChecked from the hot wallet's associated token account to the destination
// owner's (created idempotently, rent paid by the hot wallet). The signed transaction is recorded
// in the send journal before it is broadcast; a retry rebroadcasts the same bytes; a new
// transaction is built only when the recorded one can never land (blockhash expired and the
// signature absent at a finalized height past it, for the whole settle window every chain shares,
// src/chains/send-settle.ts) or failed finally on chain.
// Which instructions of a fetched transaction count as deposits is decided in solana-transfers.ts.
import { Connection, Transaction } from '@solana/web3.js';
import type { Keypair, MessageAccountKeys, PublicKey, SignatureStatus, TransactionInstruction, VersionedTransactionResponse } from '@solana/web3.js';
import type { CryptoAsset } from '../domain/assets.ts';
import { fromBaseUnits, rescale } from '../domain/money.ts';
import type { JsonObject } from '../store/store.ts';
import type { ChainAdapter, ObservedTransfer, SendJournal, SendRequest, SendResult, VerifyResult } from './chains.ts';
import type { SolanaChainConfig } from './config.ts';
import type { PerTransactionDeposits, SweepRequest, SweepResult } from './deposit-addresses.ts';
import { depositKeypair, loadDepositMasterSecret } from './solana-deposit-keys.ts';
import {
  acknowledgeFailure, describeError, failed, fingerprintOf, loadAttempts, numberField, recordAttempt, sameFingerprint,
  sendAttemptsMaxDefault, stringField, unseenKey,
} from './send-helpers.ts';
import type { SendFingerprint } from './send-helpers.ts';
import { checkedSettleMs, unseenLongEnough } from './send-settle.ts';
import {
  associatedTokenAddress, base58Encode, closeAccountInstruction, commitmentReached, createAssociatedTokenAccountIdempotentInstruction,
  decodeTokenAccount, isSignatureText, keypairFromSecret, parsePublicKey,
  setComputeUnitLimitInstruction, setComputeUnitPriceInstruction, tokenAmountMax, tokenProgramId,
  transferCheckedInstruction,
} from './solana-helpers.ts';
import { accountKeysOf, matchTransfers } from './solana-transfers.ts';
import type { AssetAccounts, DepositTarget, MatchedTransfer } from './solana-transfers.ts';

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
  /**
   * Name of the environment variable holding the master secret of the per-transaction deposit
   * wallets (src/chains/solana-deposit-keys.ts). Given: the variable must hold a valid secret or
   * the adapter refuses to start. Not given: addressFor and sweep throw.
   */
  readonly depositMasterSecretEnv?: string;
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

interface PreparedSend {
  readonly request: SendRequest;
  readonly accounts: AssetAccounts;
  readonly amountBaseUnits: bigint;
  readonly destinationOwner: PublicKey;
  readonly fingerprint: SendFingerprint;
  readonly journal: SendJournal;
  readonly signer: Keypair;
}

/** A journaled transaction (a send or a sweep): one transfer per key, whatever happens. */
interface JournaledRun {
  readonly key: string;
  /** Recorded with each attempt: `solana-transfer`, `solana-sweep`. */
  readonly kind: string;
  /** What the key is for; a retry must match it. */
  readonly fingerprint: SendFingerprint;
  readonly journal: SendJournal;
  /** The hot wallet: pays the fee and signs first. */
  readonly feePayer: Keypair;
  /** The instructions of a new attempt (after the compute budget) and its other signers; null: nothing to sign. */
  build(): Promise<{ readonly instructions: TransactionInstruction[]; readonly signers: Keypair[]; readonly details?: JsonObject } | null>;
}

const rpcTimeoutMsDefault = 10_000;
const computeUnitLimitDefault = 100_000;

export class SolanaAdapter implements ChainAdapter, PerTransactionDeposits {
  readonly network = 'SOLANA' as const;
  private readonly connection: Connection;
  private readonly commitment: 'confirmed' | 'finalized';
  private readonly assets: readonly AssetAccounts[];
  /** The shared (legacy) deposit wallets, current and rotated out: where `verify` looks. */
  private readonly sharedTarget: DepositTarget;
  private readonly signer: Keypair | null;
  private readonly masterSecret: Uint8Array | null;
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
      };
    });
    if (this.assets.length === 0) throw new Error('SOLANA needs at least one asset');
    this.sharedTarget = this.targetOf(owners, 'the deposit account');
    this.commitment = options.commitment ?? 'finalized';
    this.attemptsMax = options.sendAttemptsMax ?? sendAttemptsMaxDefault;
    if (!Number.isInteger(this.attemptsMax) || this.attemptsMax < 1 || this.attemptsMax > 100) {
      throw new Error('SOLANA sendAttemptsMax must be an integer in [1, 100]');
    }
    this.unseenSettleMs = checkedSettleMs(options.unseenSettleMs, 'SOLANA unseenSettleMs');
    this.journal = options.journal ?? null;
    this.nowMs = options.nowMs ?? Date.now;
    this.signer = loadSigner(options.signerSecretEnv, options.env ?? process.env);
    this.masterSecret = options.depositMasterSecretEnv === undefined ? null : loadDepositMasterSecret(options.depositMasterSecretEnv, options.env ?? process.env);
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
    return this.verifyTo(onChainId, this.sharedTarget);
  }

  /** The target of per-transaction owners (or of one frozen shared owner). */
  private targetOf(owners: readonly PublicKey[], label: string): DepositTarget {
    return { owners, label, accounts: new Map(this.assets.map((asset) => [asset.asset, owners.map((owner) => associatedTokenAddress(owner, asset.mint))])) };
  }

  private async verifyTo(onChainId: string, target: DepositTarget): Promise<VerifyResult> {
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
    const found = matchTransfers(response, keys, this.assets, target);
    if ('reason' in found) return { status: 'invalid', reason: found.reason };
    const observedAtMs = response.blockTime == null ? this.nowMs() : response.blockTime * 1000;
    const transfers: ObservedTransfer[] = [];
    for (const transfer of found.matched) {
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
    const { accounts, signer } = prepared;
    const destinationAccount = associatedTokenAddress(prepared.destinationOwner, accounts.mint);
    const result = await this.runJournaled({
      key: request.idempotencyKey,
      kind: 'solana-transfer',
      fingerprint: prepared.fingerprint,
      journal: prepared.journal,
      feePayer: signer,
      build: () => Promise.resolve({
        instructions: [
          createAssociatedTokenAccountIdempotentInstruction(signer.publicKey, destinationAccount, prepared.destinationOwner, accounts.mint),
          transferCheckedInstruction({
            source: associatedTokenAddress(signer.publicKey, accounts.mint),
            mint: accounts.mint,
            destination: destinationAccount,
            owner: signer.publicKey,
          }, prepared.amountBaseUnits, accounts.decimals),
        ],
        signers: [],
      }),
    });
    // A send always has something to sign; 'nothing' is a sweep's answer only.
    return result === 'nothing' ? failed('nothing was signed', false) : result;
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

  /**
   * One transfer per key (docs/solana-celo.md "Send: exactly one transfer per idempotency key"),
   * for sends and sweeps alike: the recorded attempts are read first, a landed one is reported, the
   * latest is rebroadcast, and a new attempt is built only when the previous one can never land.
   * 'nothing': a new attempt was due and `build` had nothing to sign (a sweep of an empty account).
   */
  private async runJournaled(run: JournaledRun): Promise<SendResult | 'nothing'> {
    // Once a signed transaction is recorded, an infrastructure error is 'pending', never
    // 'failed': the transaction may be moving money, and only this key may try again.
    let inFlight: string | null = null;
    try {
      const attempts = await loadAttempts(run.journal, 'SOLANA', run.key, this.attemptsMax);
      const first = attempts[0];
      if (first !== undefined && !sameFingerprint(first, run.fingerprint)) {
        return failed('idempotency key already used with a different asset, amount or destination', false);
      }
      const latest = attempts.at(-1);
      if (latest !== undefined) inFlight = stringField(latest, 'signature');
      if (latest === undefined) {
        const record = await this.newAttempt(run, 0);
        if (record === null) return 'nothing';
        inFlight = stringField(record, 'signature');
        return await this.broadcastAndReport(record);
      }
      return await this.advance(run, attempts, (signature) => {
        inFlight = signature;
      });
    } catch (error) {
      if (inFlight !== null) return { status: 'pending', onChainId: inFlight };
      return failed(`Solana RPC or journal unavailable (${describeError(error)})`, true);
    }
  }

  private async advance(run: JournaledRun, attempts: JsonObject[], onAttempt: (signature: string) => void): Promise<SendResult | 'nothing'> {
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
      return this.afterFinalFailure(run, attempts, 'the transfer failed on chain', onAttempt);
    }
    if (await this.definitivelyAbsent(latest)) return this.replaceOnceSettled(run, attempts, onAttempt);
    return this.broadcastAndReport(latest);
  }

  /**
   * The latest attempt looks dead (blockhash expired at a finalized height, signature unfound). A
   * lagging lookup backend could be hiding it, so it is rebuilt only after the settle window;
   * 'pending' until then.
   */
  private async replaceOnceSettled(run: JournaledRun, attempts: JsonObject[], onAttempt: (signature: string) => void): Promise<SendResult | 'nothing'> {
    const attempt = attempts.length - 1;
    const latest = attempts[attempt];
    if (latest === undefined) throw new Error('no attempt to replace');
    const sightingKey = unseenKey('SOLANA', run.key, attempt);
    if (!(await unseenLongEnough(run.journal, sightingKey, this.nowMs(), this.unseenSettleMs))) {
      return { status: 'pending', onChainId: stringField(latest, 'signature') };
    }
    return this.nextAttempt(run, attempts, onAttempt);
  }

  private async afterFinalFailure(
    run: JournaledRun, attempts: JsonObject[], reason: string, onAttempt: (signature: string) => void,
  ): Promise<SendResult | 'nothing'> {
    const attempt = attempts.length - 1;
    const retryable = attempts.length < this.attemptsMax;
    const firstReport = await acknowledgeFailure(run.journal, 'SOLANA', run.key, attempt, reason);
    if (firstReport || !retryable) {
      return failed(retryable ? `${reason}; a retry with the same key sends a new transaction` : `${reason}; no attempts left`, retryable);
    }
    return this.nextAttempt(run, attempts, onAttempt);
  }

  private async nextAttempt(run: JournaledRun, attempts: JsonObject[], onAttempt: (signature: string) => void): Promise<SendResult | 'nothing'> {
    if (attempts.length >= this.attemptsMax) {
      return failed(`no transaction landed after ${attempts.length} attempts`, false);
    }
    const record = await this.newAttempt(run, attempts.length);
    if (record === null) return 'nothing';
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

  /**
   * Builds, signs and records attempt n; returns the recorded one (another caller's, if it won),
   * or null when `build` has nothing to sign.
   */
  private async newAttempt(run: JournaledRun, attempt: number): Promise<JsonObject | null> {
    const body = await run.build();
    if (body === null) return null;
    const { blockhash, lastValidBlockHeight } = await this.connection.getLatestBlockhash('finalized');
    const transaction = new Transaction({ feePayer: run.feePayer.publicKey, blockhash, lastValidBlockHeight });
    // Ed25519 signatures are deterministic: a rebuilt transaction under the same blockhash would
    // be byte-identical to the failed one (and refused as already processed). The limit differs
    // per attempt, so every attempt has its own signature.
    transaction.add(setComputeUnitLimitInstruction((this.options.computeUnitLimit ?? computeUnitLimitDefault) + attempt));
    if (this.options.computeUnitPriceMicroLamports !== undefined) {
      transaction.add(setComputeUnitPriceInstruction(this.options.computeUnitPriceMicroLamports));
    }
    transaction.add(...body.instructions);
    transaction.sign(run.feePayer, ...body.signers);
    if (transaction.signature === null) throw new Error('transaction was not signed');
    const record: JsonObject = {
      kind: run.kind,
      attempt,
      request: run.fingerprint,
      signature: base58Encode(transaction.signature),
      transactionBase64: transaction.serialize().toString('base64'),
      blockhash,
      lastValidBlockHeight,
      recordedAtMs: this.nowMs(),
      ...body.details,
    };
    return recordAttempt(run.journal, 'SOLANA', run.key, attempt, record);
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

  // ---- per-transaction deposit addresses (src/chains/deposit-addresses.ts) ----

  /** The transaction's deposit wallet (owner); its associated token accounts receive the deposits. */
  addressFor(transactionId: string): string {
    return this.depositOwnerOf(transactionId).publicKey.toBase58();
  }

  private depositOwnerOf(transactionId: string): Keypair {
    if (this.masterSecret === null) throw new Error('SOLANA per-transaction deposit addresses need depositMasterSecretEnv');
    return depositKeypair(this.masterSecret, transactionId);
  }

  /** The transfers of `onChainId` into `address`'s associated token accounts (a transfer elsewhere is invalid). */
  async verifyInto(onChainId: string, address: string): Promise<VerifyResult> {
    const owner = parsePublicKey(address);
    if (owner === null) return { status: 'invalid', reason: 'the deposit address is not a Solana public key' };
    return this.verifyTo(onChainId, this.targetOf([owner], 'this transaction\'s deposit account'));
  }

  /**
   * Signatures of successful transactions touching `address`'s token accounts, newest first, at
   * most `limit` (the caller verifies each: our own sweep is listed too, and is not a deposit).
   */
  async transfersInto(address: string, limit: number): Promise<readonly string[]> {
    const owner = parsePublicKey(address);
    if (owner === null || limit < 1) return [];
    const found: Array<{ signature: string; slot: number }> = [];
    for (const accounts of this.assets) {
      const listed = await this.connection.getSignaturesForAddress(associatedTokenAddress(owner, accounts.mint), { limit }, this.commitment);
      for (const item of listed) if (item.err === null) found.push({ signature: item.signature, slot: item.slot });
    }
    const unique = new Map(found.sort((a, b) => b.slot - a.slot).map((item) => [item.signature, item]));
    return [...unique.keys()].slice(0, limit);
  }

  /**
   * Moves the whole balance of the transaction's token account for `asset` to the hot wallet's and
   * closes the account, its rent going to the hot wallet; the hot wallet pays the fee, the deposit
   * wallet signs as the account's owner. Journaled like a send under its own key.
   */
  async sweep(request: SweepRequest): Promise<SweepResult> {
    const accounts = this.assets.find((asset) => asset.asset === request.asset);
    if (accounts === undefined) return failed(`${request.asset} is not configured on SOLANA`, false);
    if (this.journal === null) return failed('no send journal configured', false);
    if (this.signer === null) return failed('the SOLANA hot wallet key is not configured', false);
    const hotWallet = this.signer;
    const owner = this.depositOwnerOf(request.transactionId);
    const source = associatedTokenAddress(owner.publicKey, accounts.mint);
    const destination = associatedTokenAddress(hotWallet.publicKey, accounts.mint);
    const result = await this.runJournaled({
      key: request.idempotencyKey,
      kind: 'solana-sweep',
      // What a sweep moves is known only when an attempt is built: the fingerprint names the account.
      fingerprint: { asset: request.asset, amountBaseUnits: `balance:${source.toBase58()}`, destination: hotWallet.publicKey.toBase58() },
      journal: this.journal,
      feePayer: hotWallet,
      build: async () => {
        // Read where the latest deposits are visible: a balance read before a later deposit makes the
        // close fail on chain (nothing moves), and the retry builds a new attempt with the new balance.
        const account = await this.connection.getAccountInfo(source, 'confirmed');
        const decoded = account !== null && account.owner.equals(tokenProgramId) ? decodeTokenAccount(account.data) : null;
        if (decoded === null) return null; // no account: nothing was ever deposited, or it was swept and closed
        const instructions = [
          createAssociatedTokenAccountIdempotentInstruction(hotWallet.publicKey, destination, hotWallet.publicKey, accounts.mint),
        ];
        if (decoded.amount > 0n) {
          instructions.push(transferCheckedInstruction({ source, mint: accounts.mint, destination, owner: owner.publicKey }, decoded.amount, accounts.decimals));
        }
        instructions.push(closeAccountInstruction(source, hotWallet.publicKey, owner.publicKey));
        return { instructions, signers: [owner], details: { amountBaseUnits: decoded.amount.toString(), source: source.toBase58() } };
      },
    });
    return result === 'nothing' ? { status: 'nothing_to_sweep' } : result;
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
    depositMasterSecretEnv: config.depositMasterSecretEnv,
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

