// Settlement receipts: the RFC 8785 canonical JSON both sides sign over (src/domain/canonical-json.ts
// and the client's copy agree, on the RFC's own examples), the receipt built from a transaction
// (src/domain/receipt.ts: only once its money finished moving, amounts as decimal strings), and the
// signature: the service's detached JWS verifies with the typed client's `verifyReceipt` and the
// published JWKS, fails after any one byte of the receipt changes, and keeps verifying with the old
// key after a rotation while the new key signs. The key file is refused when it is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonicalJson, verifyReceipt } from '../../clients/typescript/src/receipts.ts';
import { generateReceiptJwk, parseReceiptKeys, readReceiptKeysFile, ReceiptKeysError } from '../../src/config/receipt-keys.ts';
import { canonicalize, CanonicalJsonError } from '../../src/domain/canonical-json.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { settlementReceipt, type ReceiptSource } from '../../src/domain/receipt.ts';
import { createReceiptSigner } from '../../src/edge/receipt-signing.ts';

test('canonical JSON is RFC 8785: the RFC’s example, its member order, and both implementations agree', () => {
  // RFC 8785 §3.2.3 (numbers and strings).
  const input = JSON.parse(
    '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  ) as unknown;
  const expected = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}';
  assert.equal(canonicalize(input), expected);
  assert.equal(canonicalJson(input), expected);
  // RFC 8785 §3.2.3 (sorting by UTF-16 code units).
  const names = { '\u20ac': 'Euro Sign', '\r': 'Carriage Return', '\ufb33': 'Hebrew Letter Dalet With Dagesh', '1': 'One', '\ud83d\ude00': 'Emoji: Grinning Face', '\u0080': 'Control', '\u00f6': 'Latin Small Letter O With Diaeresis' };
  const expectedOrder = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'];
  assert.equal(canonicalize(names), `{${expectedOrder.map((name) => `${JSON.stringify(name)}:${JSON.stringify(names[name as keyof typeof names])}`).join(',')}}`);
  assert.equal(canonicalJson(names), canonicalize(names));
  assert.equal(canonicalize({ b: [1, { d: 1, c: 2 }], a: -0 }), '{"a":0,"b":[1,{"c":2,"d":1}]}');
});

test('canonical JSON refuses what is not I-JSON', () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '\ud800', { ['\udc00']: 1 }, undefined, 1n, () => 1]) {
    assert.throws(() => canonicalize(bad), CanonicalJsonError);
    assert.throws(() => canonicalJson(bad), TypeError);
  }
});

const quote: Quote = {
  id: '6f1c2b1e-4a4e-4c31-9d53-1b1f6a0c2e11',
  partnerId: 'acme',
  kind: 'payout',
  direction: 'payout',
  network: 'STELLAR',
  cryptoCurrency: 'USDC',
  paymentMethod: 'BREB',
  targetCurrency: 'COP',
  tokenDecimals: 7,
  sourceAmount: decimalFromExactString('12.6000000'),
  targetAmount: decimalFromExactString('50000.00'),
  fee: { amount: decimalFromExactString('0.1300000'), currency: 'USDC', type: 'percentage' },
  rate: decimalFromExactString('4000.00'),
  createdAtMs: Date.UTC(2026, 10, 25, 21, 59),
  expiresAtMs: Date.UTC(2026, 10, 25, 22, 59),
};
const t0 = Date.UTC(2026, 10, 25, 22, 0);
const completed: ReceiptSource = {
  id: '0b7d1f5e-8f9a-4d8e-a7a3-0c6f1a9e2b44',
  reference: 'C30fXo+aTY6nowxvGp4rRA==',
  userId: 'user-42',
  direction: 'payout',
  status: 'PAYMENT_COMPLETED',
  quote,
  createdAtMs: t0 - 30_000,
  deposit: { rail: 'chain', id: 'f'.repeat(64), amount: decimalFromExactString('12.6000000'), network: 'STELLAR', asset: 'USDC', sender: 'GSENDER', receivedAtMs: t0 + 5_000 },
  settlement: { state: 'succeeded', reference: 'breb_1', failureReason: null, requestedAtMs: t0 + 5_000, finishedAtMs: t0 + 7_000 },
  refund: 'none',
  refundOnChainId: null,
  refundTimes: null,
};

