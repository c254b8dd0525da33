// The chains configuration (CHAINS_FILE): how an operator points the service at real networks.
// JSON, validated at start with strict objects (unknown fields are rejected); a bad file stops
// start-up with a message naming the field. A network that is not in the file runs on the sandbox
// chain in sandbox mode and is otherwise not offered. Signing keys are never in the file: it names
// the environment variable that holds each (`signerSecretEnv`), and values that look like a key are
// refused so a pasted secret cannot slip in. One addition to DESIGN's shape: an optional
// `previousDepositAddresses` per network (rotated-out addresses that adapters keep watching and
// verifying, so a transaction created before a rotation can still be funded). On Solana and Celo
// each transaction has its own deposit address (src/chains/deposit-addresses.ts); there
// `depositAddress` is the legacy shared one, still bound for transactions that froze it, and the
// file adds what the per-transaction addresses need: Solana's `depositMasterSecretEnv` (the
// variable holding their master secret) and Celo's `depositFactory` (the forwarder factory,
// required) with `depositScanBlocks`, which bounds the deposit watcher's look-back.
//
// `resolveChainSetups` turns the file (or its absence) into one `ChainSetup` per offered network:
// the deposit address, the CAIP chain id, the suggested public RPC URL and the deposit assets with
// their identifiers and decimals. Those decimals must equal the corridor mints' (quotes are rounded
// to them), so a disagreement stops start-up too.
//
// Every network in the file also says which one it is, `network`: "mainnet" or "testnet"
// (required, no default). Sandbox mode refuses to start with a mainnet chain unless told otherwise
// (src/chains/sandbox-guard.ts), and a Stellar testnet signs with the testnet passphrase.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { networks, type CryptoAsset, type Network } from '../domain/assets.ts';
import type { CorridorConfig } from '../domain/corridors.ts';

// ---------------------------------------------------------------------------------------------
// Address and transaction-id formats (shared by the sandbox chain and the deposit checks)

const base58Alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const base32Alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base58Encode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = value * 256n + BigInt(byte);
  let text = '';
  while (value > 0n) {
    text = base58Alphabet[Number(value % 58n)] + text;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    text = `1${text}`;
  }
  return text;
}

/** Bytes of a base58 text, or null when it has a character outside the alphabet. */
export function base58Decode(text: string): Uint8Array | null {
  let value = 0n;
  for (const character of text) {
    const digit = base58Alphabet.indexOf(character);
    if (digit < 0) return null;
    value = value * 58n + BigInt(digit);
  }
  const bytes: number[] = [];
  while (value > 0n) {
    bytes.unshift(Number(value % 256n));
    value /= 256n;
  }
  for (const character of text) {
    if (character !== '1') break;
    bytes.unshift(0);
  }
  return Uint8Array.from(bytes);
}

/** CRC16-XModem, the checksum of Stellar's StrKey. */
function crc16XModem(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function base32Encode(bytes: Uint8Array): string {
  let text = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      text += base32Alphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) text += base32Alphabet[(buffer << (5 - bits)) & 31];
  return text;
}

function base32Decode(text: string): Uint8Array | null {
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const character of text) {
    const digit = base32Alphabet.indexOf(character);
    if (digit < 0) return null;
    buffer = (buffer << 5) | digit;
    bits += 5;
    if (bits >= 8) {
      bytes.push((buffer >> (bits - 8)) & 0xff);
      bits -= 8;
    }
    buffer &= (1 << bits) - 1;
  }
  return Uint8Array.from(bytes);
}

const stellarAccountVersionByte = 6 << 3; // 'G'

/** The StrKey (G…) of a 32-byte ed25519 public key. */
export function stellarAccountFromPublicKey(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new Error('a Stellar public key has 32 bytes');
  const payload = new Uint8Array(33);
  payload[0] = stellarAccountVersionByte;
  payload.set(publicKey, 1);
  const crc = crc16XModem(payload);
  const full = new Uint8Array(35);
  full.set(payload);
  full[33] = crc & 0xff;
  full[34] = crc >> 8;
  return base32Encode(full);
}

