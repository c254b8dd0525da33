// Retention over the whole service: a quote nobody accepted is an offer (src/ports/quote-offers.ts)
// and never reaches the store; it is gone once past its offer's grace, and the shard role's sweep
// (RETENTION_SWEEP_INTERVAL_MS, on the service's clock) removes the idempotency record of its request
// once the TTL has passed; the quote is then refused, and the key runs as a new request. (A quote a
// transaction claimed is in the store; the sweep's rules for it: test/integration/retention.test.ts.)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { actorId } from '../../src/actors/envelope.ts';
import { quoteActorType } from '../../src/actors/quote-actor.ts';
import { idempotencyCollection } from '../../src/edge/idempotency.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody } from './support.ts';

const hourMs = 3_600_000;

describe('retention sweep in the running service', () => {
  let h: ServiceHarness;

  before(async () => {
    h = await startServiceHarness({ env: { RETENTION_SWEEP_INTERVAL_MS: '1000' } });
  });

  after(async () => {
    await h.stop();
  });

  test('an unaccepted quote and its idempotency record are gone after their time; the quote is then refused', async () => {
    const key = h.apiKeys[testPartners.kycOff] ?? '';
    const quoted = await call(h.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody, idempotencyKey: 'retention-quote-1' });
    assert.equal(quoted.status, 200, quoted.text);
    const quoteId = String(quoted.json['quote_id']);
    assert.equal(await h.ctx.store.load(actorId(quoteActorType, quoteId)), null, 'an offer, not an actor');
    assert.notEqual(await h.ctx.quoteOffers.find(testPartners.kycOff, quoteId), null);
    const records = async () => (await h.ctx.store.list(idempotencyCollection, { limit: 100 })).total;
    assert.ok((await records()) >= 1);
    // Past the quote's expiry (≤ 1 h), the 24 h grace and the 72 h idempotency TTL.
    h.advanceClockMs(73 * hourMs);
    await eventually(async () => assert.equal(await records(), 0), 20_000);
    assert.equal(await h.ctx.quoteOffers.find(testPartners.kycOff, quoteId), null, 'past its grace');
    const accepted = await call(h.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quoteId, user_id: 'u-1', account_number: '3001234567' } });
    assert.equal(accepted.status, 400, accepted.text);
    const again = await call(h.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody, idempotencyKey: 'retention-quote-1' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), null, 'a new request, not a replay');
    assert.notEqual(again.json['quote_id'], quoteId);
  });
});
