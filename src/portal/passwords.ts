// Portal administrators' passwords: scrypt (node:crypto, built in and maintained with Node), never
// stored or logged in clear. A stored hash reads `scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>`,
// so the cost can be raised later without invalidating hashes made with today's.
//
// Today's parameters (docs/portal.md): N = 2^16, r = 8, p = 1 — 64 MiB and about 0.1-0.2 s per
// hash on this project's machines; a 16-byte random salt, a 32-byte key. OWASP's first choice is
// N = 2^17; we halve the memory because every sign-in of every partner runs one on the edge, and
// the sign-in throttles (per address and per account) bound how many guesses that cost buys.
//
// Verification runs at most `verificationsInFlightMax` at once: each holds 64 MiB, and a burst of
// sign-ins must not take the edge's memory. A sign-in beyond it is told to retry (503).
import { randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export interface ScryptParameters {
  readonly cost: number;
  readonly blockSize: number;
  readonly parallelization: number;
}

export const defaultScryptParameters: ScryptParameters = { cost: 2 ** 16, blockSize: 8, parallelization: 1 };
const saltBytes = 16;
const keyBytes = 32;
/** Costs a stored hash may name: above this a hash is refused rather than run (a typo of 2^30 would stall the edge). */
const costMax = 2 ** 20;
export const verificationsInFlightMax = 4;

const hashPattern = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;

interface ParsedHash {
  readonly parameters: ScryptParameters;
  readonly salt: Buffer;
  readonly key: Buffer;
}

export function parsePasswordHash(text: string): ParsedHash | null {
  const match = hashPattern.exec(text);
  if (match === null) return null;
  const [cost, blockSize, parallelization] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const isPowerOfTwo = cost >= 2 && (cost & (cost - 1)) === 0;
  if (!isPowerOfTwo || cost > costMax || blockSize < 1 || blockSize > 32 || parallelization < 1 || parallelization > 16) return null;
  const salt = Buffer.from(match[4] ?? '', 'base64');
  const key = Buffer.from(match[5] ?? '', 'base64');
  if (salt.length < 16 || key.length < 16) return null;
  return { parameters: { cost, blockSize, parallelization }, salt, key };
}

function scryptOptions(parameters: ScryptParameters): ScryptOptions {
  // scrypt needs 128 · N · r bytes; Node refuses above maxmem (32 MiB by default).
  return { N: parameters.cost, r: parameters.blockSize, p: parameters.parallelization, maxmem: 256 * parameters.cost * parameters.blockSize };
}

function derive(password: string, salt: Buffer, length: number, parameters: ScryptParameters): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, scryptOptions(parameters), (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string, parameters: ScryptParameters = defaultScryptParameters): Promise<string> {
  const salt = randomBytes(saltBytes);
  const key = await derive(password, salt, keyBytes, parameters);
  return `scrypt$${parameters.cost}$${parameters.blockSize}$${parameters.parallelization}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** The same, synchronously: for the demo administrator at start, before anything serves. */
export function hashPasswordSync(password: string, parameters: ScryptParameters = defaultScryptParameters): string {
  const salt = randomBytes(saltBytes);
  const key = scryptSync(password.normalize('NFC'), salt, keyBytes, scryptOptions(parameters));
  return `scrypt$${parameters.cost}$${parameters.blockSize}$${parameters.parallelization}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export type Verification = 'match' | 'mismatch' | 'busy';

/**
 * Password checks, bounded in number at once. `verify(null, …)` (an unknown account) still runs one
 * scrypt over a fixed decoy hash: an unknown e-mail takes as long as a wrong password.
 */
export interface PasswordVerifier {
  verify(storedHash: string | null, password: string): Promise<Verification>;
}

export async function createPasswordVerifier(): Promise<PasswordVerifier> {
  const decoy = parsePasswordHash(await hashPassword(randomBytes(16).toString('hex')));
  if (decoy === null) throw new Error('the decoy password hash does not parse');
  let inFlight = 0;
  return {
    async verify(storedHash, password) {
      if (inFlight >= verificationsInFlightMax) return 'busy';
      const stored = storedHash === null ? null : parsePasswordHash(storedHash);
      const target = stored ?? decoy;
      inFlight += 1;
      try {
        const key = await derive(password, target.salt, target.key.length, target.parameters);
        const equal = timingSafeEqual(key, target.key);
        return equal && stored !== null ? 'match' : 'mismatch';
      } finally {
        inFlight -= 1;
      }
    },
  };
}
