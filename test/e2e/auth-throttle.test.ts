// Failed authentication is throttled per client address, on every door of the service as
// `npm start` wires it: partner keys and the ops key over HTTP, the health listener's /metrics, the
// admin gRPC service. After the address's bucket (AUTH_FAILURES_BURST) wrong keys get 429 with
// Retry-After (gRPC RESOURCE_EXHAUSTED with the delay in metadata), while another address and the
// correct key from the same address still work. Failures are logged by sample (one line per
// address per minute, no access-log line each) and every one is counted on /metrics. The routes
// without credentials have their own per-address bucket. X-Forwarded-For counts only from
// TRUSTED_PROXIES.
//
// Requests leave from different loopback addresses (127.0.0.x) so each test has its own client
// address; the service listens on 127.0.0.1.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceError } from '@grpc/grpc-js';
import { pino } from 'pino';
import { readEnv } from '../../src/config/env.ts';
import { createAdminClient } from '../../src/grpc/admin-client.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { stopChild } from '../support/processes.ts';

const demoKey = `demo_${randomBytes(20).toString('hex')}`;
const opsKey = `ops_${randomBytes(20).toString('hex')}`;
const wrongKey = `nope_${randomBytes(20).toString('hex')}`;
/** Failures an address may make before 429; refilled at one a minute (nothing refills during a test). */
const burst = 5;
const trustedProxy = '127.0.0.3';
const unknownTransaction = '/transaction/00000000-0000-4000-8000-000000000000';

let dir: string;
let service: RunningService;
let edgePort: number;
let healthPort: number;
/** Every log line the service wrote, parsed. */
const logLines: Array<Record<string, unknown>> = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'auth-throttle-'));
  service = await startService(
    readEnv({
      PORT: '0',
      GRPC_PORT: '0',
      ADMIN_TLS: 'off',
      PAYOUT_GRPC_PORT: '0',
      HEALTH_PORT: '0',
      DATA_DIR: dir,
      SHARDS: '4',
      DEMO_API_KEY: demoKey,
      OPS_API_KEY: opsKey,
      AUTH_FAILURES_BURST: String(burst),
      AUTH_FAILURES_PER_MINUTE: '1',
      PUBLIC_RATE_LIMIT_BURST: String(burst),
      PUBLIC_RATE_LIMIT_PER_SECOND: '0.01',
      TRUSTED_PROXIES: trustedProxy,
    }),
    { log: pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) }) },
  );
  assert.ok(service.port !== null && service.healthPort !== null && service.adminPort !== null);
  edgePort = service.port;
  healthPort = service.healthPort;
});

after(async () => {
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly json: Record<string, unknown>;
}

/** One HTTP request whose TCP connection starts from `from` (a loopback address). */
function send(from: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string; port?: number } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: options.port ?? edgePort, path, method: options.method ?? 'GET', headers: options.headers ?? {}, localAddress: from, agent: false, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          } catch {
            // not JSON (metrics)
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(options.body);
  });
}

async function statuses(count: number, run: () => Promise<Answer>): Promise<number[]> {
  const seen: number[] = [];
  for (let index = 0; index < count; index += 1) seen.push((await run()).status);
  return seen;
}

function expectedFlood(count: number): number[] {
  return [...new Array<number>(burst).fill(401), ...new Array<number>(count - burst).fill(429)];
}

