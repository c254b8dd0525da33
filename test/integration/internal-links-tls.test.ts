// The internal links (the payout role's Payout/Liquidity, the watcher role's Chains) are closed:
// mutual TLS with the deployment's internal CA, bound to INTERNAL_HOST (127.0.0.1 unless said
// otherwise, whatever HOST is), a credential of their own that is not the operators' ops key, and
// plaintext only on loopback when explicitly allowed (INTERNAL_TLS=off, with INTERNAL_LINK_KEY).
// A process configured to serve a plaintext link on another interface does not start.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition } from '@grpc/proto-loader';
import { pino } from 'pino';
import { readEnv } from '../../src/config/env.ts';
import { createChainServices } from '../../src/chains/chain-services.ts';
import { ChainsLinkClient, chainsProtoPath, startChainsLinkServer, type ChainsLinkServer } from '../../src/grpc/chains-link.ts';
import { LinkError, PayoutLinkClient, payoutProtoPath } from '../../src/grpc/payout-link.ts';
import { createRailServices, type RailServices, type RunningPayoutRole } from '../../src/service/rail-services.ts';
import { createContext } from '../../src/service/context.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { createTestCertificates, type TestCertificates } from '../support/dev-tls.ts';
import { listeningAddresses } from '../support/listening-sockets.ts';
import { freePort, stopChild } from '../support/processes.ts';
import { teardown } from '../support/teardown.ts';

const opsKey = `ops_${randomBytes(20).toString('hex')}`;
const linkKey = `link_${randomBytes(24).toString('hex')}`;
const repoRoot = join(import.meta.dirname, '../..');

const refusedConnection = (error: unknown): boolean => error instanceof LinkError && error.code === grpc.status.UNAVAILABLE;
const unauthenticated = (error: unknown): boolean => error instanceof LinkError && error.code === grpc.status.UNAUTHENTICATED;

/** A raw unary call with whatever credentials and metadata an attacker chooses; resolves to its status code. */
function rawCall(protoPath: string, service: string, method: string, request: object, address: string, credentials: grpc.ChannelCredentials, metadata: grpc.Metadata): Promise<grpc.status> {
  const definition = (loadSync(protoPath, { keepCase: true, defaults: true })[service] as Record<string, MethodDefinition<object, object>>)[method];
  assert.ok(definition);
  const client = new grpc.Client(address, credentials);
  return new Promise<grpc.status>((resolve) => {
    client.makeUnaryRequest(definition.path, definition.requestSerialize, definition.responseDeserialize, request, metadata, { deadline: Date.now() + 3_000 }, (error) => {
      client.close();
      resolve(error ? error.code : grpc.status.OK);
    });
  });
}

const rawStatus = (address: string, credentials: grpc.ChannelCredentials, metadata: grpc.Metadata) =>
  rawCall(payoutProtoPath, 'payments.payout.v1.Payout', 'Status', { transaction_id: randomUUID() }, address, credentials, metadata);
const rawWatcherStatus = (address: string, credentials: grpc.ChannelCredentials, metadata: grpc.Metadata) =>
  rawCall(chainsProtoPath, 'payments.chains.v1.Chains', 'WatcherStatus', {}, address, credentials, metadata);

function opsMetadata(): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('x-ops-api-key', opsKey);
  return metadata;
}

