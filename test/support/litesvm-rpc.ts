// A thin Solana JSON-RPC server over litesvm (an in-process SVM), so that @solana/web3.js 1.x
// `Connection` talks to real program execution: the SPL Token, Associated Token Account, System
// and Compute Budget programs run inside the SVM; this file adds what a validator's RPC adds on
// top: slots, commitment levels, the transaction history with its metadata (balances, token
// balances with owners, inner instructions, errors), blockhash validity and signature statuses.
// It answers only what the adapter and the tests call (see `methods` below), including
// `getSignaturesForAddress` (how the deposit poller lists transfers into an address). Listens on
// 127.0.0.1 and a free port; `close()` stops it.
//
// Model: every landed transaction gets its own slot; block height = slot. Finality is
// 'immediate' (landed = finalized) or 'manual' (the test calls `finalize()`). One blockhash is
// valid at a time, for 150 blocks after it was issued; `expireBlockhash()` issues a new one and
// moves the height past the old one's lastValidBlockHeight. `dropIncoming(true)` plays a leader
// that loses every transaction sent to it (the RPC still answers with the signature).
// `setStatusLag(slots)` plays an RPC behind a load balancer whose signature lookups reach a node
// that many slots behind: getSignatureStatuses and getTransaction answer null for a transaction
// landed in a newer slot, while the block height (and everything else) moves on from the head.
//
// litesvm 1.x (its API speaks @solana/kit types; we hand it plain objects of those shapes built
// from web3.js 1.x bytes). 0.7/0.8, the last lines on web3.js 1.x, abort the process with
// std::bad_alloc after a few SPL transactions here, and 0.6 needs glibc 2.38. Every transaction
// is simulated first: only landable ones reach sendTransaction — those that succeed and those
// that fail inside an instruction (which land with `meta.err`, as on a real cluster); the rest
// (stale blockhash, bad signature…) are dropped as a leader would drop them.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Keypair, PublicKey, SystemProgram, Transaction, TransactionInstruction, VersionedTransaction } from '@solana/web3.js';
import { FailedTransactionMetadata, LiteSVM } from 'litesvm';
import type { TransactionMetadata } from 'litesvm';
import {
  associatedTokenAddress, base58Decode, base58Encode, createAssociatedTokenAccountIdempotentInstruction, decodeTokenAccount,
  tokenAccountBytes, tokenProgramId,
} from '../../src/chains/solana-helpers.ts';

export type Finality = 'immediate' | 'manual';
type CommitmentName = 'processed' | 'confirmed' | 'finalized';

export interface LiteSvmRpc {
  readonly url: string;
  readonly svm: LiteSVM;
  /** Sends a transaction through the same path as `sendTransaction` with preflight; throws if it does not land successfully. */
  submit(transaction: Transaction | VersionedTransaction): string;
  setFinality(mode: Finality): void;
  /** Marks everything landed so far as confirmed and finalized. */
  finalize(): void;
  dropIncoming(drop: boolean): void;
  /** Signature lookups see only transactions landed at least `slots` before the head (0: no lag). */
  setStatusLag(slots: number): void;
  expireBlockhash(): void;
  /** Signatures that landed (successful or failed), in order. */
  landedSignatures(): readonly string[];
  close(): Promise<void>;
}

interface LandedTransaction {
  readonly signature: string;
  readonly slot: number;
  readonly blockTime: number;
  readonly version: 'legacy' | 0;
  readonly transaction: unknown;
  readonly meta: { readonly err: unknown } & Record<string, unknown>;
}

// litesvm's parameter types (branded @solana/kit types), taken from its own signatures so that
// @solana/kit, a dependency of litesvm only, is not imported here.
type KitAddress = Parameters<LiteSVM['getBalance']>[0];
type KitLamports = Parameters<LiteSVM['airdrop']>[1];
type KitTransaction = Parameters<LiteSVM['sendTransaction']>[0];

function kitAddress(key: PublicKey): KitAddress {
  return key.toBase58() as KitAddress;
}

