// The admin gRPC service and its CLI, against a running service (every role in one process), over
// TLS with the development CA (test/support/dev-tls.ts), as operators reach it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEnv } from '../../src/config/env.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { createAdminClient, type AdminClient } from '../../src/grpc/admin-client.ts';
import { runCli } from '../../src/grpc/admin-cli.ts';
import { applyPartnerOverrides, partnerOverridesCollection } from '../../src/ports/partner-overrides.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { chainRefundTopic, depositActorKey, depositActorType, depositsCollection, type DepositReply } from '../../src/actors/deposit-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { ActorClient } from '../../src/actors/client.ts';
import { base58Encode, resolveChainSetups } from '../../src/chains/config.ts';
import { randomAddress, SandboxChain } from '../../src/chains/sandbox-chain.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { eventually } from '../support/eventually.ts';
import { randomUUID } from 'node:crypto';
import { shardOf } from '../../src/bus/shards.ts';
import type { CommandEnvelope } from '../../src/actors/envelope.ts';
import { quarantineOnStore } from '../../src/actors/quarantine.ts';
import { createTestCertificates, type TestCertificates } from '../support/dev-tls.ts';
import { loadQuote } from '../../src/actors/quote-actor.ts';

const opsKey = 'ops-key-for-the-admin-test-0123456789';
const demoKey = 'demo-key-for-the-admin-test-0123456789';
let dir: string;
let certs: TestCertificates;
let service: RunningService;
let admin: AdminClient;
/** How the CLI reaches the service: its address and the CA of its certificate. */
let cliEnv: Record<string, string>;
/** What the service logs at warn and above (the audit trail of operators' actions is there). */
const warnings: string[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'admin-'));
  certs = createTestCertificates();
  service = await startService(
    readEnv({ PORT: '0', GRPC_PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', OPS_API_KEY: opsKey, DEMO_API_KEY: demoKey, SHARDS: '8', ...certs.adminServerEnv }),
    { log: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }) },
  );
  assert.ok(service.adminPort);
  admin = createAdminClient(`127.0.0.1:${service.adminPort}`, opsKey, { transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile) } });
  cliEnv = { OPS_API_KEY: opsKey, ADMIN_ADDR: `127.0.0.1:${service.adminPort}`, ADMIN_TLS_CA_FILE: certs.trusted.caFile };
});

after(async () => {
  try {
    admin?.close();
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  } finally {
    certs?.remove();
  }
});

test('a call without the ops key, or with a partner key, is UNAUTHENTICATED', async () => {
  const wrong = createAdminClient(`127.0.0.1:${service.adminPort}`, demoKey, { transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile) } });
  await assert.rejects(wrong.call('ListShards'), (error: { code?: number }) => error.code === 16);
  wrong.close();
});

test('shard status: every shard has exactly one owner with a fencing token, and the worker is listed', async () => {
  const reply = await eventually(async () => {
    const shards = await admin.call('ListShards');
    const rows = shards.shards as Array<{ shard: number; owner: string; token: string }>;
    assert.equal(rows.length, 8);
    assert.ok(rows.every((row) => row.owner !== '' && Number(row.token) > 0));
    return shards;
  });
  assert.equal((reply.workers as string[]).length, 1);
});

test('worker status: the shard worker reports its shards, actors in memory and memory use', async () => {
  const reply = await eventually(async () => {
    const workers = await admin.call('ListWorkers');
    const rows = workers.workers as Array<{ worker_id: string; owned_shards: number; rss_bytes: string; live: boolean }>;
    assert.equal(rows.length, 1, 'one worker reported');
    return rows;
  }, 15_000);
  const [row] = reply;
  assert.ok(row);
  assert.equal(row.owned_shards, 8);
  assert.equal(row.live, true);
  assert.ok(Number(row.rss_bytes) > 0);
});

test('disabling a user is stored (it survives a restart) and enabling restores it', async () => {
  const reply = await admin.call('DisableUser', { partner_id: 'demo', user_id: 'u-1' });
  assert.equal(reply.ok, true);
  assert.equal(service.ctx.partners.isUserDisabled('demo', 'u-1'), true);
  const stored = await service.ctx.store.get(partnerOverridesCollection, 'demo');
  assert.deepEqual(stored?.disabledUsers, ['u-1']);
  await admin.call('EnableUser', { partner_id: 'demo', user_id: 'u-1' });
  assert.equal(service.ctx.partners.isUserDisabled('demo', 'u-1'), false);
});