describe('mutual TLS on the payout and chains links', () => {
  let certs: TestCertificates;
  const dirs: string[] = [];
  let service: RunningService;
  let rails: RailServices;
  let payoutRole: RunningPayoutRole;
  let chainsLink: ChainsLinkServer;
  let payoutAddress: string;
  let chainsAddress: string;
  const logged: string[] = [];

  const identity = () => ({ kind: 'tls' as const, caPem: certs.pem(certs.trusted.caFile), certPem: certs.pem(certs.trusted.internalCertFile), keyPem: certs.pem(certs.trusted.internalKeyFile) });

  before(async () => {
    certs = createTestCertificates();
    const dir = mkdtempSync(join(tmpdir(), 'links-tls-'));
    dirs.push(dir);
    service = await startService(
      readEnv({ ROLE: 'shard', HOST: '0.0.0.0', DATA_DIR: dir, SHARDS: '4', LOG_LEVEL: 'info', OPS_API_KEY: opsKey, ...certs.internalEnv }),
      { log: pino({ level: 'info' }, { write: (line: string) => void logged.push(line) }) },
    );
    rails = createRailServices(service.ctx, { serveLink: true, linkPort: 0 });
    payoutRole = await rails.startPayoutRole();
    payoutAddress = `127.0.0.1:${String(payoutRole.linkPort)}`;
    const chains = await createChainServices(service.ctx);
    chainsLink = await startChainsLinkServer(service.ctx, { depositVerifier: chains.depositVerifier, reconciler: chains.reconciler, watcherStatus: () => [] }, { port: 0 });
    chainsAddress = `127.0.0.1:${chainsLink.port}`;
  });

  after(async () => {
    try {
      await chainsLink?.stop();
      await payoutRole?.stop();
      await rails?.close();
      await service?.stop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    } finally {
      certs?.remove();
    }
  });

  test('a role holding the deployment’s internal identity reads liquidity and calls the chains link', async () => {
    const payout = new PayoutLinkClient({ address: payoutAddress, transport: identity() });
    const chains = new ChainsLinkClient({ address: chainsAddress, transport: identity() });
    try {
      assert.equal((await payout.liquidity('PIX')).available, true);
      assert.deepEqual(await chains.watcherStatus(), []);
      const unresolved = await chains.reconcile({ blockchain: 'CELO', onChainTx: `0x${randomBytes(32).toString('hex')}`, transactionId: null });
      assert.notEqual(unresolved.result, 'failed');
    } finally {
      payout.close();
      chains.close();
    }
  });

  test('no client certificate, one from another CA, or the admin’s server-only certificate: refused before any call', async () => {
    const strangers = [
      { kind: 'tls' as const, caPem: certs.pem(certs.trusted.caFile), certPem: certs.pem(certs.other.internalCertFile), keyPem: certs.pem(certs.other.internalKeyFile) },
      { kind: 'tls' as const, caPem: certs.pem(certs.trusted.caFile), certPem: certs.pem(certs.trusted.adminCertFile), keyPem: certs.pem(certs.trusted.adminKeyFile) },
    ];
    for (const transport of strangers) {
      const payout = new PayoutLinkClient({ address: payoutAddress, transport, callTimeoutMs: 3_000 });
      const chains = new ChainsLinkClient({ address: chainsAddress, transport, callTimeoutMs: 3_000 });
      try {
        await assert.rejects(payout.liquidity('PIX'), refusedConnection);
        await assert.rejects(chains.watcherStatus(), refusedConnection);
      } finally {
        payout.close();
        chains.close();
      }
    }
    const anonymous = grpc.credentials.createSsl(certs.pem(certs.trusted.caFile));
    assert.equal(await rawStatus(payoutAddress, anonymous, new grpc.Metadata()), grpc.status.UNAVAILABLE);
  });

  test('the operators’ ops key alone opens no internal link (over TLS without a client certificate, or in plaintext)', async () => {
    const serverVerifiedOnly = grpc.credentials.createSsl(certs.pem(certs.trusted.caFile));
    assert.equal(await rawStatus(payoutAddress, serverVerifiedOnly, opsMetadata()), grpc.status.UNAVAILABLE);
    assert.equal(await rawStatus(payoutAddress, grpc.credentials.createInsecure(), opsMetadata()), grpc.status.UNAVAILABLE);
    assert.equal(await rawWatcherStatus(chainsAddress, serverVerifiedOnly, opsMetadata()), grpc.status.UNAVAILABLE);
    assert.equal(await rawWatcherStatus(chainsAddress, grpc.credentials.createInsecure(), opsMetadata()), grpc.status.UNAVAILABLE);
  });

  test('payout operations over the link need the internal identity and the ops key, and each is audited with both', async () => {
    const roleOnly = new PayoutLinkClient({ address: payoutAddress, transport: identity() });
    const operator = new PayoutLinkClient({ address: payoutAddress, transport: identity(), opsKey });
    const transactionId = randomUUID();
    const before = logged.length;
    try {
      await assert.rejects(roleOnly.status(transactionId), unauthenticated);
      const status = await operator.status(transactionId);
      assert.equal(status.transactionStatus, null);
    } finally {
      roleOnly.close();
      operator.close();
    }
    const audit = logged
      .slice(before)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.audit === true);
    assert.deepEqual(
      audit.map((line) => [line.channel, line.action, line.target, line.outcome]),
      [
        ['payout-link', 'Status', `transaction_id=${transactionId}`, 'unauthenticated'],
        ['payout-link', 'Status', `transaction_id=${transactionId}`, 'ok'],
      ],
    );
    assert.match(String(audit[1]?.operator), /^ops-key:[0-9a-f]{12}$/);
    assert.match(String(audit[1]?.peerCertificate), /CN=payments-internal/);
    assert.ok(!logged.join('\n').includes(opsKey));
  });

  test('both links listen on 127.0.0.1 only although HOST is 0.0.0.0', () => {
    assert.deepEqual(listeningAddresses(payoutRole.linkPort ?? 0), ['127.0.0.1']);
    assert.deepEqual(listeningAddresses(chainsLink.port), ['127.0.0.1']);
  });
});

