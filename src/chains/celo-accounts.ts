// Celo account lookups for onramp destinations (the AccountLookup port of chains.ts): one eth_getCode
// at the latest block. Code at the address makes it a contract (a token contract, a pool, a
// forwarder…): tokens transferred to it are stuck unless it was written to move them, so it is not
// a wallet. One exception: an EIP-7702 delegation designator (0xef0100 + a 20-byte address) is what
// an ordinary key-held account carries after delegating; it is still that key's wallet. No code (or
// an address never used) is a wallet. Kept apart from the adapter (celo.ts): read-only, no signer.
import { createPublicClient, http, type Address, type Hex, type PublicClient } from 'viem';
import { celo } from 'viem/chains';
import type { AccountKind, AccountLookup } from './chains.ts';

export interface CeloAccountLookupOptions {
  readonly rpcUrl: string;
  readonly chainId?: number;
  /** Bound on each RPC call; past it the lookup throws (retryable). */
  readonly rpcTimeoutMs?: number;
}

const delegationDesignator = /^0xef0100[0-9a-f]{40}$/i;

/** The kind of an account from its code (`0x` or undefined: none). Pure. */
export function celoAccountKind(code: Hex | undefined): AccountKind {
  if (code === undefined || code === '0x') return 'wallet';
  return delegationDesignator.test(code) ? 'wallet' : 'contract';
}

export function celoAccountLookup(options: CeloAccountLookupOptions): AccountLookup {
  if (!/^https?:\/\//.test(options.rpcUrl)) throw new Error('CELO rpcUrl must be an http(s) URL');
  const client = createPublicClient({
    chain: { ...celo, id: options.chainId ?? celo.id },
    cacheTime: 0,
    transport: http(options.rpcUrl, { timeout: options.rpcTimeoutMs ?? 5_000, retryCount: 1 }),
  }) as PublicClient;
  return {
    network: 'CELO',
    async accountKind(address) {
      return celoAccountKind(await client.getCode({ address: address as Address }));
    },
  };
}
