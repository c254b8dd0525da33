// The edge when capabilities are missing, slow or failing, its rate limit, and the start-up banner:
// - every endpoint whose role is not wired answers 503 `service_unavailable` with a reason;
// - Idempotency-Key: a request still running answers 409 to its twin; a failed attempt (5xx) does
//   not pin its key, the retry runs again with the same ids;
// - per-partner 429 with Retry-After;
// - `npm start`'s banner: its example curl works against the service it started.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { base58Encode, call, payoutQuoteBody, testCapabilities } from './support.ts';
import type { SandboxDriver } from '../../src/service/ports.ts';

function errorShape(json: Record<string, unknown>, code: string): void {
  assert.equal(json['code'], code, JSON.stringify(json));
  assert.equal(typeof json['reason'], 'string');
  assert.equal(typeof json['retryable'], 'boolean');
}

describe('an edge without the chains and rails roles', () => {
  let h: ServiceHarness;
  before(async () => {
    h = await startServiceHarness({ edge: { deps: {} } });
  });
  after(async () => {
    await h.stop();
  });

  test('quotes and corridors work; each endpoint of a missing capability is 503 with a reason', async () => {
    const key = h.apiKeys[testPartners.kycOff] ?? '';
    const api = (method: string, path: string, body?: unknown, ops?: string) =>
      call(h.baseUrl, method, path, { ...(ops === undefined ? { key } : { ops }), ...(body === undefined ? {} : { body }) });
    assert.equal((await api('GET', '/public/corridors')).status, 200);
    const quote = await api('POST', '/quote', payoutQuoteBody);
    assert.equal(quote.status, 200);
    const unavailable: Array<[string, string, unknown, string?]> = [
      ['POST', '/transaction', { quote_id: quote.json['quote_id'], user_id: 'u', account_number: '3001234567' }],
      ['GET', '/payments/liquidity?paymentMethod=PIX', undefined],
      ['POST', '/payments/notify', { blockchain: 'SOLANA', on_chain_tx: base58Encode(randomBytes(64)), transaction_id: '00000000-0000-4000-8000-000000000000' }],
      ['POST', '/ops/transactions/reconcile-hash', { blockchain: 'CELO', on_chain_tx: `0x${'a'.repeat(64)}` }, h.opsApiKey],
      ['POST', '/sandbox/deposits', { transaction_id: '00000000-0000-4000-8000-000000000000' }],
    ];
    for (const [method, path, body, ops] of unavailable) {
      const response = await api(method, path, body, ops);
      assert.equal(response.status, 503, `${method} ${path}: ${response.text}`);
      errorShape(response.json, 'service_unavailable');
      assert.equal(response.json['retryable'], true);
    }
  });
});

