// API-key authentication at the edge. Partners are known only by the SHA-256 (hex) of their keys,
// so a leaked partners file or snapshot does not leak usable keys. A presented key is hashed and
// looked up in a Map keyed by the hex digest, then confirmed with `crypto.timingSafeEqual`.
//
// Why this is constant-time enough: the only secret-dependent comparison an attacker could time is
// the Map's string comparison of hex digests, and its inputs are SHA-256 of the attacker's own
// guess. Learning that hash(guess) shares a prefix with a stored digest tells nothing about the key
// (finding guesses that extend the prefix is a preimage search, 16× harder per hex digit), so the
// byte-by-byte attack that timing leaks enable on raw keys does not apply. The final equality is
// decided by timingSafeEqual so the decision itself stays constant-time if the index changes.
//
// Credentials: `X-API-Key: <key>` or `Authorization: Bearer <key>` (same key, same scoping); the
// ops key only in `X-OPS-API-KEY`, in its own set, never accepted as a partner key or vice versa.
import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthThrottle, CredentialKind, KeyRing } from '../ports/access.ts';
import type { PublicThrottle } from './auth-throttle.ts';
import { errorResponse } from './errors.ts';
import type { Guard, GuardResult, HttpResponse, RequestHead } from './http-types.ts';
import { inProcessRateLimit, type PartnerRateLimit, type RateLimiter } from './rate-limit.ts';

/** Longest API key we hash; anything longer is rejected before hashing. */
export const apiKeyCharsMax = 256;
/** Most keys one partner may hold at once (rotation overlaps old and new keys). */
export const keysPerPartnerMax = 16;

const sha256HexPattern = /^[0-9a-f]{64}$/;
/** Visible ASCII, no spaces: what a generated API key looks like. */
const apiKeyPattern = /^[\x21-\x7e]+$/;
const bearerPattern = /^bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * One-shot `crypto.hash` (Node ≥ 20.12) skips the Hash object `createHash` builds: about a quarter
 * of the cost, and the edge hashes a key on every partner request. Older Node 20 releases lack it.
 */
const oneShotHash = (crypto as { hash?: typeof crypto.hash }).hash;

/** Random bytes in every key the service makes (ops and demo keys, keys the admin service issues): 192 bits. */
export const generatedKeyBytes = 24;

/**
 * A new API key: `<prefix>_` and `generatedKeyBytes` CSPRNG bytes in hex. Above the 128 bits a
 * configured key must have (src/config/key-strength.ts) with room to spare.
 */
export function generateApiKey(prefix: string): string {
  return `${prefix}_${randomBytes(generatedKeyBytes).toString('hex')}`;
}

export function sha256Hex(value: string): string {
  return oneShotHash === undefined ? createHash('sha256').update(value, 'utf8').digest('hex') : oneShotHash('sha256', value, 'hex');
}

interface StoredKey {
  readonly ownerId: string;
  readonly digest: Buffer;
}

function normaliseHashes(ownerId: string, hashes: readonly string[]): string[] {
  if (hashes.length > keysPerPartnerMax) {
    throw new RangeError(`${ownerId}: at most ${keysPerPartnerMax} API keys, got ${hashes.length}`);
  }
  return hashes.map((hash, index) => {
    const normalised = hash.trim().toLowerCase();
    if (!sha256HexPattern.test(normalised)) {
      throw new TypeError(`${ownerId}: apiKeySha256[${index}] is not a hex SHA-256 digest`);
    }
    return normalised;
  });
}

/** Where a presented digest is decoded for the comparison (synchronous use only: no allocation per request). */
const presentedDigest = Buffer.alloc(32);

function confirm(stored: StoredKey | undefined, presentedHex: string): string | null {
  if (stored === undefined) return null;
  presentedDigest.write(presentedHex, 0, 'hex');
  return timingSafeEqual(stored.digest, presentedDigest) ? stored.ownerId : null;
}

function isWellFormedKey(apiKey: string): boolean {
  return apiKey.length > 0 && apiKey.length <= apiKeyCharsMax && apiKeyPattern.test(apiKey);
}

