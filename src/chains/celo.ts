// The Celo adapter: verifies ERC-20 deposits (USDC, USDT) that partners report, gives each
// transaction its own deposit address (a CREATE2 forwarder, contracts/), finds and sweeps what
// reaches those addresses, and sends tokens from the hot wallet, with viem 2 and its `celo` chain
// (chain id configurable). Decisions: docs/solana-celo.md.
//
// verify / verifyInto: the receipt must be `confirmations` blocks deep (the head counts as 1) and
// still on the canonical chain; a reverted transaction is invalid; every `Transfer(from, to,
// value)` log that an accepted token contract emitted with `to` = the deposit address (verify: the
// legacy shared addresses; verifyInto: the one address asked about) is a transfer; the sender is
// the log's `from`. USDT stays USDT here (conversion to USDC happens elsewhere).
// transfersInto: Transfer logs of the accepted tokens into an address, over a bounded block window
// that ends at the confirmation depth, newest first.
// send and sweep: one transaction signed by the hot wallet (an ERC-20 `transfer`; the factory's
// `sweep`) with a nonce allocated in this process (serialised) from the node's pending count; the
// signed bytes, hash and nonce are recorded in the send journal before broadcast; retries
// rebroadcast the same bytes; a new transaction (new nonce) is built only when the recorded one
// can never be mined (its nonce was used by another transaction at confirmation depth, and its
// receipt stayed unfound for the settle window every chain shares, src/chains/send-settle.ts) or
// it reverted at depth.
// Beside it: reading Transfer logs (celo-transfers.ts), the factory check (celo-factory-check.ts),
// the adapter from its CHAINS_FILE section (celo-config.ts).
import {
  BaseError, ExecutionRevertedError, TransactionReceiptNotFoundError, createPublicClient, encodeFunctionData, erc20Abi, getAbiItem, http, keccak256,
} from 'viem';
import type { Address, Hex, PublicClient, TransactionReceipt } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { celo } from 'viem/chains';
import type { CryptoAsset } from '../domain/assets.ts';
import { isCanonicalUuid } from '../domain/ids.ts';
import { rescale } from '../domain/money.ts';
import type { JsonObject } from '../store/store.ts';
import type { ChainAdapter, SendJournal, SendRequest, SendResult, VerifyResult } from './chains.ts';
import type { PerTransactionDeposits, SweepRequest } from './deposit-addresses.ts';
import { DepositFactoryError, checkForwarderFactory } from './celo-factory-check.ts';
import { depositForwarderFactoryAbi } from './celo-contracts.ts';
import { depositSalt, forwarderAddress, sweepCallData } from './celo-forwarders.ts';
import {
  SerialQueue, boundedInteger, isTransactionHash, loadSigner, maxBigInt, parseAddress, sameAddress, uint256Max, zeroAddress,
} from './celo-helpers.ts';
import { assetContracts, transactionsNewestFirst, transfersOfReceipt } from './celo-transfers.ts';
import type { AssetContract } from './celo-transfers.ts';
import {
  acknowledgeFailure, describeError, failed, fingerprintOf, loadAttempts, numberField, recordAttempt, sameFingerprint,
  sendAttemptsMaxDefault, stringField, unseenKey,
} from './send-helpers.ts';
import type { SendFingerprint } from './send-helpers.ts';
import { checkedSettleMs, unseenLongEnough } from './send-settle.ts';

export interface CeloAssetConfig {
  /** The token contract (ERC-20). */
  readonly contract: string;
  readonly decimals: number;
}