test('a user disabled in one Unicode form is disabled in every form (NFKC); an id with an invisible character is INVALID_ARGUMENT', async () => {
  const reply = await admin.call('DisableUser', { partner_id: 'demo', user_id: '\uff55-2' }); // full-width u
  assert.equal(reply.ok, true);
  assert.equal(service.ctx.partners.isUserDisabled('demo', 'u-2'), true);
  const stored = await service.ctx.store.get(partnerOverridesCollection, 'demo');
  assert.deepEqual(stored?.disabledUsers, ['u-2'], 'stored in its normal form');
  await admin.call('EnableUser', { partner_id: 'demo', user_id: 'u-2' });
  assert.equal(service.ctx.partners.isUserDisabled('demo', '\uff55-2'), false, 'enabled in another form of the same id');
  await assert.rejects(admin.call('DisableUser', { partner_id: 'demo', user_id: 'u\u200b-2' }), (error: { code?: number; details?: string }) => error.code === 3 && /U\+200B/.test(error.details ?? ''));

  // An override stored before ids were normalised (decomposed accent) matches every form once loaded.
  const before = await service.ctx.store.get(partnerOverridesCollection, 'demo');
  assert.ok(before);
  await service.ctx.store.put(partnerOverridesCollection, 'demo', { ...before, disabledUsers: ['jose\u0301'] });
  await applyPartnerOverrides(service.ctx);
  assert.equal(service.ctx.partners.isUserDisabled('demo', 'jos\u00e9'), true);
  assert.equal(await applyPartnerOverrides(service.ctx), 0, 'a normalised override is not applied again at every refresh');
  await admin.call('EnableUser', { partner_id: 'demo', user_id: 'jos\u00e9' });
  assert.equal(service.ctx.partners.isUserDisabled('demo', 'jose\u0301'), false);
});

test('an unknown partner is NOT_FOUND; a missing field is INVALID_ARGUMENT', async () => {
  await assert.rejects(admin.call('DisableUser', { partner_id: 'nobody', user_id: 'u' }), (error: { code?: number }) => error.code === 5);
  await assert.rejects(admin.call('DisableUser', { partner_id: 'demo' }), (error: { code?: number }) => error.code === 3);
});

test('rotating an API key: the new key authenticates, the old one no longer does', async () => {
  const reply = await admin.call('RotateApiKey', { partner_id: 'demo' });
  const newKey = String(reply.api_key);
  assert.equal(service.ctx.keyRing.findPartner(newKey), 'demo');
  assert.equal(service.ctx.keyRing.findPartner(demoKey), null);
  assert.deepEqual(service.ctx.partners.get('demo')?.apiKeySha256, [sha256Hex(newKey)]);
});

test('a refresh of the stored overrides that read them before a rotation never brings the rotated-out key back', async () => {
  const first = String((await admin.call('RotateApiKey', { partner_id: 'demo' })).api_key);
  // Every process re-reads the stored overrides every few seconds. This refresh reads them now
  // (the first key's document) and is answered only after the next rotation has been made.
  let rotationDone = (): void => undefined;
  const rotation = new Promise<void>((resolve) => (rotationDone = resolve));
  const slowReader = {
    ...service.ctx,
    store: {
      list: async (...query: Parameters<typeof service.ctx.store.list>) => {
        const page = await service.ctx.store.list(...query);
        await rotation;
        return page;
      },
    },
  };
  const refresh = applyPartnerOverrides(slowReader);
  const second = String((await admin.call('RotateApiKey', { partner_id: 'demo' })).api_key);
  rotationDone();
  await refresh;
  assert.equal(service.ctx.keyRing.findPartner(second), 'demo', 'the new key authenticates');
  assert.equal(service.ctx.keyRing.findPartner(first), null, 'the rotated-out key stays out');
  await applyPartnerOverrides(service.ctx);
  assert.equal(service.ctx.keyRing.findPartner(second), 'demo', 'and the next refresh agrees');
  assert.equal(service.ctx.keyRing.findPartner(first), null);
});

test('staging a webhook destination shows the draft\'s test secret once (reply and CLI); no other reply carries it', async () => {
  const staged = await admin.call('StageDestination', { partner_id: 'demo', url: 'http://127.0.0.1:9/draft' });
  assert.equal(staged.ok, true, String(staged.message));
  assert.match(String(staged.test_secret), /^whtest_[A-Za-z0-9_-]{43}$/);
  const lines: string[] = [];
  const env = cliEnv;
  assert.equal(await runCli(['destination', 'stage', 'demo', 'http://127.0.0.1:9/draft'], env, (text) => lines.push(text)), 0);
  const printed = lines.join('\n').match(/whtest_[A-Za-z0-9_-]{43}/)?.[0];
  assert.ok(printed, 'the CLI prints the test secret');
  assert.notEqual(printed, staged.test_secret, 'each staging draws a new one');
  const discarded = await admin.call('DiscardDestination', { partner_id: 'demo' });
  assert.equal(discarded.test_secret, '');
});