/** A Stellar account id (G…, 56 characters) with a valid checksum. */
export function isStellarAccount(text: string): boolean {
  if (!/^G[A-Z2-7]{55}$/.test(text)) return false;
  const bytes = base32Decode(text);
  if (bytes === null || bytes.length !== 35 || bytes[0] !== stellarAccountVersionByte) return false;
  const crc = crc16XModem(bytes.subarray(0, 33));
  return bytes[33] === (crc & 0xff) && bytes[34] === crc >> 8;
}

/** A base58 Solana public key (32 bytes). */
export function isSolanaAddress(text: string): boolean {
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(text)) return false;
  return base58Decode(text)?.length === 32;
}

export function isEvmAddress(text: string): boolean {
  return /^0x[0-9a-fA-F]{40}$/.test(text);
}

/** Where a refund can go on `network`. */
export function isAddressOf(network: Network, text: string): boolean {
  switch (network) {
    case 'STELLAR':
      return isStellarAccount(text);
    case 'SOLANA':
      return isSolanaAddress(text);
    case 'CELO':
      return isEvmAddress(text);
  }
}

/** Stellar: 64 hex digits; Celo: 0x + 64 hex digits; Solana: a base58 signature of 64 bytes. */
export function isOnChainIdOf(network: Network, text: string): boolean {
  switch (network) {
    case 'STELLAR':
      return /^[0-9a-f]{64}$/.test(text);
    case 'CELO':
      return /^0x[0-9a-f]{64}$/.test(text);
    case 'SOLANA':
      return /^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(text) && base58Decode(text)?.length === 64;
  }
}

/** Transaction ids as partners may write them: Celo hashes in either case, Stellar hashes too. */
export function normalizeOnChainId(network: Network, text: string): string {
  return network === 'SOLANA' ? text : text.toLowerCase();
}

// ---------------------------------------------------------------------------------------------
// The file's schema (docs/money-movement.md explains each field)

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2_048);
/** A Stellar secret seed is S + 55 base32 characters; it must never be mistaken for a variable name. */
const signerSecretEnv = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]{0,63}$/, 'must be the NAME of an environment variable (A-Z, 0-9, _), never the secret itself')
  .refine((name) => !/^S[A-Z2-7]{55}$/.test(name), 'looks like a Stellar secret seed; name the environment variable that holds it instead');

const stellarAccount = z.string().refine(isStellarAccount, 'must be a Stellar account id (G…, 56 characters, valid checksum)');
const solanaAddress = z.string().refine(isSolanaAddress, 'must be a base58 Solana public key (32 bytes)');
const evmAddress = z.string().refine(isEvmAddress, 'must be a 0x-prefixed 20-byte address');
const tokenDecimals = z.number().int().min(0).max(18);

/** Rotated-out deposit addresses: still watched and verified, so late deposits to them are seen. */
const previousAddresses = (address: z.ZodType<string>) => z.array(address).max(16).optional();

/**
 * Whether a live chain moves real money (mainnet) or test money (testnet). Required, with no
 * default: an operator states it, so sandbox mode cannot end up on mainnet by accident.
 */
const liveNetwork = z.enum(['mainnet', 'testnet'], { error: 'must be "mainnet" or "testnet" (required: whether this chain moves real money)' });
export type LiveNetwork = z.infer<typeof liveNetwork>;

const atLeastOneAsset = (assets: Record<string, unknown>): boolean => Object.values(assets).some((asset) => asset !== undefined);

export const stellarChainSchema = z.strictObject({
  network: liveNetwork,
  horizonUrl: httpUrl,
  publicRpcUrl: httpUrl.optional(),
  depositAddress: stellarAccount,
  previousDepositAddresses: previousAddresses(stellarAccount),
  assets: z
    .strictObject({ USDC: z.strictObject({ issuer: stellarAccount, decimals: z.literal(7) }).optional() })
    .refine(atLeastOneAsset, 'must name at least one asset'),
  signerSecretEnv,
});

export const solanaChainSchema = z.strictObject({
  network: liveNetwork,
  rpcUrl: httpUrl,
  publicRpcUrl: httpUrl.optional(),
  /**
   * The legacy shared deposit wallet: transactions accepted before per-transaction addresses
   * froze it in their payment_context and are still funded there (with the time rule).
   */
  depositAddress: solanaAddress,
  previousDepositAddresses: previousAddresses(solanaAddress),
  commitment: z.enum(['confirmed', 'finalized']),
  assets: z
    .strictObject({ USDC: z.strictObject({ mint: solanaAddress, decimals: tokenDecimals }).optional() })
    .refine(atLeastOneAsset, 'must name at least one asset'),
  signerSecretEnv,
  /**
   * The variable holding the master secret every per-transaction deposit wallet is derived from
   * (src/chains/solana-deposit-keys.ts). Required: without it every transaction would share one
   * address again. The adapter refuses to start when the variable is unset or malformed.
   */
  depositMasterSecretEnv: signerSecretEnv,
});

