// Pure EVM helpers for the Celo adapter: hash and address checks, the ERC-20 Transfer topic, the
// hot wallet key, and a small mutex that serialises nonce allocation inside one process.
import { getAddress, isAddress } from 'viem';
import type { Address, Hex } from 'viem';

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