test('a completed payout’s receipt names the deposit, the payout, the quote’s rate and fee, each step’s time; amounts as decimal text', () => {
  const outcome = settlementReceipt(completed);
  assert.ok(outcome.ok);
  const receipt = outcome.receipt;
  assert.equal(receipt.outcome, 'settled');
  assert.deepEqual(receipt.deposit, { rail: 'chain', network: 'STELLAR', asset: 'USDC', hash: 'f'.repeat(64), amount: '12.6', received_at: '2026-11-25T22:00:05.000Z' });
  assert.deepEqual(receipt.settlement, { kind: 'payout', rail: 'BREB', payment_id: 'breb_1', amount: '50000', currency: 'COP', requested_at: '2026-11-25T22:00:05.000Z', completed_at: '2026-11-25T22:00:07.000Z' });
  assert.deepEqual(receipt.quote.fee, { amount: '0.13', currency: 'USDC', type: 'percentage' });
  assert.equal(receipt.quote.rate, '4000');
  assert.equal(receipt.refund, null);
  // No number that could be a float anywhere in it: only the version is a number.
  assert.doesNotMatch(canonicalize({ ...receipt, receipt_version: 'v' }), /":-?\d/);
});

test('no receipt while the money is still moving; a refunded deposit gets one naming the refund', () => {
  for (const source of [
    { ...completed, status: 'AWAITING_PAYMENT' as const, deposit: null, settlement: null },
    { ...completed, status: 'PROCESSING_PAYMENT' as const, settlement: { ...completed.settlement!, state: 'requested' as const, finishedAtMs: null } },
    { ...completed, status: 'PAYMENT_FAILED' as const, refund: 'pending' as const },
  ]) {
    const outcome = settlementReceipt(source);
    assert.ok(!outcome.ok);
    assert.match(outcome.reason, new RegExp(source.status));
  }
  const refunded = settlementReceipt({
    ...completed,
    status: 'PAYMENT_FAILED',
    settlement: { ...completed.settlement!, state: 'failed', finishedAtMs: t0 + 7_000 },
    refund: 'settled',
    refundOnChainId: 'r'.repeat(64),
    refundTimes: { requestedAtMs: t0 + 7_000, settledAtMs: t0 + 9_000 },
  });
  assert.ok(refunded.ok);
  assert.equal(refunded.receipt.outcome, 'refunded');
  assert.equal(refunded.receipt.settlement, null);
  assert.deepEqual(refunded.receipt.refund, { refund_id: 'r'.repeat(64), requested_at: '2026-11-25T22:00:07.000Z', settled_at: '2026-11-25T22:00:09.000Z' });
});

function signedReceipt() {
  const outcome = settlementReceipt(completed);
  assert.ok(outcome.ok);
  return JSON.parse(JSON.stringify(outcome.receipt)) as Record<string, unknown>;
}

test('a receipt verifies with the published key and fails after any one byte of it changes', () => {
  const signer = createReceiptSigner(parseReceiptKeys({ active_kid: 'k1', keys: [generateReceiptJwk('k1')] }));
  const receipt = signedReceipt();
  const signature = signer.sign(receipt);
  assert.match(signature, /^[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]+$/, 'a detached compact JWS');
  assert.deepEqual(JSON.parse(Buffer.from(signature.split('.')[0] ?? '', 'base64url').toString()), { alg: 'EdDSA', b64: false, crit: ['b64'], kid: 'k1' });
  const jwks = JSON.parse(JSON.stringify(signer.jwks())) as { keys: unknown[] };
  const verdict = verifyReceipt({ receipt, signature }, jwks);
  assert.ok(verdict.ok && verdict.kid === 'k1');
  // Key order and whitespace of the JSON received do not matter: the canonical bytes do.
  const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(receipt).reverse()), null, 2)) as unknown;
  assert.ok(verifyReceipt({ receipt: reordered, signature }, jwks).ok);
  // Every single byte of the canonical text, changed, fails (the text stays JSON where it can).
  const text = canonicalize(receipt);
  let tried = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    const replacement = String.fromCharCode(code === 0x30 ? 0x31 : code === 0x61 ? 0x62 : code ^ 1);
    let changed: unknown;
    try {
      changed = JSON.parse(text.slice(0, index) + replacement + text.slice(index + 1));
    } catch {
      continue; // no longer JSON: nothing a verifier could be handed
    }
    tried += 1;
    assert.equal(verifyReceipt({ receipt: changed, signature }, jwks).ok, false, `byte ${index} changed still verified`);
  }
  assert.ok(tried > text.length / 2, `${tried} of ${text.length} one-byte changes tried`);
  // A changed signature byte, another key, or an unknown kid fail too.
  const last = signature.at(-2) === 'A' ? 'B' : 'A';
  assert.deepEqual(verifyReceipt({ receipt, signature: `${signature.slice(0, -2)}${last}${signature.slice(-1)}` }, jwks), { ok: false, reason: 'bad_signature' });
  const other = createReceiptSigner(parseReceiptKeys({ active_kid: 'k1', keys: [generateReceiptJwk('k1')] }));
  assert.deepEqual(verifyReceipt({ receipt, signature }, other.jwks()), { ok: false, reason: 'bad_signature' });
  assert.deepEqual(verifyReceipt({ receipt, signature }, { keys: [] }), { ok: false, reason: 'unknown_key' });
  assert.deepEqual(verifyReceipt({ receipt, signature: 'abc' }, jwks), { ok: false, reason: 'malformed_signature' });
});

