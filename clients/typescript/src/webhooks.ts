// Verifying a webhook delivery exactly as the service signs it, so no partner re-implements it
// from prose:
//   X-Service-Timestamp: <unix seconds of this attempt>
//   X-Service-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
//   X-Service-Webhook-Secret: <the secret itself> (the spec's header; checked too when present)
// Verify the raw bytes you received, before any JSON parsing (a re-serialised body has other
// bytes). The comparison is constant-time; a timestamp further than `toleranceSeconds` from your
// clock is refused (a replayed old delivery). During a secret rotation pass both secrets: the
// service signs with one secret at a time, and accepting both covers the switch.
import { createHmac, timingSafeEqual, createHash } from 'node:crypto';
import type { components } from './schema.ts';

export type WebhookEvent = components['schemas']['WebhookEvent'];
export type WebhookTestEvent = components['schemas']['WebhookTestEvent'];

/** Default tolerance between the delivery's timestamp and your clock (the service's own default). */
export const webhookToleranceSecondsDefault = 300;

export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export type WebhookVerification =
  | {
      readonly ok: true;
      readonly payload: WebhookEvent | WebhookTestEvent;
      /** Stable across attempts: deduplicate by it (deliveries are at least once). */
      readonly eventId: string | null;
      /** Per-partner sequence (GET /events); null for a test delivery. */
      readonly sequence: number | null;
      readonly timestampSeconds: number;
      /** Index in `secrets` of the secret that verified it (tells you when the new one is live). */
      readonly secretIndex: number;
    }
  | { readonly ok: false; readonly reason: 'missing_headers' | 'bad_timestamp' | 'stale_timestamp' | 'bad_signature' | 'secret_mismatch' | 'bad_body' };

export interface VerifyOptions {
  readonly toleranceSeconds?: number;
  /** Your clock, epoch ms (default Date.now()). */
  readonly nowMs?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const direct = headers[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  if (direct === undefined) return undefined;
  return typeof direct === 'string' ? direct : direct[0];
}

/** Constant-time equality of two strings of any length (compared as SHA-256 digests). */
function sameText(left: string, right: string): boolean {
  return timingSafeEqual(createHash('sha256').update(left, 'utf8').digest(), createHash('sha256').update(right, 'utf8').digest());
}

function expectedSignature(secret: string, timestampSeconds: number, rawBody: string | Uint8Array): Buffer {
  const hmac = createHmac('sha256', secret).update(`${timestampSeconds}.`, 'utf8');
  hmac.update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody);
  return hmac.digest();
}

/**
 * Verifies one delivery. `secret` is your signing secret, or several during a rotation (current
 * first). Answers what to do: `ok: false` → answer 401 and ignore the body.
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secret: string | readonly string[], options: VerifyOptions = {}): WebhookVerification {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  const timestamp = header(headers, 'x-service-timestamp');
  const signatures = header(headers, 'x-service-signature');
  if (timestamp === undefined || signatures === undefined || secrets.length === 0) return { ok: false, reason: 'missing_headers' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'bad_timestamp' };
  const timestampSeconds = Number(timestamp);
  const toleranceSeconds = options.toleranceSeconds ?? webhookToleranceSecondsDefault;
  if (Math.abs((options.nowMs ?? Date.now()) / 1_000 - timestampSeconds) > toleranceSeconds) return { ok: false, reason: 'stale_timestamp' };
  const offered = signatures
    .split(',')
    .map((part) => part.trim().split('=', 2))
    .filter((pair): pair is [string, string] => pair[0] === 'v1' && pair[1] !== undefined && /^[0-9a-f]{64}$/.test(pair[1]))
    .map(([, hex]) => Buffer.from(hex, 'hex'));
  // Every secret is compared with every offered signature, whatever matched: no early exit.
  let secretIndex = -1;
  secrets.forEach((candidate, index) => {
    const expected = expectedSignature(candidate, timestampSeconds, rawBody);
    for (const signature of offered) if (timingSafeEqual(signature, expected) && secretIndex === -1) secretIndex = index;
  });
  if (secretIndex === -1) return { ok: false, reason: 'bad_signature' };
  const sentSecret = header(headers, 'x-service-webhook-secret');
  if (sentSecret !== undefined && !sameText(sentSecret, secrets[secretIndex] ?? '')) return { ok: false, reason: 'secret_mismatch' };
  let payload: WebhookEvent | WebhookTestEvent;
  try {
    payload = JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8')) as WebhookEvent | WebhookTestEvent;
  } catch {
    return { ok: false, reason: 'bad_body' };
  }
  const sequence = header(headers, 'x-service-sequence');
  return {
    ok: true,
    payload,
    eventId: header(headers, 'x-service-event-id') ?? null,
    sequence: sequence === undefined || !/^\d{1,16}$/.test(sequence) ? null : Number(sequence),
    timestampSeconds,
    secretIndex,
  };
}
