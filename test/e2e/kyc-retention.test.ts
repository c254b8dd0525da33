// KYC documents over HTTP against the whole service: one document per user record (an upload the
// record does not take — a resubmission of an approved user, a refusal — is deleted before the
// answer), and the submission quotas per user and per partner per day (429 `rate_limited` with a
// reason and Retry-After, nothing stored). Blob keys are never handed out, so the test watches the
// store's own `putBlobStream` calls to learn them (the real store still does the work).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeKycState, kycActorType, kycKey } from '../../src/actors/kyc-actor.ts';
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';
import { actorId } from '../../src/actors/envelope.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, kycForm, pngBytes } from './support.ts';
import { eventually } from '../support/eventually.ts';

const dayMs = 86_400_000;

describe('KYC documents: one per record, quotas per day', () => {
  let h: ServiceHarness;
  let key: string;
  const uploads: string[] = [];

  before(async () => {
    h = await startServiceHarness({ env: { KYC_SUBMISSIONS_PER_USER_PER_DAY: '3', KYC_SUBMISSIONS_PER_PARTNER_PER_DAY: '8', RETENTION_SWEEP_INTERVAL_MS: '1000' } });
    key = h.apiKeys[testPartners.kycOn] ?? '';
    const store = h.ctx.store;
    const original = store.putBlobStream.bind(store);
    store.putBlobStream = (blobKey, chunks) => {
      uploads.push(blobKey);
      return original(blobKey, chunks);
    };
  });

  after(async () => {
    await h.stop();
  });

  async function recordDocument(userId: string): Promise<string> {
    const snapshot = await h.ctx.store.load(actorId(kycActorType, kycKey(testPartners.kycOn, userId)));
    assert.ok(snapshot !== null, 'the record exists');
    assert.ok(!JSON.stringify(snapshot.state).includes('Maria da Silva'), 'the personal fields are sealed at rest');
    return decodeKycState(sandboxDataKeyring(), snapshot.state).submission.documentRef;
  }

  test('a resubmission of an approved user leaves one document: the new upload is deleted', async () => {
    const first = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('one-doc') });
    assert.equal(first.status, 201, first.text);
    const kept = await recordDocument('one-doc');
    assert.deepEqual(await h.ctx.store.getBlob(kept), pngBytes, 'the document reads back through the service store');
    const before = uploads.length;
    const again = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('one-doc') });
    assert.equal(again.status, 201, again.text);
    const resubmitted = uploads.slice(before);
    assert.equal(resubmitted.length, 1);
    assert.equal(await recordDocument('one-doc'), kept, 'the approved record keeps its document');
    assert.ok(await h.ctx.store.getBlob(kept));
    assert.equal(await h.ctx.store.getBlob(resubmitted[0] ?? ''), null, 'the unreferenced upload is gone');
  });

  test('per user: beyond the quota → 429 rate_limited with Retry-After, and nothing is stored', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('busy-user', attempt === 0 ? {} : { email: 'not-an-email' }) });
      assert.equal(response.status, attempt === 0 ? 201 : 400, response.text);
    }
    const before = uploads.length;
    const refused = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('busy-user') });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.json['code'], 'rate_limited');
    assert.match(String(refused.json['reason']), /KYC submissions for this user/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= dayMs / 1000, String(retryAfter));
    for (const blobKey of uploads.slice(before)) assert.equal(await h.ctx.store.getBlob(blobKey), null);
    // Another user of the same partner is not held back by this one's quota.
    const other = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('calm-user') });
    assert.equal(other.status, 201, other.text);
  });

  test('/metrics: KYC documents and their bytes per partner (one document per user record)', async () => {
    await eventually(async () => {
      const metrics = await call(h.baseUrl, 'GET', '/metrics', { ops: h.opsApiKey });
      assert.equal(metrics.status, 200);
      // one-doc, busy-user, calm-user: one document each, whatever was resubmitted or refused.
      assert.match(metrics.text, /^storage_partner_records\{partner="kyc-on",kind="kyc_documents"\} 3$/m);
      assert.match(metrics.text, new RegExp(`^storage_partner_bytes\\{partner="kyc-on",kind="kyc_documents"\\} ${3 * pngBytes.length}$`, 'm'));
      assert.match(metrics.text, /^storage_partner_records\{partner="kyc-off",kind="kyc_documents"\} 0$/m);
    }, 20_000);
  });

  test('per partner: beyond the quota → 429 before the body is stored; a day later it is lifted', async () => {
    // So far 7 of 8: one-doc 2, busy-user 4 (its refused 4th counts for the partner: the partner's
    // quota is taken before the body is read), calm-user 1.
    const last = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('p-1') });
    assert.equal(last.status, 201, last.text);
    const before = uploads.length;
    const refused = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('p-3') });
    assert.equal(refused.status, 429, refused.text);
    assert.match(String(refused.json['reason']), /KYC submissions for this partner/);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(uploads.length, before, 'nothing was streamed to the store');
    // Another partner has its own quota.
    const otherPartner = await call(h.baseUrl, 'POST', '/kyc', { key: h.apiKeys[testPartners.kycOff] ?? '', rawBody: kycForm('p-3') });
    assert.equal(otherPartner.status, 201, otherPartner.text);
    h.advanceClockMs(dayMs);
    const later = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('p-3') });
    assert.equal(later.status, 201, later.text);
  });
});

describe('KYC quotas with the Redis bus: shared buckets', () => {
  let h: ServiceHarness;

  before(async () => {
    h = await startServiceHarness({ busKind: 'redis', env: { KYC_SUBMISSIONS_PER_USER_PER_DAY: '1', KYC_SUBMISSIONS_PER_PARTNER_PER_DAY: '3' } });
  });

  after(async () => {
    await h.stop();
  });

  test('per user, then per partner: 429 rate_limited with Retry-After', async () => {
    const key = h.apiKeys[testPartners.kycOn] ?? '';
    assert.equal((await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('r-1') })).status, 201);
    const user = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('r-1') });
    assert.equal(user.status, 429, user.text);
    assert.match(String(user.json['reason']), /for this user/);
    assert.ok(Number(user.headers.get('retry-after')) > 80_000, 'about a day for one a day');
    assert.equal((await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('r-2') })).status, 201);
    const partner = await call(h.baseUrl, 'POST', '/kyc', { key, rawBody: kycForm('r-3') });
    assert.equal(partner.status, 429, partner.text);
    assert.match(String(partner.json['reason']), /for this partner/);
  });
});