export function createKeyRing(): KeyRing {
  const partnerByHash = new Map<string, StoredKey>();
  const hashesByPartner = new Map<string, string[]>();
  let opsByHash = new Map<string, StoredKey>();

  function lookup(index: Map<string, StoredKey>, apiKey: string): string | null {
    if (!isWellFormedKey(apiKey)) return null;
    const digestHex = sha256Hex(apiKey);
    return confirm(index.get(digestHex), digestHex);
  }

  function removePartner(partnerId: string): void {
    for (const hash of hashesByPartner.get(partnerId) ?? []) partnerByHash.delete(hash);
    hashesByPartner.delete(partnerId);
  }

  return {
    setPartnerKeys(partnerId, apiKeySha256) {
      const hashes = normaliseHashes(partnerId, apiKeySha256);
      // Validate everything before changing anything, so a bad call leaves the ring as it was.
      for (const hash of hashes) {
        const owner = partnerByHash.get(hash)?.ownerId;
        if (owner !== undefined && owner !== partnerId) {
          throw new Error(`${partnerId}: an API key hash is already assigned to partner ${owner}`);
        }
      }
      removePartner(partnerId);
      if (hashes.length === 0) return;
      for (const hash of hashes) partnerByHash.set(hash, { ownerId: partnerId, digest: Buffer.from(hash, 'hex') });
      hashesByPartner.set(partnerId, hashes);
    },
    removePartner,
    setOpsKeys(opsKeySha256) {
      const hashes = normaliseHashes('ops', opsKeySha256);
      opsByHash = new Map(hashes.map((hash) => [hash, { ownerId: 'ops', digest: Buffer.from(hash, 'hex') }]));
    },
    findPartner: (apiKey) => lookup(partnerByHash, apiKey),
    isOpsKey: (apiKey) => lookup(opsByHash, apiKey) !== null,
    partnerIds: () => [...hashesByPartner.keys()],
  };
}