const evmToken = z.strictObject({ contract: evmAddress, decimals: tokenDecimals });

export const celoChainSchema = z.strictObject({
  network: liveNetwork,
  rpcUrl: httpUrl,
  publicRpcUrl: httpUrl.optional(),
  chainId: z.number().int().min(1).max(2 ** 53 - 1),
  depositAddress: evmAddress,
  previousDepositAddresses: previousAddresses(evmAddress),
  /** The DepositForwarderFactory every per-transaction deposit address derives from (docs/solana-celo.md). */
  depositFactory: evmAddress.refine((text) => !/^0x0{40}$/.test(text), 'must not be the zero address'),
  /** How far back (blocks, from the confirmed head) the deposit watcher looks for transfers into an address. */
  depositScanBlocks: z.number().int().min(1).max(1_000_000).optional(),
  confirmations: z.number().int().min(0).max(1_000),
  assets: z.strictObject({ USDC: evmToken.optional(), USDT: evmToken.optional() }).refine(atLeastOneAsset, 'must name at least one asset'),
  signerSecretEnv,
});

export const chainsFileSchema = z.strictObject({
  STELLAR: stellarChainSchema.optional(),
  SOLANA: solanaChainSchema.optional(),
  CELO: celoChainSchema.optional(),
});

export type StellarChainConfig = z.infer<typeof stellarChainSchema>;
export type SolanaChainConfig = z.infer<typeof solanaChainSchema>;
export type CeloChainConfig = z.infer<typeof celoChainSchema>;
export type ChainsFile = z.infer<typeof chainsFileSchema>;

export type ChainsFileResult = { ok: true; file: ChainsFile } | { ok: false; errors: string[] };

/** Validate a parsed JSON object; each error names the field path (never the value). */
export function parseChainsFile(json: unknown): ChainsFileResult {
  const parsed = chainsFileSchema.safeParse(json);
  if (parsed.success) return { ok: true, file: parsed.data };
  return {
    ok: false,
    errors: parsed.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`),
  };
}

/** Read and validate a chains file; throws with every problem, one per line, naming the field. */
export function loadChainsFile(path: string): ChainsFile {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path}: cannot read chains file: ${(error as Error).message}`);
  }
  const result = parseChainsFile(json);
  if (!result.ok) throw new Error(result.errors.map((line) => `${path}: ${line}`).join('\n'));
  return result.file;
}

// ---------------------------------------------------------------------------------------------
// Resolved setups

export interface ChainAssetSetup {
  /** Stellar: issuer; Solana: mint; Celo: token contract. */
  readonly identifier: string;
  readonly decimals: number;
}

interface SetupCommon {
  readonly network: Network;
  /** Where partners send deposits (payment_context.depositAddress). */
  readonly depositAddress: string;
  /** CAIP-2 style chain id (payment_context.chainId). */
  readonly chainId: string;
  /** What payment_context.rpcUrl suggests; null when nothing is configured. */
  readonly publicRpcUrl: string | null;
  readonly assets: Readonly<Partial<Record<CryptoAsset, ChainAssetSetup>>>;
}

export type ChainSetup =
  | (SetupCommon & { readonly mode: 'sandbox' })
  | (SetupCommon & { readonly mode: 'live'; readonly network: 'STELLAR'; readonly config: StellarChainConfig })
  | (SetupCommon & { readonly mode: 'live'; readonly network: 'SOLANA'; readonly config: SolanaChainConfig })
  | (SetupCommon & { readonly mode: 'live'; readonly network: 'CELO'; readonly config: CeloChainConfig });

export type ChainSetups = Readonly<Partial<Record<Network, ChainSetup>>>;

