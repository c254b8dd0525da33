// Verifying a settlement receipt (GET /transaction/{id}/receipt) exactly as the service signs it
// (docs/receipts.md), so an auditor or an end user trusts only what our key signed:
//   signature = "<BASE64URL(header)>..<BASE64URL(Ed25519 signature)>"   (a detached JWS)
//   header    = {"alg":"EdDSA","b64":false,"crit":["b64"],"kid":"<kid>"} (RFC 7797: unencoded payload)
//   signed    = ASCII(BASE64URL(header)) || "." || RFC 8785 canonical JSON of `receipt`
// The keys are the JWK Set at GET /.well-known/jwks.json (`fetchReceiptKeys`). Keep the receipt as
// the JSON you received: amounts are decimal strings, and any change to any value fails.
import { createPublicKey, verify } from 'node:crypto';
import type { components } from './schema.ts';

export type SettlementReceipt = components['schemas']['Receipt'];
export type SignedReceipt = components['schemas']['SignedReceipt'];
export type ReceiptJwks = components['schemas']['Jwks'];

export type ReceiptVerification =
  | { readonly ok: true; readonly receipt: SettlementReceipt; readonly kid: string }
  | { readonly ok: false; readonly reason: 'malformed_signature' | 'unsupported_header' | 'unknown_key' | 'bad_signature' | 'not_canonicalizable' };

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** RFC 8785 (JCS) text of a JSON value; throws on what JCS refuses (non-finite numbers, lone surrogates, non-JSON). */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') {
    if (loneSurrogate.test(value)) throw new TypeError('a lone surrogate is not I-JSON');
    return JSON.stringify(value);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`${String(value)} is not a JSON number`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record).sort().map((name) => `${canonicalJson(name)}:${canonicalJson(record[name])}`).join(',')}}`;
  }
  throw new TypeError(`a ${typeof value} is not JSON`);
}

function headerOf(encoded: string): { kid: string } | null {
  try {
    const header = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as Record<string, unknown>;
    const crit = header['crit'];
    const supported =
      header['alg'] === 'EdDSA' && header['b64'] === false && Array.isArray(crit) && crit.length === 1 && crit[0] === 'b64' && typeof header['kid'] === 'string';
    // Any other header member is unknown to us: refuse it rather than ignore what it might mean.
    const known = Object.keys(header).every((name) => ['alg', 'b64', 'crit', 'kid'].includes(name));
    return supported && known ? { kid: header['kid'] as string } : null;
  } catch {
    return null;
  }
}

/**
 * Verifies a signed receipt (`{ receipt, signature }` as the API answers it) against a JWK Set.
 * Only Ed25519 keys of the set are used; the key is chosen by the header's `kid`, so receipts
 * signed before a key rotation keep verifying while the old key is published.
 */
export function verifyReceipt(signed: { readonly receipt: unknown; readonly signature: string }, jwks: { readonly keys: readonly unknown[] }): ReceiptVerification {
  const parts = typeof signed.signature === 'string' ? signed.signature.split('.') : [];
  if (parts.length !== 3 || parts[1] !== '' || parts[0] === '' || parts[2] === '') return { ok: false, reason: 'malformed_signature' };
  const [encodedHeader = '', , encodedSignature = ''] = parts;
  if (!/^[A-Za-z0-9_-]+$/.test(encodedHeader) || !/^[A-Za-z0-9_-]+$/.test(encodedSignature)) return { ok: false, reason: 'malformed_signature' };
  const header = headerOf(encodedHeader);
  if (header === null) return { ok: false, reason: 'unsupported_header' };
  const jwk = jwks.keys.find((key): key is { kty: 'OKP'; crv: 'Ed25519'; kid: string; x: string } => {
    const k = key as Record<string, unknown> | null;
    return k !== null && typeof k === 'object' && k['kty'] === 'OKP' && k['crv'] === 'Ed25519' && k['kid'] === header.kid && typeof k['x'] === 'string';
  });
  if (jwk === undefined) return { ok: false, reason: 'unknown_key' };
  let payload: string;
  try {
    payload = canonicalJson(signed.receipt);
  } catch {
    return { ok: false, reason: 'not_canonicalizable' };
  }
  let good = false;
  try {
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    good = verify(null, Buffer.from(`${encodedHeader}.${payload}`, 'utf8'), publicKey, Buffer.from(encodedSignature, 'base64url'));
  } catch {
    good = false;
  }
  return good ? { ok: true, receipt: signed.receipt as SettlementReceipt, kid: header.kid } : { ok: false, reason: 'bad_signature' };
}

/** The service's receipt keys (GET /.well-known/jwks.json, no credentials needed). */
export async function fetchReceiptKeys(baseUrl: string, fetchImpl: typeof fetch = fetch): Promise<ReceiptJwks> {
  const response = await fetchImpl(`${baseUrl.replace(/\/+$/, '')}/.well-known/jwks.json`, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`GET /.well-known/jwks.json answered ${response.status}`);
  return (await response.json()) as ReceiptJwks;
}
