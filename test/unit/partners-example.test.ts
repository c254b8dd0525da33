// config/partners.example.json, the shape docs/partner-guide.md and the README point operators to,
// is a valid partners file: it loads as the service loads PARTNERS_FILE, and its key hashes are
// those of the example keys the file's notes name (so a reader can try them in a sandbox).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadPartnersFile } from '../../src/config/partners.ts';
import { sha256Hex } from '../../src/edge/auth.ts';

test('the example partners file loads, with one KYC-enabled partner and one without KYC, and a webhook', () => {
  const partners = loadPartnersFile(join(import.meta.dirname, '../../config/partners.example.json'));
  assert.deepEqual(partners.map((partner) => [partner.id, partner.kycEnabled]), [['acme', true], ['globex', false]]);
  assert.deepEqual(partners[0]?.apiKeySha256, [sha256Hex('acme_example_key_replace_me_3f9c2a7d5e8b1c4f6a0d2e9b7c5a3f1e')]);
  assert.equal(partners[0]?.webhook?.url, 'https://hooks.acme.example/payments');
  assert.deepEqual(partners[1]?.disabledUsers, []);
});
