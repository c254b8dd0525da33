// The admin service as operators reach it: over TLS with the deployment's CA (the real admin client
// and CLI), bound to ADMIN_HOST (127.0.0.1 unless said otherwise, whatever HOST is), and one audit
// line per call and per ops HTTP request (who, what, when, how it ended) that never carries the key.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { readEnv } from '../../src/config/env.ts';
import { createAdminClient } from '../../src/grpc/admin-client.ts';
import { runCli } from '../../src/grpc/admin-cli.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { createTestCertificates, type TestCertificates } from '../support/dev-tls.ts';
import { listeningAddresses } from '../support/listening-sockets.ts';

const opsKey = `ops_${randomBytes(20).toString('hex')}`;
const demoKey = `demo_${randomBytes(20).toString('hex')}`;
const grpcCode = { unauthenticated: 16, unavailable: 14, notFound: 5 } as const;

interface AuditLine {
  readonly audit?: boolean;
  readonly channel?: string;
  readonly action?: string;
  readonly target?: string;
  readonly outcome?: string;
  readonly operator?: string | null;
  readonly peer?: string;
  readonly atMs?: number;
}

function capture(lines: string[]) {
  // `warn`: audit lines must be written even when the process logs only warnings and errors.
  return pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
}

function auditLines(lines: readonly string[]): AuditLine[] {
  return lines.map((line) => JSON.parse(line) as AuditLine).filter((line) => line.audit === true);
}

describe('the admin service over TLS, bound to ADMIN_HOST', () => {
  let certs: TestCertificates;
  let dir: string;
  let service: RunningService;
  let address: string;
  const logged: string[] = [];

  before(async () => {
    certs = createTestCertificates();
    dir = mkdtempSync(join(tmpdir(), 'admin-tls-'));
    // HOST is every interface (what the shipped deploy configs set for the edge): the admin
    // service must still listen on loopback only unless ADMIN_HOST says otherwise.
    service = await startService(
      readEnv({ ROLE: 'admin', HOST: '0.0.0.0', GRPC_PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'info', OPS_API_KEY: opsKey, DEMO_API_KEY: demoKey, SHARDS: '4', ...certs.adminServerEnv }),
      { log: capture(logged) },
    );
    assert.ok(service.adminPort);
    address = `127.0.0.1:${service.adminPort}`;
  });

  after(async () => {
    try {
      await service?.stop();
      rmSync(dir, { recursive: true, force: true });
    } finally {
      certs?.remove();
    }
  });

  test('the admin client that trusts the deployment CA is served over TLS; the CLI too (ADMIN_TLS_CA_FILE)', async () => {
    const admin = createAdminClient(address, opsKey, { transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile) } });
    try {
      const reply = await admin.call('ListShards');
      assert.equal((reply.shards as unknown[]).length, 4);
    } finally {
      admin.close();
    }
    const printed: string[] = [];
    const code = await runCli(['shards'], { OPS_API_KEY: opsKey, ADMIN_ADDR: address, ADMIN_TLS_CA_FILE: certs.trusted.caFile }, (text) => printed.push(text));
    assert.equal(code, 0, printed.join('\n'));
    assert.match(printed[0] ?? '', /^shard\s+owner\s+token/);
  });

  test('a plaintext client is refused, and so is a client that does not trust the CA (nothing is answered)', async () => {
    const plaintext = createAdminClient(address, opsKey, { transport: { kind: 'plaintext' }, deadlineMs: 3_000 });
    const stranger = createAdminClient(address, opsKey, { transport: { kind: 'tls', caPem: certs.pem(certs.other.caFile) }, deadlineMs: 3_000 });
    try {
      await assert.rejects(plaintext.call('ListShards'), (error: { code?: number }) => error.code === grpcCode.unavailable);
      await assert.rejects(stranger.call('ListShards'), (error: { code?: number }) => error.code === grpcCode.unavailable);
    } finally {
      plaintext.close();
      stranger.close();
    }
    // The CLI without a CA (and without the development allowance) refuses to send the key at all.
    const printed: string[] = [];
    assert.equal(await runCli(['shards'], { OPS_API_KEY: opsKey, ADMIN_ADDR: address }, (text) => printed.push(text)), 2);
    assert.match(printed.join('\n'), /ADMIN_TLS_CA_FILE/);
  });

  test('the admin service listens on 127.0.0.1 only although HOST is 0.0.0.0', () => {
    assert.deepEqual(listeningAddresses(service.adminPort ?? 0), ['127.0.0.1']);
  });

  test('every admin call writes one audit line (operator key id, action, target, outcome), refused ones too, and never the key', async () => {
    const admin = createAdminClient(address, opsKey, { transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile) } });
    const intruder = createAdminClient(address, demoKey, { transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile) } });
    const before = auditLines(logged).length;
    let rotatedKey = '';
    try {
      await admin.call('DisableUser', { partner_id: 'demo', user_id: 'user-7' });
      rotatedKey = String((await admin.call('RotateApiKey', { partner_id: 'demo' })).api_key);
      await assert.rejects(admin.call('DisableUser', { partner_id: 'nobody', user_id: 'user-7' }), (error: { code?: number }) => error.code === grpcCode.notFound);
      await assert.rejects(intruder.call('RotateApiKey', { partner_id: 'demo' }), (error: { code?: number }) => error.code === grpcCode.unauthenticated);
    } finally {
      admin.close();
      intruder.close();
    }
    const lines = auditLines(logged).slice(before);
    assert.deepEqual(
      lines.map((line) => [line.channel, line.action, line.target, line.outcome]),
      [
        ['admin-grpc', 'DisableUser', 'partner_id=demo user_id=user-7', 'ok'],
        ['admin-grpc', 'RotateApiKey', 'partner_id=demo', 'ok'],
        ['admin-grpc', 'DisableUser', 'partner_id=nobody user_id=user-7', 'refused'],
        ['admin-grpc', 'RotateApiKey', 'partner_id=demo', 'unauthenticated'],
      ],
    );
    const [first, , , refused] = lines;
    assert.match(String(first?.operator), /^ops-key:[0-9a-f]{12}$/, 'who: the id of the ops key, not the key');
    assert.equal(refused?.operator, null, 'a refused credential names nobody');
    assert.ok(lines.every((line) => typeof line.atMs === 'number' && typeof line.peer === 'string' && line.peer !== ''));
    const everything = logged.join('\n');
    for (const secret of [opsKey, demoKey, rotatedKey]) assert.ok(!everything.includes(secret), 'no key in any log line');
  });
});