export interface CeloAdapterOptions {
  readonly rpcUrl: string;
  /** Default 42220 (Celo mainnet); the RPC node must serve the same chain id. */
  readonly chainId?: number;
  readonly depositAddress: string;
  /** Rotated-out deposit addresses: deposits to them still verify (transactions created before a rotation). */
  readonly previousDepositAddresses?: readonly string[];
  /** The DepositForwarderFactory (scripts/celo-deploy-factory.ts): per-transaction addresses derive from it. */
  readonly depositFactory: string;
  /** transfersInto looks this many blocks back from the confirmed head. Default 10,000 (≈ 3 h at 1 s blocks). */
  readonly depositScanBlocks?: number;
  /** Blocks per eth_getLogs request (RPC providers cap the range). Default 10,000. */
  readonly logBlocksPerRequestMax?: number;
  readonly assets: Readonly<Partial<Record<CryptoAsset, CeloAssetConfig>>>;
  /** Blocks a transaction must be deep (its own block counts as 1; 0 means 1) before it counts. Default 3. */
  readonly confirmations?: number;
  /** Name of the environment variable holding the hot wallet's private key; unset: send() is refused. */
  readonly signerSecretEnv?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where signed transactions are recorded before broadcast; required for send(). */
  readonly journal?: SendJournal;
  /** Each JSON-RPC request is aborted after this. Default 10 s. */
  readonly rpcTimeoutMs?: number;
  /** Transactions built per idempotency key at most. Default 5. */
  readonly sendAttemptsMax?: number;
  /** Gas limit = estimate × this / 100. Default 130. */
  readonly gasLimitPercent?: number;
  /**
   * How long an attempt whose nonce is used at depth must stay without a receipt before a new
   * transaction replaces it (a lagging receipt backend). Default 30 s (src/chains/send-settle.ts).
   */
  readonly unseenSettleMs?: number;
  /** The clock of journal timestamps and of the settle window (the service's injected clock). */
  readonly nowMs?: () => number;
}

/**
 * One journaled, idempotent transaction from the hot wallet: a send (the token's `transfer`) or a
 * sweep (the factory's `sweep`). Both go through the same attempt machinery.
 */
interface PreparedCall {
  readonly kind: 'celo-transfer' | 'celo-sweep';
  readonly idempotencyKey: string;
  /** The contract called (token or factory) and the calldata. */
  readonly to: Address;
  readonly data: Hex;
  readonly fingerprint: SendFingerprint;
  /** How answers name it: "the transfer reverted on chain", "the sweep …". */
  readonly noun: 'transfer' | 'sweep';
  /** The answer when estimating gas reverts (nothing is signed). */
  readonly wouldRevert: string;
  /** Checked before a NEW transaction is signed (never before a recorded one is rebroadcast). */
  readonly precondition: (() => Promise<SendResult | null>) | null;
  readonly journal: SendJournal;
  readonly signer: PrivateKeyAccount;
}

type BuiltAttempt =
  | { readonly kind: 'recorded'; readonly record: JsonObject }
  /** Refused before signing: nothing was recorded or sent. */
  | { readonly kind: 'refused'; readonly result: SendResult };

const rpcTimeoutMsDefault = 10_000;
const confirmationsDefault = 3;
const gasLimitPercentDefault = 130n;
const depositScanBlocksDefault = 10_000;
const depositScanBlocksMax = 1_000_000;
const logBlocksPerRequestMaxDefault = 10_000;
const transfersIntoLimitMax = 1_000;
/** What a sweep fingerprint says instead of an amount: the balance at execution, whatever it is. */
const wholeBalance = 'whole balance';
const transferEvent = getAbiItem({ abi: erc20Abi, name: 'Transfer' });

export class CeloAdapter implements ChainAdapter, PerTransactionDeposits {
  readonly network = 'CELO' as const;
  private readonly client: PublicClient;
  private readonly chainId: number;
  /** The legacy shared deposit address and its rotated-out predecessors (verify). */
  private readonly depositAddresses: readonly Address[];
  private readonly depositFactory: Address;
  private readonly depositScanBlocks: bigint;
  private readonly logBlocksPerRequestMax: bigint;
  private readonly tokens: readonly AssetContract[];
  private readonly confirmations: bigint;
  private readonly signer: PrivateKeyAccount | null;
  private readonly journal: SendJournal | null;
  private readonly attemptsMax: number;
  private readonly gasLimitPercent: bigint;
  private readonly unseenSettleMs: number;
  private readonly nowMs: () => number;
  private readonly nonceQueue = new SerialQueue();
  /** The next nonce this process has not handed out yet (the node's pending count may lag it). */
  private nextNonce = 0;
  private chainChecked: Promise<void> | null = null;
  private factoryChecked: Promise<void> | null = null;

