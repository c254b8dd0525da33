// Signed settlement receipts over HTTP, as a partner and its auditor use them (docs/receipts.md): a
// completed sandbox payout's receipt, fetched with the typed client, verifies with the published
// JWKS and names what moved (deposit hash and amount, the rail's payment id, rate and fee); one
// changed byte fails; another partner gets 404; before completion the answer is 409
// `receipt_not_available`; the sandbox's generated key survives a restart (old receipts verify);
// with RECEIPT_SIGNING_KEYS_FILE, a key rotation across a restart: the new key signs, receipts
// signed with the old one still verify with the published set.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateReceiptJwk } from '../../src/config/receipt-keys.ts';
import { PaymentsApiError, PaymentsClient, fetchReceiptKeys, verifyReceipt } from '../../clients/typescript/src/index.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { checkedFetch } from '../support/openapi-validation.ts';
import { teardown } from '../support/teardown.ts';
import { portalCall, portalSignIn } from '../support/portal-client.ts';
import { call, payoutQuoteBody, untilStatus } from './support.ts';

describe('settlement receipts', () => {
  let harness: ServiceHarness | undefined;
  let client: PaymentsClient;
  let other: PaymentsClient;

  before(async () => {
    harness = await startServiceHarness({
      portalAdmins: {
        [testPartners.kycOff]: { email: 'admin@kyc-off.example', password: 'receipts-portal-password-1' },
        [testPartners.kybPending]: { email: 'admin@kyb-pending.example', password: 'receipts-portal-password-2' },
      },
    });
    const clientOf = (partner: string): PaymentsClient =>
      new PaymentsClient({ baseUrl: harness?.baseUrl ?? '', apiKey: harness?.apiKeys[partner] ?? '', fetch: checkedFetch, retry: { attemptsMax: 1 } });
    client = clientOf(testPartners.kycOff);
    other = clientOf(testPartners.kybPending);
  });

  after(() => teardown(() => harness?.stop()));

  async function acceptPayout(): Promise<string> {
    const quote = await client.createQuote(payoutQuoteBody);
    const accepted = await client.acceptTransaction({ quote_id: quote.quote_id, user_id: `receipt-${randomUUID()}`, account_number: '3001234567' });
    return accepted.id ?? assert.fail('a transaction id');
  }

  test('before completion: 409 receipt_not_available naming the status; another partner: 404', async () => {
    const id = await acceptPayout();
    await assert.rejects(client.getReceipt(id), (error: unknown) => {
      assert.ok(error instanceof PaymentsApiError);
      assert.equal(error.status, 409);
      assert.equal(error.code, 'receipt_not_available');
      assert.equal(error.retryable, false);
      assert.match(error.reason, /AWAITING_PAYMENT/);
      return true;
    });
    await assert.rejects(other.getReceipt(id), (error: unknown) => error instanceof PaymentsApiError && error.status === 404 && error.code === 'not_found');
    await assert.rejects(client.getReceipt(randomUUID()), (error: unknown) => error instanceof PaymentsApiError && error.status === 404);
    const session = await portalSignIn(harness?.baseUrl ?? '', 'admin@kyc-off.example', 'receipts-portal-password-1');
    const detail = await portalCall(harness?.baseUrl ?? '', session, 'GET', `/portal/api/transactions/${id}`);
    assert.equal((detail.json['transaction'] as Record<string, unknown>)['receiptAvailable'], false);
    assert.equal((await portalCall(harness?.baseUrl ?? '', session, 'GET', `/portal/api/transactions/${id}/receipt`)).status, 409);
  });

  test('a completed sandbox payout’s receipt verifies with the published JWKS; one changed byte fails; another partner gets 404', async () => {
    const base = harness?.baseUrl ?? assert.fail('harness');
    const id = await acceptPayout();
    const deposit = await client.sandboxDeposit({ transaction_id: id });
    await untilStatus(base, harness?.apiKeys[testPartners.kycOff] ?? '', id, 'PAYMENT_COMPLETED');

    const signed = await client.getReceipt(id);
    const jwks = await fetchReceiptKeys(base, checkedFetch);
    assert.ok(jwks.keys.length >= 1);
    const verdict = verifyReceipt(signed, jwks);
    assert.ok(verdict.ok, JSON.stringify(verdict));
    assert.equal(verdict.kid, jwks.keys[0]?.kid, 'signed by the first (active) key');

    const { receipt } = signed;
    assert.equal(receipt.transaction_id, id);
    assert.equal(receipt.outcome, 'settled');
    assert.ok(receipt.deposit.rail === 'chain');
    assert.equal(receipt.deposit.hash, deposit.on_chain_tx);
    assert.equal(Number(receipt.deposit.amount), deposit.amount);
    assert.ok(receipt.settlement?.kind === 'payout');
    assert.equal(receipt.settlement.rail, 'BREB');
    assert.equal(receipt.settlement.currency, 'COP');
    assert.equal(receipt.settlement.amount, '50000');
    assert.ok(receipt.settlement.payment_id.length > 0);
    assert.ok(Date.parse(receipt.deposit.received_at) <= Date.parse(receipt.settlement.completed_at));
    assert.match(receipt.quote.rate, /^\d+(\.\d+)?$/);

    // The same receipt every time (nothing in it changes; Ed25519 is deterministic).
    assert.deepEqual(await client.getReceipt(id), signed);
    // One byte of it changed (the payout's amount) fails.
    const tampered = { ...signed, receipt: { ...receipt, settlement: { ...receipt.settlement, amount: '50001' } } };
    assert.deepEqual(verifyReceipt(tampered, jwks), { ok: false, reason: 'bad_signature' });
    await assert.rejects(other.getReceipt(id), (error: unknown) => error instanceof PaymentsApiError && error.status === 404);

    // The portal offers the same signed receipt as a download on the transaction's page, to its partner only.
    const session = await portalSignIn(base, 'admin@kyc-off.example', 'receipts-portal-password-1');
    const detail = await portalCall(base, session, 'GET', `/portal/api/transactions/${id}`);
    assert.equal((detail.json['transaction'] as Record<string, unknown>)['receiptAvailable'], true);
    const download = await portalCall(base, session, 'GET', `/portal/api/transactions/${id}/receipt`);
    assert.equal(download.status, 200, download.text);
    assert.match(download.headers.get('content-disposition') ?? '', new RegExp(`^attachment; filename="receipt-${id}\\.json"$`));
    assert.ok(verifyReceipt(download.json as { receipt: unknown; signature: string }, jwks).ok);
    const foreign = await portalSignIn(base, 'admin@kyb-pending.example', 'receipts-portal-password-2');
    assert.equal((await portalCall(base, foreign, 'GET', `/portal/api/transactions/${id}/receipt`)).status, 404);

    // The JWKS needs no key and may be cached.
    const raw = await call(base, 'GET', '/.well-known/jwks.json');
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get('cache-control') ?? '', /public, max-age=\d+/);

    // The sandbox's key is kept in the store: after a restart the same key signs, and this receipt still verifies.
    await harness?.restart();
    const again = await fetchReceiptKeys(harness?.baseUrl ?? '', checkedFetch);
    assert.deepEqual(again, jwks);
    assert.ok(verifyReceipt(signed, again).ok);
  });
});

