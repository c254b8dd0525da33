// The payout role's internal gRPC link, round trip over mutual TLS with the development CA: an edge
// in another process reads liquidity over it (through its own rail services, configured with
// PAYOUT_GRPC_URL and the internal identity), and operations query and re-drive a payout with the
// internal identity and the ops key (refused without the key).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { ActorClient } from '../../src/actors/client.ts';
import { readEnv } from '../../src/config/env.ts';
import { decimalFromExactString, toFixedString } from '../../src/domain/money.ts';
import { LinkError, PayoutLinkClient } from '../../src/grpc/payout-link.ts';
import { payoutIdempotencyKey } from '../../src/rails/payout-worker.ts';
import { createRailServices, type RailServices, type RunningPayoutRole } from '../../src/service/rail-services.ts';
import type { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { createContext } from '../../src/service/context.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually } from '../support/eventually.ts';
import { accept, createQuote, depositExact, transactionDoc } from '../support/payout-child.ts';
import { createTestCertificates, type TestCertificates } from '../support/dev-tls.ts';
import type { ClientTls } from '../../src/grpc/link-security.ts';

const opsKey = `ops_${randomUUID().replaceAll('-', '')}`;
const dirs: string[] = [];
let certs: TestCertificates;
/** The deployment's internal identity, as every role holds it. */
let identity: ClientTls;
let service: RunningService;
let client: ActorClient;
let rails: RailServices;
let sandbox: SandboxRail;
let role: RunningPayoutRole;
let link: PayoutLinkClient;
let edgeCtx: ServiceContext;
let edgeRails: RailServices;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rails-grpc-'));
  dirs.push(dir);
  return dir;
}

before(async () => {
  certs = createTestCertificates();
  identity = { kind: 'tls', caPem: certs.pem(certs.trusted.caFile), certPem: certs.pem(certs.trusted.internalCertFile), keyPem: certs.pem(certs.trusted.internalKeyFile) };
  service = await startService(readEnv({ DATA_DIR: tempDir(), ROLE: 'shard', SHARDS: '8', LOG_LEVEL: 'silent', OPS_API_KEY: opsKey, ...certs.internalEnv }));
  client = await service.ctx.actorClient('test');
  rails = createRailServices(service.ctx, {
    sandbox: { settingsCacheMs: 0 },
    // A long backoff, so that only Execute can finish a payout within the test.
    worker: { pollIntervalMs: 50, retryDelayMsMin: 30_000, retryDelayMsMax: 30_000, leaseMs: 60_000, railCallTimeoutMs: 3_000, reportTimeoutMs: 3_000 },
    serveLink: true,
    linkPort: 0,
  });
  assert.ok(rails.sandbox);
  sandbox = rails.sandbox;
  role = await rails.startPayoutRole();
  assert.ok(role.linkPort !== null && role.linkPort > 0);
  link = new PayoutLinkClient({ address: `127.0.0.1:${role.linkPort}`, transport: identity, opsKey });
});

after(async () => {
  try {
    link?.close();
    await edgeRails?.close();
    await edgeCtx?.close();
    await role?.stop();
    await rails?.close();
    await service?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  } finally {
    certs?.remove();
  }
});

test('an edge in another process reads the payout role’s liquidity over the link', async () => {
  await sandbox.setLiquidity('BREB', decimalFromExactString('7654321.09'));
  const direct = await link.liquidity('BREB');
  assert.equal(toFixedString(direct.amount), '7654321.09');
  assert.equal(direct.available, true);

  edgeCtx = await createContext(readEnv({ DATA_DIR: tempDir(), ROLE: 'edge', LOG_LEVEL: 'silent', PAYOUT_GRPC_URL: `127.0.0.1:${role.linkPort}`, ...certs.internalEnv }));
  edgeRails = createRailServices(edgeCtx, { liquidity: { refreshIntervalMs: 100, staleAfterMs: 5_000 } });
  await edgeRails.liquidity.start();
  assert.equal(toFixedString(edgeRails.liquidity.latest('BREB')?.amount ?? decimalFromExactString('0')), '7654321.09', 'not the edge’s own (empty) store');
  await sandbox.setOutage('PIX', true);
  try {
    await eventually(() => assert.equal(edgeRails.liquidity.available('PIX'), false), 5_000);
    assert.equal(edgeRails.liquidity.available('BREB'), true);
  } finally {
    await sandbox.setOutage('PIX', false);
  }
});

test('payout operations need the ops key and a well-formed transaction id', async () => {
  const anonymous = new PayoutLinkClient({ address: `127.0.0.1:${role.linkPort}`, transport: identity });
  const wrong = new PayoutLinkClient({ address: `127.0.0.1:${role.linkPort}`, transport: identity, opsKey: 'ops_not-the-key-at-all' });
  try {
    for (const caller of [anonymous, wrong]) {
      await assert.rejects(caller.status(randomUUID()), (error: unknown) => error instanceof LinkError && error.code === grpc.status.UNAUTHENTICATED);
      await assert.rejects(caller.execute(randomUUID()), (error: unknown) => error instanceof LinkError && error.code === grpc.status.UNAUTHENTICATED);
    }
    await assert.rejects(link.status('not-a-uuid'), (error: unknown) => error instanceof LinkError && error.code === grpc.status.INVALID_ARGUMENT);
    // Liquidity is open to every holder of the internal identity (partners see the same figure).
    assert.equal((await anonymous.liquidity('PIX')).available, true);
  } finally {
    anonymous.close();
    wrong.close();
  }
  const unknown = await link.status(randomUUID());
  assert.equal(unknown.transactionStatus, null);
  assert.equal(unknown.rail, null);
});

test('ops query a stuck payout, re-drive it with Execute once the rail is back, and it completes exactly once', async () => {
  await sandbox.setOutage('BREB', true);
  const quote = await createQuote(client, service.ctx.store, { kind: 'payout', amount: 120_000, paymentMethod: 'BREB' });
  const transactionId = await accept(client, quote, '@recipient');
  await depositExact(client, transactionId, quote);
  await eventually(async () => assert.equal((await link.status(transactionId)).attempts, 1), 10_000);
  const stuck = await link.status(transactionId);
  assert.equal(stuck.transactionStatus, 'PROCESSING_PAYMENT');
  assert.equal(stuck.heldHere, true);
  assert.equal(stuck.idempotencyKey, payoutIdempotencyKey(transactionId));
  assert.ok(stuck.nextAttemptAtMs !== null && stuck.nextAttemptAtMs > Date.now() + 10_000, 'backing off');

  const during = await link.execute(transactionId);
  assert.equal(during.result, 'not_yet');
  await sandbox.setOutage('BREB', false);
  const executed = await link.execute(transactionId);
  assert.equal(executed.result, 'reported');
  assert.equal(executed.rail?.status, 'succeeded');
  assert.equal((await transactionDoc(service.ctx.store, transactionId)).status, 'PAYMENT_COMPLETED');
  const again = await link.execute(transactionId);
  assert.equal(again.result, 'not_applicable');
  const done = await link.status(transactionId);
  assert.equal(done.rail?.status, 'succeeded');
  assert.equal(done.rail?.status === 'succeeded' ? done.rail.railReference : '', executed.rail?.status === 'succeeded' ? executed.rail.railReference : 'x');
  // The worker's own pass (now, not after its 30 s backoff) finds the same outcome and finishes the row.
  await eventually(async () => {
    const pending = await service.ctx.store.outboxPending('payouts', 1_000);
    assert.ok(!pending.some((row) => JSON.stringify(row.payload).includes(transactionId)));
  }, 10_000);
});
