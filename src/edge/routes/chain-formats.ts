// Shapes of on-chain identifiers the edge accepts from partners: onramp destination wallets per
// network, and transaction hashes / signatures for notify and reconcile. Shape only: whether an
// account exists or a transaction is final is the chains' question.
import { StrKey } from '@stellar/stellar-sdk';
import { PublicKey } from '@solana/web3.js';
import { getAddress, isAddress } from 'viem';
import type { Network } from '../../domain/assets.ts';

export type WalletCheck = { readonly ok: true; readonly address: string } | { readonly ok: false; readonly reason: string };

const zeroAddress = /^0x0{40}$/i;

/**
 * The wallet that receives onramp crypto on `network`: Stellar an account id (`G…`, checksummed
 * StrKey; muxed `M…` accounts are not accepted), Solana a base58 32-byte public key, Celo a 0x
 * address (mixed case must carry a valid EIP-55 checksum; the zero address is refused). The
 * returned address is the canonical form (Celo: checksummed).
 */
export function checkWallet(network: Network, text: string): WalletCheck {
  const value = text.trim();
  switch (network) {
    case 'STELLAR':
      return StrKey.isValidEd25519PublicKey(value)
        ? { ok: true, address: value }
        : { ok: false, reason: 'account_number must be a Stellar account id (G…)' };
    case 'SOLANA': {
      if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(value)) {
        return { ok: false, reason: 'account_number must be a base58 Solana public key' };
      }
      try {
        const key = new PublicKey(value);
        return key.toBytes().length === 32 ? { ok: true, address: key.toBase58() } : { ok: false, reason: 'account_number must be a 32-byte Solana public key' };
      } catch {
        return { ok: false, reason: 'account_number must be a base58 Solana public key' };
      }
    }
    case 'CELO':
      if (!isAddress(value, { strict: true }) || zeroAddress.test(value)) {
        return { ok: false, reason: 'account_number must be a Celo address (0x + 40 hex, EIP-55 checksum when mixed case)' };
      }
      return { ok: true, address: getAddress(value) };
  }
}

const base58Alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Bytes of a base58 (Bitcoin alphabet) text, or null when it is not base58. */
export function base58Decode(text: string): Uint8Array | null {
  if (text.length === 0 || text.length > 128) return null;
  let value = 0n;
  for (const character of text) {
    const digit = base58Alphabet.indexOf(character);
    if (digit < 0) return null;
    value = value * 58n + BigInt(digit);
  }
  const bytes: number[] = [];
  while (value > 0n) {
    bytes.unshift(Number(value & 0xffn));
    value >>= 8n;
  }
  for (const character of text) {
    if (character !== '1') break;
    bytes.unshift(0);
  }
  return Uint8Array.from(bytes);
}

const evmHash = /^0x[0-9a-fA-F]{64}$/;
const stellarHash = /^[0-9a-fA-F]{64}$/;

/** Whether `text` has the shape of a transaction id on `network`; the reason names the rule. */
export function checkOnChainTx(network: Network, text: string): { readonly ok: true } | { readonly ok: false; readonly reason: string } {
  switch (network) {
    case 'SOLANA':
      return base58Decode(text)?.length === 64 ? { ok: true } : { ok: false, reason: 'on_chain_tx must be a Solana transaction signature (base58, 64 bytes)' };
    case 'CELO':
      return evmHash.test(text) ? { ok: true } : { ok: false, reason: 'on_chain_tx must be a Celo transaction hash (0x + 64 hex)' };
    case 'STELLAR':
      return stellarHash.test(text) ? { ok: true } : { ok: false, reason: 'on_chain_tx must be a Stellar transaction hash (64 hex)' };
  }
}
