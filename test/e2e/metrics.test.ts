// GET /metrics as an operator scrapes it, on the whole service (Redis bus): the ops key is
// required; besides the edge's request numbers it shows every shard's owner, fencing token,
// stream length, pending and lag, and the live shard worker's owned shards, actors in memory and
// memory use — with labels bounded to shard numbers and live workers (a stopped worker's last
// report in the store does not become a label).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { workerStatsCollection } from '../../src/actors/store-adapter.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { call, payoutQuoteBody } from './support.ts';

const shards = 4;
let service: ServiceHarness;

before(async () => {
  service = await startServiceHarness({ busKind: 'redis', shards });
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
    assert.ok((actors[0]?.[1] ?? 0) >= 6, 'the quotes are actors in memory');
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
  assert.ok(streamTotal >= 6, `the six quote commands went through the shard streams (${streamTotal})`);

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
