// One beneficiary per PIX payout: every combination of account_number and qr_code, what is recorded
// as the account number, and the refusals (the e2e side is test/e2e/input-rules.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { encodeBrCode } from '../../src/rails/brcode.ts';
import { pixRecipient, type PixRecipientResult } from '../../src/rails/pix-recipient.ts';

const quoted = decimalFromExactString('100.00');
const cpf = '52998224725';
const evp = '123e4567-e12b-12d1-a456-426655440000';

function qr(input: { key: string } | { url: string }, amount?: string): string {
  const encoded = encodeBrCode({ ...input, merchantName: 'Fulano de Tal', merchantCity: 'BRASILIA', ...(amount === undefined ? {} : { amount }) });
  assert.ok(encoded.ok);
  return encoded.payload;
}

function refusal(result: PixRecipientResult): { kind: string; reason: string } {
  assert.equal(result.ok, false, JSON.stringify(result));
  return result.ok ? { kind: '', reason: '' } : { kind: result.kind, reason: result.reason };
}

test('a key alone is recorded in its normal form; no QR goes to the rail', () => {
  assert.deepEqual(pixRecipient('529.982.247-25', null, quoted), { ok: true, accountNumber: cpf, qrCode: null });
  assert.deepEqual(pixRecipient(' Ana@Example.COM ', null, quoted), { ok: true, accountNumber: 'ana@example.com', qrCode: null });
  assert.equal(refusal(pixRecipient('not a key', null, quoted)).kind, 'unverifiable');
});

test('a static QR alone records the key it pays as the account number', () => {
  const code = qr({ key: evp.toUpperCase() });
  assert.deepEqual(pixRecipient(null, code, quoted), { ok: true, accountNumber: evp, qrCode: code });
  const withAmount = qr({ key: '+55 11 99999-0000' }, '100.00');
  assert.deepEqual(pixRecipient(null, withAmount, quoted), { ok: true, accountNumber: '+5511999990000', qrCode: withAmount });
});

test('a dynamic QR alone names no key: the account number stays null', () => {
  const code = qr({ url: 'pix.example.com/qr/v2/abc' });
  assert.deepEqual(pixRecipient(null, code, quoted), { ok: true, accountNumber: null, qrCode: code });
});

test('both: the same key in any written form is one beneficiary', () => {
  const code = qr({ key: cpf });
  for (const written of [cpf, '529.982.247-25', ` ${cpf} `]) {
    assert.deepEqual(pixRecipient(written, code, quoted), { ok: true, accountNumber: cpf, qrCode: code }, written);
  }
  const email = qr({ key: 'ana@example.com' });
  assert.deepEqual(pixRecipient('ANA@example.com', email, quoted), { ok: true, accountNumber: 'ana@example.com', qrCode: email });
});

test('both: different keys, or a dynamic QR with a key, are refused without echoing either key', () => {
  const other = refusal(pixRecipient(cpf, qr({ key: '11144477735' }), quoted));
  assert.equal(other.kind, 'invalid');
  assert.match(other.reason, /different recipients/);
  assert.ok(!other.reason.includes(cpf) && !other.reason.includes('11144477735'));
  // Same digits, other key type: a CPF is not the phone number that happens to share digits.
  assert.equal(refusal(pixRecipient('+55 11 99999-0000', qr({ key: 'ana@example.com' }), quoted)).kind, 'invalid');
  const dynamic = refusal(pixRecipient(cpf, qr({ url: 'pix.example.com/qr/v2/abc' }), quoted));
  assert.equal(dynamic.kind, 'invalid');
  assert.match(dynamic.reason, /dynamic qr_code/);
});

test('the QR is checked first: a bad CRC or another amount refuses before the key is compared', () => {
  const code = qr({ key: cpf });
  assert.match(refusal(pixRecipient('11144477735', `${code.slice(0, -4)}0000`, quoted)).reason, /^qr_code: CRC mismatch/);
  const otherAmount = refusal(pixRecipient(cpf, qr({ key: cpf }, '99.00'), quoted));
  assert.equal(otherAmount.kind, 'invalid');
  assert.match(otherAmount.reason, /asks for 99\.00 BRL but the quote pays 100\.00 BRL/);
  assert.equal(refusal(pixRecipient('not a key', code, quoted)).kind, 'unverifiable');
});
