// Pure EVM helpers for the Celo adapter: hash and address checks, the ERC-20 Transfer topic, the
// hot wallet key and its loading from the environment, bounded settings, and a small mutex that serialises nonce allocation inside one process.
import { getAddress, isAddress } from 'viem';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { PrivateKeyAccount } from 'viem/accounts';

/** keccak256("Transfer(address,address,uint256)") (FACTS.md). */
export const erc20TransferTopic: Hex = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
export const zeroAddress: Address = '0x0000000000000000000000000000000000000000';
/** ERC-20 amounts are uint256. */
export const uint256Max = (1n << 256n) - 1n;

export function isTransactionHash(text: string): text is Hex {
  return /^0x[0-9a-fA-F]{64}$/.test(text);
}

/** The checksummed address, or null (any letter case is accepted: partners paste lowercase). */
export function parseAddress(text: string): Address | null {
  return isAddress(text, { strict: false }) ? getAddress(text) : null;
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** A 32-byte private key as hex (with or without 0x), or null. The caller never echoes it. */
export function privateKeyFromSecret(secret: string): Hex | null {
  const text = secret.trim();
  const hex = text.startsWith('0x') || text.startsWith('0X') ? text.slice(2) : text;
  return /^[0-9a-fA-F]{64}$/.test(hex) ? `0x${hex.toLowerCase()}` : null;
}

/** Runs tasks one at a time, in call order (a failed task does not block the next). */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  async run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

export function maxBigInt(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** A configuration integer in [min, max], or an error naming the setting. */
export function boundedInteger(value: number, min: number, max: number, name: string): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`CELO ${name} must be an integer in [${min}, ${max}]`);
  return value;
}

/** The hot wallet from the environment variable named `envName`; null when unset or empty. */
export function loadSigner(envName: string | undefined, env: Readonly<Record<string, string | undefined>>): PrivateKeyAccount | null {
  if (envName === undefined) return null;
  const secret = env[envName];
  if (secret === undefined || secret === '') return null;
  const key = privateKeyFromSecret(secret);
  // The message names the variable, never its content.
  if (key === null) throw new Error(`${envName} does not hold a 32-byte hex private key`);
  try {
    return privateKeyToAccount(key);
  } catch {
    throw new Error(`${envName} does not hold a valid secp256k1 private key`);
  }
}
