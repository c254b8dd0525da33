// Pure Solana encodings the Solana adapter needs and that web3.js 1.x does not export: base58 for
// signatures, the SPL Token / Associated Token Account / Compute Budget instructions we build by
// hand (so no @solana/spl-token at run time), token-account decoding and the hot wallet's secret.
// Program ids and layouts: FACTS.md and the SPL programs' documented instruction formats.
import { Keypair, PublicKey, TransactionInstruction } from '@solana/web3.js';

export const tokenProgramId = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
/** Token-2022: recognised only to say why its transfers are not accepted (see docs/solana-celo.md). */
export const token2022ProgramId = new PublicKey('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');
export const associatedTokenProgramId = new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');
export const systemProgramId = new PublicKey('11111111111111111111111111111111');
export const computeBudgetProgramId = new PublicKey('ComputeBudget111111111111111111111111111111');

/** SPL Token instruction tags (first data byte). */
export const tokenInstruction = { transfer: 3, closeAccount: 9, transferChecked: 12 } as const;
/** SPL Token account layout: mint(32) owner(32) amount(u64 LE) … 165 bytes in all. */
export const tokenAccountBytes = 165;
/** Token amounts are u64. */
export const tokenAmountMax = (1n << 64n) - 1n;

export type Commitment = 'processed' | 'confirmed' | 'finalized';
const commitmentRank: Readonly<Record<Commitment, number>> = { processed: 0, confirmed: 1, finalized: 2 };

/** Whether `reached` (a signature status) satisfies `required`. */
export function commitmentReached(reached: Commitment | null | undefined, required: Commitment): boolean {
  return reached != null && commitmentRank[reached] >= commitmentRank[required];
}

// ---- base58 (Bitcoin alphabet) ----

const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const alphabetIndex = new Map([...alphabet].map((character, index) => [character, BigInt(index)]));
/** Longest base58 text decoded here: a 64-byte signature is at most 88 characters. */
export const base58TextLengthMax = 128;

export function base58Encode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let text = '';
  while (value > 0n) {
    text = alphabet[Number(value % 58n)] + text;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    text = `1${text}`;
  }
  return text;
}

/** Null for text that is not base58 (or longer than `base58TextLengthMax`). */
export function base58Decode(text: string): Uint8Array | null {
  if (text.length > base58TextLengthMax) return null;
  let value = 0n;
  let leadingZeros = 0;
  let seenNonZero = false;
  for (const character of text) {
    const digit = alphabetIndex.get(character);
    if (digit === undefined) return null;
    if (!seenNonZero && digit === 0n) leadingZeros += 1;
    else seenNonZero = true;
    value = value * 58n + digit;
  }
  const body: number[] = [];
  while (value > 0n) {
    body.unshift(Number(value & 0xffn));
    value >>= 8n;
  }
  return Uint8Array.from([...new Array<number>(leadingZeros).fill(0), ...body]);
}

/** A transaction signature is base58 of exactly 64 bytes. */
export function isSignatureText(text: string): boolean {
  return base58Decode(text)?.length === 64;
}

/** A public key from base58 text, or null (any 32 bytes: owners may be off-curve PDAs). */
export function parsePublicKey(text: string): PublicKey | null {
  const bytes = base58Decode(text);
  return bytes?.length === 32 ? new PublicKey(bytes) : null;
}

// ---- accounts ----

/** The associated token account of `owner` for `mint` under the classic SPL Token program. */
export function associatedTokenAddress(owner: PublicKey, mint: PublicKey, programId: PublicKey = tokenProgramId): PublicKey {
  const [address] = PublicKey.findProgramAddressSync(
    [owner.toBuffer(), programId.toBuffer(), mint.toBuffer()],
    associatedTokenProgramId,
  );
  return address;
}

export interface TokenAccountData {
  readonly mint: PublicKey;
  readonly owner: PublicKey;
  readonly amount: bigint;
}

/** Decodes an SPL token account (null for anything that is not one). */
export function decodeTokenAccount(data: Uint8Array): TokenAccountData | null {
  if (data.length < tokenAccountBytes) return null;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return {
    mint: new PublicKey(view.subarray(0, 32)),
    owner: new PublicKey(view.subarray(32, 64)),
    amount: view.readBigUInt64LE(64),
  };
}

// ---- instructions ----

export interface TransferCheckedData {
  readonly amount: bigint;
  readonly decimals: number;
}

/** `transferChecked` data is [12, amount u64 LE, decimals u8]; null for any other instruction. */
export function decodeTransferChecked(data: Uint8Array): TransferCheckedData | null {
  if (data.length !== 10 || data[0] !== tokenInstruction.transferChecked) return null;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return { amount: view.readBigUInt64LE(1), decimals: view.readUInt8(9) };
}

