// The TypeScript client (clients/typescript/) as a partner uses it, against the whole service
// (both buses): a payout from the corridor list to PAYMENT_COMPLETED, every webhook delivery
// checked by a receiver that trusts only what `verifyWebhook` accepts, an acceptance whose first
// answer is lost and retried with the same Idempotency-Key (one transaction), and typed errors.
// Every answer the client receives is also checked against the OpenAPI document.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { PaymentsApiError, PaymentsClient, verifyWebhook } from '../../clients/typescript/src/index.ts';
import { startServiceHarness, testPartners, type BusKind, type ServiceHarness } from '../support/service-harness.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { checkedFetch } from '../support/openapi-validation.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';


for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
  describe(`the TypeScript client against the service (${busKind} bus)`, () => {
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    let receiver: WebhookReceiver | undefined;
    let harness: ServiceHarness | undefined;
    let client: PaymentsClient;
    const verdicts: { readonly ok: boolean; readonly reason: string | null }[] = [];

    before(async () => {
      receiver = await startWebhookReceiver();
      // The partner's receiver: a delivery is trusted only when verifyWebhook accepts it; else 401.
      receiver.respondWith((request) => {
        const verdict = verifyWebhook(request.body, request.headers, secret);
        verdicts.push({ ok: verdict.ok, reason: verdict.ok ? null : verdict.reason });
        return { status: verdict.ok ? 200 : 401 };
      });
      harness = await startServiceHarness({ busKind, webhooks: { [testPartners.kycOff]: { url: receiver.url, secret } } });
      client = new PaymentsClient({ baseUrl: harness.baseUrl, apiKey: harness.apiKeys[testPartners.kycOff] ?? '', fetch: checkedFetch });
    });

    after(() => teardown(() => harness?.stop(), () => receiver?.close()));

    test('a whole payout: corridors → quote → accept → deposit → PAYMENT_COMPLETED, every webhook verified', async () => {
      const { corridors } = await client.listCorridors();
      const route = corridors.find((corridor) => corridor.blockchain === 'STELLAR' && corridor.paymentMethod === 'BREB');
      assert.ok(route !== undefined, 'the corridor list offers USDC on Stellar to COP over Bre-B');
      const quote = await client.createQuote({ amount: 50_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' });
      assert.ok(quote.value > 0 && quote.expiration_time > Date.now());
      const userId = `client-${randomUUID()}`;
      const accepted = await client.acceptTransaction({ quote_id: quote.quote_id, user_id: userId, account_number: '3001234567' });
      assert.equal(accepted.kycRequired, false);
      const id = accepted.id ?? assert.fail('a transaction id');
      const context = accepted.payment_context;
      assert.ok(context !== null && !('type' in context), 'a payout payment context');
      assert.equal(context.amount, quote.value);
      assert.equal(context.memo, accepted.transaction_reference);

      await client.sandboxDeposit({ transaction_id: id });
      const completed = await eventually(async () => {
        const status = await client.getTransaction(id);
        assert.equal(status.status, 'PAYMENT_COMPLETED');
        return status;
      }, 20_000);
      assert.equal(completed.user_id, userId);
      const listed = await client.listTransactions({ externalUserId: userId });
      assert.deepEqual(listed.transactions.map((item) => [item.id, item.status]), [[id, 'PAYMENT_COMPLETED']]);

      // The receiver got the lifecycle, and trusted each delivery only through verifyWebhook.
      const statuses = await eventually(() => {
        const seen = (receiver?.requests ?? []).filter((request) => request.transactionId === id).map((request) => request.status_);
        assert.ok(seen.includes('PAYMENT_COMPLETED'), `deliveries so far: ${seen.join(', ')}`);
        return seen;
      }, 20_000);
      assert.deepEqual([...new Set(statuses)], ['AWAITING_PAYMENT', 'PROCESSING_PAYMENT', 'PAYMENT_COMPLETED']);
      assert.ok(verdicts.length > 0);
      assert.deepEqual(verdicts.filter((verdict) => !verdict.ok), [], 'every delivery verifies with the partner secret');

      // The same deliveries are refused with another secret, accepted during a rotation (old and
      // new secrets both passed), and refused once a byte of the body changes.
      const delivery = receiver?.requests.find((request) => request.transactionId === id) ?? assert.fail('a delivery');
      assert.deepEqual(verifyWebhook(delivery.body, delivery.headers, `whsec_${randomBytes(32).toString('base64url')}`), { ok: false, reason: 'bad_signature' });
      const rotated = verifyWebhook(delivery.body, delivery.headers, [`whsec_${randomBytes(32).toString('base64url')}`, secret]);
      assert.ok(rotated.ok && rotated.secretIndex === 1 && rotated.payload.event === 'transaction.created');
      assert.deepEqual(verifyWebhook(delivery.body.replace('AWAITING', 'AWAITINK'), delivery.headers, secret), { ok: false, reason: 'bad_signature' });
    });

    test('an acceptance whose answer is lost is retried with the same Idempotency-Key: one transaction', async () => {
      let lost = 0;
      const keys: string[] = [];
      const losingFetch: typeof fetch = async (input, init) => {
        const response = await checkedFetch(input, init);
        const headers = new Headers(init?.headers);
        if (init?.method === 'POST' && String(input).endsWith('/transaction')) {
          keys.push(headers.get('idempotency-key') ?? '');
          // The service acted, but the answer never reaches the partner (a dropped connection).
          if (lost === 0) {
            lost += 1;
            throw new TypeError('fetch failed: connection reset');
          }
        }
        return response;
      };
      const flaky = new PaymentsClient({
        baseUrl: harness?.baseUrl ?? '',
        apiKey: harness?.apiKeys[testPartners.kycOff] ?? '',
        fetch: losingFetch,
        sleep: () => Promise.resolve(),
      });
      const quote = await flaky.createQuote({ amount: 40_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' });
      const userId = `retry-${randomUUID()}`;
      const accepted = await flaky.acceptTransaction({ quote_id: quote.quote_id, user_id: userId, account_number: '3001234567' });
      assert.equal(keys.length, 2, 'one lost attempt, one retry');
      assert.equal(keys[0], keys[1], 'the retry carries the same Idempotency-Key');
      assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/, 'generated by the client');
      const listed = await flaky.listTransactions({ externalUserId: userId });
      assert.deepEqual(listed.transactions.map((item) => item.id), [accepted.id], 'one transaction for two attempts');
    });

    test('errors are typed: code, reason, retryable and the request id, not retried when not retryable', async () => {
      const missing = randomUUID();
      const error = await client.getTransaction(missing, { requestId: `lookup-${busKind}` }).then(
        () => assert.fail('a missing transaction is 404'),
        (failure: unknown) => failure,
      );
      assert.ok(error instanceof PaymentsApiError);
      assert.equal(error.status, 404);
      assert.equal(error.code, 'not_found');
      assert.equal(error.retryable, false);
      assert.equal(error.requestId, `lookup-${busKind}`);
      assert.ok(error.reason.length > 0);

      const minimum = await client.createQuote({ amount: 1, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' }).then(
        () => assert.fail('below the corridor minimum'),
        (failure: unknown) => failure,
      );
      assert.ok(minimum instanceof PaymentsApiError);
      assert.deepEqual([minimum.status, minimum.code, minimum.retryable], [400, 'minimum', false]);
    });
  });
}
