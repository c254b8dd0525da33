// Solana account lookups for onramp destinations (the AccountLookup port of chains.ts): one
// getAccountInfo at the configured commitment. An account owned by the SPL Token or Token-2022
// program is a token account or a mint, never a wallet: tokens "sent to" it would go to an
// associated token account of that account, which its owner does not control. An executable
// account is a program. Anything else — a system account, or no account yet (a new wallet) — is a
// wallet. Kept apart from the adapter (solana.ts): a read-only connection, no signer.
import { Connection, PublicKey } from '@solana/web3.js';
import type { AccountInfo } from '@solana/web3.js';
import type { AccountKind, AccountLookup } from './chains.ts';
import { token2022ProgramId, tokenProgramId } from './solana-helpers.ts';

export interface SolanaAccountLookupOptions {
  readonly rpcUrl: string;
  readonly commitment?: 'confirmed' | 'finalized';
  /** Bound on each RPC call; past it the lookup throws (retryable). */
  readonly rpcTimeoutMs?: number;
}

/** The kind of an account from what getAccountInfo returned (null: no account). Pure. */
export function solanaAccountKind(info: Pick<AccountInfo<unknown>, 'owner' | 'executable'> | null): AccountKind {
  if (info === null) return 'wallet';
  if (info.owner.equals(tokenProgramId) || info.owner.equals(token2022ProgramId)) return 'token_account';
  if (info.executable) return 'program';
  return 'wallet';
}

export function solanaAccountLookup(options: SolanaAccountLookupOptions): AccountLookup {
  if (!/^https?:\/\//.test(options.rpcUrl)) throw new Error('SOLANA rpcUrl must be an http(s) URL');
  const timeoutMs = options.rpcTimeoutMs ?? 5_000;
  const commitment = options.commitment ?? 'finalized';
  const connection = new Connection(options.rpcUrl, {
    commitment,
    disableRetryOnRateLimit: true, // bounded waits: the caller retries, not the library
    fetch: async (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
  });
  return {
    network: 'SOLANA',
    async accountKind(address) {
      const info = await connection.getAccountInfo(new PublicKey(address), commitment);
      return solanaAccountKind(info);
    },
  };
}
