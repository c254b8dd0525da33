// GET /metrics as an operator scrapes it, on the whole service (Redis bus): the ops key is
// required; besides the edge's request numbers it shows every shard's owner, fencing token,
// stream length, pending and lag, and the live shard worker's owned shards, actors in memory and
// memory use — with labels bounded to shard numbers and live workers (a stopped worker's last
// report in the store does not become a label). The health listener's /metrics shows the other
// roles' numbers: a payout paid, the watcher's state, every loop's rounds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { workerStatsCollection } from '../../src/actors/store-adapter.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody, untilStatus } from './support.ts';

const shards = 4;
let service: ServiceHarness;

before(async () => {
  service = await startServiceHarness({ busKind: 'redis', shards, env: { HEALTH_PORT: '0' } });
});

after(async () => {
  await service.stop();
});

/** Prometheus text → series name with labels → value. */
function parse(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

function valuesOf(series: Map<string, number>, name: string): Array<[string, number]> {
  return [...series].filter(([key]) => key === name || key.startsWith(`${name}{`));
}

test('the ops key is required', async () => {
  assert.equal((await call(service.baseUrl, 'GET', '/metrics')).status, 401);
  const partner = await call(service.baseUrl, 'GET', '/metrics', { key: service.apiKeys[testPartners.kycOff] ?? '' });
  assert.ok([401, 403].includes(partner.status), `a partner key is not an ops key (${partner.status})`);
  const ops = await call(service.baseUrl, 'GET', '/metrics', { ops: service.opsApiKey });
  assert.equal(ops.status, 200);
  assert.match(ops.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
});

test('shard ownership, stream numbers and the live worker’s actors and memory are shown, for live workers only', async () => {
  // A report left behind by a worker that has stopped: it must not become a label.
  await service.ctx.store.put(workerStatsCollection, 'stopped-worker', {
    workerId: 'stopped-worker',
    ownedShards: [0, 1],
    actorsInMemory: 7,
    rssBytes: 1,
    heapUsedBytes: 1,
    reportedAtMs: Date.now() - 3_600_000,
  });
  const key = service.apiKeys[testPartners.kycOff] ?? '';
  for (let index = 0; index < 6; index += 1) {
    const quote = await call(service.baseUrl, 'POST', '/quote', { key, body: { ...payoutQuoteBody, amount: 20_000 + index }, idempotencyKey: randomUUID() });
    assert.equal(quote.status, 200, quote.text);
    // A quote is an offer until accepted (docs/actors.md): the acceptance makes the actors.
    const accepted = await call(service.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quote.json['quote_id'], user_id: `metrics-${randomUUID()}`, account_number: '3001234567' } });
    assert.equal(accepted.status, 200, accepted.text);
  }
  // Workers report every lease round (~3 s) and the numbers are cached for 5 s.
  const series = await eventually(async () => {
    const response = await call(service.baseUrl, 'GET', '/metrics', { ops: service.opsApiKey });
    assert.equal(response.status, 200);
    const parsed = parse(response.text);
    assert.equal(parsed.get('cluster_stats_up'), 1);
    assert.equal(parsed.get('shard_workers_live'), 1);
    const actors = valuesOf(parsed, 'shard_worker_actors_in_memory');
    assert.equal(actors.length, 1, 'one live worker');
    assert.ok((actors[0]?.[1] ?? 0) >= 6, 'the accepted transactions (and their quotes) are actors in memory');
    return parsed;
  }, 20_000, 250);

  const owners = valuesOf(series, 'shard_lease_owner');
  assert.equal(owners.length, shards, 'one owner series per shard');
  const worker = /worker="([^"]+)"/.exec(owners[0]?.[0] ?? '')?.[1];
  assert.ok(worker !== undefined && owners.every(([labels]) => labels.includes(`worker="${worker}"`)), 'the one worker owns every shard');
  for (let shard = 0; shard < shards; shard += 1) {
    assert.equal(series.get(`shard_owned{shard="${shard}"}`), 1);
    assert.ok((series.get(`shard_lease_token{shard="${shard}"}`) ?? 0) >= 1, 'a fencing token was issued');
    assert.ok((series.get(`shard_stream_pending{shard="${shard}"}`) ?? -1) >= 0);
    const lag = series.get(`shard_stream_lag{shard="${shard}"}`);
    assert.ok(lag === undefined || lag >= 0, 'lag is a count when Redis knows it');
  }
  const streamTotal = valuesOf(series, 'shard_stream_length').reduce((sum, [, value]) => sum + value, 0);
  assert.ok(streamTotal >= 6, `the six acceptances went through the shard streams (${streamTotal})`);

  assert.equal(series.get(`shard_worker_owned_shards{worker="${worker}"}`), shards);
  const rss = series.get(`shard_worker_resident_memory_bytes{worker="${worker}"}`) ?? 0;
  const heap = series.get(`shard_worker_heap_used_bytes{worker="${worker}"}`) ?? 0;
  assert.ok(rss > 20 * 1024 * 1024 && rss < 8 * 1024 * 1024 * 1024, `plausible RSS (${rss})`);
  assert.ok(heap > 1024 * 1024 && heap < rss, `plausible heap (${heap})`);
  const age = series.get(`shard_worker_report_age_seconds{worker="${worker}"}`) ?? -1;
  assert.ok(age >= 0 && age < 30, `a recent report (${age} s)`);
  assert.ok(![...series.keys()].some((labels) => labels.includes('stopped-worker')), 'a stopped worker is not a label');
  assert.ok((series.get('edge_http_requests_total{route="/quote",method="POST",status="200"}') ?? 0) >= 6, 'the edge counted the quotes');
});

