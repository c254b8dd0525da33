// The fair-share ledger of the edge (src/edge/fair-shares.ts): what each share and the whole
// process may hold, whose limit refuses, and that everything comes back when requests end.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { anonymousShareKey, createFairShares, isRefusal, type Admission, type FairShareLimits, type Refusal } from '../../src/edge/fair-shares.ts';

const limits: FairShareLimits = {
  partner: { requestsInFlightMax: 3, bodyBytesInFlightMax: 100, uploadsInFlightMax: 1 },
  anonymous: { requestsInFlightMax: 1, bodyBytesInFlightMax: 10, uploadsInFlightMax: 0 },
  bodyBytesInFlightMax: 150,
  uploadsInFlightMax: 2,
};

function admitted(result: Admission | Refusal): Admission {
  if (isRefusal(result)) throw new Error(`refused: ${JSON.stringify(result)}`);
  return result;
}

describe('fair shares', () => {
  test('a partner over its own request share is refused for its share; another partner is not', () => {
    const shares = createFairShares(limits);
    const held = [1, 2, 3].map(() => admitted(shares.admit('partner:a', false)));
    assert.deepEqual(shares.admit('partner:a', false), { scope: 'share', resource: 'requests' });
    admitted(shares.admit('partner:b', false));
    held[0]?.release();
    admitted(shares.admit('partner:a', false));
  });

  test('body bytes: the share first, then the process; a refused reservation reserves nothing', () => {
    const shares = createFairShares(limits);
    const a = admitted(shares.admit('partner:a', false));
    assert.equal(a.reserveBodyBytes(90), null);
    assert.deepEqual(a.reserveBodyBytes(20), { scope: 'share', resource: 'body_bytes' });
    const b = admitted(shares.admit('partner:b', false));
    assert.equal(b.reserveBodyBytes(50), null);
    assert.deepEqual(b.reserveBodyBytes(20), { scope: 'server', resource: 'body_bytes' }, '90 + 50 + 20 is over the 150 of the process');
    assert.equal(shares.stats().bodyBytesInFlight, 140);
    a.release();
    a.release();
    assert.equal(shares.stats().bodyBytesInFlight, 50, 'released once, whatever the number of calls');
    assert.equal(a.reserveBodyBytes(10), null, 'a released admission reserves nothing');
    assert.equal(shares.stats().bodyBytesInFlight, 50);
  });

  test('uploads: one slot per partner, two for the process, separate from requests', () => {
    const shares = createFairShares(limits);
    const first = admitted(shares.admit('partner:a', true));
    assert.deepEqual(shares.admit('partner:a', true), { scope: 'share', resource: 'uploads' });
    admitted(shares.admit('partner:a', false)); // a JSON call of the same partner still goes
    admitted(shares.admit('partner:b', true));
    assert.deepEqual(shares.admit('partner:c', true), { scope: 'server', resource: 'uploads' });
    assert.equal(shares.stats().uploadsInFlight, 2);
    first.release();
    admitted(shares.admit('partner:c', true));
  });

  test('unauthenticated requests share one small budget and no uploads', () => {
    const shares = createFairShares(limits);
    const one = admitted(shares.admit(anonymousShareKey, false));
    assert.deepEqual(one.reserveBodyBytes(11), { scope: 'share', resource: 'body_bytes' });
    assert.deepEqual(shares.admit(anonymousShareKey, false), { scope: 'share', resource: 'requests' });
    one.release();
    assert.deepEqual(shares.admit(anonymousShareKey, true), { scope: 'share', resource: 'uploads' });
  });

  test('a share that holds nothing is forgotten (the ledger stays as small as the requests in flight)', () => {
    const shares = createFairShares(limits);
    const held = Array.from({ length: 50 }, (_, index) => admitted(shares.admit(`partner:${index}`, false)));
    assert.equal(shares.stats().sharesActive, 50);
    for (const admission of held) admission.release();
    assert.deepEqual(shares.stats(), { bodyBytesInFlight: 0, uploadsInFlight: 0, sharesActive: 0 });
    shares.admit('partner:x', true);
    shares.admit('partner:x', true); // refused: must not leave anything behind either
    assert.equal(shares.stats().sharesActive, 1);
  });

  test('limits must be non-negative integers', () => {
    assert.throws(() => createFairShares({ ...limits, uploadsInFlightMax: -1 }), RangeError);
    assert.throws(() => createFairShares({ ...limits, partner: { ...limits.partner, bodyBytesInFlightMax: 1.5 } }), RangeError);
  });
});
