// Quotes are offers (docs/actors.md, "Quotes are offers"), over real HTTP with the roles as separate
// processes on one Redis (test/support/service-fleet.ts): two edges, a shard worker, payout and
// watcher. A quote is priced by the edge and kept in Redis: making one sends no command to any
// shard; it is accepted on the other edge (whose saga hands the quote to the quote actor) and the
// payout completes; the accepted quote is single use across both edges, also when two acceptances
// race on them; and a partner holding its share of valid quotes is refused with
// `quote_unavailable` (retryable) until some expire, while another partner quotes on.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRedisClient, type RedisClient } from '../../src/bus/redis-connection.ts';
import { commandStreamKeys } from '../../src/bus/shards.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceFleet, type FleetProcess, type ServiceFleet } from '../support/service-fleet.ts';
import { teardown } from '../support/teardown.ts';
import { call, payoutQuoteBody } from './support.ts';

const shards = 4;
const perPartnerMax = 3;

let fleet: ServiceFleet;
let edges: FleetProcess[];
let redis: RedisClient;

before(async () => {
  fleet = await startServiceFleet({
    partners: [{ id: 'acme', webhookUrl: 'http://127.0.0.1:9/unused' }, { id: 'globex', webhookUrl: 'http://127.0.0.1:9/unused' }],
    shards,
    env: { QUOTE_OFFERS_PER_PARTNER_MAX: String(perPartnerMax) },
  });
  await fleet.start('shard', 'shard-1');
  await fleet.start('payout', 'payout-1');
  await fleet.start('watcher', 'watcher-1');
  edges = [await fleet.start('edge', 'edge-1'), await fleet.start('edge', 'edge-2')];
  redis = createRedisClient(fleet.redis.url, 'test');
});

after(() => teardown(
  () => redis?.quit(),
  () => fleet?.stop(),
));

function edgeUrl(index: number): string {
  const url = edges[index]?.baseUrl;
  assert.ok(url);
  return url;
}

function apiKey(partnerId: string): string {
  const key = fleet.apiKeys[partnerId];
  assert.ok(key !== undefined);
  return key;
}

/** Every entry ever appended to the shards' command streams (XINFO's entries-added: trimming does not lower it). */
async function commandsSent(): Promise<number> {
  let total = 0;
  for (const stream of commandStreamKeys(fleet.keyPrefix, shards)) {
    if ((await redis.exists(stream)) === 0) continue;
    const info = (await redis.xinfo('STREAM', stream)) as unknown[];
    const at = info.indexOf('entries-added');
    assert.ok(at >= 0, 'Redis 7 reports entries-added');
    total += Number(info[at + 1]);
  }
  return total;
}

async function quote(edge: number, partnerId: string): Promise<string> {
  const quoted = await call(edgeUrl(edge), 'POST', '/quote', { key: apiKey(partnerId), body: payoutQuoteBody });
  assert.equal(quoted.status, 200, quoted.text);
  assert.deepEqual(Object.keys(quoted.json).sort(), ['expiration_time', 'fee', 'quote_id', 'value']);
  return String(quoted.json['quote_id']);
}

function accept(edge: number, quoteId: string) {
  return call(edgeUrl(edge), 'POST', '/transaction', { key: apiKey('acme'), body: { quote_id: quoteId, user_id: `u-${randomUUID()}`, account_number: '@recipient' } });
}

test('a quote sends no shard command; accepted on the other edge it completes, and is single use on both edges', { timeout: 120_000 }, async () => {
  const before = await commandsSent();
  const quoteId = await quote(0, 'acme');
  assert.equal(await commandsSent(), before, 'no command reached a shard for the quote');

  const accepted = await accept(1, quoteId);
  assert.equal(accepted.status, 200, accepted.text);
  const id = String(accepted.json['id']);
  assert.ok((await commandsSent()) > before, 'the acceptance runs through the shards');
  for (const edge of [0, 1]) {
    const again = await accept(edge, quoteId);
    assert.equal(again.status, 400, again.text);
    assert.equal(again.json['code'], 'quote_used', `edge ${edge + 1}`);
  }

  const deposit = await call(edgeUrl(0), 'POST', '/sandbox/deposits', { key: apiKey('acme'), body: { transaction_id: id } });
  assert.equal(deposit.status, 200, deposit.text);
  await eventually(async () => {
    const status = await call(edgeUrl(1), 'GET', `/transaction/${id}`, { key: apiKey('acme') });
    assert.equal(status.json['status'], 'PAYMENT_COMPLETED', status.text);
  }, 30_000, 200);
});

test('two acceptances of one quote racing on two edges: exactly one transaction', { timeout: 60_000 }, async () => {
  const quoteId = await quote(1, 'acme');
  const answers = await Promise.all([accept(0, quoteId), accept(1, quoteId)]);
  const created = answers.filter((answer) => answer.status === 200);
  assert.equal(created.length, 1, answers.map((answer) => answer.text).join('\n'));
  const refused = answers.find((answer) => answer.status !== 200);
  assert.equal(refused?.status, 400, refused?.text);
  assert.ok(['quote_in_use', 'quote_used'].includes(String(refused?.json['code'])), refused?.text);
});

test("a partner holding its share of valid quotes is refused with quote_unavailable (retryable); another partner's quotes go on", { timeout: 60_000 }, async () => {
  for (let index = 0; index < perPartnerMax; index += 1) await quote(index % 2, 'globex');
  for (const edge of [0, 1]) {
    const refused = await call(edgeUrl(edge), 'POST', '/quote', { key: apiKey('globex'), body: payoutQuoteBody });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json['code'], 'quote_unavailable');
    assert.equal(refused.json['retryable'], true);
    assert.match(String(refused.json['reason']), /already holds 3 quotes that are still valid/);
  }
  await quote(0, 'acme');
});