test('the health listener\'s /metrics: a payout paid shows in the payout numbers; the watcher streams; every loop makes rounds', async () => {
  const healthUrl = service.healthUrl ?? assert.fail('the harness started no health listener');
  assert.equal((await call(healthUrl, 'GET', '/metrics', { notTheEdge: true })).status, 401, 'the ops key is required here too');
  const key = service.apiKeys[testPartners.kycOff] ?? '';
  const scrape = async (): Promise<Map<string, number>> => {
    const response = await call(healthUrl, 'GET', '/metrics', { ops: service.opsApiKey, notTheEdge: true });
    assert.equal(response.status, 200);
    return parse(response.text);
  };
  const paidBefore = (await scrape()).get('payout_outcomes_total{outcome="payout_succeeded"}') ?? 0;

  const quote = await call(service.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody });
  assert.equal(quote.status, 200, quote.text);
  const accepted = await call(service.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quote.json['quote_id'], user_id: `metrics-${randomUUID()}`, account_number: '3001234567' } });
  assert.equal(accepted.status, 200, accepted.text);
  const id = String(accepted.json['id']);
  const deposit = await call(service.baseUrl, 'POST', '/sandbox/deposits', { key, body: { transaction_id: id } });
  assert.equal(deposit.status, 200, deposit.text);
  await untilStatus(service.baseUrl, key, id, 'PAYMENT_COMPLETED');

  await eventually(async () => {
    const series = await scrape();
    assert.equal(series.get('payout_outcomes_total{outcome="payout_succeeded"}'), paidBefore + 1, 'the payout counted once');
    assert.ok((series.get('payout_attempts_total') ?? 0) >= 1);
    assert.equal(series.get('watcher_state{network="STELLAR",state="streaming"}'), 1);
    assert.equal(series.get('watcher_state{network="STELLAR",state="stale"}'), 0);
    assert.equal(series.get('watcher_active'), 1, 'the only watcher process holds the lease');
    for (const check of ['shard-leases', 'shard-commands', 'payout-rounds', 'webhook-rounds', 'refund-rounds', 'delivery-rounds', 'sweep-rounds', 'watchers', 'watcher-lease']) {
      assert.equal(series.get(`role_check_ready{check="${check}"}`), 1, check);
    }
    assert.ok((series.get('role_loop_rounds_total{check="payout-rounds"}') ?? 0) > 0);
    assert.ok(series.has('webhook_attempts_total{outcome="delivered"}'));
    assert.equal(series.get('payout_rows_stuck'), 0);
  }, 10_000, 200);
});

test('the outbox backlog per topic: a payout held up by a rail outage shows as a deferred payouts row (held by nobody until its next try) until it is paid', async () => {
  const rail = service.rail ?? assert.fail('the harness runs the sandbox rail');
  const key = service.apiKeys[testPartners.kycOff] ?? '';
  const edgeSeries = async (): Promise<Map<string, number>> => parse((await call(service.baseUrl, 'GET', '/metrics', { ops: service.opsApiKey })).text);
  for (const topic of ['commands', 'command-batches', 'webhooks', 'payouts', 'refunds.pix', 'refunds.chain', 'deliveries', 'sweeps.chain']) {
    assert.ok((await edgeSeries()).has(`outbox_rows{topic="${topic}"}`), topic);
  }
  const quote = await call(service.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody });
  const accepted = await call(service.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quote.json['quote_id'], user_id: `backlog-${randomUUID()}`, account_number: '3001234567' } });
  assert.equal(accepted.status, 200, accepted.text);
  const id = String(accepted.json['id']);
  await rail.setOutage('BREB', true);
  try {
    assert.equal((await call(service.baseUrl, 'POST', '/sandbox/deposits', { key, body: { transaction_id: id } })).status, 200);
    await untilStatus(service.baseUrl, key, id, 'PROCESSING_PAYMENT');
    await eventually(async () => {
      const series = await edgeSeries();
      assert.ok((series.get('outbox_rows{topic="payouts"}') ?? 0) >= 1, 'the payout waits in the outbox');
      assert.ok((series.get('outbox_rows_deferred{topic="payouts"}') ?? 0) >= 1, 'handed back by the payout worker until its next try');
      assert.equal(series.get('outbox_rows_capped{topic="payouts"}'), 0);
      assert.ok((series.get('outbox_oldest_row_age_seconds{topic="payouts"}') ?? -1) >= 0, 'with how long it has waited');
    }, 15_000, 250);
  } finally {
    await rail.setOutage('BREB', false);
  }
  // Past the worker's retry backoff (and the metrics cache): the payout goes through.
  service.advanceClockMs(120_000);
  await untilStatus(service.baseUrl, key, id, 'PAYMENT_COMPLETED', 30_000);
  await eventually(async () => {
    const series = await edgeSeries();
    assert.equal(series.get('outbox_rows{topic="payouts"}'), 0, 'done rows leave the outbox');
    assert.equal(series.has('outbox_oldest_row_age_seconds{topic="payouts"}'), false, 'no age for an empty topic');
  }, 15_000, 250);
});