describe('Idempotency-Key while an attempt runs or after one failed', () => {
  let h: ServiceHarness;
  let release: () => void = () => undefined;
  let failNext = false;
  let calls = 0;
  const sandbox: SandboxDriver = {
    async deposit(request) {
      calls += 1;
      if (failNext) {
        failNext = false;
        throw new Error('sandbox chain exploded');
      }
      await new Promise<void>((resolve) => {
        release = resolve;
        setTimeout(resolve, 5_000).unref();
      });
      return { ok: true, body: { deposited: true, transaction_id: request.transactionId } };
    },
    pixPayment: () => Promise.resolve({ ok: false, status: 400, code: 'invalid_request', reason: 'not onramp' }),
  };

  before(async () => {
    const caps = testCapabilities();
    h = await startServiceHarness({ edge: { deps: { ...caps.deps, sandbox } } });
    caps.bind(h.ctx);
  });
  after(async () => {
    release();
    await h.stop();
  });

  test('a twin of a running request gets 409; then the first response is replayed; a 500 is retried', async () => {
    const key = h.apiKeys[testPartners.kycOff] ?? '';
    const quote = await call(h.baseUrl, 'POST', '/quote', { key, body: payoutQuoteBody });
    const accepted = await call(h.baseUrl, 'POST', '/transaction', { key, body: { quote_id: quote.json['quote_id'], user_id: 'u', account_number: '3001234567' } });
    assert.equal(accepted.status, 200, accepted.text);
    const body = { transaction_id: accepted.json['id'] };

    const running = call(h.baseUrl, 'POST', '/sandbox/deposits', { key, body, idempotencyKey: 'deposit-1' });
    // Wait (bounded) until the first attempt is inside the driver.
    for (let waited = 0; calls === 0 && waited < 5_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(calls, 1);
    const twin = await call(h.baseUrl, 'POST', '/sandbox/deposits', { key, body, idempotencyKey: 'deposit-1' });
    assert.equal(twin.status, 409);
    errorShape(twin.json, 'idempotency_in_progress');
    release();
    const first = await running;
    assert.equal(first.status, 200);
    const replay = await call(h.baseUrl, 'POST', '/sandbox/deposits', { key, body, idempotencyKey: 'deposit-1' });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(calls, 1, 'the driver ran once for three requests');

    failNext = true;
    const failed = await call(h.baseUrl, 'POST', '/sandbox/deposits', { key, body, idempotencyKey: 'deposit-2' });
    assert.equal(failed.status, 500);
    errorShape(failed.json, 'server_error');
    assert.ok(!failed.text.includes('exploded'), 'the internal error stays in the log');
    const retried = call(h.baseUrl, 'POST', '/sandbox/deposits', { key, body, idempotencyKey: 'deposit-2' });
    for (let waited = 0; calls < 3 && waited < 5_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    assert.equal((await retried).status, 200, 'a failed attempt does not pin its key');
  });
});

describe('rate limiting', () => {
  let h: ServiceHarness;
  before(async () => {
    h = await startServiceHarness({ edge: { deps: {}, options: { rateLimit: { ratePerSecond: 0.5, burst: 3 } } } });
  });
  after(async () => {
    await h.stop();
  });

  test('a partner past its bucket gets 429 with Retry-After; other partners and corridors are not affected', async () => {
    const key = h.apiKeys[testPartners.kycOff] ?? '';
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof call>> | null = null;
    for (let index = 0; index < 5; index += 1) {
      const response = await call(h.baseUrl, 'GET', '/kyc/status?userId=u', { key });
      statuses.push(response.status);
      if (response.status === 429) limited = response;
    }
    assert.deepEqual(statuses.slice(0, 3), [200, 200, 200]);
    assert.ok(limited !== null, `statuses ${statuses.join(',')}`);
    errorShape(limited.json, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    const bearer = await call(h.baseUrl, 'GET', '/kyc/status?userId=u', { bearer: key });
    assert.equal(bearer.status, 429, 'the same partner through a bearer token shares the bucket');
    assert.equal((await call(h.baseUrl, 'GET', '/kyc/status?userId=u', { key: h.apiKeys[testPartners.kycOn] ?? '' })).status, 200);
    assert.equal((await call(h.baseUrl, 'GET', '/public/corridors')).status, 200);
  });
});

describe('npm start', () => {
  test('the banner\'s example curl works against the service it started', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'banner-'));
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const deadline = Date.now() + 90_000;
      while (!output.includes('-d \'') && Date.now() < deadline && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.match(output, /demo partner API key: demo_[0-9a-f]+/, output);
      assert.match(output, /ops API key: ops_[0-9a-f]+/);
      const lines = output.split('\n');
      const start = lines.findIndex((line) => line.trim().startsWith('curl -s -X POST'));
      assert.ok(start >= 0, output);
      const command = `${lines[start] ?? ''}\n${lines[start + 1] ?? ''}`;
      const curl = spawn('sh', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
      let answer = '';
      curl.stdout.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      await new Promise<void>((resolve) => curl.once('exit', () => resolve()));
      const quote = JSON.parse(answer) as Record<string, unknown>;
      assert.match(String(quote['quote_id']), /^[0-9a-f-]{36}$/, answer);
      assert.equal(typeof quote['value'], 'number');
      const corridors = lines.find((line) => line.includes('/public/corridors'))?.trim() ?? '';
      const listed = spawn('sh', ['-c', corridors], { stdio: ['ignore', 'pipe', 'ignore'] });
      let list = '';
      listed.stdout.on('data', (chunk: Buffer) => (list += chunk.toString('utf8')));
      await new Promise<void>((resolve) => listed.once('exit', () => resolve()));
      assert.ok(Array.isArray((JSON.parse(list) as Record<string, unknown>)['corridors']));
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