/** The sandbox chain's deposit addresses: fixed, well-formed, the same in every process. */
export function sandboxDepositAddress(network: Network): string {
  const seed = createHash('sha256').update(`sandbox-deposit-address:${network}`).digest();
  switch (network) {
    case 'STELLAR':
      return stellarAccountFromPublicKey(seed);
    case 'SOLANA':
      return base58Encode(seed);
    case 'CELO':
      return `0x${seed.subarray(0, 20).toString('hex')}`;
  }
}

const defaultChainIds: Readonly<Record<Network, string>> = {
  STELLAR: 'stellar:pubnet',
  SOLANA: 'solana:mainnet',
  CELO: 'eip155:42220',
};

function liveAssets(network: Network, file: ChainsFile): Partial<Record<CryptoAsset, ChainAssetSetup>> {
  const assets: Partial<Record<CryptoAsset, ChainAssetSetup>> = {};
  if (network === 'STELLAR' && file.STELLAR?.assets.USDC) {
    assets.USDC = { identifier: file.STELLAR.assets.USDC.issuer, decimals: file.STELLAR.assets.USDC.decimals };
  }
  if (network === 'SOLANA' && file.SOLANA?.assets.USDC) {
    assets.USDC = { identifier: file.SOLANA.assets.USDC.mint, decimals: file.SOLANA.assets.USDC.decimals };
  }
  if (network === 'CELO' && file.CELO) {
    for (const asset of ['USDC', 'USDT'] as const) {
      const token = file.CELO.assets[asset];
      if (token) assets[asset] = { identifier: token.contract, decimals: token.decimals };
    }
  }
  return assets;
}

function sameIdentifier(network: Network, a: string, b: string): boolean {
  return network === 'CELO' ? a.toLowerCase() === b.toLowerCase() : a === b;
}

/** The deposit setup for every network that is offered: live from the file, else sandbox. */
export function resolveChainSetups(
  file: ChainsFile | null,
  options: { readonly sandbox: boolean; readonly corridors: CorridorConfig },
): ChainSetups {
  const setups: Partial<Record<Network, ChainSetup>> = {};
  const errors: string[] = [];
  for (const network of networks) {
    const mints = options.corridors.mints[network];
    if (file?.[network] !== undefined) {
      const assets = liveAssets(network, file);
      for (const [asset, setup] of Object.entries(assets) as [CryptoAsset, ChainAssetSetup][]) {
        const mint = mints[asset];
        if (mint === undefined) continue; // not quotable; the corridor list leaves it out
        if (mint.decimals !== setup.decimals) {
          errors.push(`${network}.assets.${asset}.decimals: ${setup.decimals} differs from the corridor mint's ${mint.decimals}`);
        }
        if (!sameIdentifier(network, mint.identifier, setup.identifier)) {
          errors.push(`${network}.assets.${asset}: the token differs from the corridor mint of ${network}/${asset}`);
        }
      }
      const common = { network, assets, publicRpcUrl: file[network]?.publicRpcUrl ?? null };
      if (network === 'STELLAR' && file.STELLAR) {
        setups.STELLAR = { ...common, network, mode: 'live', config: file.STELLAR, depositAddress: file.STELLAR.depositAddress, chainId: defaultChainIds.STELLAR };
      } else if (network === 'SOLANA' && file.SOLANA) {
        setups.SOLANA = { ...common, network, mode: 'live', config: file.SOLANA, depositAddress: file.SOLANA.depositAddress, chainId: defaultChainIds.SOLANA };
      } else if (network === 'CELO' && file.CELO) {
        setups.CELO = { ...common, network, mode: 'live', config: file.CELO, depositAddress: file.CELO.depositAddress, chainId: `eip155:${file.CELO.chainId}` };
      }
      continue;
    }
    if (!options.sandbox) continue;
    const assets: Partial<Record<CryptoAsset, ChainAssetSetup>> = {};
    for (const [asset, mint] of Object.entries(mints) as [CryptoAsset, { identifier: string; decimals: number } | undefined][]) {
      if (mint !== undefined) assets[asset] = { identifier: mint.identifier, decimals: mint.decimals };
    }
    setups[network] = {
      network,
      mode: 'sandbox',
      depositAddress: sandboxDepositAddress(network),
      chainId: defaultChainIds[network],
      publicRpcUrl: null,
      assets,
    };
  }
  if (errors.length > 0) throw new Error(errors.map((line) => `chains file: ${line}`).join('\n'));
  return setups;
}
