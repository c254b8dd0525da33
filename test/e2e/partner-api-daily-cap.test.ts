// The partner REST edge, the method daily cap: the cap is shared by every partner and every test of
// a service, so this file's service serves this test alone and starts with the day's cap untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { payoutQuoteBody } from './support.ts';
import { brebMobile, describePartnerApi, errorShape, validCpf } from './partner-api-support.ts';

describePartnerApi('the method daily cap', (svc) => {
  test('BREB: five 5,000,000 COP payouts of five users fill the day\'s 25,000,000 COP; the sixth gets the spec reason', async () => {
    const attempt = async (user: string, body: Record<string, unknown>, account: string) => {
      const quoted = await svc.api('POST', '/quote', { key: svc.keyOff, body });
      assert.equal(quoted.status, 200, quoted.text);
      return svc.api('POST', '/transaction', { key: svc.keyOff, body: { quote_id: quoted.json['quote_id'], user_id: user, account_number: account } });
    };
    const atMaximum = { ...payoutQuoteBody, amount: 5_000_000 };
    for (let index = 0; index < 5; index += 1) {
      const accepted = await attempt(`cap-${index}`, atMaximum, brebMobile);
      assert.equal(accepted.status, 200, `payout ${index + 1}: ${accepted.text}`);
    }
    const sixth = await attempt('cap-5', atMaximum, brebMobile);
    assert.equal(sixth.status, 400, sixth.text);
    errorShape(sixth.json, 'method_daily_cap');
    assert.equal(sixth.json['reason'], 'BREB reached today\'s payout limit');
    assert.equal(sixth.json['retryable'], false);
    const smallest = await attempt('cap-6', { ...payoutQuoteBody, amount: 10_000 }, brebMobile);
    assert.equal(smallest.status, 400, 'the cap is reached: even the corridor minimum is refused');
    errorShape(smallest.json, 'method_daily_cap');
    const pix = await attempt('cap-7', { amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' }, validCpf);
    assert.equal(pix.status, 200, 'PIX has no internal daily cap');
  });
});
