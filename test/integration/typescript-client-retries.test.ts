// The TypeScript client's retry policy (clients/typescript/src/client.ts) over real HTTP: a local
// node:http server answers each request as the test scripts it, and the client's waits are
// recorded instead of slept. Retried: answers whose body says `retryable: true` (429 with
// Retry-After, 503, 409 in progress) and requests that got no answer; never a non-retryable
// error; at most `attemptsMax` attempts; a Retry-After beyond `retryAfterMsMax` is thrown, not
// waited for. Every attempt of one POST carries the same Idempotency-Key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PaymentsApiError, PaymentsClient, PaymentsNetworkError } from '../../clients/typescript/src/index.ts';
import { teardown } from '../support/teardown.ts';

interface Scripted {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Close the connection without answering. */
  readonly drop?: true;
}

let server: Server;
let baseUrl: string;
let script: Scripted[] = [];
let seen: { method: string; url: string; idempotencyKey: string | null; apiKey: string | null }[] = [];

const quoteBody = { quote_id: '6f1c2b1e-4a4e-4c31-9d53-1b1f6a0c2e11', value: 12.6, expiration_time: 1, fee: { amount: '0', currency: 'USDC', type: 'none' } };
const error = (code: string, retryable: boolean) => ({ code, reason: `${code} reason`, retryable, request_id: `req-${code}` });
const quoteRequest = { amount: 50_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' } as const;

function header(request: IncomingMessage, name: string): string | null {
  const value = request.headers[name];
  return typeof value === 'string' ? value : null;
}

before(async () => {
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', idempotencyKey: header(request, 'idempotency-key'), apiKey: header(request, 'x-api-key') });
      const next = script.shift() ?? { status: 500, body: error('server_error', false) };
      if (next.drop === true) {
        request.socket.destroy();
        return;
      }
      response.writeHead(next.status, { 'content-type': 'application/json', 'x-request-id': 'from-header', ...next.headers });
      response.end(JSON.stringify(next.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => teardown(() => new Promise<void>((resolve) => server.close(() => resolve()))));

function clientWith(waits: number[], retry: Partial<{ attemptsMax: number; retryAfterMsMax: number }> = {}): PaymentsClient {
  script = [];
  seen = [];
  return new PaymentsClient({ baseUrl, apiKey: 'key-1', retry, sleep: (ms) => { waits.push(ms); return Promise.resolve(); } });
}

test('429 with Retry-After and a 503 are retried after the delay asked for, with the same Idempotency-Key', async () => {
  const waits: number[] = [];
  const client = clientWith(waits);
  script = [
    { status: 429, body: error('rate_limited', true), headers: { 'retry-after': '2' } },
    { status: 503, body: error('service_unavailable', true), headers: { 'retry-after': '5' } },
    { status: 200, body: quoteBody },
  ];
  assert.deepEqual(await client.createQuote(quoteRequest), quoteBody);
  assert.deepEqual(waits, [2000, 5000]);
  assert.equal(seen.length, 3);
  assert.equal(new Set(seen.map((request) => request.idempotencyKey)).size, 1, 'one key for every attempt');
  assert.match(seen[0]?.idempotencyKey ?? '', /^[0-9a-f-]{36}$/);
  assert.ok(seen.every((request) => request.apiKey === 'key-1'));
});

test('a given Idempotency-Key is sent as is; a GET carries none', async () => {
  const client = clientWith([]);
  script = [{ status: 200, body: quoteBody }, { status: 200, body: { hasApproved: false, status: null } }];
  await client.createQuote(quoteRequest, { idempotencyKey: 'my-key-7' });
  await client.getKycStatus({ userId: 'u 1' });
  assert.deepEqual(seen.map((request) => [request.method, request.url, request.idempotencyKey]), [['POST', '/quote', 'my-key-7'], ['GET', '/kyc/status?userId=u+1', null]]);
});

test('a non-retryable error is thrown at once, typed, with the body request id', async () => {
  const waits: number[] = [];
  const client = clientWith(waits);
  script = [{ status: 400, body: error('minimum', false) }];
  const thrown = await client.createQuote(quoteRequest).catch((failure: unknown) => failure);
  assert.ok(thrown instanceof PaymentsApiError);
  assert.deepEqual([thrown.status, thrown.code, thrown.reason, thrown.retryable, thrown.requestId], [400, 'minimum', 'minimum reason', false, 'req-minimum']);
  assert.equal(seen.length, 1);
  assert.deepEqual(waits, []);
});

test('retries are bounded: attemptsMax attempts, then the last error; a Retry-After too long is not waited for', async () => {
  const waits: number[] = [];
  const client = clientWith(waits, { attemptsMax: 3 });
  script = [0, 1, 2, 3].map(() => ({ status: 409, body: error('idempotency_in_progress', true) }));
  const thrown = await client.acceptTransaction({ quote_id: 'q', user_id: 'u', account_number: '3001234567' }).catch((failure: unknown) => failure);
  assert.ok(thrown instanceof PaymentsApiError && thrown.code === 'idempotency_in_progress');
  assert.equal(seen.length, 3);
  assert.deepEqual(waits, [250, 500], 'exponential backoff without Retry-After');

  const patient = clientWith(waits, { retryAfterMsMax: 10_000 });
  script = [{ status: 429, body: error('rate_limited', true), headers: { 'retry-after': '3600' } }];
  const limited = await patient.createQuote(quoteRequest).catch((failure: unknown) => failure);
  assert.ok(limited instanceof PaymentsApiError && limited.retryAfterSeconds === 3600);
  assert.equal(seen.length, 1, 'an hour is not waited for');
});

test('a request that got no answer is retried with the same key, and reported after the last attempt', async () => {
  const waits: number[] = [];
  const client = clientWith(waits, { attemptsMax: 2 });
  script = [{ status: 0, drop: true }, { status: 200, body: quoteBody }];
  assert.deepEqual(await client.createQuote(quoteRequest), quoteBody);
  assert.equal(seen[0]?.idempotencyKey, seen[1]?.idempotencyKey);

  const failing = clientWith(waits, { attemptsMax: 2 });
  script = [{ status: 0, drop: true }, { status: 0, drop: true }];
  const thrown = await failing.createQuote(quoteRequest).catch((failure: unknown) => failure);
  assert.ok(thrown instanceof PaymentsNetworkError && thrown.attempts === 2);
});
