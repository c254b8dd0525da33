// What a delivery carries besides the body: the spec's shared-secret header and our own event id,
// per-partner sequence, timestamp and HMAC-SHA256 signature over `timestamp + '.' + body`
// (docs/webhooks.md, "Verifying a delivery"). The event id is derived from the outbox row id, so
// every dispatcher computes the same one for the same event.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const webhookHeaders = {
  /** The spec's header: the partner's shared secret as is. */
  secret: 'x-service-webhook-secret',
  eventId: 'x-service-event-id',
  sequence: 'x-service-sequence',
  /** Unix time in seconds when this attempt was signed. */
  timestamp: 'x-service-timestamp',
  /** `v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>`. */
  signature: 'x-service-signature',
  /** 1-based attempt number within the current run. */
  attempt: 'x-service-attempt',
} as const;

export const signatureScheme = 'v1';
/** How far a timestamp may be from the receiver's clock before it treats the delivery as a replay. */
export const timestampToleranceSecondsDefault = 300;
/** Longest secret we accept (the partners file allows 16..256 characters). */
export const secretCharsMax = 256;
export const secretCharsMin = 16;

export function signatureOf(secret: string, timestampSeconds: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.${body}`, 'utf8').digest('hex');
}

/** The headers of one attempt; `sequence` is null for a test delivery (not in the event log). */
export function deliveryHeaders(input: {
  readonly secret: string;
  readonly eventId: string;
  readonly sequence: number | null;
  readonly attempt: number;
  readonly nowMs: number;
  readonly body: string;
}): Record<string, string> {
  const timestampSeconds = Math.floor(input.nowMs / 1_000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'payments-service-webhooks/1',
    [webhookHeaders.secret]: input.secret,
    [webhookHeaders.eventId]: input.eventId,
    [webhookHeaders.timestamp]: String(timestampSeconds),
    [webhookHeaders.signature]: `${signatureScheme}=${signatureOf(input.secret, timestampSeconds, input.body)}`,
    [webhookHeaders.attempt]: String(input.attempt),
  };
  if (input.sequence !== null) headers[webhookHeaders.sequence] = String(input.sequence);
  return headers;
}

/**
 * The receiving side (what docs/webhooks.md shows partners, used by our tests): the signature
 * matches and the timestamp is within the tolerance. Constant-time comparison.
 */
export function verifySignature(input: {
  readonly secret: string;
  readonly timestamp: string | undefined;
  readonly signature: string | undefined;
  readonly body: string;
  readonly nowMs: number;
  readonly toleranceSeconds?: number;
}): boolean {
  if (input.timestamp === undefined || input.signature === undefined || !/^\d{1,12}$/.test(input.timestamp)) return false;
  const timestampSeconds = Number(input.timestamp);
  const tolerance = input.toleranceSeconds ?? timestampToleranceSecondsDefault;
  if (Math.abs(input.nowMs / 1_000 - timestampSeconds) > tolerance) return false;
  const expected = Buffer.from(signatureOf(input.secret, timestampSeconds, input.body), 'hex');
  return input.signature.split(',').some((part) => {
    const [scheme, value] = part.trim().split('=', 2);
    if (scheme !== signatureScheme || value === undefined || !/^[0-9a-f]{64}$/.test(value)) return false;
    return timingSafeEqual(Buffer.from(value, 'hex'), expected);
  });
}

/** Stable, opaque event id for an outbox row (the row id names internal actor keys). */
export function eventIdOf(outboxRowId: string): string {
  return `evt_${createHash('sha256').update(outboxRowId, 'utf8').digest('hex').slice(0, 32)}`;
}

/** A fresh signing secret for a rotation: 32 random bytes, base64url, with a recognisable prefix. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * A draft's test secret: what its test deliveries carry and are signed with, since a URL that is
 * not activated yet may not be the partner's. Same shape as a signing secret, its own prefix.
 */
export function generateTestSecret(): string {
  return `whtest_${randomBytes(32).toString('base64url')}`;
}

/** Constant-time equality of two secrets (different lengths compare unequal without early exit on content). */
export function secretsEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a, 'utf8').digest();
  const right = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(left, right);
}
