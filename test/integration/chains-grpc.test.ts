// The watcher role's internal gRPC link (proto/chains.proto), with the roles in separate services
// the way operators run them: a shard service and an edge-only service (CHAINS_GRPC_URL) in this
// process, the watcher role alone in a child process (`src/main.ts watcher`, serving the link on
// CHAINS_GRPC_PORT), all on one private Redis bus and one embedded store directory. A partner's
// notify and an operator's reconcile reach the chains only through the link, over mutual TLS with
// the development CA (test/support/dev-tls.ts); a certificate of another CA, or none, is refused;
// with the link down, notify answers 503 (retryable), never 500.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition } from '@grpc/proto-loader';
import { readEnv } from '../../src/config/env.ts';
import type { Network } from '../../src/domain/assets.ts';
import { createAdminClient } from '../../src/grpc/admin-client.ts';
import { ChainsLinkClient, chainsProtoPath, LinkError } from '../../src/grpc/chains-link.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually, within } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { runnerEnv, stopChild } from '../support/processes.ts';
import { teardown } from '../support/teardown.ts';
import { createTestCertificates, type TestCertificates } from '../support/dev-tls.ts';
import type { ClientTls } from '../../src/grpc/link-security.ts';

const repoRoot = join(import.meta.dirname, '../..');
const apiKey = `demo_${randomBytes(16).toString('hex')}`;
const opsKey = `ops_${randomBytes(16).toString('hex')}`;
const childStartMsMax = 120_000;
const childStopMsMax = 10_000;

interface Response {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = address !== null && typeof address === 'object' ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** Starts `src/main.ts watcher`; resolves once it printed its start line (the link is bound by then). */
async function startWatcherProcess(env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'watcher'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...runnerEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer): void => {
    if (output.length < 64_000) output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the watcher process did not start in time:\n${output}`)), childStartMsMax);
      const check = (): void => {
        if (output.includes('role watcher;')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the watcher process exited (${String(code)}):\n${output}`));
      });
    });
  } catch (error) {
    await stopProcess(child);
    throw error;
  }
  return { child, output: () => output };
}

/** SIGTERM (the service's graceful stop), SIGKILL after a bound. */
async function stopProcess(child: ChildProcess): Promise<void> {
  await stopChild(child, childStopMsMax);
}

/** A well-formed Solana signature (base58 of 64 bytes) that no chain has seen. */
function solanaSignature(): string {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  const bytes = randomBytes(64);
  bytes[0] = Math.max(1, bytes[0] ?? 1); // no leading zero byte: exactly the base58 of 64 bytes
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let text = '';
  while (value > 0n) {
    text = `${alphabet[Number(value % 58n)] ?? ''}${text}`;
    value /= 58n;
  }
  return text;
}

