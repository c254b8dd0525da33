// The pure parts of KYC retention: the actor's reply names the one document its record holds and
// the one a submission replaced (so the shell deletes every other upload), and the daily
// submission quotas per partner and per user (src/edge/kyc-quota.ts) on an injected clock.
import { handleCommand } from '../support/handle-command.ts';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kycBehavior, type KycReply } from '../../src/actors/kyc-actor.ts';
import type { CommandEnvelope, JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { KycState, KycSubmissionInput } from '../../src/domain/kyc.ts';
import { createInProcessKycQuota, dailyBucket } from '../../src/edge/kyc-quota.ts';
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';

const nowMs = Date.UTC(2026, 0, 10);
const fields: KycSubmissionInput = {
  fullName: 'Maria da Silva', documentType: 'PASSPORT', documentNumber: 'AB123456', dateOfBirth: '1990-05-17',
  nationality: 'BR', city: 'São Paulo', address: 'Rua Augusta 100', email: 'maria@example.com', phone: '+55 11 99999-0000',
};

function submit(documentRef: string, overrides: Partial<KycSubmissionInput> = {}): CommandEnvelope {
  const command = { kind: 'Submit', partnerId: 'p', userId: 'u', submission: { ...fields, documentRef, ...overrides } };
  return { commandId: documentRef, actorType: 'kyc', actorKey: 'p:u', kind: 'Submit', payload: toJsonValue(command) as JsonValue, sentAtMs: nowMs };
}

describe('KYC actor: one document per record', () => {
  const behavior = kycBehavior(sandboxDataKeyring());
  const handle = (state: KycState | null, envelope: CommandEnvelope) => handleCommand(behavior, state, envelope, { nowMs, commandId: envelope.commandId });

  test('a first submission: the record holds its document, nothing superseded', () => {
    const outcome = handle(null, submit('doc-1'));
    assert.deepEqual(outcome.reply, { ok: true, status: 'APPROVED', documentRef: 'doc-1' });
  });

  test('an approved record keeps its document: the reply names it, not the new upload', () => {
    const approved = handle(null, submit('doc-1')).state ?? null;
    const outcome = handle(approved, submit('doc-2'));
    assert.equal(outcome.state, undefined);
    assert.deepEqual(outcome.reply, { ok: true, status: 'APPROVED', documentRef: 'doc-1' });
  });

  test('a pending record approved with a new document: the old one is named as superseded', () => {
    const approved = handle(null, submit('doc-1')).state;
    assert.ok(approved !== undefined);
    const pending: KycState = { ...approved, status: 'PENDING', decidedAtMs: null };
    const outcome = handle(pending, submit('doc-2'));
    const reply = outcome.reply as KycReply;
    assert.deepEqual(reply, { ok: true, status: 'APPROVED', documentRef: 'doc-2', supersededRef: 'doc-1' });
  });

  test('a refused submission names no document (the shell deletes the upload)', () => {
    const reply = handle(null, submit('doc-3', { email: 'nope' })).reply as KycReply;
    assert.equal(reply.ok, false);
    assert.equal('documentRef' in reply, false);
  });
});

describe('KYC submission quotas', () => {
  test('a day holds N submissions, refilled over 24 hours', () => {
    assert.deepEqual(dailyBucket(24), { ratePerSecond: 24 / 86_400, burst: 24 });
    assert.throws(() => dailyBucket(0), RangeError);
  });

  test('per user and per partner, each on its own; Retry-After until the next one; the clock lifts it', async () => {
    let clock = nowMs;
    const quota = createInProcessKycQuota({ perUserPerDay: 2, perPartnerPerDay: 3 }, () => clock);
    assert.deepEqual(await quota.takeUser('p', 'u'), { allowed: true });
    assert.deepEqual(await quota.takeUser('p', 'u'), { allowed: true });
    const refused = await quota.takeUser('p', 'u');
    assert.equal(refused.allowed, false);
    if (!refused.allowed) assert.equal(refused.retryAfterSeconds, 43_200, 'half a day: one of two a day');
    assert.deepEqual(await quota.takeUser('p', 'v'), { allowed: true }, 'another user');
    assert.deepEqual(await quota.takeUser('q', 'u'), { allowed: true }, 'the same user id at another partner');
    for (let index = 0; index < 3; index++) assert.deepEqual(await quota.takePartner('p'), { allowed: true });
    assert.equal((await quota.takePartner('p')).allowed, false);
    assert.deepEqual(await quota.takePartner('q'), { allowed: true });
    clock += 43_200_000;
    assert.deepEqual(await quota.takeUser('p', 'u'), { allowed: true });
    assert.equal((await quota.takeUser('p', 'u')).allowed, false);
    await quota.close();
  });
});