/** web3.js bytes → the kit Transaction shape: message bytes and signatures keyed by signer, in order. */
function kitTransaction(transaction: VersionedTransaction): KitTransaction {
  const signers = transaction.message.staticAccountKeys.slice(0, transaction.message.header.numRequiredSignatures);
  const signatures: Record<string, Uint8Array> = {};
  signers.forEach((signer, index) => {
    const signature = transaction.signatures[index];
    if (signature === undefined) throw new RpcError(-32602, 'missing signature');
    signatures[signer.toBase58()] = signature;
  });
  return { messageBytes: transaction.message.serialize(), signatures } as unknown as KitTransaction;
}

/** An account as the RPC sees it, or null. */
function readAccount(svm: LiteSVM, key: PublicKey): { data: Uint8Array; lamports: bigint; owner: string; executable: boolean } | null {
  const account = svm.getAccount(kitAddress(key));
  if (!account.exists) return null;
  return { data: account.data, lamports: account.lamports, owner: account.programAddress, executable: account.executable };
}

class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
  }
}

const bodyBytesMax = 1024 * 1024;
const blockhashValidBlocks = 150;
const signaturesPerRequestMax = 256;
const lamportsPerSignature = 5_000;

export async function startLiteSvmRpc(options: { finality?: Finality } = {}): Promise<LiteSvmRpc> {
  const svm = new LiteSVM();
  const landed = new Map<string, LandedTransaction>();
  const order: string[] = [];
  let finality: Finality = options.finality ?? 'immediate';
  let drop = false;
  let statusLagSlots = 0;
  let processedSlot = 1;
  let confirmedSlot = 1;
  let finalizedSlot = 1;
  let blockhashIssuedHeight = 1;

  const slotFor = (commitment: CommitmentName): number =>
    commitment === 'finalized' ? finalizedSlot : commitment === 'confirmed' ? confirmedSlot : processedSlot;
  const advance = (slots: number): void => {
    processedSlot += slots;
    if (finality === 'immediate') {
      confirmedSlot = processedSlot;
      finalizedSlot = processedSlot;
    }
  };
  const context = (): { slot: number } => ({ slot: processedSlot });
  /** What a lagging lookup node has seen: only slots at least `statusLagSlots` behind the head. */
  const lookupSees = (record: LandedTransaction): boolean => record.slot <= processedSlot - statusLagSlots;

  function tokenBalances(keys: readonly PublicKey[]): unknown[] {
    const balances: unknown[] = [];
    keys.forEach((key, accountIndex) => {
      const account = readAccount(svm, key);
      if (account === null || account.owner !== tokenProgramId.toBase58() || account.data.length !== tokenAccountBytes) return;
      const decoded = decodeTokenAccount(account.data);
      if (decoded === null) return;
      balances.push({
        accountIndex,
        mint: decoded.mint.toBase58(),
        owner: decoded.owner.toBase58(),
        programId: tokenProgramId.toBase58(),
        uiTokenAmount: uiTokenAmount(decoded.amount, mintDecimals(decoded.mint)),
      });
    });
    return balances;
  }

  function mintDecimals(mint: PublicKey): number {
    return readAccount(svm, mint)?.data[44] ?? 0;
  }

  function land(transaction: VersionedTransaction, signature: string): void {
    const message = transaction.message;
    const keys = message.staticAccountKeys;
    const preBalances = keys.map((key) => Number(svm.getBalance(kitAddress(key)) ?? 0n));
    const preTokenBalances = tokenBalances(keys);
    const result = svm.sendTransaction(kitTransaction(transaction));
    const failed = result instanceof FailedTransactionMetadata;
    const metadata: TransactionMetadata = failed ? result.meta() : result;
    advance(1);
    landed.set(signature, {
      signature,
      slot: processedSlot,
      blockTime: Math.floor(Date.now() / 1000),
      version: message.version === 'legacy' ? 'legacy' : 0,
      transaction: {
        signatures: transaction.signatures.map((bytes) => base58Encode(bytes)),
        message: {
          accountKeys: keys.map((key) => key.toBase58()),
          header: message.header,
          instructions: message.compiledInstructions.map((instruction) => ({
            programIdIndex: instruction.programIdIndex,
            accounts: instruction.accountKeyIndexes,
            data: base58Encode(instruction.data),
            stackHeight: null,
          })),
          recentBlockhash: message.recentBlockhash,
          ...(message.version === 'legacy' ? {} : { addressTableLookups: [] }),
        },
      },
      meta: {
        err: failed ? errorJson(result.err()) : null,
        status: failed ? { Err: errorJson(result.err()) } : { Ok: null },
        fee: lamportsPerSignature * message.header.numRequiredSignatures,
        preBalances,
        postBalances: keys.map((key) => Number(svm.getBalance(kitAddress(key)) ?? 0n)),
        preTokenBalances,
        postTokenBalances: tokenBalances(keys),
        innerInstructions: innerInstructionsJson(metadata),
        logMessages: metadata.logs(),
        loadedAddresses: { writable: [], readonly: [] },
        computeUnitsConsumed: Number(metadata.computeUnitsConsumed()),
        rewards: [],
      },
    });
    order.push(signature);
  }

  function sendTransaction(encoded: string, config: { encoding?: string; skipPreflight?: boolean }): string {
    const bytes = config.encoding === 'base64' ? Buffer.from(encoded, 'base64') : base58Decode(encoded);
    if (bytes === null) throw new RpcError(-32602, 'invalid transaction encoding');
    let transaction: VersionedTransaction;
    try {
      transaction = VersionedTransaction.deserialize(bytes);
    } catch {
      throw new RpcError(-32602, 'failed to deserialize transaction');
    }
    const first = transaction.signatures[0];
    if (first === undefined) throw new RpcError(-32602, 'transaction has no signature');
    const signature = base58Encode(first);
    const preflight = config.skipPreflight !== true;
    if (landed.has(signature)) {
      if (preflight) throw new RpcError(-32002, 'Transaction simulation failed: This transaction has already been processed', { err: 'AlreadyProcessed', logs: [] });
      return signature;
    }
    if (transaction.message.addressTableLookups.length > 0) throw new RpcError(-32602, 'address lookup tables are not supported by this test server');
    if (drop) return signature;
    const simulated = svm.simulateTransaction(kitTransaction(transaction));
    if (simulated instanceof FailedTransactionMetadata) {
      const error = simulated.err();
      if (preflight) {
        throw new RpcError(-32002, 'Transaction simulation failed', { err: errorJson(error), logs: simulated.meta().logs(), accounts: null, unitsConsumed: 0 });
      }
      // Not even processable (stale blockhash, bad signature…): a leader drops it.
      if (!isInstructionError(error)) return signature;
    }
    land(transaction, signature);
    return signature;
  }

  function signatureStatus(signature: string): unknown {
    const record = landed.get(signature);
    if (record === undefined || record.slot > processedSlot || !lookupSees(record)) return null;
    const confirmationStatus: CommitmentName =
      record.slot <= finalizedSlot ? 'finalized' : record.slot <= confirmedSlot ? 'confirmed' : 'processed';
    return {
      slot: record.slot,
      confirmations: confirmationStatus === 'finalized' ? null : processedSlot - record.slot,
      err: record.meta.err,
      status: record.meta.err === null ? { Ok: null } : { Err: record.meta.err },
      confirmationStatus,
    };
  }

  const methods: Record<string, (params: unknown[]) => unknown> = {
    getVersion: () => ({ 'solana-core': 'litesvm-rpc', 'feature-set': 0 }),
    getSlot: (params) => slotFor(commitmentOf(params[0])),
    getBlockHeight: (params) => slotFor(commitmentOf(params[0])),
    getLatestBlockhash: () => ({
      context: context(),
      value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: blockhashIssuedHeight + blockhashValidBlocks },
    }),
    sendTransaction: (params) => {
      const [encoded, config] = params;
      if (typeof encoded !== 'string') throw new RpcError(-32602, 'missing transaction');
      return sendTransaction(encoded, isRecord(config) ? config : {});
    },
    getSignatureStatuses: (params) => {
      const [signatures] = params;
      if (!Array.isArray(signatures) || signatures.length > signaturesPerRequestMax) throw new RpcError(-32602, 'invalid signatures');
      return { context: context(), value: signatures.map((signature) => (typeof signature === 'string' ? signatureStatus(signature) : null)) };
    },
    getTransaction: (params) => {
      const [signature, config] = params;
      const settings = isRecord(config) ? config : {};
      const commitment = commitmentOf(settings);
      if (commitment === 'processed') throw new RpcError(-32602, 'Method does not support commitment below `confirmed`');
      if (settings.encoding !== undefined && settings.encoding !== 'json') throw new RpcError(-32602, 'only json encoding is supported by this test server');
      const record = typeof signature === 'string' ? landed.get(signature) : undefined;
      if (record === undefined || record.slot > slotFor(commitment) || !lookupSees(record)) return null;
      if (record.version === 0 && settings.maxSupportedTransactionVersion === undefined) {
        throw new RpcError(-32015, 'Transaction version (0) is not supported by the requesting client');
      }
      return { slot: record.slot, blockTime: record.blockTime, version: record.version, transaction: record.transaction, meta: record.meta };
    },
    getAccountInfo: (params) => {
      const account = readAccount(svm, publicKeyParam(params[0]));
      return {
        context: context(),
        value: account === null ? null : {
          data: [Buffer.from(account.data).toString('base64'), 'base64'],
          executable: account.executable,
          lamports: Number(account.lamports),
          owner: account.owner,
          rentEpoch: 0,
          space: account.data.length,
        },
      };
    },
    getBalance: (params) => ({ context: context(), value: Number(svm.getBalance(kitAddress(publicKeyParam(params[0]))) ?? 0n) }),
    // Newest first, transactions that name the address among their account keys (as a validator
    // with transaction history answers; `before`/`until` paging is not supported here).
    getSignaturesForAddress: (params) => {
      const address = publicKeyParam(params[0]).toBase58();
      const settings = isRecord(params[1]) ? params[1] : {};
      if (settings.before !== undefined || settings.until !== undefined) throw new RpcError(-32602, 'before/until are not supported by this test server');
      const limit = typeof settings.limit === 'number' ? Math.min(Math.max(1, settings.limit), 1_000) : 1_000;
      const visibleSlot = slotFor(commitmentOf(settings));
      const found: unknown[] = [];
      for (const signature of [...order].reverse()) {
        const record = landed.get(signature);
        if (record === undefined || record.slot > visibleSlot) continue;
        const message = (record.transaction as { message: { accountKeys: string[] } }).message;
        if (!message.accountKeys.includes(address)) continue;
        const status = signatureStatus(signature) as { confirmationStatus: CommitmentName };
        found.push({ signature, slot: record.slot, err: record.meta.err, memo: null, blockTime: record.blockTime, confirmationStatus: status.confirmationStatus });
        if (found.length >= limit) break;
      }
      return found;
    },
    getTokenAccountBalance: (params) => {
      const account = readAccount(svm, publicKeyParam(params[0]));
      const decoded = account === null ? null : decodeTokenAccount(account.data);
      if (decoded === null) throw new RpcError(-32602, 'Invalid param: not a Token account');
      return { context: context(), value: uiTokenAmount(decoded.amount, mintDecimals(decoded.mint)) };
    },
    getMinimumBalanceForRentExemption: (params) => Number(svm.minimumBalanceForRentExemption(BigInt(Number(params[0] ?? 0)))),
  };

  const server = createServer((request, response) => {
    handle(request, response, methods).catch(() => {
      if (!response.headersSent) response.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    svm,
    submit: (transaction) => {
      const versioned = transaction instanceof VersionedTransaction
        ? transaction
        : VersionedTransaction.deserialize(transaction.serialize());
      const signature = sendTransaction(Buffer.from(versioned.serialize()).toString('base64'), { encoding: 'base64' });
      const record = landed.get(signature);
      if (record === undefined || record.meta.err !== null) throw new Error(`transaction ${signature} did not land successfully`);
      return signature;
    },
    setFinality: (mode) => {
      finality = mode;
    },
    finalize: () => {
      confirmedSlot = processedSlot;
      finalizedSlot = processedSlot;
    },
    dropIncoming: (value) => {
      drop = value;
    },
    setStatusLag: (slots) => {
      if (!Number.isSafeInteger(slots) || slots < 0) throw new RangeError('status lag is a non-negative whole number of slots');
      statusLagSlots = slots;
    },
    expireBlockhash: () => {
      svm.expireBlockhash();
      advance(blockhashValidBlocks + 1);
      blockhashIssuedHeight = processedSlot;
    },
    landedSignatures: () => [...order],
    close: async () => closeServer(server),
  };
}

async function handle(request: IncomingMessage, response: ServerResponse, methods: Record<string, (params: unknown[]) => unknown>): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > bodyBytesMax) {
      response.writeHead(413).end();
      return;
    }
    chunks.push(buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    send(response, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    return;
  }
  const answer = (call: unknown): unknown => {
    const id = isRecord(call) && (typeof call.id === 'string' || typeof call.id === 'number') ? call.id : null;
    if (!isRecord(call) || typeof call.method !== 'string') return { jsonrpc: '2.0', id, error: { code: -32600, message: 'Invalid request' } };
    const method = methods[call.method];
    if (method === undefined) return { jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${call.method}` } };
    try {
      return { jsonrpc: '2.0', id, result: method(Array.isArray(call.params) ? call.params : []) };
    } catch (error) {
      if (error instanceof RpcError) {
        return { jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) } };
      }
      return { jsonrpc: '2.0', id, error: { code: -32603, message: error instanceof Error ? error.message : 'internal error' } };
    }
  };
  send(response, Array.isArray(body) ? body.map(answer) : answer(body));
}

function send(response: ServerResponse, payload: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function commitmentOf(config: unknown): CommitmentName {
  const value = isRecord(config) ? config.commitment : undefined;
  return value === 'processed' || value === 'confirmed' ? value : 'finalized';
}

function publicKeyParam(value: unknown): PublicKey {
  const bytes = typeof value === 'string' ? base58Decode(value) : null;
  if (bytes?.length !== 32) throw new RpcError(-32602, 'Invalid param: not a public key');
  return new PublicKey(bytes);
}

function uiTokenAmount(amount: bigint, decimals: number): unknown {
  const text = amount.toString().padStart(decimals + 1, '0');
  const uiAmountString = decimals === 0 ? text : `${text.slice(0, -decimals)}.${text.slice(-decimals)}`.replace(/\.?0+$/, '');
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}

/** An InstructionError (the transaction lands, failed) has an instruction index and an inner error. */
function isInstructionError(error: unknown): boolean {
  return isRecord(error) && typeof error.index === 'number' && typeof error.err === 'function';
}

/** The RPC's error JSON, approximately (the adapter only tells null from non-null). */
function errorJson(error: unknown): unknown {
  if (isInstructionError(error)) {
    const instructionError = error as { index: number; err(): unknown };
    const inner = instructionError.err();
    const detail = isRecord(inner) && typeof inner.code === 'number' ? { Custom: inner.code } : String(inner);
    return { InstructionError: [instructionError.index, detail] };
  }
  return typeof error === 'number' ? `TransactionError${error}` : String(error);
}

function innerInstructionsJson(metadata: TransactionMetadata): unknown[] {
  return metadata.innerInstructions().flatMap((group, index) => group.length === 0 ? [] : [{
    index,
    instructions: group.map((inner) => {
      const instruction = inner.instruction();
      return {
        programIdIndex: instruction.programIdIndex(),
        accounts: [...instruction.accounts()],
        data: base58Encode(instruction.data()),
        stackHeight: inner.stackHeight(),
      };
    }),
  }]);
}

// ---- test helpers: SPL Token set-up through real instructions executed by the SVM ----

const mintBytes = 82;

/** SPL Token `InitializeMint2` (tag 20): decimals, mint authority, no freeze authority. */
export function initializeMint2Instruction(mint: PublicKey, decimals: number, authority: PublicKey): TransactionInstruction {
  const data = Buffer.alloc(67);
  data.writeUInt8(20, 0);
  data.writeUInt8(decimals, 1);
  authority.toBuffer().copy(data, 2);
  data.writeUInt8(0, 34);
  return new TransactionInstruction({ programId: tokenProgramId, keys: [{ pubkey: mint, isSigner: false, isWritable: true }], data });
}

/** SPL Token `MintToChecked` (tag 14). */
export function mintToCheckedInstruction(mint: PublicKey, destination: PublicKey, authority: PublicKey, amount: bigint, decimals: number): TransactionInstruction {
  const data = Buffer.alloc(10);
  data.writeUInt8(14, 0);
  data.writeBigUInt64LE(amount, 1);
  data.writeUInt8(decimals, 9);
  return new TransactionInstruction({
    programId: tokenProgramId,
    keys: [
      { pubkey: mint, isSigner: false, isWritable: true },
      { pubkey: destination, isSigner: false, isWritable: true },
      { pubkey: authority, isSigner: true, isWritable: false },
    ],
    data,
  });
}

/** A funded fee payer. */
export function fundedKeypair(rpc: LiteSvmRpc, lamports = 10_000_000_000n): Keypair {
  const keypair = Keypair.generate();
  rpc.svm.airdrop(kitAddress(keypair.publicKey), lamports as KitLamports);
  return keypair;
}

function signed(rpc: LiteSvmRpc, payer: Keypair, instructions: TransactionInstruction[], extraSigners: Keypair[] = []): Transaction {
  const transaction = new Transaction({ feePayer: payer.publicKey, recentBlockhash: rpc.svm.latestBlockhash() }).add(...instructions);
  transaction.sign(payer, ...extraSigners);
  return transaction;
}

/** Creates a mint whose authority is `payer`. */
export function createMint(rpc: LiteSvmRpc, payer: Keypair, decimals: number): PublicKey {
  const mint = Keypair.generate();
  const lamports = Number(rpc.svm.minimumBalanceForRentExemption(BigInt(mintBytes)));
  rpc.submit(signed(rpc, payer, [
    SystemProgram.createAccount({ fromPubkey: payer.publicKey, newAccountPubkey: mint.publicKey, lamports, space: mintBytes, programId: tokenProgramId }),
    initializeMint2Instruction(mint.publicKey, decimals, payer.publicKey),
  ], [mint]));
  return mint.publicKey;
}

/** Creates `owner`'s associated token account for `mint` and mints `amount` base units into it (payer = mint authority). */
export function fundTokenAccount(rpc: LiteSvmRpc, payer: Keypair, owner: PublicKey, mint: PublicKey, decimals: number, amount: bigint): PublicKey {
  const account = associatedTokenAddress(owner, mint);
  const instructions = [createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, account, owner, mint)];
  if (amount > 0n) instructions.push(mintToCheckedInstruction(mint, account, payer.publicKey, amount, decimals));
  rpc.submit(signed(rpc, payer, instructions));
  return account;
}

/** The token balance of an account in base units (null when it does not exist). */
export function tokenBalance(rpc: LiteSvmRpc, account: PublicKey): bigint | null {
  const data = readAccount(rpc.svm, account)?.data;
  return data === undefined ? null : decodeTokenAccount(data)?.amount ?? null;
}
