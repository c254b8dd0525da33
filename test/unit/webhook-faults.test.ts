// The sandbox's webhook fault settings (src/domain/webhook-faults.ts): what a PUT body becomes,
// the bounds partners are told about in docs/sandbox.md, and the reason a refused body gets; and
// the amount a rehearsed short deposit carries (src/chains/sandbox-short-deposits.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anyWebhookFault, faultedAttemptMs, noWebhookFaults, readWebhookFaults, webhookFaultBounds, webhookFaultsView } from '../../src/domain/webhook-faults.ts';
import { shortDepositAmount } from '../../src/chains/sandbox-short-deposits.ts';
import { decimalFromExactString, toPlainString } from '../../src/domain/money.ts';

test('an empty body turns every fault off; each field is read under its own name', () => {
  assert.deepEqual(readWebhookFaults({}), { ok: true, value: noWebhookFaults });
  assert.equal(anyWebhookFault(noWebhookFaults), false);
  const read = readWebhookFaults({ duplicate: true, out_of_order: true, delay_ms: 10_000, wrong_signature_next: 100, drop_first_attempts: 4 });
  assert.deepEqual(read, { ok: true, value: { duplicate: true, outOfOrder: true, delayMs: 10_000, wrongSignatureNext: 100, dropFirstAttempts: 4 } });
  assert.ok(read.ok && anyWebhookFault(read.value));
  assert.deepEqual(read.ok && webhookFaultsView(read.value), { duplicate: true, out_of_order: true, delay_ms: 10_000, wrong_signature_next: 100, drop_first_attempts: 4 });
});

test('the bounds are the documented ones: one past each is refused with a reason naming the field', () => {
  assert.deepEqual(webhookFaultBounds, { delayMsMax: 10_000, wrongSignatureNextMax: 100, dropFirstAttemptsMax: 4, outOfOrderHoldMs: 5_000 });
  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ delay_ms: 10_001 }, 'delay_ms must be an integer from 0 to 10000'],
    [{ delay_ms: -1 }, 'delay_ms must be an integer from 0 to 10000'],
    [{ delay_ms: 0.5 }, 'delay_ms must be an integer from 0 to 10000'],
    [{ delay_ms: '100' }, 'delay_ms must be an integer from 0 to 10000'],
    [{ wrong_signature_next: 101 }, 'wrong_signature_next must be an integer from 0 to 100'],
    [{ drop_first_attempts: 5 }, 'drop_first_attempts must be an integer from 0 to 4'],
    [{ duplicate: 1 }, 'duplicate must be true or false'],
    [{ out_of_order: 'true' }, 'out_of_order must be true or false'],
  ];
  for (const [body, reason] of refusals) assert.deepEqual(readWebhookFaults(body), { ok: false, reason }, JSON.stringify(body));
});

test('an unknown field is refused (a typo would otherwise rehearse nothing), its name cut short', () => {
  const refused = readWebhookFaults({ dupliacte: true });
  assert.ok(!refused.ok && refused.reason.startsWith('unknown field dupliacte; the fields are duplicate, out_of_order'));
  const long = readWebhookFaults({ ['x'.repeat(1_000)]: true });
  assert.ok(!long.ok && long.reason.length < 200);
});

test('a faulted attempt lasts at most its delay and every send it makes: the worst one still fits a fresh default claim', () => {
  assert.equal(faultedAttemptMs(noWebhookFaults, false, 10_000), 10_000, 'no fault: one send');
  assert.equal(faultedAttemptMs({ ...noWebhookFaults, duplicate: true }, false, 10_000), 20_000);
  assert.equal(faultedAttemptMs({ ...noWebhookFaults, outOfOrder: true }, false, 10_000), 20_000, 'the held delivery goes after it');
  assert.equal(faultedAttemptMs(noWebhookFaults, true, 10_000), 20_000, 'a delivery still held when the faults were turned off');
  const worst = { duplicate: true, outOfOrder: true, delayMs: webhookFaultBounds.delayMsMax, wrongSignatureNext: 100, dropFirstAttempts: 4 };
  assert.equal(faultedAttemptMs(worst, false, 10_000), 50_000);
  // The dispatcher's defaults: a 60 s claim, 5 s margin. The worst attempt and the margin fit in a fresh claim less the margin.
  assert.ok(faultedAttemptMs(worst, false, 10_000) + 5_000 <= 60_000 - 5_000);
});

test('a short deposit is 90 % of the quoted amount, rounded down at the token decimals', () => {
  assert.equal(toPlainString(shortDepositAmount(decimalFromExactString('12.6'), 7)), '11.34');
  assert.equal(toPlainString(shortDepositAmount(decimalFromExactString('0.0000019'), 7)), '0.0000017');
  assert.equal(toPlainString(shortDepositAmount(decimalFromExactString('1.000001'), 6)), '0.9');
});