describe('settlement receipts with configured keys: rotation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'receipt-keys-e2e-'));
  const keysFile = join(dir, 'receipt-keys.json');
  const oldKey = generateReceiptJwk('receipts-2026-05');
  const newKey = generateReceiptJwk('receipts-2026-11');
  let harness: ServiceHarness | undefined;

  before(async () => {
    writeFileSync(keysFile, JSON.stringify({ active_kid: oldKey.kid, keys: [oldKey] }));
    harness = await startServiceHarness({ env: { RECEIPT_SIGNING_KEYS_FILE: keysFile } });
  });

  after(() => teardown(() => harness?.stop(), () => rmSync(dir, { recursive: true, force: true })));

  test('after a rotation the new key signs and a receipt signed with the old key still verifies', async () => {
    const base = (): string => harness?.baseUrl ?? assert.fail('harness');
    const client = (): PaymentsClient => new PaymentsClient({ baseUrl: base(), apiKey: harness?.apiKeys[testPartners.kycOff] ?? '', fetch: checkedFetch });
    const quote = await client().createQuote(payoutQuoteBody);
    const accepted = await client().acceptTransaction({ quote_id: quote.quote_id, user_id: `rotation-${randomUUID()}`, account_number: '3001234567' });
    const id = accepted.id ?? assert.fail('a transaction id');
    await client().sandboxDeposit({ transaction_id: id });
    await untilStatus(base(), harness?.apiKeys[testPartners.kycOff] ?? '', id, 'PAYMENT_COMPLETED');
    const before = await client().getReceipt(id);
    const beforeKeys = await fetchReceiptKeys(base(), checkedFetch);
    assert.deepEqual(beforeKeys.keys.map((key) => key.kid), [oldKey.kid]);
    const beforeVerdict = verifyReceipt(before, beforeKeys);
    assert.ok(beforeVerdict.ok && beforeVerdict.kid === oldKey.kid);

    // Rotate: the new key signs, the old one stays published without its private part.
    const { d: _retired, ...oldPublic } = oldKey;
    writeFileSync(keysFile, JSON.stringify({ active_kid: newKey.kid, keys: [newKey, oldPublic] }));
    await harness?.restart();
    const keys = await fetchReceiptKeys(base(), checkedFetch);
    assert.deepEqual(keys.keys.map((key) => key.kid), [newKey.kid, oldKey.kid]);
    const after = await client().getReceipt(id);
    assert.deepEqual(after.receipt, before.receipt, 'the same receipt');
    const afterVerdict = verifyReceipt(after, keys);
    assert.ok(afterVerdict.ok && afterVerdict.kid === newKey.kid, 'signed by the new key');
    const oldVerdict = verifyReceipt(before, keys);
    assert.ok(oldVerdict.ok && oldVerdict.kid === oldKey.kid, 'the receipt signed before the rotation still verifies');
  });
});
