// Every command of `npm run admin` through the CLI's own code path (`runCli`: argument parsing, the
// real gRPC client, printing) against a running service, as an operator types it: text output and
// `--json`, exit codes, and the help naming the environment the CLI needs. The webhook commands run
// a real scenario: a destination set up with the CLI (stage, test, activate, a rotated secret), a
// receiver that refuses deliveries so they fail, then single and bulk redelivery once it answers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { JsonValue } from '../../src/actors/envelope.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { runCli } from '../../src/grpc/admin-cli.ts';
import { call } from '../e2e/support.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { teardown } from '../support/teardown.ts';
import { commitWebhooks, newTransaction, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

let service: ServiceHarness;
let receiver: WebhookReceiver;
let env: Record<string, string>;

before(async () => {
  service = await startServiceHarness();
  receiver = await startWebhookReceiver();
  assert.ok(service.adminPort);
  env = { OPS_API_KEY: service.opsApiKey, ADMIN_ADDR: `127.0.0.1:${service.adminPort}`, ADMIN_TLS: 'off' };
});

after(() => teardown(() => receiver?.close(), () => service?.stop()));

/** Runs the CLI; returns its exit code and everything it printed. */
async function cli(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runCli(argv, env, (text) => lines.push(text));
  return { code, out: lines.join('\n') };
}

/** Runs the CLI with --json; fails unless it printed one JSON document. */
async function cliJson(...argv: string[]): Promise<{ code: number; json: Record<string, unknown> }> {
  const { code, out } = await cli(...argv, '--json');
  return { code, json: JSON.parse(out) as Record<string, unknown> };
}

test('help names the commands and the environment the CLI needs; without OPS_API_KEY it says what to set (exit 2)', async () => {
  const help = await cli('help');
  assert.equal(help.code, 0);
  for (const name of ['OPS_API_KEY', 'ADMIN_ADDR', 'ADMIN_TLS_CA_FILE', 'ADMIN_TLS_SERVER_NAME', 'ADMIN_TLS=off', 'destination get', '--from', '--json']) {
    assert.ok(help.out.includes(name), `help mentions ${name}`);
  }
  const lines: string[] = [];
  assert.equal(await runCli(['shards'], {}, (text) => lines.push(text)), 2);
  assert.match(lines.join('\n'), /OPS_API_KEY must be set[\s\S]*ADMIN_ADDR[\s\S]*ADMIN_TLS_CA_FILE/);
  const noTransport: string[] = [];
  assert.equal(await runCli(['shards'], { OPS_API_KEY: 'x', ADMIN_ADDR: '127.0.0.1:1' }, (text) => noTransport.push(text)), 2);
  assert.match(noTransport.join('\n'), /ADMIN_TLS_CA_FILE/);
  const unknown = await cli('no-such-command');
  assert.equal(unknown.code, 2);
  assert.match(unknown.out, /unknown command no-such-command[\s\S]*usage:/);
  const missing = await cli('rotate-key');
  assert.equal(missing.code, 2);
  assert.match(missing.out, /rotate-key needs 1 argument/);
});

test('shards and workers: a table, or the reply as JSON', async () => {
  const shards = await cliJson('shards');
  assert.equal(shards.code, 0);
  const rows = shards.json.shards as Array<{ owner: string }>;
  assert.equal(rows.length, 8);
  await eventually(async () => {
    const workers = await cliJson('workers');
    const listed = workers.json.workers as Array<{ live: boolean; owned_shards: number }>;
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.owned_shards, 8);
  }, 15_000, 200);
  const text = await cli('workers');
  assert.match(text.out, /^worker_id\s+live\s+owned_shards/);
});

test('disable-user and enable-user: the partner\'s user is disabled, then enabled again; an unknown partner is NOT_FOUND', async () => {
  const disabled = await cliJson('disable-user', testPartners.kycOff, 'cli-user');
  assert.deepEqual([disabled.code, disabled.json.ok, disabled.json.message], [0, true, 'user disabled']);
  assert.equal(service.ctx.partners.isUserDisabled(testPartners.kycOff, 'cli-user'), true);
  const enabled = await cli('enable-user', testPartners.kycOff, 'cli-user');
  assert.deepEqual([enabled.code, enabled.out], [0, 'user enabled']);
  assert.equal(service.ctx.partners.isUserDisabled(testPartners.kycOff, 'cli-user'), false);
  const unknown = await cliJson('disable-user', 'nobody', 'u');
  assert.equal(unknown.code, 1);
  assert.deepEqual(unknown.json, { error: 'no partner nobody', grpc_code: 5 });
});