/** Whether the data is a plain (unchecked) SPL `transfer`: [3, amount u64 LE]. */
export function isPlainTransfer(data: Uint8Array): boolean {
  return data.length === 9 && data[0] === tokenInstruction.transfer;
}

export interface TransferCheckedAccounts {
  readonly source: PublicKey;
  readonly mint: PublicKey;
  readonly destination: PublicKey;
  /** The source account's owner (a single signer). */
  readonly owner: PublicKey;
}

export function transferCheckedInstruction(accounts: TransferCheckedAccounts, amount: bigint, decimals: number): TransactionInstruction {
  if (amount <= 0n || amount > tokenAmountMax) throw new RangeError('token amount out of u64 range');
  const data = Buffer.alloc(10);
  data.writeUInt8(tokenInstruction.transferChecked, 0);
  data.writeBigUInt64LE(amount, 1);
  data.writeUInt8(decimals, 9);
  return new TransactionInstruction({
    programId: tokenProgramId,
    keys: [
      { pubkey: accounts.source, isSigner: false, isWritable: true },
      { pubkey: accounts.mint, isSigner: false, isWritable: false },
      { pubkey: accounts.destination, isSigner: false, isWritable: true },
      { pubkey: accounts.owner, isSigner: true, isWritable: false },
    ],
    data,
  });
}

/**
 * SPL Token `CloseAccount` (data [9]): closes an empty token account, its lamports (the rent) going
 * to `destination`; signed by the account's owner.
 */
export function closeAccountInstruction(account: PublicKey, destination: PublicKey, owner: PublicKey): TransactionInstruction {
  return new TransactionInstruction({
    programId: tokenProgramId,
    keys: [
      { pubkey: account, isSigner: false, isWritable: true },
      { pubkey: destination, isSigner: false, isWritable: true },
      { pubkey: owner, isSigner: true, isWritable: false },
    ],
    data: Buffer.from([tokenInstruction.closeAccount]),
  });
}

/** ATA program `CreateIdempotent` (data [1]): succeeds when the account already exists. */
export function createAssociatedTokenAccountIdempotentInstruction(
  payer: PublicKey, associatedAccount: PublicKey, owner: PublicKey, mint: PublicKey,
): TransactionInstruction {
  return new TransactionInstruction({
    programId: associatedTokenProgramId,
    keys: [
      { pubkey: payer, isSigner: true, isWritable: true },
      { pubkey: associatedAccount, isSigner: false, isWritable: true },
      { pubkey: owner, isSigner: false, isWritable: false },
      { pubkey: mint, isSigner: false, isWritable: false },
      { pubkey: systemProgramId, isSigner: false, isWritable: false },
      { pubkey: tokenProgramId, isSigner: false, isWritable: false },
    ],
    data: Buffer.from([1]),
  });
}

/** Compute Budget `SetComputeUnitLimit` (tag 2, u32 LE). */
export function setComputeUnitLimitInstruction(units: number): TransactionInstruction {
  const data = Buffer.alloc(5);
  data.writeUInt8(2, 0);
  data.writeUInt32LE(units, 1);
  return new TransactionInstruction({ programId: computeBudgetProgramId, keys: [], data });
}

/** Compute Budget `SetComputeUnitPrice` (tag 3, u64 LE micro-lamports per compute unit). */
export function setComputeUnitPriceInstruction(microLamports: bigint): TransactionInstruction {
  const data = Buffer.alloc(9);
  data.writeUInt8(3, 0);
  data.writeBigUInt64LE(microLamports, 1);
  return new TransactionInstruction({ programId: computeBudgetProgramId, keys: [], data });
}

// ---- the hot wallet ----

/**
 * The hot wallet from its secret: either the JSON byte array that `solana-keygen` writes, or the
 * base58 text of the 64-byte secret key that wallets export. Null when it is neither (the caller
 * says so without echoing the value).
 */
export function keypairFromSecret(secret: string): Keypair | null {
  const text = secret.trim();
  let bytes: Uint8Array | null = null;
  if (text.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (Array.isArray(parsed) && parsed.every((item) => Number.isInteger(item) && item >= 0 && item <= 255)) {
        bytes = Uint8Array.from(parsed as number[]);
      }
    } catch {
      return null;
    }
  } else {
    bytes = base58Decode(text);
  }
  if (bytes?.length !== 64) return null;
  try {
    return Keypair.fromSecretKey(bytes);
  } catch {
    return null;
  }
}