async function metric(name: string): Promise<number> {
  const answer = await new Promise<string>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: edgePort, path: '/metrics', headers: { 'x-ops-api-key': opsKey }, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
  const line = answer.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

test('a burst of wrong partner keys from one address: 429 with Retry-After after the bucket; another address and the correct key still work', async () => {
  const from = '127.0.0.2';
  const flood = await statuses(burst + 3, () => send(from, unknownTransaction, { headers: { 'x-api-key': wrongKey } }));
  assert.deepEqual(flood, expectedFlood(burst + 3));
  const throttled = await send(from, unknownTransaction, { headers: { authorization: `Bearer ${wrongKey}` } });
  assert.equal(throttled.status, 429);
  assert.equal(throttled.json['code'], 'rate_limited');
  assert.match(String(throttled.json['reason']), /failed authentication/);
  assert.ok(Number(throttled.headers['retry-after']) >= 1, 'Retry-After in whole seconds');
  // No key at all counts as a failure too.
  assert.equal((await send(from, unknownTransaction)).status, 429);
  // The partner's correct key from the same address is not refused.
  assert.equal((await send(from, unknownTransaction, { headers: { 'x-api-key': demoKey } })).status, 404);
  // Another address has its own bucket.
  assert.equal((await send('127.0.0.4', unknownTransaction, { headers: { 'x-api-key': wrongKey } })).status, 401);
});

test('wrong ops keys likewise: 429 after the bucket, the correct ops key still works', async () => {
  const from = '127.0.0.5';
  const reconcile = (key: string) =>
    send(from, '/ops/transactions/reconcile-hash', { method: 'POST', headers: { 'x-ops-api-key': key, 'content-type': 'application/json' }, body: '{}' });
  assert.deepEqual(await statuses(burst + 2, () => reconcile(wrongKey)), expectedFlood(burst + 2));
  // The body does not validate: the ops key was accepted.
  assert.equal((await reconcile(opsKey)).status, 400);
  const metrics = await send(from, '/metrics', { headers: { 'x-ops-api-key': wrongKey } });
  assert.equal(metrics.status, 429, 'GET /metrics shares the address bucket');
});

test('401s are logged by sample: one line for a flood from one address, no access-log line each; the counter counts all', async () => {
  const from = '127.0.0.6';
  const failuresBefore = await metric('auth_failures_total{credential="partner"}');
  const throttledBefore = await metric('auth_failures_throttled_total{credential="partner"}');
  const requests = 40;
  await statuses(requests, () => send(from, '/quote', { method: 'POST', headers: { 'x-api-key': wrongKey, 'content-type': 'application/json' }, body: '{}' }));
  const lines = logLines.filter((line) => line['address'] === from);
  assert.equal(lines.length, 1, 'one line for the address this minute');
  assert.equal(lines[0]?.['msg'], 'authentication failed');
  assert.equal(lines[0]?.['credential'], 'partner');
  assert.equal(lines[0]?.['route'], '/quote');
  const accessLines = logLines.filter((line) => line['msg'] === 'request' && line['route'] === '/quote' && line['status'] !== 200);
  assert.equal(accessLines.length, 0, 'no access-log line per refused request');
  assert.ok(!JSON.stringify(logLines).includes(wrongKey), 'the presented key is never logged');
  assert.equal((await metric('auth_failures_total{credential="partner"}')) - failuresBefore, requests);
  assert.equal((await metric('auth_failures_throttled_total{credential="partner"}')) - throttledBefore, requests - burst);
});

test('routes without credentials: a bucket per address (429 with Retry-After beyond it), counted and logged by sample', async () => {
  const from = '127.0.0.7';
  const corridors = await statuses(burst + 2, () => send(from, '/public/corridors'));
  assert.deepEqual(corridors, [...new Array<number>(burst).fill(200), 429, 429]);
  const refused = await send(from, '/healthz');
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  assert.equal((await send('127.0.0.8', '/public/corridors')).status, 200, 'another address is not affected');
  assert.ok((await metric('public_requests_throttled_total')) >= 3);
  assert.equal(logLines.filter((line) => line['address'] === from && line['msg'] === 'requests without credentials throttled').length, 1);
});

test('X-Forwarded-For is ignored from an untrusted peer and honoured from a trusted proxy', async () => {
  // An untrusted peer cannot choose the address its failures count under.
  const spoofer = '127.0.0.9';
  let claimed = 0;
  const spoofed = await statuses(burst + 1, () =>
    send(spoofer, unknownTransaction, { headers: { 'x-api-key': wrongKey, 'x-forwarded-for': `10.0.0.${(claimed += 1)}` } }),
  );
  assert.deepEqual(spoofed, expectedFlood(burst + 1));
  // From the trusted proxy, the client named in X-Forwarded-For has the bucket.
  const viaProxy = (client: string) => send(trustedProxy, unknownTransaction, { headers: { 'x-api-key': wrongKey, 'x-forwarded-for': `203.0.113.50, ${client}` } });
  assert.deepEqual(await statuses(burst + 1, () => viaProxy('198.51.100.1')), expectedFlood(burst + 1));
  assert.equal((await viaProxy('198.51.100.2')).status, 401, 'another client behind the same proxy has its own bucket');
  assert.ok(logLines.some((line) => line['address'] === '198.51.100.1'), 'the log names the client, not the proxy');
});

test('the health listener’s /metrics: wrong ops keys are throttled the same way', async () => {
  const from = '127.0.0.10';
  const flood = await statuses(burst + 1, () => send(from, '/metrics', { port: healthPort, headers: { 'x-ops-api-key': wrongKey } }));
  assert.deepEqual(flood, expectedFlood(burst + 1));
  assert.equal((await send(from, '/metrics', { port: healthPort, headers: { 'x-ops-api-key': opsKey } })).status, 200);
});

test('admin gRPC: a flood of wrong keys ends in RESOURCE_EXHAUSTED with a retry hint; the ops key still works', async () => {
  const address = `127.0.0.1:${service.adminPort}`;
  const wrong = createAdminClient(address, wrongKey, { transport: { kind: 'plaintext' } });
  const right = createAdminClient(address, opsKey, { transport: { kind: 'plaintext' } });
  try {
    const codes: number[] = [];
    let last: ServiceError | null = null;
    for (let index = 0; index < burst + 2; index += 1) {
      try {
        await wrong.call('ListWorkers');
        codes.push(0);
      } catch (error) {
        last = error as ServiceError;
        codes.push(last.code);
      }
    }
    // 16 UNAUTHENTICATED, then 8 RESOURCE_EXHAUSTED.
    assert.deepEqual(codes, [...new Array<number>(burst).fill(16), 8, 8]);
    assert.ok(Number(last?.metadata.get('retry-after')[0]) >= 1, 'retry-after seconds in metadata');
    assert.match(last?.details ?? '', /retry after \d+ s/);
    const workers = await right.call('ListWorkers');
    assert.ok(Array.isArray(workers['workers']));
    assert.ok((await metric('auth_failures_total{credential="admin"}')) >= burst + 2);
  } finally {
    wrong.close();
    right.close();
  }
});

test('a weak OPS_API_KEY stops start-up with a message naming it', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, OPS_API_KEY: 'ops-key-16-chars', PORT: '0', DATA_DIR: join(dir, 'weak') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    // Bounded: a service that starts instead of refusing is killed below.
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      new Promise<number | null>((resolve) => child.on('exit', resolve)),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 60_000))),
    ]);
    clearTimeout(timer);
    assert.equal(code, 1);
    assert.match(stderr, /start-up failed: environment: OPS_API_KEY: OPS_API_KEY is too weak/);
    assert.ok(!stderr.includes('ops-key-16-chars'));
  } finally {
    await stopChild(child);
  }
});