test('sandbox rates are set through the admin service; a bad rate is refused', async () => {
  await admin.call('SetRate', { currency: 'COP', rate: '4100.25' });
  assert.equal(service.ctx.config.rates().COP?.units, 410025n);
  await assert.rejects(admin.call('SetRate', { currency: 'COP', rate: '-1' }), (error: { code?: number }) => error.code === 3);
  await assert.rejects(admin.call('SetRate', { currency: 'ARS', rate: '1' }), (error: { code?: number }) => error.code === 3);
});

test('the CLI prints the shard table', async () => {
  const lines: string[] = [];
  const code = await runCli(['shards'], cliEnv, (text) => lines.push(text));
  assert.equal(code, 0);
  assert.match(lines[0] ?? '', /^shard\s+owner\s+token/);
  // Header, rule, one row per shard, then the live workers.
  assert.equal(lines[0]?.split('\n').length, 8 + 2 + 1);
  assert.match(lines[0] ?? '', /\nworkers: \S+$/);
  const missingKey = await runCli(['shards'], {}, (text) => lines.push(text));
  assert.equal(missingKey, 2);
});

test('quarantined actors: listed, inspected (kinds and ids, no payloads) and replayed through the CLI; NOT_FOUND once released', async () => {
  // A quote whose creation was dead-lettered (as if its actor had been quarantined by a bug).
  const quoteId = randomUUID();
  const actorId = `quote/${quoteId}`;
  const command: CommandEnvelope = {
    commandId: randomUUID(),
    actorType: 'quote',
    actorKey: quoteId,
    kind: 'create',
    payload: { partnerId: 'demo', request: { kind: 'payout', amount: 100_000, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: 'BREB', targetCurrency: 'COP' } },
    sentAtMs: Date.now(),
  };
  await quarantineOnStore(service.ctx.store).quarantine(
    { actorId, shard: shardOf(actorId, 8), error: 'TypeError: the bug', sinceMs: 1, lastErrorAtMs: 2 },
    [{ order: '000000000000001.000000001', commandId: command.commandId, kind: 'create', atMs: 2, envelope: command }],
  );
  const env = cliEnv;
  const lines: string[] = [];
  assert.equal(await runCli(['quarantined'], env, (text) => lines.push(text)), 0);
  assert.match(lines.join('\n'), new RegExp(`${actorId}\\s+\\d+\\s+1\\s+2\\s+TypeError: the bug`));
  lines.length = 0;
  assert.equal(await runCli(['quarantine', actorId], env, (text) => lines.push(text)), 0);
  assert.match(lines.join('\n'), new RegExp(`000000000000001.000000001\\s+${command.commandId}\\s+create`));
  assert.doesNotMatch(lines.join('\n'), /BREB|100000/, 'no command payload is shown');

  assert.equal(await runCli(['replay', actorId], env, (text) => lines.push(text)), 0);
  await eventually(async () => assert.ok(await loadQuote(service.ctx.store, quoteId), 'the dead-lettered creation was applied'));
  await eventually(async () => assert.rejects(admin.call('InspectQuarantined', { actor_id: actorId }), (error: { code?: number }) => error.code === 5));
  await assert.rejects(admin.call('ReplayQuarantined', { actor_id: actorId }), (error: { code?: number }) => error.code === 5);
});

/** A Solana transfer nobody can match, recorded by its deposit actor: a chain refund row for its sender. */
let actors: ActorClient | null = null;
async function unmatchedSolanaDeposit(): Promise<string> {
  actors ??= await service.ctx.actorClient('admin-test'); // one reply stream per name: one client
  const client = actors;
  const onChainId = base58Encode(randomBytes(64));
  const transfer = { network: 'SOLANA', onChainId, asset: 'USDC', amount: decimalFromExactString('2'), sender: randomAddress('SOLANA'), memo: null };
  const key = depositActorKey('SOLANA', onChainId);
  const reply = await client.ask<DepositReply>(depositActorType, key, 'unmatched', toJsonValue({ transfer, reason: 'memo_missing' }), { timeoutMs: 20_000 });
  assert.equal(reply.result, 'recorded');
  return key;
}

interface ParkedRowView {
  topic: string;
  id: string;
  partition_key: string;
  state: string;
  attempts: number;
  reason: string;
  not_before_ms: string;
  claimed: boolean;
}

