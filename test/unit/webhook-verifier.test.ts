// verifyWebhook (clients/typescript/src/webhooks.ts) accepts exactly what the service signs
// (src/webhooks/signing.ts, the headers of a real delivery attempt) and refuses the rest: another
// secret, a changed byte, an old or future timestamp, a missing header, a secret header that does
// not match; during a rotation it accepts either secret and says which one verified.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { deliveryHeaders, timestampToleranceSecondsDefault, verifySignature, webhookHeaders } from '../../src/webhooks/signing.ts';
import { verifyWebhook, webhookToleranceSecondsDefault } from '../../clients/typescript/src/webhooks.ts';

const secret = `whsec_${randomBytes(32).toString('base64url')}`;
const nowMs = 1_764_100_000_000;
const body = JSON.stringify({ event: 'transaction.updated', data: { id: '0b7d1f5e-8f9a-4d8e-a7a3-0c6f1a9e2b44', status: 'PAYMENT_COMPLETED', quoteId: 'q', accountNumber: '3001234567', onChainId: 'h', refundOnChainId: null, taxId: null, externalId: null, partnerUserId: 'ação-1' } });
const signed = deliveryHeaders({ secret, eventId: 'evt_1', sequence: 7, attempt: 2, nowMs, body });

test('a delivery the service signed verifies, with its event id, sequence and timestamp', () => {
  const verdict = verifyWebhook(body, signed, secret, { nowMs });
  assert.ok(verdict.ok);
  assert.equal(verdict.eventId, 'evt_1');
  assert.equal(verdict.sequence, 7);
  assert.equal(verdict.timestampSeconds, Math.floor(nowMs / 1000));
  assert.equal(verdict.payload.event, 'transaction.updated');
  // Raw bytes (a Buffer, non-ASCII user id included) and Fetch Headers work the same.
  assert.ok(verifyWebhook(Buffer.from(body, 'utf8'), new Headers(signed), secret, { nowMs }).ok);
  // The client and the service's own check agree.
  assert.equal(verifySignature({ secret, timestamp: signed[webhookHeaders.timestamp], signature: signed[webhookHeaders.signature], body, nowMs }), true);
  assert.equal(webhookToleranceSecondsDefault, timestampToleranceSecondsDefault);
});

test('another secret, a changed byte, or a missing header is refused', () => {
  assert.deepEqual(verifyWebhook(body, signed, `whsec_${randomBytes(32).toString('base64url')}`, { nowMs }), { ok: false, reason: 'bad_signature' });
  assert.deepEqual(verifyWebhook(body.replace('COMPLETED', 'COMPLETEE'), signed, secret, { nowMs }), { ok: false, reason: 'bad_signature' });
  const { [webhookHeaders.signature]: _signature, ...unsigned } = signed;
  assert.deepEqual(verifyWebhook(body, unsigned, secret, { nowMs }), { ok: false, reason: 'missing_headers' });
  assert.deepEqual(verifyWebhook(body, { ...signed, [webhookHeaders.timestamp]: '12ab' }, secret, { nowMs }), { ok: false, reason: 'bad_timestamp' });
  assert.deepEqual(verifyWebhook(body, { ...signed, [webhookHeaders.secret]: 'not-the-secret' }, secret, { nowMs }), { ok: false, reason: 'secret_mismatch' });
});

test('a timestamp beyond the tolerance either way is refused as a replay; within it, accepted', () => {
  const toleranceMs = webhookToleranceSecondsDefault * 1000;
  assert.ok(verifyWebhook(body, signed, secret, { nowMs: nowMs + toleranceMs }).ok);
  assert.deepEqual(verifyWebhook(body, signed, secret, { nowMs: nowMs + toleranceMs + 1000 }), { ok: false, reason: 'stale_timestamp' });
  assert.deepEqual(verifyWebhook(body, signed, secret, { nowMs: nowMs - toleranceMs - 1000 }), { ok: false, reason: 'stale_timestamp' });
  assert.ok(verifyWebhook(body, signed, secret, { nowMs: nowMs + 60 * 60_000, toleranceSeconds: 3600 }).ok);
});

test('during a secret rotation both secrets are accepted and the verdict says which one signed', () => {
  const next = `whsec_${randomBytes(32).toString('base64url')}`;
  const old = verifyWebhook(body, signed, [next, secret], { nowMs });
  assert.ok(old.ok && old.secretIndex === 1, 'signed with the old secret, still accepted');
  const afterActivation = deliveryHeaders({ secret: next, eventId: 'evt_2', sequence: 8, attempt: 1, nowMs, body });
  const fresh = verifyWebhook(body, afterActivation, [next, secret], { nowMs });
  assert.ok(fresh.ok && fresh.secretIndex === 0);
  assert.deepEqual(verifyWebhook(body, signed, [], { nowMs }), { ok: false, reason: 'missing_headers' });
});