test('rotation: the new key signs, a receipt signed with the old key still verifies with the published set', () => {
  const oldKey = generateReceiptJwk('2026-05');
  const newKey = generateReceiptJwk('2026-11');
  const before = createReceiptSigner(parseReceiptKeys({ active_kid: '2026-05', keys: [oldKey] }));
  const receipt = signedReceipt();
  const oldSignature = before.sign(receipt);
  // After the rotation the old key is published without its private part.
  const { d: _dropped, ...oldPublic } = oldKey;
  const after = createReceiptSigner(parseReceiptKeys({ active_kid: '2026-11', keys: [oldPublic, newKey] }));
  assert.deepEqual(after.jwks().keys.map((key) => key.kid), ['2026-11', '2026-05'], 'the signing key first, the old one still published');
  const newSignature = after.sign(receipt);
  const jwks = after.jwks();
  const oldVerdict = verifyReceipt({ receipt, signature: oldSignature }, jwks);
  const newVerdict = verifyReceipt({ receipt, signature: newSignature }, jwks);
  assert.ok(oldVerdict.ok && oldVerdict.kid === '2026-05');
  assert.ok(newVerdict.ok && newVerdict.kid === '2026-11');
  // Once the old key is withdrawn, its receipts no longer verify: that is what withdrawing means.
  assert.deepEqual(verifyReceipt({ receipt, signature: oldSignature }, { keys: jwks.keys.filter((key) => key.kid !== '2026-05') }), { ok: false, reason: 'unknown_key' });
});

test('a wrong key file stops the start with a reason that names the problem, never the key', () => {
  const key = generateReceiptJwk('k1');
  const other = generateReceiptJwk('k2');
  const cases: Array<[unknown, RegExp]> = [
    [[], /JSON object/],
    [{ active_kid: 'k1', keys: [] }, /1–16 keys/],
    [{ active_kid: 'k9', keys: [key] }, /not among the keys/],
    [{ active_kid: 'k1', keys: [{ ...key, d: undefined }] }, /no private part/],
    [{ active_kid: 'k1', keys: [{ ...key, d: other.d }] }, /does not match/],
    [{ active_kid: 'k1', keys: [key, { ...other, kid: 'k1' }] }, /share a kid/],
    [{ active_kid: 'k1', keys: [{ ...key, crv: 'P-256' }] }, /Ed25519/],
    [{ active_kid: 'k 1', keys: [{ ...key, kid: 'k 1' }] }, /kid must be/],
  ];
  for (const [json, reason] of cases) {
    assert.throws(() => parseReceiptKeys(json), (error: unknown) => error instanceof ReceiptKeysError && reason.test(error.message) && !error.message.includes(key.d));
  }
  const dir = mkdtempSync(join(tmpdir(), 'receipt-keys-'));
  try {
    const path = join(dir, 'keys.json');
    writeFileSync(path, JSON.stringify({ active_kid: 'k1', keys: [key, { ...other, d: undefined }] }));
    assert.deepEqual(readReceiptKeysFile(path).keys.map((entry) => [entry.kid, entry.privateKey !== null]), [['k1', true], ['k2', false]]);
    writeFileSync(path, '{not json');
    assert.throws(() => readReceiptKeysFile(path), /is not JSON/);
    assert.throws(() => readReceiptKeysFile(join(dir, 'missing.json')), /cannot be read \(ENOENT\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