export type PresentedCredential =
  | { readonly kind: 'key'; readonly apiKey: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed' };

/**
 * The partner key a request presents: `X-API-Key`, or `Authorization: Bearer <key>`. Both may be
 * sent only if they carry the same key (two different credentials are refused, not guessed
 * between). Other Authorization schemes are ignored.
 */
export function presentedPartnerKey(headers: Readonly<Record<string, string>>): PresentedCredential {
  const headerKey = headers['x-api-key']?.trim();
  const authorization = headers['authorization'];
  const bearerKey = authorization === undefined ? undefined : bearerPattern.exec(authorization.trim())?.[1];
  if (headerKey !== undefined && bearerKey !== undefined && headerKey !== bearerKey) return { kind: 'malformed' };
  const apiKey = headerKey ?? bearerKey;
  if (apiKey === undefined || apiKey.length === 0) return { kind: 'missing' };
  return isWellFormedKey(apiKey) ? { kind: 'key', apiKey } : { kind: 'malformed' };
}

export type AuthResult =
  | { readonly ok: true; readonly partnerId: string }
  | { readonly ok: false; readonly status: 401; readonly problem: 'missing' | 'invalid' };

export function authenticatePartner(headers: Readonly<Record<string, string>>, keyRing: KeyRing): AuthResult {
  const credential = presentedPartnerKey(headers);
  if (credential.kind === 'missing') return { ok: false, status: 401, problem: 'missing' };
  if (credential.kind === 'malformed') return { ok: false, status: 401, problem: 'invalid' };
  const partnerId = keyRing.findPartner(credential.apiKey);
  return partnerId === null ? { ok: false, status: 401, problem: 'invalid' } : { ok: true, partnerId };
}

export function authenticateOps(headers: Readonly<Record<string, string>>, keyRing: KeyRing): boolean {
  const opsKey = headers['x-ops-api-key']?.trim();
  return opsKey !== undefined && keyRing.isOpsKey(opsKey);
}

function authenticationFailed(problem: 'missing' | 'invalid') {
  const reason = problem === 'missing' ? 'Missing API key' : 'Invalid API key';
  return errorResponse('authentication_failed', reason, { 'www-authenticate': 'Bearer' });
}

function rateLimited(retryAfterSeconds: number, reason?: string): HttpResponse {
  return errorResponse('rate_limited', reason, { 'retry-after': String(retryAfterSeconds) });
}

/** What every guard of a credential knows about failed authentication. */
export interface CredentialGuardOptions {
  readonly keyRing: KeyRing;
  /**
   * Failed authentications per client address (src/edge/auth-throttle.ts): counted, 429 once the
   * address's bucket is empty, logged by sample instead of an access-log line each. Without it:
   * every failure is a plain 401 with its access-log line.
   */
  readonly authThrottle?: AuthThrottle;
  /** The client's address (X-Forwarded-For from TRUSTED_PROXIES: src/edge/client-address.ts); the TCP peer by default. */
  readonly clientAddress?: (head: RequestHead) => string;
}

function peerAddress(head: RequestHead): string {
  return head.remoteAddress;
}

/** The refusal of a failed authentication: `unauthenticated` (401), or 429 once the address is throttled. */
function credentialRefused(kind: CredentialKind, head: RequestHead, options: CredentialGuardOptions, unauthenticated: HttpResponse): GuardResult {
  const throttle = options.authThrottle;
  if (throttle === undefined) return { allow: false, response: unauthenticated };
  const address = (options.clientAddress ?? peerAddress)(head);
  const outcome = throttle.failed(kind, address, { method: head.method, route: head.routePattern, requestId: head.requestId });
  const response = outcome.throttled
    ? rateLimited(outcome.retryAfterSeconds, 'Too many failed authentication attempts from this address; retry after the Retry-After delay')
    : unauthenticated;
  return { allow: false, response, skipAccessLog: true };
}

export interface PartnerGuardOptions extends CredentialGuardOptions {
  /**
   * When given, one token per request from the partner's bucket; 429 `rate_limited` when empty.
   * A RateLimiter is this process's buckets; a PartnerRateLimit may be shared by every edge.
   */
  readonly rateLimiter?: RateLimiter | PartnerRateLimit;
}

/**
 * Route guard for partner endpoints: authenticates (401 `authentication_failed`; 429 for an address
 * that failed too often) and rate limits per partner (429 `rate_limited` with `Retry-After`),
 * before any body byte is buffered.
 */
export function partnerGuard(options: PartnerGuardOptions): Guard {
  const given = options.rateLimiter;
  const limit = given === undefined ? undefined : 'admit' in given ? given : inProcessRateLimit(given);
  return (head: RequestHead) => {
    const auth = authenticatePartner(head.headers, options.keyRing);
    if (!auth.ok) return credentialRefused('partner', head, options, authenticationFailed(auth.problem));
    const partnerId = auth.partnerId;
    const admission = limit?.admit(partnerId);
    if (admission === undefined || admission.kind === 'allowed') return { allow: true, partnerId };
    if (admission.kind === 'refused') return { allow: false, partnerId, response: rateLimited(admission.retryAfterSeconds) };
    return { allow: true, partnerId, wait: admission.decided.then((decision) => (decision.allowed ? null : rateLimited(decision.retryAfterSeconds))) };
  };
}

/** Route guard for the ops endpoints (`X-OPS-API-KEY`). */
export function opsGuard(options: CredentialGuardOptions): Guard {
  const refused = errorResponse('authentication_failed', 'Missing or invalid ops API key');
  return (head: RequestHead) =>
    authenticateOps(head.headers, options.keyRing) ? { allow: true, partnerId: null } : credentialRefused('ops', head, options, refused);
}

/**
 * Route guard for the routes without credentials (corridors, health): a bucket per client address
 * (src/edge/auth-throttle.ts), 429 `rate_limited` with Retry-After beyond it, logged by sample.
 */
export function publicGuard(options: { readonly throttle: PublicThrottle; readonly clientAddress?: (head: RequestHead) => string }): Guard {
  const clientAddress = options.clientAddress ?? peerAddress;
  return (head: RequestHead) => {
    const verdict = options.throttle.admit(clientAddress(head), { method: head.method, route: head.routePattern, requestId: head.requestId });
    if (verdict.allowed) return { allow: true, partnerId: null };
    return { allow: false, response: rateLimited(verdict.retryAfterSeconds, 'Too many requests from this address; retry after the Retry-After delay'), skipAccessLog: true };
  };
}