test('rotate-key: the printed key authenticates the partner, the old one gets 401', async () => {
  const oldKey = service.apiKeys[testPartners.kybPending] ?? '';
  assert.equal((await call(service.baseUrl, 'GET', '/events', { key: oldKey })).status, 200);
  const rotated = await cli('rotate-key', testPartners.kybPending);
  assert.equal(rotated.code, 0);
  const newKey = rotated.out.match(/\(shown once\): (\S+)$/)?.[1];
  assert.ok(newKey, rotated.out);
  assert.equal((await call(service.baseUrl, 'GET', '/events', { key: newKey })).status, 200);
  assert.equal((await call(service.baseUrl, 'GET', '/events', { key: oldKey })).status, 401);
  const json = await cliJson('rotate-key', testPartners.kybPending);
  assert.equal(json.json.partner_id, testPartners.kybPending);
  assert.equal((await call(service.baseUrl, 'GET', '/events', { key: String(json.json.api_key) })).status, 200);
});

test('reconcile: an unknown hash is reported as such; a bad chain is refused', async () => {
  const hash = `0x${'ab'.repeat(32)}`;
  const reply = await cliJson('reconcile', 'CELO', hash);
  assert.equal(reply.code, 0);
  assert.equal(reply.json.on_chain_tx, hash);
  assert.notEqual(reply.json.result, '');
  const bad = await cli('reconcile', 'DOGE', hash);
  assert.equal(bad.code, 1);
  assert.match(bad.out, /^error: blockchain must be STELLAR, SOLANA or CELO$/);
});

