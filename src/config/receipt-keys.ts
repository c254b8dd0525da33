// The settlement receipts' signing keys (docs/receipts.md "Keys"): Ed25519 keys, each with a key
// id, one of them active. RECEIPT_SIGNING_KEYS_FILE names a JSON file:
//   { "active_kid": "receipts-2026-11",
//     "keys": [ { "kty": "OKP", "crv": "Ed25519", "kid": "receipts-2026-11", "x": "…", "d": "…" },
//               { "kty": "OKP", "crv": "Ed25519", "kid": "receipts-2026-05", "x": "…" } ] }
// Every key is published (GET /.well-known/jwks.json) so receipts signed before a rotation still
// verify; only the active one signs, so only it needs its private part `d`. Rotation: add the new
// key with `d`, make it active, keep the old one (its `d` may go). A file that is wrong in any way
// stops the start with a message naming what is wrong, never a key.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface ReceiptKey {
  readonly kid: string;
  readonly publicKey: KeyObject;
  /** Present for a key that can sign (the active one must). */
  readonly privateKey: KeyObject | null;
}

export interface ReceiptKeySet {
  readonly activeKid: string;
  /** Every published key, the active one first. */
  readonly keys: readonly ReceiptKey[];
}

/** A key id: short, URL- and header-safe. */
export const receiptKidPattern = /^[A-Za-z0-9._-]{1,64}$/;
/** Keys one set may publish: rotation needs a few, never hundreds. */
export const receiptKeysMax = 16;

export class ReceiptKeysError extends Error {
  override readonly name = 'ReceiptKeysError';
}

interface JwkInput {
  readonly kty?: unknown;
  readonly crv?: unknown;
  readonly kid?: unknown;
  readonly x?: unknown;
  readonly d?: unknown;
}

function fail(where: string, what: string): never {
  throw new ReceiptKeysError(`${where}: ${what}`);
}

function keyOf(jwk: JwkInput, where: string): ReceiptKey {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') fail(where, 'each key must be an Ed25519 JWK (kty "OKP", crv "Ed25519")');
  if (typeof jwk.kid !== 'string' || !receiptKidPattern.test(jwk.kid)) fail(where, 'kid must be 1–64 letters, digits, ".", "_" or "-"');
  if (typeof jwk.x !== 'string') fail(where, `key ${jwk.kid} has no public part "x"`);
  const kid = jwk.kid;
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  } catch {
    fail(where, `key ${kid}: "x" is not an Ed25519 public key`);
  }
  if (jwk.d === undefined) return { kid, publicKey, privateKey: null };
  if (typeof jwk.d !== 'string') fail(where, `key ${kid}: "d" must be a base64url string`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk.d }, format: 'jwk' });
  } catch {
    fail(where, `key ${kid}: "d" is not an Ed25519 private key`);
  }
  // A private part that does not belong to the published public part would sign receipts nobody can verify.
  if (createPublicKey(privateKey).export({ format: 'jwk' }).x !== jwk.x) fail(where, `key ${kid}: "d" does not match "x"`);
  return { kid, publicKey, privateKey };
}

/** A key set from the file's parsed JSON; throws ReceiptKeysError naming the problem. */
export function parseReceiptKeys(json: unknown, where = 'RECEIPT_SIGNING_KEYS_FILE'): ReceiptKeySet {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) fail(where, 'must be a JSON object with "active_kid" and "keys"');
  const { active_kid: activeKid, keys } = json as { active_kid?: unknown; keys?: unknown };
  if (typeof activeKid !== 'string') fail(where, '"active_kid" must name one of the keys');
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > receiptKeysMax) fail(where, `"keys" must list 1–${receiptKeysMax} keys`);
  const parsed = keys.map((jwk: unknown, index) => keyOf((jwk ?? {}) as JwkInput, `${where} keys[${index}]`));
  const kids = new Set(parsed.map((key) => key.kid));
  if (kids.size !== parsed.length) fail(where, 'two keys share a kid');
  const active = parsed.find((key) => key.kid === activeKid);
  if (active === undefined) fail(where, `"active_kid" ${activeKid} is not among the keys`);
  if (active.privateKey === null) fail(where, `the active key ${activeKid} has no private part "d"`);
  return { activeKid, keys: [active, ...parsed.filter((key) => key.kid !== activeKid)] };
}

export function readReceiptKeysFile(path: string): ReceiptKeySet {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ReceiptKeysError(`RECEIPT_SIGNING_KEYS_FILE ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ReceiptKeysError(`RECEIPT_SIGNING_KEYS_FILE ${path} is not JSON`);
  }
  return parseReceiptKeys(json, `RECEIPT_SIGNING_KEYS_FILE ${path}`);
}

/** A new Ed25519 key as a private JWK with its kid (the sandbox's generated key; tests; key ceremonies). */
export function generateReceiptJwk(kid: string): { kty: 'OKP'; crv: 'Ed25519'; kid: string; x: string; d: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string' || typeof jwk.d !== 'string') throw new Error('node:crypto exported an Ed25519 key without x or d');
  return { kty: 'OKP', crv: 'Ed25519', kid, x: jwk.x, d: jwk.d };
}