describe('the chains link between an edge and a watcher started apart', () => {
  let redis: PrivateRedis;
  let dataDir: string;
  let linkPort: number;
  let shard: RunningService;
  let edge: RunningService;
  let watcher: ChildProcess | null = null;
  const extraServices: RunningService[] = [];
  let common: Record<string, string>;
  let certs: TestCertificates;
  /** The deployment's internal identity, as every role holds it. */
  let identity: ClientTls;

  async function call(port: number | null, method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = { 'X-API-Key': apiKey }): Promise<Response> {
    const response = await fetch(`http://127.0.0.1:${String(port)}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  }

  async function accept(network: Network): Promise<string> {
    const quote = await call(edge.port, 'POST', '/quote', { amount: 10, crypto_currency: 'USDC', network, payment_method: 'PIX', target_currency: 'BRL' });
    assert.equal(quote.status, 200, JSON.stringify(quote.body));
    const accepted = await call(edge.port, 'POST', '/transaction', { quote_id: quote.body.quote_id, user_id: `u-${randomUUID()}`, account_number: randomUUID() });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    return String(accepted.body.id);
  }

  async function deposit(transactionId: string): Promise<string> {
    const funded = await call(edge.port, 'POST', '/sandbox/deposits', { transaction_id: transactionId });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    return String(funded.body.on_chain_tx);
  }

  async function untilStatus(transactionId: string, status: string): Promise<void> {
    await eventually(async () => assert.equal((await call(edge.port, 'GET', `/transaction/${transactionId}`)).body.status, status), 15_000);
  }

  function reconcile(port: number | null, body: Record<string, unknown>, key = opsKey): Promise<Response> {
    return call(port, 'POST', '/ops/transactions/reconcile-hash', body, { 'X-OPS-API-KEY': key });
  }

  before(async () => {
    redis = await startRedis();
    dataDir = mkdtempSync(join(tmpdir(), 'chains-grpc-'));
    certs = createTestCertificates();
    identity = { kind: 'tls', caPem: certs.pem(certs.trusted.caFile), certPem: certs.pem(certs.trusted.internalCertFile), keyPem: certs.pem(certs.trusted.internalKeyFile) };
    linkPort = await freePort();
    common = {
      ...certs.internalEnv,
      HOST: '127.0.0.1',
      REDIS_URL: redis.url,
      DATA_DIR: dataDir,
      KEY_PREFIX: randomKeyPrefix('chains-link'),
      SHARDS: '8',
      SANDBOX: '1',
      DEMO_API_KEY: apiKey,
      OPS_API_KEY: opsKey,
      LOG_LEVEL: 'silent',
      // The deposit pollers look once at start (nothing to find yet) and not again during these
      // tests: the results below are those of the first claimer (notify, reconcile).
      DEPOSIT_POLL_INTERVAL_MS: '3600000',
    };
    shard = await startService(readEnv({ ...common, ROLE: 'shard' }));
    watcher = (await startWatcherProcess({ ...common, LOG_LEVEL: 'error', CHAINS_GRPC_PORT: String(linkPort) })).child;
    edge = await startService(readEnv({ ...common, ROLE: 'edge', PORT: '0', CHAINS_GRPC_URL: `127.0.0.1:${linkPort}` }));
  });

  after(() => teardown(
    ...extraServices.map((service) => () => service.stop()),
    () => edge?.stop(),
    () => (watcher === null ? undefined : stopProcess(watcher)),
    () => shard?.stop(),
    () => redis?.stop(),
    () => { rmSync(dataDir, { recursive: true, force: true }); },
    () => certs?.remove(),
  ));

  test('a Solana deposit notified to the edge is verified by the watcher process: 202, then PROCESSING_PAYMENT', async () => {
    const id = await accept('SOLANA');
    const onChainTx = await deposit(id);
    const notified = await call(edge.port, 'POST', '/payments/notify', { blockchain: 'SOLANA', on_chain_tx: onChainTx, transaction_id: id });
    assert.deepEqual([notified.status, notified.body], [202, { enqueued: true }]);
    // No payout role runs in this deployment: the transaction waits in PROCESSING_PAYMENT.
    await untilStatus(id, 'PROCESSING_PAYMENT');
    const again = await call(edge.port, 'POST', '/payments/notify', { blockchain: 'SOLANA', on_chain_tx: onChainTx, transaction_id: id });
    assert.equal(again.status, 202, 'notifying the same transfer again is harmless');
  });

  test('the link says which notified deposits cannot fund their transaction (the edge charges those to the notify budget)', async () => {
    const link = new ChainsLinkClient({ address: `127.0.0.1:${linkPort}`, transport: identity });
    try {
      const id = await accept('SOLANA');
      const stray = await call(edge.port, 'POST', '/sandbox/deposits', { transaction_id: id, amount: 1.5 });
      assert.equal(stray.status, 200, JSON.stringify(stray.body));
      const wrong = await link.notify({ partnerId: 'demo', blockchain: 'SOLANA', onChainTx: String(stray.body.on_chain_tx), transactionId: id });
      assert.deepEqual(wrong, { result: 'enqueued', mismatched: true });
      const other = await accept('SOLANA');
      const paid = await link.notify({ partnerId: 'demo', blockchain: 'SOLANA', onChainTx: await deposit(other), transactionId: other });
      assert.deepEqual(paid, { result: 'enqueued', mismatched: false });
    } finally {
      link.close();
    }
  });

  test('a transfer the chain does not know is 404 (retryable); a Celo hash for a Solana transaction is 400', async () => {
    const id = await accept('SOLANA');
    const unknown = await call(edge.port, 'POST', '/payments/notify', { blockchain: 'SOLANA', on_chain_tx: solanaSignature(), transaction_id: id });
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.code, 'not_found');
    assert.equal(unknown.body.retryable, true);
    const wrongChain = await call(edge.port, 'POST', '/payments/notify', { blockchain: 'CELO', on_chain_tx: `0x${randomBytes(32).toString('hex')}`, transaction_id: id });
    assert.equal(wrongChain.status, 400);
    assert.equal((await call(edge.port, 'GET', `/transaction/${id}`)).body.status, 'AWAITING_PAYMENT');
  });

  test('a Stellar deposit is detected by the watcher process on its own (no notify)', async () => {
    const id = await accept('STELLAR');
    await deposit(id);
    await untilStatus(id, 'PROCESSING_PAYMENT');
  });

  test('ops reconcile a hash over HTTP at the edge: enqueued, alreadyProcessed, unresolved, notFound', async () => {
    const id = await accept('CELO');
    const hash = await deposit(id);
    const withoutId = await reconcile(edge.port, { blockchain: 'CELO', on_chain_tx: hash });
    assert.equal(withoutId.status, 200);
    assert.equal(withoutId.body.result, 'unresolved');
    const enqueued = await reconcile(edge.port, { blockchain: 'CELO', on_chain_tx: hash, transaction_id: id });
    assert.equal(enqueued.status, 200, JSON.stringify(enqueued.body));
    assert.deepEqual([enqueued.body.result, enqueued.body.transaction_id, enqueued.body.blockchain, enqueued.body.on_chain_tx], ['enqueued', id, 'CELO', hash]);
    await untilStatus(id, 'PROCESSING_PAYMENT');
    const again = await reconcile(edge.port, { blockchain: 'CELO', on_chain_tx: hash });
    assert.deepEqual([again.body.result, again.body.transaction_id, again.body.transaction_status, again.body.reason], ['alreadyProcessed', id, 'PROCESSING_PAYMENT', null]);
    const missing = await reconcile(edge.port, { blockchain: 'CELO', on_chain_tx: `0x${randomBytes(32).toString('hex')}`, transaction_id: id });
    assert.equal(missing.body.result, 'notFound');
  });

  test('the admin service started apart reconciles over the link too', async () => {
    // Every step has a deadline that names it (this test once hung under heavy load, which step unknown).
    const admin = await within('the admin service starts', 60_000, startService(readEnv({ ...common, ...certs.adminServerEnv, ROLE: 'admin', GRPC_PORT: '0', CHAINS_GRPC_URL: `127.0.0.1:${linkPort}` })));
    extraServices.push(admin);
    const client = createAdminClient(`127.0.0.1:${String(admin.adminPort)}`, opsKey, { transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile) } });
    try {
      const id = await within('a SOLANA transaction is accepted', 60_000, accept('SOLANA'));
      const hash = await within('its deposit is sent on the local chain', 60_000, deposit(id));
      const reply = await within('the admin service answers Reconcile', 60_000, client.call('Reconcile', { blockchain: 'SOLANA', on_chain_tx: hash, transaction_id: id }));
      assert.deepEqual([reply.result, reply.transaction_id], ['enqueued', id]);
      await within('the transaction reaches PROCESSING_PAYMENT', 90_000, untilStatus(id, 'PROCESSING_PAYMENT'));
    } finally {
      client.close();
    }
  });

  test('the link refuses a certificate of another CA, no certificate, and the ops key alone; oversized messages too; the deployment identity reads the watchers', async () => {
    const address = `127.0.0.1:${linkPort}`;
    const stranger = new ChainsLinkClient({
      address,
      transport: { kind: 'tls', caPem: certs.pem(certs.trusted.caFile), certPem: certs.pem(certs.other.internalCertFile), keyPem: certs.pem(certs.other.internalKeyFile) },
      callTimeoutMs: 3_000,
    });
    const right = new ChainsLinkClient({ address, transport: identity });
    const definition = loadSync(chainsProtoPath, { keepCase: true, defaults: true })['payments.chains.v1.Chains'] as Record<string, MethodDefinition<object, object>>;
    const rawNotify = (credentials: grpc.ChannelCredentials, request: object, metadata: grpc.Metadata): Promise<grpc.status> =>
      new Promise((resolve) => {
        const notify = definition.Notify;
        assert.ok(notify);
        const raw = new grpc.Client(address, credentials);
        raw.makeUnaryRequest(notify.path, notify.requestSerialize, notify.responseDeserialize, request, metadata, { deadline: Date.now() + 5_000 }, (error) => {
          raw.close();
          resolve(error ? error.code : grpc.status.OK);
        });
      });
    try {
      const refused = (error: unknown): boolean => error instanceof LinkError && error.code === grpc.status.UNAVAILABLE;
      await assert.rejects(stranger.notify({ partnerId: 'demo', blockchain: 'SOLANA', onChainTx: solanaSignature(), transactionId: randomUUID() }), refused);
      await assert.rejects(stranger.reconcile({ blockchain: 'SOLANA', onChainTx: solanaSignature(), transactionId: null }), refused);
      await assert.rejects(stranger.watcherStatus(), refused);
      const request = { blockchain: 'SOLANA', on_chain_tx: solanaSignature(), transaction_id: randomUUID(), partner_id: 'demo' };
      const withOpsKey = new grpc.Metadata();
      withOpsKey.set('x-ops-api-key', opsKey);
      assert.equal(await rawNotify(grpc.credentials.createSsl(certs.pem(certs.trusted.caFile)), request, withOpsKey), grpc.status.UNAVAILABLE, 'no client certificate, the ops key');
      assert.equal(await rawNotify(grpc.credentials.createInsecure(), request, withOpsKey), grpc.status.UNAVAILABLE, 'plaintext, the ops key');

      const member = grpc.credentials.createSsl(certs.pem(certs.trusted.caFile), certs.pem(certs.trusted.internalKeyFile), certs.pem(certs.trusted.internalCertFile));
      assert.equal(await rawNotify(member, { ...request, on_chain_tx: 'x'.repeat(100 * 1024) }, new grpc.Metadata()), grpc.status.RESOURCE_EXHAUSTED);

      const watchers = await right.watcherStatus();
      // The Stellar watcher and the Solana and Celo deposit pollers.
      assert.deepEqual(watchers.map((status) => status.network), ['STELLAR', 'SOLANA', 'CELO']);
      assert.equal(watchers[0]?.state, 'streaming');
    } finally {
      stranger.close();
      right.close();
    }
  });

  test('an edge whose certificate the watcher does not trust answers notify 503 and reconcile failed, never 500', async () => {
    const misconfigured = await startService(
      readEnv({ ...common, INTERNAL_TLS_CERT_FILE: certs.other.internalCertFile, INTERNAL_TLS_KEY_FILE: certs.other.internalKeyFile, ROLE: 'edge', PORT: '0', CHAINS_GRPC_URL: `127.0.0.1:${linkPort}` }),
    );
    extraServices.push(misconfigured);
    const id = await accept('SOLANA');
    const notified = await call(misconfigured.port, 'POST', '/payments/notify', { blockchain: 'SOLANA', on_chain_tx: solanaSignature(), transaction_id: id });
    assert.equal(notified.status, 503, JSON.stringify(notified.body));
    assert.deepEqual([notified.body.code, notified.body.retryable], ['service_unavailable', true]);
    const reconciled = await reconcile(misconfigured.port, { blockchain: 'SOLANA', on_chain_tx: solanaSignature(), transaction_id: id });
    assert.equal(reconciled.status, 200);
    assert.equal(reconciled.body.result, 'failed');
    assert.doesNotMatch(String(reconciled.body.reason), /UNAUTHENTICATED|UNAVAILABLE|certificate|grpc/i);
  });

  test('with the watcher process gone, notify answers 503 retryable and reconcile answers failed; the transaction waits', async () => {
    const id = await accept('SOLANA');
    const onChainTx = await deposit(id);
    assert.ok(watcher !== null);
    await stopProcess(watcher);
    watcher = null;
    const body = { blockchain: 'SOLANA', on_chain_tx: onChainTx, transaction_id: id };
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const notified = await call(edge.port, 'POST', '/payments/notify', body, { 'X-API-Key': apiKey, 'Idempotency-Key': `notify-${id}` });
      assert.equal(notified.status, 503, JSON.stringify(notified.body));
      assert.deepEqual([notified.body.code, notified.body.retryable], ['service_unavailable', true]);
    }
    const reconciled = await reconcile(edge.port, { blockchain: 'SOLANA', on_chain_tx: onChainTx, transaction_id: id });
    assert.equal(reconciled.status, 200);
    assert.deepEqual([reconciled.body.result, reconciled.body.transaction_id], ['failed', id]);
    assert.equal((await call(edge.port, 'GET', `/transaction/${id}`)).body.status, 'AWAITING_PAYMENT');

    // The watcher comes back on the same port: the same notify (same Idempotency-Key) now succeeds.
    watcher = (await startWatcherProcess({ ...common, LOG_LEVEL: 'error', CHAINS_GRPC_PORT: String(linkPort) })).child;
    const retried = await eventually(async () => {
      const notified = await call(edge.port, 'POST', '/payments/notify', body, { 'X-API-Key': apiKey, 'Idempotency-Key': `notify-${id}` });
      assert.equal(notified.status, 202, JSON.stringify(notified.body));
      return notified;
    }, 15_000, 200);
    assert.deepEqual(retried.body, { enqueued: true });
    await untilStatus(id, 'PROCESSING_PAYMENT');
  });
});