  constructor(options: CeloAdapterOptions) {
    if (!/^https?:\/\//.test(options.rpcUrl)) throw new Error('CELO rpcUrl must be an http(s) URL');
    this.chainId = options.chainId ?? celo.id;
    if (!Number.isSafeInteger(this.chainId) || this.chainId <= 0) throw new Error('CELO chainId must be a positive integer');
    this.depositAddresses = [options.depositAddress, ...(options.previousDepositAddresses ?? [])].map((text, index) => {
      const address = parseAddress(text);
      if (address === null || address === zeroAddress) {
        throw new Error(`CELO ${index === 0 ? 'depositAddress' : 'previousDepositAddresses'} is not an address`);
      }
      return address;
    });
    const factory = parseAddress(options.depositFactory);
    if (factory === null || factory === zeroAddress) throw new Error('CELO depositFactory is not an address');
    this.depositFactory = factory;
    const scanBlocks = options.depositScanBlocks ?? depositScanBlocksDefault;
    this.depositScanBlocks = BigInt(boundedInteger(scanBlocks, 1, depositScanBlocksMax, 'depositScanBlocks'));
    const perRequest = options.logBlocksPerRequestMax ?? logBlocksPerRequestMaxDefault;
    this.logBlocksPerRequestMax = BigInt(boundedInteger(perRequest, 1, depositScanBlocksMax, 'logBlocksPerRequestMax'));
    this.tokens = assetContracts(options.assets);
    const confirmations = options.confirmations ?? confirmationsDefault;
    if (!Number.isInteger(confirmations) || confirmations < 0 || confirmations > 1_000) {
      throw new Error('CELO confirmations must be an integer in [0, 1000]');
    }
    // A mined transaction is 1 deep in its own block: asking for 0 is asking for 1.
    this.confirmations = BigInt(Math.max(1, confirmations));
    this.attemptsMax = options.sendAttemptsMax ?? sendAttemptsMaxDefault;
    if (!Number.isInteger(this.attemptsMax) || this.attemptsMax < 1 || this.attemptsMax > 100) {
      throw new Error('CELO sendAttemptsMax must be an integer in [1, 100]');
    }
    this.gasLimitPercent = BigInt(options.gasLimitPercent ?? gasLimitPercentDefault);
    if (this.gasLimitPercent < 100n || this.gasLimitPercent > 1_000n) throw new Error('CELO gasLimitPercent must be in [100, 1000]');
    this.unseenSettleMs = checkedSettleMs(options.unseenSettleMs, 'CELO unseenSettleMs');
    this.journal = options.journal ?? null;
    this.nowMs = options.nowMs ?? Date.now;
    this.signer = loadSigner(options.signerSecretEnv, options.env ?? process.env);
    this.client = createPublicClient({
      chain: { ...celo, id: this.chainId },
      cacheTime: 0, // block numbers decide confirmation depth: never a cached head
      transport: http(options.rpcUrl, { timeout: options.rpcTimeoutMs ?? rpcTimeoutMsDefault, retryCount: 1 }),
    }) as PublicClient;
  }

  /** The hot wallet's address (null without a signer): fund it with CELO for gas and the tokens. */
  get hotWallet(): Address | null {
    return this.signer?.address ?? null;
  }

  /** Refuses to work against a node of another chain (a misconfigured rpcUrl must not pass). */
  private async ensureChain(): Promise<void> {
    this.chainChecked ??= (async () => {
      const served = await this.client.getChainId();
      if (served !== this.chainId) throw new Error(`CELO rpcUrl serves chain id ${served}, configured ${this.chainId}`);
    })();
    try {
      await this.chainChecked;
    } catch (error) {
      this.chainChecked = null;
      throw error;
    }
  }

  /**
   * Rejects unless `depositFactory` is a deployed DepositForwarderFactory whose forwarder is the one
   * this build derives addresses from: otherwise the addresses handed to partners would not be the
   * ones the factory deploys, and whatever reached them could never be swept. Run once on success
   * (by transfersInto and sweep); the composition root may await it at start. Rejects with a
   * DepositFactoryError for a wrong factory, with the RPC error when the node cannot answer.
   */
  /** PerTransactionDeposits.verifySetup: the factory check below. */
  verifySetup(): Promise<void> {
    return this.checkDepositFactory();
  }

  async checkDepositFactory(): Promise<void> {
    this.factoryChecked ??= (async () => {
      await this.ensureChain();
      await checkForwarderFactory(this.client, this.depositFactory, this.chainId);
    })();
    try {
      await this.factoryChecked;
    } catch (error) {
      this.factoryChecked = null;
      throw error;
    }
  }

  // ---- verify ----

  /** Rejects only when the RPC node cannot be reached, or serves another chain. */
  async verify(onChainId: string): Promise<VerifyResult> {
    return this.verifyTransfersTo(onChainId, this.depositAddresses);
  }

  /** verify for one per-transaction address (PerTransactionDeposits). */
  async verifyInto(onChainId: string, address: string): Promise<VerifyResult> {
    const recipient = parseAddress(address);
    if (recipient === null || recipient === zeroAddress) return { status: 'invalid', reason: 'not a Celo deposit address' };
    return this.verifyTransfersTo(onChainId, [recipient]);
  }

  /** The one verification: transfers of accepted tokens to one of `recipients`, at depth, canonical. */
  private async verifyTransfersTo(onChainId: string, recipients: readonly Address[]): Promise<VerifyResult> {
    if (!isTransactionHash(onChainId)) return { status: 'invalid', reason: 'not a transaction hash (0x + 64 hex digits)' };
    await this.ensureChain();
    const receipt = await this.receiptOrNull(onChainId);
    if (receipt === null) return { status: 'not_found', reason: 'transaction not found (or not mined yet)' };
    const head = await this.client.getBlockNumber();
    const depth = head - receipt.blockNumber + 1n;
    if (depth < this.confirmations) {
      return { status: 'not_found', reason: `not yet confirmed (${depth < 0n ? 0n : depth} of ${this.confirmations} confirmations)` };
    }
    // A receipt from a block that is no longer canonical (a reorganisation) proves nothing.
    const block = await this.client.getBlock({ blockNumber: receipt.blockNumber });
    if (block.hash !== receipt.blockHash) return { status: 'not_found', reason: 'the block was reorganised away; ask again' };
    if (receipt.status !== 'success') return { status: 'invalid', reason: 'the transaction reverted' };
    const found = transfersOfReceipt(receipt, this.tokens, recipients, Number(block.timestamp) * 1000);
    return 'reason' in found ? { status: 'invalid', reason: found.reason } : { status: 'found', transfers: found.transfers };
  }

  private async receiptOrNull(hash: Hex): Promise<TransactionReceipt | null> {
    try {
      return await this.client.getTransactionReceipt({ hash });
    } catch (error) {
      if (error instanceof BaseError && error.walk((cause) => cause instanceof TransactionReceiptNotFoundError) !== null) return null;
      throw error;
    }
  }

  // ---- per-transaction deposit addresses ----

  /** The forwarder address of a transaction (pure; see celo-forwarders.ts for the derivation). */
  addressFor(transactionId: string): Address {
    return forwarderAddress(this.depositFactory, depositSalt(transactionId));
  }

  /**
   * Hashes of the transactions whose accepted-token Transfer logs credit `address`, newest first,
   * at most `limit`, looking back `depositScanBlocks` from the newest block at confirmation depth
   * (in requests of at most `logBlocksPerRequestMax` blocks, stopping once `limit` are found).
   * Older deposits are found by notify or reconcile (verifyInto has no window).
   */
  async transfersInto(address: string, limit: number): Promise<readonly string[]> {
    const recipient = parseAddress(address);
    if (recipient === null) throw new Error('transfersInto: not a Celo address');
    if (!Number.isInteger(limit) || limit < 1 || limit > transfersIntoLimitMax) {
      throw new RangeError(`transfersInto: limit must be in [1, ${transfersIntoLimitMax}]`);
    }
    await this.checkDepositFactory();
    const newest = (await this.client.getBlockNumber()) - this.confirmations + 1n;
    if (newest < 0n) return [];
    const oldest = maxBigInt(newest - this.depositScanBlocks + 1n, 0n);
    const hashes: Hex[] = [];
    // Newest range first, so the usual case (a recent deposit) costs one request.
    for (let toBlock = newest; toBlock >= oldest && hashes.length < limit; toBlock -= this.logBlocksPerRequestMax) {
      const fromBlock = maxBigInt(toBlock - this.logBlocksPerRequestMax + 1n, oldest);
      const logs = await this.client.getLogs({
        address: this.tokens.map((token) => token.contract),
        event: transferEvent,
        args: { to: recipient },
        fromBlock,
        toBlock,
        strict: true,
      });
      for (const hash of transactionsNewestFirst(logs)) {
        if (!hashes.includes(hash)) hashes.push(hash);
      }
    }
    return hashes.slice(0, limit);
  }

  /**
   * Moves the whole balance of `asset` at the transaction's address to the factory's treasury (the
   * hot wallet), with one `factory.sweep(salt, token)` from the hot wallet, journaled exactly like
   * `send` (same keyspace: sweep keys must not collide with send keys). The hot wallet pays the
   * gas; the address needs none. A key sweeps once: a later deposit to the same address needs a
   * new key. No balance is not an error (the sweep moves nothing).
   */
  async sweep(request: SweepRequest): Promise<SendResult> {
    const prepared = this.prepareSweep(request);
    if ('status' in prepared) return prepared;
    return this.execute(prepared);
  }

  private prepareSweep(request: SweepRequest): PreparedCall | SendResult {
    if (!isCanonicalUuid(request.transactionId)) return failed('not a canonical transaction id', false);
    const token = this.tokens.find((candidate) => candidate.asset === request.asset);
    if (token === undefined) return failed(`${request.asset} is not configured on CELO`, false);
    if (this.journal === null) return failed('no send journal configured', false);
    if (this.signer === null) return failed('the CELO hot wallet key is not configured', false);
    const signer = this.signer;
    const salt = depositSalt(request.transactionId);
    return {
      kind: 'celo-sweep',
      idempotencyKey: request.idempotencyKey,
      to: this.depositFactory,
      data: sweepCallData(salt, token.contract),
      fingerprint: { asset: token.asset, amountBaseUnits: wholeBalance, destination: forwarderAddress(this.depositFactory, salt) },
      noun: 'sweep',
      wouldRevert: 'the sweep would revert (does the token refuse to move the balance?)',
      precondition: async () => this.sweepPrecondition(signer),
      journal: this.journal,
      signer,
    };
  }

  /**
   * Before signing a sweep: the factory is ours, and its treasury is this hot wallet. A treasury
   * that is not (a rotation half done, or an admin key in the wrong hands) stops automatic sweeps:
   * the service must never pay to move deposits to an address it does not hold.
   */
  private async sweepPrecondition(signer: PrivateKeyAccount): Promise<SendResult | null> {
    try {
      await this.checkDepositFactory();
    } catch (error) {
      // Retryable: fixing CHAINS_FILE and restarting makes the same key sweep.
      if (error instanceof DepositFactoryError) return failed(error.message, true);
      throw error;
    }
    const factory = this.depositFactory;
    const treasury = await this.client.readContract({ address: factory, abi: depositForwarderFactoryAbi, functionName: 'treasury' });
    if (sameAddress(treasury, signer.address)) return null;
    return failed(`the deposit factory's treasury ${treasury} is not this hot wallet; sweeping waits for the factory admin (setTreasury)`, true);
  }

  // ---- send ----

  async send(request: SendRequest): Promise<SendResult> {
    const prepared = this.prepare(request);
    if ('status' in prepared) return prepared;
    return this.execute(prepared);
  }

  /** Journaled, idempotent execution of one call from the hot wallet (send or sweep). */
  private async execute(prepared: PreparedCall): Promise<SendResult> {
    // Once a signed transaction is recorded, an infrastructure error is 'pending', never
    // 'failed': it may be mined, and only this key may try again.
    let inFlight: string | null = null;
    try {
      await this.ensureChain();
      const attempts = await loadAttempts(prepared.journal, 'CELO', prepared.idempotencyKey, this.attemptsMax);
      const first = attempts[0];
      if (first !== undefined && !sameFingerprint(first, prepared.fingerprint)) {
        return failed('idempotency key already used with a different asset, amount or destination', false);
      }
      const latest = attempts.at(-1);
      if (latest === undefined) {
        const built = await this.newAttempt(prepared, 0);
        if (built.kind === 'refused') return built.result;
        inFlight = stringField(built.record, 'hash');
        return await this.broadcastAndReport(built.record);
      }
      inFlight = stringField(latest, 'hash');
      return await this.advance(prepared, attempts, (hash) => {
        inFlight = hash;
      });
    } catch (error) {
      if (inFlight !== null) return { status: 'pending', onChainId: inFlight };
      return failed(`Celo RPC or journal unavailable (${describeError(error)})`, true);
    }
  }

  private prepare(request: SendRequest): PreparedCall | SendResult {
    if (request.network !== 'CELO') return failed(`this adapter sends on CELO, not ${request.network}`, false);
    const token = this.tokens.find((candidate) => candidate.asset === request.asset);
    if (token === undefined) return failed(`${request.asset} is not configured on CELO`, false);
    const atDecimals = rescale(request.amount, token.decimals, 'floor');
    if (rescale(atDecimals, request.amount.scale, 'floor').units !== request.amount.units) {
      return failed(`amount has more than ${token.decimals} decimals`, false);
    }
    if (atDecimals.units <= 0n || atDecimals.units > uint256Max) return failed('amount out of range', false);
    const destination = parseAddress(request.destination);
    if (destination === null || destination === zeroAddress) return failed('destination is not an address', false);
    if (this.journal === null) return failed('no send journal configured', false);
    if (this.signer === null) return failed('the CELO hot wallet key is not configured', false);
    return {
      kind: 'celo-transfer',
      idempotencyKey: request.idempotencyKey,
      to: token.contract,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [destination, atDecimals.units] }),
      fingerprint: fingerprintOf(request, atDecimals.units, destination),
      noun: 'transfer',
      wouldRevert: 'the transfer would revert (is the hot wallet funded with the token?)',
      precondition: null,
      journal: this.journal,
      signer: this.signer,
    };
  }

  private async advance(prepared: PreparedCall, attempts: JsonObject[], onAttempt: (hash: string) => void): Promise<SendResult> {
    const receipts: (TransactionReceipt | null)[] = [];
    for (const attempt of attempts) receipts.push(await this.receiptOrNull(stringField(attempt, 'hash') as Hex));
    const head = await this.client.getBlockNumber();
    // Only the latest attempt can be mined (a new one exists only when the previous cannot be),
    // but a success anywhere decides.
    for (const receipt of receipts) {
      if (receipt !== null && receipt.status === 'success') return this.report(receipt, head);
    }
    const latest = attempts.at(-1);
    const receipt = receipts.at(-1) ?? null;
    if (latest === undefined) throw new Error('no attempt to advance');
    const hash = stringField(latest, 'hash');
    if (receipt !== null) {
      // Reverted: final only at depth (a reorganisation could still replay it differently).
      if (head - receipt.blockNumber + 1n < this.confirmations) return { status: 'pending', onChainId: hash };
      return this.afterFinalFailure(prepared, attempts, `the ${prepared.noun} reverted on chain`, onAttempt);
    }
    if (await this.nonceTakenByAnother(latest, head)) return this.replaceOnceSettled(prepared, attempts, onAttempt);
    return this.broadcastAndReport(latest);
  }

  /**
   * The latest attempt looks dead (its nonce used at depth, no receipt). A lagging receipt backend
   * could be hiding it, so it is replaced only after the settle window; 'pending' until then.
   */
  private async replaceOnceSettled(prepared: PreparedCall, attempts: JsonObject[], onAttempt: (hash: string) => void): Promise<SendResult> {
    const attempt = attempts.length - 1;
    const latest = attempts[attempt];
    if (latest === undefined) throw new Error('no attempt to replace');
    const sightingKey = unseenKey('CELO', prepared.idempotencyKey, attempt);
    if (!(await unseenLongEnough(prepared.journal, sightingKey, this.nowMs(), this.unseenSettleMs))) {
      return { status: 'pending', onChainId: stringField(latest, 'hash') };
    }
    return this.nextAttempt(prepared, attempts, onAttempt);
  }

  /**
   * The recorded transaction can never be mined once another transaction of the hot wallet used
   * its nonce at confirmation depth. The count is read FIRST: if our transaction were the one
   * that used the nonce, its receipt would exist by then.
   */
  private async nonceTakenByAnother(attempt: JsonObject, head: bigint): Promise<boolean> {
    const depthBlock = head - this.confirmations + 1n;
    if (depthBlock < 0n) return false;
    const count = await this.client.getTransactionCount({ address: stringField(attempt, 'from') as Address, blockNumber: depthBlock });
    if (count <= numberField(attempt, 'nonce')) return false;
    return (await this.receiptOrNull(stringField(attempt, 'hash') as Hex)) === null;
  }

  private async afterFinalFailure(
    prepared: PreparedCall, attempts: JsonObject[], reason: string, onAttempt: (hash: string) => void,
  ): Promise<SendResult> {
    const attempt = attempts.length - 1;
    const retryable = attempts.length < this.attemptsMax;
    const firstReport = await acknowledgeFailure(prepared.journal, 'CELO', prepared.idempotencyKey, attempt, reason);
    if (firstReport || !retryable) {
      return failed(retryable ? `${reason}; a retry with the same key sends a new transaction` : `${reason}; no attempts left`, retryable);
    }
    return this.nextAttempt(prepared, attempts, onAttempt);
  }

  private async nextAttempt(prepared: PreparedCall, attempts: JsonObject[], onAttempt: (hash: string) => void): Promise<SendResult> {
    if (attempts.length >= this.attemptsMax) return failed(`no transaction was mined after ${attempts.length} attempts`, false);
    const built = await this.newAttempt(prepared, attempts.length);
    if (built.kind === 'refused') return built.result;
    onAttempt(stringField(built.record, 'hash'));
    return this.broadcastAndReport(built.record);
  }

  /**
   * Signs and records attempt n with a fresh nonce; returns the recorded attempt (another
   * caller's, if it won the race), or a refusal when the precondition fails or the call would
   * revert (nothing signed).
   */
  private async newAttempt(prepared: PreparedCall, attempt: number): Promise<BuiltAttempt> {
    const { signer, to, data } = prepared;
    const refusal = prepared.precondition === null ? null : await prepared.precondition();
    if (refusal !== null) return { kind: 'refused', result: refusal };
    let gasEstimate: bigint;
    try {
      gasEstimate = await this.client.estimateGas({ account: signer.address, to, data });
    } catch (error) {
      if (error instanceof BaseError && error.walk((cause) => cause instanceof ExecutionRevertedError) !== null) {
        return { kind: 'refused', result: failed(prepared.wouldRevert, true) };
      }
      throw error;
    }
    const fees = await this.client.estimateFeesPerGas();
    return this.nonceQueue.run(async () => {
      const pending = await this.client.getTransactionCount({ address: signer.address, blockTag: 'pending' });
      const nonce = Math.max(pending, this.nextNonce);
      const serialized = await signer.signTransaction({
        chainId: this.chainId,
        type: 'eip1559',
        to,
        data,
        value: 0n,
        nonce,
        gas: (gasEstimate * this.gasLimitPercent) / 100n,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      });
      const record: JsonObject = {
        kind: prepared.kind,
        attempt,
        request: prepared.fingerprint,
        hash: keccak256(serialized),
        serializedTransaction: serialized,
        nonce,
        from: signer.address,
        chainId: this.chainId,
        recordedAtMs: this.nowMs(),
      };
      const stored = await recordAttempt(prepared.journal, 'CELO', prepared.idempotencyKey, attempt, record);
      if (stored === record) this.nextNonce = nonce + 1;
      return { kind: 'recorded', record: stored } as const;
    });
  }

  /** Sends the recorded bytes (never re-signed) and reports where the transaction stands. */
  private async broadcastAndReport(record: JsonObject): Promise<SendResult> {
    const hash = stringField(record, 'hash') as Hex;
    try {
      await this.client.sendRawTransaction({ serializedTransaction: stringField(record, 'serializedTransaction') as Hex });
    } catch {
      // "already known", "nonce too low" (it was mined), or a refusal (no gas funds): the
      // outcome is read from the chain below and on the next call, never from the message.
    }
    const receipt = await this.receiptOrNull(hash);
    if (receipt === null || receipt.status !== 'success') return { status: 'pending', onChainId: hash };
    return this.report(receipt, await this.client.getBlockNumber());
  }

  private report(receipt: TransactionReceipt, head: bigint): SendResult {
    const depth = head - receipt.blockNumber + 1n;
    return depth >= this.confirmations
      ? { status: 'confirmed', onChainId: receipt.transactionHash }
      : { status: 'pending', onChainId: receipt.transactionHash };
  }
}
