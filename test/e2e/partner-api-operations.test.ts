// The partner REST edge, operations: reconcile-hash behind the ops key, and GET /metrics.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { payoutQuoteBody, untilStatus } from './support.ts';
import { describePartnerApi, errorShape } from './partner-api-support.ts';

describePartnerApi('operations', (svc) => {
  const { api, quote, payout } = svc;

  describe('operations', () => {
    test('POST /ops/transactions/reconcile-hash takes X-OPS-API-KEY only and answers the spec fields', async () => {
      const id = await payout(svc.keyOff, 'oscar');
      const body = { blockchain: 'STELLAR', on_chain_tx: 'ab'.repeat(32), transaction_id: id };
      assert.equal((await api('POST', '/ops/transactions/reconcile-hash', { body })).status, 401);
      assert.equal((await api('POST', '/ops/transactions/reconcile-hash', { key: svc.keyOff, body })).status, 401);
      assert.equal((await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.keyOff, body })).status, 401);
      const unknown = await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, body });
      assert.equal(unknown.status, 200, unknown.text);
      assert.deepEqual(unknown.json, {
        blockchain: 'STELLAR',
        on_chain_tx: 'ab'.repeat(32),
        result: 'notFound',
        transaction_id: id,
        transaction_status: 'AWAITING_PAYMENT',
        reason: unknown.json['reason'],
      });
      assert.match(unknown.json['reason'] as string, /not found on chain/);

      // A Celo transfer the partner never reported: ops link it, the payout runs, and a second
      // reconcile says it is already processed.
      const celoTx = await payout(svc.keyOff, 'oscar', 'CELO');
      const deposit = await api('POST', '/sandbox/deposits', { key: svc.keyOff, body: { transaction_id: celoTx } });
      assert.equal(deposit.status, 200, deposit.text);
      const hash = deposit.json['on_chain_tx'] as string;
      const unresolved = await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, body: { blockchain: 'CELO', on_chain_tx: hash } });
      assert.equal(unresolved.json['result'], 'unresolved', unresolved.text);
      assert.equal(unresolved.json['transaction_id'], null);
      const enqueued = await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, body: { blockchain: 'CELO', on_chain_tx: hash, transaction_id: celoTx } });
      assert.equal(enqueued.status, 200, enqueued.text);
      assert.deepEqual([enqueued.json['result'], enqueued.json['transaction_id'], enqueued.json['reason']], ['enqueued', celoTx, null]);
      await untilStatus(svc.harness.baseUrl, svc.keyOff, celoTx, 'PAYMENT_COMPLETED');
      const again = await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, body: { blockchain: 'CELO', on_chain_tx: hash } });
      assert.deepEqual(again.json, { blockchain: 'CELO', on_chain_tx: hash, result: 'alreadyProcessed', transaction_id: celoTx, transaction_status: 'PAYMENT_COMPLETED', reason: null });

      // A payload that does not validate: the spec's `invalid` result, as a 400 with the error fields.
      const invalid = await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, body: { blockchain: 'BITCOIN', on_chain_tx: 'x' } });
      assert.equal(invalid.status, 400);
      assert.deepEqual(
        { ...invalid.json, reason: typeof invalid.json['reason'] },
        {
          code: 'invalid_request', reason: 'string', retryable: false, request_id: invalid.headers.get('x-request-id'),
          blockchain: 'BITCOIN', on_chain_tx: 'x', result: 'invalid', transaction_id: null, transaction_status: null,
        },
      );
      const badHash = await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, body: { blockchain: 'STELLAR', on_chain_tx: 'not-a-hash', transaction_id: 'nope' } });
      assert.deepEqual([badHash.status, badHash.json['result'], badHash.json['transaction_id']], [400, 'invalid', 'nope']);
      errorShape((await api('POST', '/ops/transactions/reconcile-hash', { ops: svc.harness.opsApiKey, rawBody: '[1]', headers: { 'content-type': 'application/json' } })).json, 'invalid_request');
    });

    test('GET /metrics (ops key) exposes request counts, latency buckets and gauges', async () => {
      // The counts below are of requests this test makes itself, not of the other tests'.
      assert.equal((await api('POST', '/quote', { body: payoutQuoteBody })).status, 401);
      await payout(svc.keyOff, 'metrics-reader');
      assert.equal((await api('GET', '/metrics')).status, 401);
      assert.equal((await api('GET', '/metrics', { key: svc.keyOff })).status, 401);
      const metrics = await api('GET', '/metrics', { ops: svc.harness.opsApiKey });
      assert.equal(metrics.status, 200);
      assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(metrics.text, /edge_http_requests_total\{route="\/quote",method="POST",status="200"\} \d+/);
      assert.match(metrics.text, /edge_http_requests_total\{route="\/quote",method="POST",status="401"\} \d+/);
      assert.match(metrics.text, /edge_http_request_duration_seconds_bucket\{route="\/transaction",le="\+Inf"\} \d+/);
      assert.match(metrics.text, /edge_http_requests_in_flight \d+/);
      assert.match(metrics.text, /edge_actor_requests_pending 0/);
      assert.ok(!metrics.text.includes(svc.keyOff), 'no key in the metrics');
    });
  });
});
