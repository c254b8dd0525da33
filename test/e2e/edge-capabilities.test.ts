// The edge when capabilities are missing, slow or failing, its rate limit, and the start-up banner:
// - every endpoint whose role is not wired answers 503 `service_unavailable` with a reason (an edge
//   started on purpose WITHOUT those capabilities: absence is the behaviour under test);
// - a network/asset without a deposit setup (CHAINS_FILE configures Celo with USDC only) is not
//   listed in the corridors;
// - Idempotency-Key, on the whole service: an onramp acceptance waits on the sandbox PIX provider
//   (its latency knob), so its twin answers 409; when the provider is slower than the edge's bound
//   the attempt is a 503 that does not pin its key, and the retry runs again with the same ids;
// - per-partner 429 with Retry-After (a small bucket: the composition root does not expose one);
// - `npm start`'s banner: with stdout not a terminal the generated keys go to a 0600 file, not to
//   stdout, and its example curl works against the service it started.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Keypair as StellarKeypair } from '@stellar/stellar-sdk';
import { startServiceHarness, testPartners, type SandboxRailKnobs, type ServiceHarness } from '../support/service-harness.ts';
import { startAnvil, type PrivateAnvil } from '../support/anvil.ts';
import { deployTestDepositFactory } from '../support/celo-factory.ts';
import { eventually } from '../support/eventually.ts';
import { base58Encode, call, payoutQuoteBody } from './support.ts';
import { teardown } from '../support/teardown.ts';

function errorShape(json: Record<string, unknown>, code: string): void {
  assert.equal(json['code'], code, JSON.stringify(json));
  assert.equal(typeof json['reason'], 'string');
  assert.equal(typeof json['retryable'], 'boolean');
}