describe('plaintext links for development: loopback only, with the link key', () => {
  let dir: string;
  let ctx: ServiceContext;
  let rails: RailServices;
  let role: RunningPayoutRole;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'links-plain-'));
    ctx = await createContext(readEnv({ ROLE: 'payout', DATA_DIR: dir, LOG_LEVEL: 'silent', OPS_API_KEY: opsKey, INTERNAL_TLS: 'off', INTERNAL_LINK_KEY: linkKey }));
    rails = createRailServices(ctx, { serveLink: true, linkPort: 0 });
    role = await rails.startPayoutRole();
  });

  after(() => teardown(
    () => role?.stop(),
    () => rails?.close(),
    () => ctx?.close(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  test('the link key opens the link; the ops key in its place does not', async () => {
    const address = `127.0.0.1:${String(role.linkPort)}`;
    const member = new PayoutLinkClient({ address, transport: { kind: 'plaintext' }, linkKey });
    const opsOnly = new PayoutLinkClient({ address, transport: { kind: 'plaintext' }, linkKey: opsKey, opsKey });
    try {
      assert.equal((await member.liquidity('BREB')).available, true);
      await assert.rejects(opsOnly.liquidity('BREB'), unauthenticated);
      await assert.rejects(opsOnly.status(randomUUID()), unauthenticated);
    } finally {
      member.close();
      opsOnly.close();
    }
    assert.equal(await rawStatus(address, grpc.credentials.createInsecure(), opsMetadata()), grpc.status.UNAUTHENTICATED);
  });

  test('a plaintext client never dials a non-loopback address (the key would cross the network in clear)', () => {
    assert.throws(() => new PayoutLinkClient({ address: '192.0.2.10:50052', transport: { kind: 'plaintext' }, linkKey }), /loopback/);
    assert.throws(() => new ChainsLinkClient({ address: 'payments-watcher:50053', transport: { kind: 'plaintext' }, linkKey }), /loopback/);
  });
});

describe('start-up refuses a plaintext link or admin service on a non-loopback bind', () => {
  test('the configuration names the variable to fix', () => {
    assert.throws(() => readEnv({ ROLE: 'payout', INTERNAL_TLS: 'off', INTERNAL_LINK_KEY: linkKey, INTERNAL_HOST: '0.0.0.0' }), /INTERNAL_HOST/);
    assert.throws(() => readEnv({ ROLE: 'admin', ADMIN_TLS: 'off', ADMIN_HOST: '192.0.2.2' }), /ADMIN_HOST/);
    assert.throws(() => readEnv({ ROLE: 'edge', INTERNAL_TLS: 'off', INTERNAL_LINK_KEY: linkKey, PAYOUT_GRPC_URL: '192.0.2.31:50052' }), /PAYOUT_GRPC_URL/);
    assert.throws(() => readEnv({ ROLE: 'edge', INTERNAL_TLS: 'off', INTERNAL_LINK_KEY: linkKey, CHAINS_GRPC_URL: 'payments-watcher:50053' }), /CHAINS_GRPC_URL/);
    assert.throws(() => readEnv({ ROLE: 'payout', INTERNAL_TLS: 'off' }), /INTERNAL_LINK_KEY/, 'a plaintext link has the link key as its only credential');
    assert.throws(() => readEnv({ OPS_API_KEY: opsKey, INTERNAL_LINK_KEY: opsKey }), /INTERNAL_LINK_KEY/, 'the link credential is not the ops key');
    // Loopback in every spelling is fine.
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', 'localhost']) {
      assert.equal(readEnv({ INTERNAL_TLS: 'off', INTERNAL_LINK_KEY: linkKey, INTERNAL_HOST: host, ADMIN_TLS: 'off', ADMIN_HOST: host }).INTERNAL_HOST, host);
    }
  });

  test('TLS on (the default) without the certificate files stops a payout or admin process at start, naming the files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'links-nocert-'));
    const refusal = async (env: Record<string, string>): Promise<string> => {
      const outcome = await startService(readEnv({ DATA_DIR: dir, LOG_LEVEL: 'silent', ...env })).then(
        (started) => started,
        (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
      );
      if (outcome instanceof Error) return outcome.message;
      await outcome.stop();
      return assert.fail(`${env.ROLE ?? ''} started without certificates`);
    };
    try {
      assert.match(await refusal({ ROLE: 'payout', PAYOUT_GRPC_PORT: '0' }), /INTERNAL_TLS_CA_FILE/);
      assert.match(await refusal({ ROLE: 'admin', GRPC_PORT: '0' }), /ADMIN_TLS_CERT_FILE/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('`src/main.ts payout` with INTERNAL_TLS=off on 0.0.0.0 exits 1 at start and listens on nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'links-refused-'));
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'payout'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), DATA_DIR: dir, LOG_LEVEL: 'silent', INTERNAL_TLS: 'off', INTERNAL_LINK_KEY: linkKey, INTERNAL_HOST: '0.0.0.0', PAYOUT_GRPC_PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    try {
      const code = await new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) resolve(child.exitCode);
        else child.once('exit', (exitCode) => resolve(exitCode));
        // A process that started anyway is the defect: stop waiting once it says it runs.
        child.stdout.on('data', () => {
          if (output.includes('role payout;')) resolve(null);
        });
      });
      assert.equal(code, 1, output);
      assert.match(output, /start-up failed: .*INTERNAL_HOST/s);
      assert.deepEqual(listeningAddresses(port), []);
    } finally {
      await stopChild(child, 5_000);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
