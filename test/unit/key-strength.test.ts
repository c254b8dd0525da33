// Keys and secrets the operator configures must carry at least 128 bits (estimated): a weak
// OPS_API_KEY or DEMO_API_KEY stops start-up with a message naming the variable (never the value),
// and so does a weak webhook secret in the partners file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readEnv } from '../../src/config/env.ts';
import { checkKeyStrength, estimatedKeyBits, keyBitsMin } from '../../src/config/key-strength.ts';
import { parsePartners } from '../../src/config/partners.ts';
import { generateApiKey } from '../../src/edge/auth.ts';

test('the estimate: length × log2 of the alphabet of the character classes used', () => {
  const table: Array<[string, number]> = [
    ['', 0],
    ['a'.repeat(10), 4], // one character repeated: one character's worth (log2 26)
    ['0123456789abcdef'.repeat(2), 64], // a repeated unit counts once (16 hex characters)
    [randomBytes(16).toString('hex'), 128], // 32 hex characters: exactly 128
    [randomBytes(32).toString('hex'), 256],
    ['Aa0!'.padEnd(4, 'x'), Math.floor(4 * Math.log2(95))],
  ];
  for (const [text, bits] of table) assert.equal(estimatedKeyBits(text), bits, JSON.stringify(text));
  // A 16-character key of letters and digits, the old minimum, is about 95 bits.
  assert.ok(estimatedKeyBits('Ab3dE6gH9jK2mN5p') < keyBitsMin);
  // What the deploy examples tell operators to run passes.
  assert.ok(estimatedKeyBits(randomBytes(24).toString('hex')) >= keyBitsMin);
  assert.ok(estimatedKeyBits(randomBytes(32).toString('base64')) >= keyBitsMin);
});

test('the refusal names the variable and the estimate, never the key', () => {
  const weak = 'ops-key-16-chars';
  const result = checkKeyStrength('OPS_API_KEY', weak);
  assert.equal(result.ok, false);
  assert.ok(!result.ok && result.reason.includes('OPS_API_KEY') && !result.reason.includes(weak));
});

test('a weak OPS_API_KEY or DEMO_API_KEY is refused at start with a clear message; strong ones start', () => {
  // 16 characters was enough before; ≈ 95 bits is not.
  for (const name of ['OPS_API_KEY', 'DEMO_API_KEY']) {
    assert.throws(() => readEnv({ [name]: 'ops-key-16-chars' }), (error: Error) => {
      assert.match(error.message, new RegExp(`${name}.*too weak.*128`));
      assert.ok(!error.message.includes('ops-key-16-chars'), 'the key is not repeated in the message');
      return true;
    });
    // A long key made of one repeated short unit is weak too.
    assert.throws(() => readEnv({ [name]: 'abcd'.repeat(20) }), new RegExp(`${name}.*too weak`));
    assert.throws(() => readEnv({ [name]: 'replace-me' }), new RegExp(`${name}.*too weak`));
  }
  const strong = randomBytes(32).toString('hex');
  assert.equal(readEnv({ OPS_API_KEY: strong, DEMO_API_KEY: `demo_${randomBytes(20).toString('hex')}` }).OPS_API_KEY, strong);
});

test('a partners file with a weak webhook secret is refused, naming the field', () => {
  const partner = (secret: string) => ({
    partners: [
      { id: 'acme', name: 'Acme', apiKeySha256: ['a'.repeat(64)], kycEnabled: false, kybApproved: true, webhook: { url: 'https://hooks.acme.example/x', secret } },
    ],
  });
  assert.throws(() => parsePartners(partner('acme-secret-2024'), 'partners.json'), /partners\.json: partners\.0\.webhook\.secret: .*too weak/);
  assert.equal(parsePartners(partner(`whsec_${randomBytes(24).toString('hex')}`), 'partners.json').length, 1);
});

test('keys the service generates (ops, demo, the admin service’s rotated partner keys) carry ≥ 128 bits', () => {
  const keys = new Set<string>();
  for (let index = 0; index < 50; index += 1) {
    const key = generateApiKey('key');
    assert.match(key, /^key_[0-9a-f]{48}$/, '24 random bytes');
    assert.ok(estimatedKeyBits(key) >= keyBitsMin);
    keys.add(key);
  }
  assert.equal(keys.size, 50);
});