describe('an edge without the chains and rails roles', () => {
  let h: ServiceHarness;
  before(async () => {
    h = await startServiceHarness({ partialEdge: { deps: {} } });
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

describe('a network/asset without a deposit setup', () => {
  let h: ServiceHarness;
  let anvil: PrivateAnvil;
  let dir: string;
  before(async () => {
    anvil = await startAnvil();
    dir = mkdtempSync(join(tmpdir(), 'chains-file-'));
    const chainsFile = join(dir, 'chains.json');
    // Celo is live (a local EVM node) with USDC only; Stellar and Solana stay on the sandbox chain.
    const celo = {
      network: 'testnet',
      rpcUrl: anvil.url,
      chainId: anvil.chainId,
      depositAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      depositFactory: await deployTestDepositFactory(anvil.url, anvil.chainId),
      confirmations: 0,
      assets: { USDC: { contract: '0xcebA9300f2b948710d2653dD7B07f33A8B32118C', decimals: 6 } },
      signerSecretEnv: 'E2E_CELO_SIGNER_UNSET',
    };
    writeFileSync(chainsFile, JSON.stringify({ CELO: celo }));
    h = await startServiceHarness({ env: { CHAINS_FILE: chainsFile } });
  });
  after(() => teardown(
    () => h?.stop(),
    () => anvil?.stop(),
    () => { rmSync(dir, { recursive: true, force: true }); },
  ));

  test('is not listed in the corridors; the others are', async () => {
    const corridors = (await call(h.baseUrl, 'GET', '/public/corridors')).json['corridors'] as Array<Record<string, unknown>>;
    assert.equal(corridors.length, 6);
    assert.ok(!corridors.some((item) => item['cryptoCurrency'] === 'USDT'));
    const celo = corridors.filter((item) => item['blockchain'] === 'CELO');
    assert.deepEqual(celo.map((item) => item['paymentMethod']).sort(), ['BREB', 'PIX']);
    assert.ok(celo.every((item) => item['cryptoCurrency'] === 'USDC' && item['chainId'] === 'eip155:42220'));
  });

  test('quoting it is corridor_unavailable, as for any route that is not enabled', async () => {
    const key = h.apiKeys['demo'];
    assert.ok(key, 'the demo partner has a key');
    const body = { amount: 50_000, crypto_currency: 'USDT', network: 'CELO', payment_method: 'BREB', target_currency: 'COP' };
    const refused = await call(h.baseUrl, 'POST', '/quote', { key, body });
    assert.equal(refused.status, 400);
    assert.equal(refused.json['code'], 'corridor_unavailable');
    assert.equal(refused.json['retryable'], false);
    const usdc = await call(h.baseUrl, 'POST', '/quote', { key, body: { ...body, crypto_currency: 'USDC' } });
    assert.equal(usdc.status, 200);
  });
});

describe('Idempotency-Key while an attempt runs or after one failed', () => {
  let h: ServiceHarness;
  let rail: SandboxRailKnobs;
  before(async () => {
    h = await startServiceHarness();
    if (h.rail === null) throw new Error('the service runs no sandbox rail');
    rail = h.rail;
  });
  after(async () => {
    await h.stop();
  });

  test('a twin of a running request gets 409; then the first response is replayed; a 5xx is retried with the same ids', { timeout: 60_000 }, async () => {
    const key = h.apiKeys[testPartners.kycOff] ?? '';
    // The idempotency record of (partner, key), as src/edge/idempotency.ts stores it: read to know
    // when the first attempt holds the key, and which ids it drew.
    const record = async (idempotencyKey: string) =>
      h.ctx.store.get('idempotency', `${testPartners.kycOff}:${createHash('sha256').update(idempotencyKey, 'utf8').digest('hex')}`);
    const onrampAcceptance = async () => {
      const body = { fiat_amount: 100, target_currency: 'BRL', crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX' };
      const quote = await call(h.baseUrl, 'POST', '/quote/onramp', { key, body });
      assert.equal(quote.status, 200, quote.text);
      return { quote_id: quote.json['quote_id'], user_id: 'u', account_number: StellarKeypair.random().publicKey() };
    };

    // An onramp acceptance creates a PIX charge with the provider before it answers.
    const body = await onrampAcceptance();
    await rail.setLatency(1_500);
    const running = call(h.baseUrl, 'POST', '/transaction', { key, body, idempotencyKey: 'accept-1' });
    await eventually(async () => assert.equal((await record('accept-1'))?.['state'], 'in_flight'), 10_000, 10);
    const twin = await call(h.baseUrl, 'POST', '/transaction', { key, body, idempotencyKey: 'accept-1' });
    assert.equal(twin.status, 409, twin.text);
    errorShape(twin.json, 'idempotency_in_progress');
    const first = await running;
    assert.equal(first.status, 200, first.text);
    assert.match(String(first.json['id']), /^[0-9a-f-]{36}$/);
    await rail.setLatency(0);
    const replay = await call(h.baseUrl, 'POST', '/transaction', { key, body, idempotencyKey: 'accept-1' });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, first.text);

    // The provider answers after the edge's bound on a PIX charge (10 s): 503, and the key is free.
    const slow = await onrampAcceptance();
    await rail.setLatency(12_000);
    const failed = await call(h.baseUrl, 'POST', '/transaction', { key, body: slow, idempotencyKey: 'accept-2' });
    await rail.setLatency(0);
    assert.equal(failed.status, 503, failed.text);
    errorShape(failed.json, 'service_unavailable');
    assert.equal(failed.json['retryable'], true);
    const drawn = await record('accept-2');
    assert.equal(drawn?.['state'], 'retry');
    const retried = await call(h.baseUrl, 'POST', '/transaction', { key, body: slow, idempotencyKey: 'accept-2' });
    assert.equal(retried.status, 200, `a failed attempt does not pin its key: ${retried.text}`);
    assert.equal(retried.json['id'], (drawn?.['ids'] as Record<string, unknown> | undefined)?.['transactionId'], 'the retry ran with the ids the first attempt drew');
  });
});

describe('rate limiting', () => {
  let h: ServiceHarness;
  before(async () => {
    // The edge's bucket is not configurable through the composition root; this edge gets a small
    // one. /kyc/status needs no capability of another role.
    h = await startServiceHarness({ partialEdge: { deps: {}, options: { rateLimit: { ratePerSecond: 0.5, burst: 3 } } } });
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
  // stdout is a pipe here, as in a container or under systemd: a log stream, so the generated keys
  // are not on it. They are in a 0600 file under DATA_DIR that the banner names, and its example
  // curl works once that file is sourced.
  test('with stdout not a terminal the generated keys are not printed but written to a 0600 file; the banner\'s example curl works with it', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'banner-'));
    // ADMIN_TLS=off as the `npm start` script sets it (the one-process development mode, loopback only).
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', ADMIN_TLS: 'off' };
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const deadline = Date.now() + 90_000;
      while (!output.includes('-d \'') && Date.now() < deadline && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 50));
      const keysFile = join(dataDir, 'generated-keys-all.env');
      assert.ok(output.includes(keysFile), output);
      assert.equal(statSync(keysFile).mode & 0o777, 0o600, 'only the service user can read the keys');
      const keys = readFileSync(keysFile, 'utf8');
      const demoKey = /^DEMO_API_KEY=(demo_[0-9a-f]+)$/m.exec(keys)?.[1];
      const opsKey = /^OPS_API_KEY=(ops_[0-9a-f]+)$/m.exec(keys)?.[1];
      assert.ok(demoKey !== undefined && opsKey !== undefined, keys);
      assert.ok(!output.includes(demoKey) && !output.includes(opsKey), `no generated key on stdout or stderr: ${output}`);
      const lines = output.split('\n');
      const start = lines.findIndex((line) => line.trim().startsWith('curl -s -X POST'));
      assert.ok(start >= 0, output);
      const command = `. '${keysFile}' && ${lines[start] ?? ''}\n${lines[start + 1] ?? ''}`;
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
