// An acceptance whose first attempt timed out is answered on retry with the transaction it
// created. Roles as separate processes (test/support/service-fleet.ts): two edges, a shard worker,
// payout and watcher. The shard worker is paused (SIGSTOP) past the edge's reply timeout, so the
// first POST /transaction answers 503 while its command waits in the stream; once the worker runs
// again the saga creates the transaction, and the partner's retry with the same Idempotency-Key —
// on the other edge — gets that transaction, not a second one and not another 503.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { call, payoutQuoteBody } from './support.ts';
import { startServiceFleet, type FleetProcess, type ServiceFleet } from '../support/service-fleet.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

let receiver: WebhookReceiver;
let fleet: ServiceFleet;
let edges: FleetProcess[];
let shard: FleetProcess;

before(async () => {
  receiver = await startWebhookReceiver();
  fleet = await startServiceFleet({ partners: [{ id: 'acme', webhookUrl: receiver.url }], env: { EDGE_ASK_TIMEOUT_MS: '3000' } });
  shard = await fleet.start('shard', 'shard-1');
  await fleet.start('payout', 'payout-1');
  await fleet.start('watcher', 'watcher-1');
  edges = [await fleet.start('edge', 'edge-1'), await fleet.start('edge', 'edge-2')];
});

after(() => teardown(
  // A paused worker must run again to stop gracefully.
  () => { if (shard?.child.pid !== undefined) process.kill(shard.child.pid, 'SIGCONT'); },
  () => fleet?.stop(),
  () => receiver?.close(),
));

function edgeUrl(index: number): string {
  const url = edges[index]?.baseUrl;
  assert.ok(url);
  return url;
}

test('a retry with the same Idempotency-Key, after a timed-out first attempt, returns the transaction created', { timeout: 120_000 }, async () => {
  const apiKey = fleet.apiKeys['acme'] ?? '';
  const quote = await call(edgeUrl(0), 'POST', '/quote', { key: apiKey, body: payoutQuoteBody });
  assert.equal(quote.status, 200, quote.text);
  const userId = `retry-${randomUUID()}`;
  const body = { quote_id: quote.json['quote_id'], user_id: userId, account_number: '@recipient' };
  const idempotencyKey = randomUUID();
  const pid = shard.child.pid;
  assert.ok(pid !== undefined);

  process.kill(pid, 'SIGSTOP');
  const first = await call(edgeUrl(0), 'POST', '/transaction', { key: apiKey, body, idempotencyKey });
  assert.equal(first.status, 503, first.text);
  process.kill(pid, 'SIGCONT');

  const retry = await call(edgeUrl(1), 'POST', '/transaction', { key: apiKey, body, idempotencyKey });
  assert.equal(retry.status, 200, retry.text);
  const id = retry.json['id'];
  assert.equal(typeof id, 'string');
  assert.ok(retry.json['payment_context'], 'the acceptance body, with its deposit instructions');

  const again = await call(edgeUrl(0), 'POST', '/transaction', { key: apiKey, body, idempotencyKey });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json['id'], id, 'every later retry replays the same transaction');

  const list = await call(edgeUrl(1), 'GET', `/transactions/list?externalUserId=${encodeURIComponent(userId)}`, { key: apiKey });
  assert.equal(list.status, 200, list.text);
  assert.equal(list.json['total'], 1, 'one transaction, not one per attempt');
  const status = await call(edgeUrl(1), 'GET', `/transaction/${String(id)}`, { key: apiKey });
  assert.equal(status.json['status'], 'AWAITING_PAYMENT');
});