describe('the ops HTTP route writes one audit line per request', () => {
  let dir: string;
  let service: RunningService;
  const logged: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ops-audit-'));
    service = await startService(
      readEnv({ ROLE: 'all', PORT: '0', GRPC_PORT: '0', ADMIN_TLS: 'off', DATA_DIR: dir, LOG_LEVEL: 'info', OPS_API_KEY: opsKey, DEMO_API_KEY: demoKey, SHARDS: '4' }),
      { log: capture(logged) },
    );
  });

  after(async () => {
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('reconcile-hash: the operator, the hash and the outcome; a wrong key is audited as unauthenticated; no key logged', async () => {
    const hash = `0x${randomBytes(32).toString('hex')}`;
    const post = (key: string) =>
      fetch(`http://127.0.0.1:${String(service.port)}/ops/transactions/reconcile-hash`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ops-api-key': key },
        body: JSON.stringify({ blockchain: 'CELO', on_chain_tx: hash }),
      });
    const before = auditLines(logged).length;
    const answered = await post(opsKey);
    assert.equal(answered.status, 200, await answered.text());
    const refused = await post(demoKey);
    assert.equal(refused.status, 401);
    await refused.arrayBuffer();
    const lines = auditLines(logged).slice(before);
    assert.deepEqual(
      lines.map((line) => [line.channel, line.action, line.target, line.outcome]),
      [
        ['ops-http', 'POST /ops/transactions/reconcile-hash', `blockchain=CELO on_chain_tx=${hash}`, 'ok'],
        ['ops-http', 'POST /ops/transactions/reconcile-hash', '', 'unauthenticated'],
      ],
    );
    assert.match(String(lines[0]?.operator), /^ops-key:[0-9a-f]{12}$/);
    const everything = logged.join('\n');
    assert.ok(!everything.includes(opsKey) && !everything.includes(demoKey));
  });
});
