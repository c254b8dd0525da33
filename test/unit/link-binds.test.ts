// What counts as "this host only" for a plaintext admin service or internal link, and what an
// operator's audit line may carry: the pure helpers behind docs/internal-links.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressHost, isLoopbackHost } from '../../src/config/link-binds.ts';
import { auditTarget, certificateSubject, operatorKeyId, targetValueCharsMax } from '../../src/audit/operator-audit.ts';
import { sha256Hex } from '../../src/edge/auth.ts';

test('loopback is 127.0.0.0/8, ::1 and localhost; nothing that would need a DNS answer', () => {
  for (const host of ['127.0.0.1', '127.255.0.9', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST']) assert.equal(isLoopbackHost(host), true, host);
  for (const host of ['0.0.0.0', '::', '10.0.0.31', '192.0.2.2', '::ffff:10.0.0.1', '127.example.com', 'localhost.example.com', 'payments-payout', '']) assert.equal(isLoopbackHost(host), false, host);
});

test('the host of a link address, IPv6 in brackets included', () => {
  assert.equal(addressHost('127.0.0.1:50052'), '127.0.0.1');
  assert.equal(addressHost('[::1]:50052'), '::1');
  assert.equal(addressHost('payments-payout:50052'), 'payments-payout');
  assert.equal(addressHost('::1'), '::1');
  assert.equal(addressHost('localhost'), 'localhost');
});

test('an audit line names the ops key by an id that is neither the key nor its stored digest', () => {
  const key = 'ops_0123456789abcdef0123456789abcdef';
  const id = operatorKeyId(key);
  assert.match(id, /^ops-key:[0-9a-f]{12}$/);
  assert.equal(operatorKeyId(key), id, 'stable');
  assert.notEqual(operatorKeyId(`${key}x`), id);
  assert.ok(!sha256Hex(key).startsWith(id.slice('ops-key:'.length)));
});

test('an audit target keeps the named identifiers only, bounded, one token each', () => {
  const target = auditTarget({ partner_id: 'acme', url: 'https://hooks.example/secret', note: 'free text', user_id: 'a b\nc', limit: 7, actor_id: 'x'.repeat(500) }, ['partner_id', 'user_id', 'actor_id', 'limit', 'missing']);
  assert.equal(target, `partner_id=acme user_id=a_b_c actor_id=${'x'.repeat(targetValueCharsMax)} limit=7`);
  assert.equal(auditTarget({}, ['partner_id']), '');
});

test('a certificate subject as one line, common name first', () => {
  assert.equal(certificateSubject({ O: 'payments', CN: 'payments-internal' }), 'CN=payments-internal,O=payments');
  assert.equal(certificateSubject(undefined), undefined);
});