test('refunds a chain refuses: /metrics counts them parked, the listing shows why; an operator retries one now and resolves one by hand (logged)', async () => {
  const setups = resolveChainSetups(null, { sandbox: true, corridors: loadDefaultCorridors() });
  const chain = new SandboxChain({ store: service.ctx.store, clock: service.ctx.clock, setups: Object.values(setups).filter((setup) => setup !== undefined) });
  await chain.setKnobs('SOLANA', { sendRejects: true });
  try {
    const retried = await unmatchedSolanaDeposit();
    const resolved = await unmatchedSolanaDeposit();
    // The service's refund worker tries both, the chain refuses, and they are parked.
    const rows = await eventually(async () => {
      const reply = await admin.call('ListParked', { topic: chainRefundTopic });
      const ours = (reply.rows as ParkedRowView[]).filter((row) => row.partition_key === retried || row.partition_key === resolved);
      assert.equal(ours.length, 2);
      return ours;
    }, 15_000, 100);
    for (const row of rows) {
      assert.deepEqual([row.topic, row.state, row.attempts, row.reason, row.claimed], [chainRefundTopic, 'parked', 1, 'sandbox send rejected (knob)', false]);
      assert.ok(Number(row.not_before_ms) > Date.now() + 60_000, 'retried in ten minutes, not before');
    }
    await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${service.port}/metrics`, { headers: { 'x-ops-api-key': opsKey } });
      assert.match(await response.text(), /^outbox_rows_parked\{topic="refunds\.chain"\} 2$/m);
    }, 15_000, 250);

    const lines: string[] = [];
    assert.equal(await runCli(['parked', chainRefundTopic], cliEnv, (text) => lines.push(text)), 0);
    assert.match(lines[0] ?? '', /^topic\s+id\s+state\s+attempts\s+reason/);
    assert.match(lines[0] ?? '', /parked\s+1\s+sandbox send rejected \(knob\)/);

    // The chain takes sends again: the retried refund goes out at once, the other waits its ten minutes.
    await chain.setKnobs('SOLANA', { sendRejects: false });
    const [toRetry, toResolve] = [rows.find((row) => row.partition_key === retried), rows.find((row) => row.partition_key === resolved)];
    assert.ok(toRetry && toResolve);
    assert.equal((await admin.call('RetryParked', { topic: chainRefundTopic, id: toRetry.id })).ok, true);
    await eventually(async () => assert.equal((await service.ctx.store.get(depositsCollection, retried))?.['refund'], 'settled'), 10_000, 50);
    assert.equal((await service.ctx.store.get(depositsCollection, resolved))?.['refund'], 'pending');

    // Resolving needs a note; it deletes the row as done and leaves an audit line with the note.
    await assert.rejects(admin.call('ResolveParked', { topic: chainRefundTopic, id: toResolve.id }), (error: { code?: number }) => error.code === 3);
    const note = 'sender asked for the refund on another address; sent by hand';
    assert.equal((await admin.call('ResolveParked', { topic: chainRefundTopic, id: toResolve.id, note })).ok, true);
    assert.ok(!(await service.ctx.store.outboxPending(chainRefundTopic, 1_000)).some((row) => row.id === toResolve.id), 'the row is done');
    const listed = (await admin.call('ListParked', { topic: chainRefundTopic, include_retrying: true })).rows as ParkedRowView[];
    assert.ok(!listed.some((row) => row.id === toResolve.id || row.id === toRetry.id), 'neither waits any more');
    const audit = warnings.map((line) => JSON.parse(line) as { msg: string; note?: string; outboxRow?: { id: string; reason: string } })
      .find((entry) => entry.outboxRow?.id === toResolve.id);
    assert.ok(audit, 'the resolution is logged');
    assert.equal(audit.note, note);
    assert.equal(audit.outboxRow?.reason, 'sandbox send rejected (knob)');
    assert.match(audit.msg, /resolved by an operator/);

    // A row that does not wait, a topic that does not exist.
    await assert.rejects(admin.call('RetryParked', { topic: chainRefundTopic, id: toResolve.id }), (error: { code?: number }) => error.code === 5);
    await assert.rejects(admin.call('ResolveParked', { topic: chainRefundTopic, id: 'nobody:1:0', note }), (error: { code?: number }) => error.code === 5);
    await assert.rejects(admin.call('ListParked', { topic: 'no-such-topic' }), (error: { code?: number }) => error.code === 3);
    // A payout's or a PIX refund's row is never marked done by hand: its outcome comes from the rail.
    for (const topic of ['payouts', 'refunds.pix']) {
      await assert.rejects(admin.call('ResolveParked', { topic, id: 'any:1:0', note }), (error: { code?: number; details?: string }) => error.code === 9 && /outcome comes from the rail/.test(error.details ?? ''));
    }
  } finally {
    await chain.setKnobs('SOLANA', { sendRejects: false });
  }
});

test('redeliver through the CLI reaches the server with its partner (the request carried only the event id before)', async () => {
  const lines: string[] = [];
  const code = await runCli(['redeliver', 'demo', randomUUID()], cliEnv, (text) => lines.push(text));
  assert.doesNotMatch(lines.join('\n'), /partner_id is required/);
  assert.equal(code, 1, `not done: exit 1\n${lines.join('\n')}`);
  assert.match(lines.join('\n'), /no such event|not found|unknown/i, 'the server looked the event up for the partner');
});
