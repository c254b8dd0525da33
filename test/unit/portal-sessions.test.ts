// The partner portal's pure pieces: password hashes (scrypt, parameters in the hash, a decoy for
// unknown accounts), session expiry (idle and lifetime), and reading the session cookie.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPasswordVerifier, hashPassword, parsePasswordHash } from '../../src/portal/passwords.ts';
import { cookieValue, sessionCookie } from '../../src/portal/requests.ts';
import { sessionEndsAtMs, sessionExpired, type PortalSession } from '../../src/portal/sessions.ts';

const cheap = { cost: 2 ** 10, blockSize: 8, parallelization: 1 };

test('a password matches its own hash only; an unknown account or a broken hash never matches', async () => {
  const verifier = await createPasswordVerifier();
  const hash = await hashPassword('correct horse battery staple', cheap);
  assert.match(hash, /^scrypt\$1024\$8\$1\$/);
  assert.notEqual(hash, await hashPassword('correct horse battery staple', cheap), 'salted');
  assert.equal(await verifier.verify(hash, 'correct horse battery staple'), 'match');
  assert.equal(await verifier.verify(hash, 'correct horse battery stapler'), 'mismatch');
  assert.equal(await verifier.verify(null, 'correct horse battery staple'), 'mismatch');
  assert.equal(await verifier.verify('scrypt$1000$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', 'x'), 'mismatch', 'N not a power of two');
  assert.equal(parsePasswordHash(`scrypt$${2 ** 24}$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=`), null, 'a cost that would stall the edge');
});

test('a session ends after the idle time or the lifetime, whichever comes first', () => {
  const times = { idleMs: 30 * 60_000, lifetimeMs: 12 * 3_600_000 };
  const session: PortalSession = { partnerId: 'p', email: 'a@b.c', csrfToken: 't', createdAtMs: 0, lastSeenAtMs: 0 };
  assert.equal(sessionExpired(session, times.idleMs - 1, times), false);
  assert.equal(sessionExpired(session, times.idleMs, times), true);
  const active = { ...session, lastSeenAtMs: times.lifetimeMs - 1_000 };
  assert.equal(sessionExpired(active, times.lifetimeMs - 1, times), false);
  assert.equal(sessionExpired(active, times.lifetimeMs, times), true, 'even when active');
  assert.equal(sessionEndsAtMs(active, times), times.lifetimeMs);
});

test('the session cookie is read only when sent once, and written with its flags', () => {
  assert.equal(cookieValue('a=1; portal_session=abc; b=2', 'portal_session'), 'abc');
  assert.equal(cookieValue('portal_session=abc; portal_session=def', 'portal_session'), null);
  assert.equal(cookieValue(undefined, 'portal_session'), null);
  assert.equal(sessionCookie('abc', { secure: false, maxAgeSeconds: 60 }), 'portal_session=abc; Path=/portal; Max-Age=60; HttpOnly; SameSite=Strict');
  assert.match(sessionCookie(null, { secure: true, maxAgeSeconds: 60 }), /^portal_session=; Path=\/portal; Max-Age=0; HttpOnly; SameSite=Strict; Secure$/);
});
