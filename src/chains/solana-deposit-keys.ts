// Per-transaction Solana deposit wallets, derived without I/O from one master secret and the
// transaction id, so every process (the edge that answers payment_context, the watcher that sweeps)
// computes the same wallet and nothing is stored before the answer:
//
//   seed  = HMAC-SHA256(master secret, "solana-deposit-v1:" + transaction id)
//   owner = the ed25519 keypair of that 32-byte seed
//
// payment_context.depositAddress is the owner; deposits go to its associated token account for the
// mint. Only the sweep signs with the owner (the hot wallet pays the fees). The master secret is
// never logged: messages name the environment variable that holds it, never its value. Changing
// the master secret changes every address: funds still at addresses of the old secret can then
// only be swept with it, so it must never change (docs/solana-celo.md).
import { createHmac } from 'node:crypto';
import { Keypair } from '@solana/web3.js';

/** A master secret is 32 to 64 random bytes, given as hex (e.g. `openssl rand -hex 32`). */
const masterSecretBytesMin = 32;
const masterSecretBytesMax = 64;
const derivationLabel = 'solana-deposit-v1:';

/** The master secret's bytes, or null when the text is not 32–64 bytes of hex. */
export function parseDepositMasterSecret(text: string): Uint8Array | null {
  const hex = text.trim().replace(/^0x/i, '');
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex)) return null;
  const bytes = Buffer.from(hex, 'hex');
  return bytes.length >= masterSecretBytesMin && bytes.length <= masterSecretBytesMax ? new Uint8Array(bytes) : null;
}

/**
 * Reads the master secret from `env[envName]`; throws naming the variable (never the value) when
 * it is unset or malformed: a process that cannot derive addresses must not start.
 */
export function loadDepositMasterSecret(envName: string, env: Readonly<Record<string, string | undefined>>): Uint8Array {
  const text = env[envName];
  if (text === undefined || text.trim() === '') {
    throw new Error(`SOLANA depositMasterSecretEnv: the environment variable ${envName} is not set (per-transaction deposit addresses are derived from it)`);
  }
  const secret = parseDepositMasterSecret(text);
  if (secret === null) {
    throw new Error(`SOLANA depositMasterSecretEnv: ${envName} must hold ${masterSecretBytesMin}–${masterSecretBytesMax} random bytes as hex`);
  }
  return secret;
}

/** The deposit wallet of one transaction (its public key is payment_context.depositAddress). */
export function depositKeypair(masterSecret: Uint8Array, transactionId: string): Keypair {
  const seed = createHmac('sha256', masterSecret).update(`${derivationLabel}${transactionId}`, 'utf8').digest();
  return Keypair.fromSeed(seed);
}