test('webhooks: destination get/stage/test/activate, secret rotation, deliveries, redelivery of one event and of a time range', async () => {
  const partner = testPartners.kycOn;
  // The receiver accepts the destination's test, and refuses (400: not retried) everything else for now.
  let accepting = false;
  receiver.respondWith((request) => ({ status: request.event === 'webhook.test' || accepting ? 200 : 400 }));

  const initial = await cliJson('destination', 'get', partner);
  assert.deepEqual([initial.code, initial.json.live_url, initial.json.source, initial.json.draft_url], [0, '', 'none', '']);
  const staged = await cli('destination', 'stage', partner, receiver.url);
  assert.equal(staged.code, 0, staged.out);
  assert.match(staged.out, /test secret of the draft \(shown once/);
  const tested = await cliJson('destination', 'test', partner);
  assert.equal(tested.json.ok, true, String(tested.json.message));
  const afterTest = (await cliJson('destination', 'get', partner)).json;
  assert.equal(afterTest.draft_test, '200 ok');
  assert.equal(afterTest.draft_test_excerpt, 'ok', "the start of the receiver's answer");
  const activated = await cli('destination', 'activate', partner);
  assert.equal(activated.code, 0, activated.out);
  // A live signing secret: rotated (shown once), then activated.
  const rotated = await cli('rotate-secret', partner);
  assert.equal(rotated.code, 0, rotated.out);
  assert.match(rotated.out, /staged webhook secret for kyc-on \(shown once\): \S+/);
  assert.equal((await cliJson('destination', 'get', partner)).json.secret_staged, true);
  assert.equal((await cli('activate-secret', partner)).code, 0);
  const live = await cliJson('destination', 'get', partner);
  assert.deepEqual([live.json.live_url, live.json.source, live.json.secret_configured, live.json.secret_staged], [receiver.url, 'store', true, false]);
  const getText = await cli('destination', 'get', partner);
  assert.match(getText.out, /^ok\s+message\s+live_url\s+source/);

  // Three events: one older than the others. All fail (400).
  const early = newTransaction(partner);
  await commitWebhooks(service.ctx.store, early, [{ event: 'transaction.created', status: 'PENDING' }]);
  const earlyId = await failedEventOf(partner, early.transactionId);
  const rangeFromMs = Date.now();
  const laterIds: string[] = [];
  for (let index = 0; index < 2; index += 1) {
    const tx = newTransaction(partner);
    await commitWebhooks(service.ctx.store, tx, [{ event: 'transaction.created', status: 'PENDING' }]);
    laterIds.push(await failedEventOf(partner, tx.transactionId));
  }
  const failed = await cliJson('deliveries', partner, 'failed');
  assert.equal((failed.json.deliveries as unknown[]).length, 3);
  const failedText = await cli('deliveries', partner, 'failed');
  assert.match(failedText.out, new RegExp(`${earlyId}\\s+\\d+\\s+transaction\\.created\\s+failed\\s+1\\s+400`));
  assert.equal((await cli('deliveries', partner, 'lost')).code, 1, 'an unknown state is refused');

  accepting = true;
  // One event: redelivered, delivered.
  const single = await cli('redeliver', partner, earlyId);
  assert.deepEqual([single.code, single.out], [0, 'redelivery scheduled']);
  await eventually(async () => assert.equal(await stateOf(partner, earlyId), 'delivered'), 15_000, 100);
  const again = await cliJson('redeliver', partner, earlyId);
  assert.equal(again.code, 1, 'a delivered event is not redelivered');
  assert.match(String(again.json.message), /only a failed delivery can be redelivered/);
  // Another partner's event is not found for this one.
  const foreign = await cliJson('redeliver', testPartners.kycOff, laterIds[0] ?? '');
  assert.deepEqual([foreign.code, foreign.json.ok], [1, false]);

  // The range: both later events, nothing else.
  const bulk = await cliJson('redeliver', partner, '--from', new Date(rangeFromMs).toISOString());
  assert.equal(bulk.code, 0);
  assert.deepEqual([...(bulk.json.event_ids as string[])].sort(), [...laterIds].sort());
  assert.equal(bulk.json.truncated, false);
  for (const id of laterIds) await eventually(async () => assert.equal(await stateOf(partner, id), 'delivered'), 15_000, 100);
  const empty = await cli('redeliver', partner, '--from', '0', '--to', String(Date.now()));
  assert.deepEqual([empty.code, empty.out], [0, `redelivered 0 failed deliveries of ${partner}`]);
  const badTime = await cli('redeliver', partner, '--from', 'yesterday-ish');
  assert.equal(badTime.code, 2);
  assert.match(badTime.out, /--from: not a time/);

  // A draft staged by mistake is discarded; the live destination stays.
  assert.equal((await cli('destination', 'stage', partner, `${receiver.origin}/other`)).code, 0);
  assert.equal((await cliJson('destination', 'get', partner)).json.draft_url, `${receiver.origin}/other`);
  const discarded = await cliJson('destination', 'discard', partner);
  assert.deepEqual([discarded.code, discarded.json.draft_url, discarded.json.live_url], [0, '', receiver.url]);
  assert.equal((await cli('destination', 'move', partner)).code, 2);
});

async function deliveryRows(partner: string): Promise<Array<{ event_id: string; state: string; last_status: number }>> {
  const listed = await cliJson('deliveries', partner);
  assert.equal(listed.code, 0);
  return listed.json.deliveries as Array<{ event_id: string; state: string; last_status: number }>;
}

async function stateOf(partner: string, eventId: string): Promise<string | undefined> {
  return (await deliveryRows(partner)).find((row) => row.event_id === eventId)?.state;
}

/** Waits until the receiver refused the transaction's event and the log shows it failed; returns its event id. */
async function failedEventOf(partner: string, transactionId: string): Promise<string> {
  const request = await eventually(() => {
    const found = receiver.requests.find((candidate) => candidate.transactionId === transactionId);
    assert.ok(found, `a delivery of ${transactionId}`);
    return found;
  }, 15_000, 50);
  assert.ok(request.eventId);
  const eventId = request.eventId;
  await eventually(async () => assert.equal(await stateOf(partner, eventId), 'failed'), 15_000, 50);
  return eventId;
}

test('quarantine and parked rows: empty listings as JSON; acting on a row that does not wait is NOT_FOUND (exit 1)', async () => {
  const quarantined = await cliJson('quarantined');
  assert.deepEqual([quarantined.code, quarantined.json.actors], [0, []]);
  const inspected = await cliJson('quarantine', `quote/${randomUUID()}`);
  assert.deepEqual([inspected.code, inspected.json.grpc_code], [1, 5]);
  const replayed = await cli('replay', `quote/${randomUUID()}`);
  assert.equal(replayed.code, 1);
  assert.match(replayed.out, /is not quarantined/);
  const parked = await cliJson('parked', '--all', '--limit', '10');
  assert.deepEqual([parked.code, parked.json.rows, parked.json.truncated], [0, [], false]);
  const retried = await cliJson('retry-parked', 'refunds.chain', 'nobody:1:0');
  assert.deepEqual([retried.code, retried.json.grpc_code], [1, 5]);
  const resolved = await cli('resolve-parked', 'refunds.chain', 'nobody:1:0', 'sent', 'by', 'hand');
  assert.equal(resolved.code, 1);
  assert.match(resolved.out, /no row nobody:1:0 waits for a retry/);
});

test('sandbox knobs: set-rate changes the rate; sandbox-rail takes an outage on and off, as partners see in GET /payments/liquidity', async () => {
  const rate = await cli('set-rate', 'COP', '4321.5');
  assert.deepEqual([rate.code, rate.out], [0, 'rate COP = 4321.5']);
  assert.equal(service.ctx.config.rates().COP?.units, 43215n);
  assert.equal((await cli('set-rate', 'COP', 'lots')).code, 1);
  const down = await cliJson('sandbox-rail', 'BREB', '--outage', 'on');
  assert.deepEqual([down.code, down.json.message], [0, 'sandbox rail updated']);
  try {
    await service.rail?.refreshLiquidity();
    const liquidity = await call(service.baseUrl, 'GET', '/payments/liquidity?paymentMethod=BREB', { key: service.demoApiKey });
    assert.match(String(liquidity.json['message']), /Payments via BREB are temporarily unavailable/);
  } finally {
    assert.equal((await cli('sandbox-rail', 'BREB', '--outage', 'off')).code, 0);
  }
  await service.rail?.refreshLiquidity();
  const liquidity = await call(service.baseUrl, 'GET', '/payments/liquidity?paymentMethod=BREB', { key: service.demoApiKey });
  assert.doesNotMatch(String(liquidity.json['message']), /unavailable/);
  assert.equal((await cli('sandbox-rail', 'ACH')).code, 1);
});

test('unmatched list: every unmatched deposit, filtered by partner (or none), state and network, as a table or JSON', async () => {
  // Two real deposit actors: a late one handed back by a transaction of kyc-off (held open for the
  // partner), and a Stellar memo naming nothing (no partner: refunded at once).
  const client = await service.ctx.actorClient('cli-test');
  const transfer = (onChainId: string, network: string) =>
    toJsonValue({ network, onChainId, asset: 'USDC', amount: decimalFromExactString('2.5000000'), sender: `GSENDER${onChainId}`, memo: null });
  const late = `late${randomUUID().replaceAll('-', '')}`;
  const stray = `stray${randomUUID().replaceAll('-', '')}`;
  const transactionId = randomUUID();
  const ask = async (key: string, kind: string, payload: JsonValue, result: string) => {
    const reply = await client.ask<{ result: string }>('deposit', key, kind, payload, { timeoutMs: 10_000 });
    assert.equal(reply.result, result, JSON.stringify(reply));
  };
  await ask(`SOLANA:${late}`, 'claim', { transactionId, transfer: transfer(late, 'SOLANA') }, 'enqueued');
  await ask(`SOLANA:${late}`, 'handBack', { transactionId, reason: 'deposit_late', partnerId: testPartners.kycOff }, 'recorded');
  await ask(`STELLAR:${stray}`, 'unmatched', { transfer: transfer(stray, 'STELLAR'), reason: 'memo_unknown' }, 'recorded');

  const mine = await cliJson('unmatched', 'list', '--partner', testPartners.kycOff, '--state', 'open', '--network', 'SOLANA');
  assert.equal(mine.code, 0);
  const rows = mine.json.rows as Array<Record<string, unknown>>;
  assert.deepEqual(
    rows.filter((row) => row.hash === late).map((row) => [row.partner_id, row.state, row.reason, row.transaction_id, row.amount]),
    [[testPartners.kycOff, 'open', 'deposit_late', transactionId, '2.5000000']],
  );
  const nobodys = await cliJson('unmatched', 'list', '--partner', '-');
  const strayRow = (nobodys.json.rows as Array<Record<string, unknown>>).find((row) => row.hash === stray);
  assert.deepEqual([strayRow?.partner_id, strayRow?.reason], ['', 'memo_unknown']);
  assert.ok(['refunding', 'refunded'].includes(String(strayRow?.state)));
  const all = await cliJson('unmatched', 'list');
  const hashes = (all.json.rows as Array<Record<string, unknown>>).map((row) => row.hash);
  assert.ok(hashes.includes(late) && hashes.includes(stray), 'without filters: every partner and none');
  const text = await cli('unmatched', 'list', '--partner', testPartners.kycOff);
  assert.match(text.out, /^id\s+partner_id\s+state\s+network/);
  assert.ok(text.out.includes('deposit_late'));
  const refused = await cli('unmatched', 'list', '--state', 'lost');
  assert.equal(refused.code, 1);
  assert.match(refused.out, /state must be one of open, refunding, refunded, applied/);
  assert.equal((await cli('unmatched')).code, 2);
});
