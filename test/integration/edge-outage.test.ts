// What a partner and an operator see when a role or Redis is gone, with the roles as separate
// processes of `src/main.ts` (one edge, shard workers, a private Redis run with AOF so it can be
// halted and restarted with its data):
// - every shard worker stopped: the edge's /readyz turns 503 within about a lease TTL, and a
//   request that needs a shard worker is refused at once with 503 `service_unavailable` naming
//   them (not after the ask timeout, set here far above the wait), with one log line for the
//   whole outage; quotes, which need no shard worker (they are offers kept in Redis until
//   accepted), are still answered; a worker back → ready, acceptances work, one recovery line;
// - Redis down: no route answers 500; the ones that need Redis answer 503 with the error body and
//   Retry-After; nothing goes raw to stderr (`[ioredis] Unhandled error event`); each Redis client
//   logs one line when its connection is lost and one when it is back, with the outage's length;
// - the only worker frozen: a request sent while it held the shard still gets its answer once the
//   worker is back, while new requests for the shard are refused at once meanwhile.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startServiceFleet, type FleetProcess, type ServiceFleet } from '../support/service-fleet.ts';
import { eventually } from '../support/eventually.ts';

const partnerId = 'outage-partner';
/** Short leases, so an outage is seen in seconds; the edge uses the same TTL as its grace. */
const leaseTtlMs = 1_500;
/** Far above every wait below: an answer that arrives in time did not wait for an ask timeout. */
const askTimeoutMs = 25_000;
/** How long a single request may take here (well below `askTimeoutMs`). */
const requestTimeoutMs = 8_000;

let fleet: ServiceFleet;
let edge: FleetProcess;
let shard: FleetProcess;

before(async () => {
  fleet = await startServiceFleet({
    partners: [{ id: partnerId, webhookUrl: 'http://127.0.0.1:9/unused' }],
    shards: 4,
    env: { SHARD_LEASE_TTL_MS: String(leaseTtlMs), EDGE_ASK_TIMEOUT_MS: String(askTimeoutMs), LOG_LEVEL: 'info' },
    redisArgs: ['--appendonly', 'yes', '--appendfsync', 'everysec'],
    outputCharsMax: 2_000_000,
  });
  shard = await fleet.start('shard', 'shard-1');
  edge = await fleet.start('edge', 'edge-1');
});

after(async () => {
  await fleet.stop();
});

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly json: Record<string, unknown>;
}

async function call(method: string, path: string, options: { body?: unknown; ops?: boolean; anonymous?: boolean; timeoutMs?: number; idempotencyKey?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  if (options.ops === true) headers['x-ops-api-key'] = fleet.opsApiKey;
  else if (options.anonymous !== true) headers['x-api-key'] = fleet.apiKeys[partnerId] ?? '';
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${edge.baseUrl ?? ''}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    signal: AbortSignal.timeout(options.timeoutMs ?? requestTimeoutMs),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = { text };
  }
  return { status: response.status, retryAfter: response.headers.get('retry-after'), json };
}

const quoteBody = { amount: 20_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' };

/** 503 `service_unavailable` with the documented body and a Retry-After in whole seconds. */
function assertUnavailable(answer: Answer, what: string, reason?: RegExp): void {
  assert.equal(answer.status, 503, `${what}: ${JSON.stringify(answer.json)}`);
  assert.equal(answer.json['code'], 'service_unavailable', what);
  assert.equal(answer.json['retryable'], true, what);
  assert.equal(typeof answer.json['reason'], 'string', what);
  if (reason !== undefined) assert.match(String(answer.json['reason']), reason, what);
  assert.match(answer.retryAfter ?? '', /^[1-9]\d*$/, `${what}: Retry-After`);
}

/** The JSON (pino) lines a process wrote, with their message. */
function logLines(process: FleetProcess): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of process.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut by the output bound
    }
  }
  return lines;
}

function linesWith(process: FleetProcess, message: RegExp): Array<Record<string, unknown>> {
  return logLines(process).filter((line) => message.test(String(line['msg'])));
}

async function readyz(): Promise<Answer> {
  return call('GET', '/readyz', { anonymous: true });
}

/** A fresh quote's id (quotes need Redis, not a shard worker). */
async function quoteId(): Promise<string> {
  const quoted = await call('POST', '/quote', { body: quoteBody });
  assert.equal(quoted.status, 200, JSON.stringify(quoted.json));
  return String(quoted.json['quote_id']);
}

function acceptance(quote: string, timeoutMs?: number): Promise<Answer> {
  return call('POST', '/transaction', { body: { quote_id: quote, user_id: `user-${randomUUID()}`, account_number: '@maria.perez' }, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

test('every shard worker gone: /readyz turns 503, requests for them are refused at once naming the shard workers, with one log line; quotes are still answered; a worker back → ready', async () => {
  const quotes = [await quoteId(), await quoteId(), await quoteId(), await quoteId()];
  assert.equal((await readyz()).status, 200);

  const stopped = await fleet.terminate(shard);
  assert.deepEqual([stopped.code, stopped.signal], [0, null], shard.output());

  // Within about a lease TTL (the grace for a hand-over), the edge says it cannot serve.
  await eventually(async () => {
    const ready = await readyz();
    assertUnavailable(ready, '/readyz', /shard worker/i);
    assert.equal(ready.json['shards'], 'unserved');
  }, 15_000, 100);

  // Each answer arrives long before the ask timeout: refused from the leases, not waited for.
  const refused = await Promise.all([acceptance(quotes[0] ?? ''), acceptance(quotes[1] ?? ''), acceptance(quotes[2] ?? '')]);
  for (const [index, answer] of refused.entries()) assertUnavailable(answer, `request ${index}`, /no shard worker is serving requests right now/i);
  // A quote is an offer kept in Redis until accepted: no shard worker is needed to make one.
  await quoteId();
  const reverse = await call('POST', '/quote/reverse', { body: { source_amount: 10, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' } });
  assert.equal(reverse.status, 200, JSON.stringify(reverse.json));

  // One line for the outage, not one per request (the edge's output reaches us a moment later).
  const began = await eventually(() => {
    const lines = linesWith(edge, /no shard worker is serving/i);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    return lines;
  });
  assert.equal(began[0]?.['level'], 40, 'a warning');
  assert.equal(linesWith(edge, /request failed/).length, 0, 'no request was treated as a bug');

  shard = await fleet.start('shard', 'shard-2');
  await eventually(async () => assert.equal((await readyz()).status, 200), 15_000, 100);
  const after = await acceptance(quotes[3] ?? '');
  assert.equal(after.status, 200, JSON.stringify(after.json));
  await eventually(() => {
    const ended = linesWith(edge, /every shard has a live owner again/i);
    assert.equal(ended.length, 1, JSON.stringify(ended));
    assert.ok(Number(ended[0]?.['refusedRequests']) >= refused.length, JSON.stringify(ended[0]));
    assert.ok(Number(ended[0]?.['outageMs']) > 0, JSON.stringify(ended[0]));
  }, 5_000, 100);
  assert.equal(linesWith(edge, /no shard worker is serving/i).length, 1, 'still one outage line');
});

test('Redis down: no route answers 500, those that need Redis answer 503 with the error body; one outage and one recovery line per Redis client, nothing raw on stderr', async () => {
  const quote = await call('POST', '/quote', { body: quoteBody });
  assert.equal(quote.status, 200, JSON.stringify(quote.json));
  const acceptance = await call('POST', '/transaction', { body: { quote_id: quote.json['quote_id'], user_id: `user-${randomUUID()}`, account_number: '@maria.perez' } });
  assert.equal(acceptance.status, 200, JSON.stringify(acceptance.json));
  const transactionId = String(acceptance.json['id']);
  const secondQuote = await call('POST', '/quote', { body: quoteBody });
  assert.equal(secondQuote.status, 200, JSON.stringify(secondQuote.json));

  await fleet.redis.halt();
  try {
    // Every request that needs Redis: a 503 with the body, also before the edge noticed by itself.
    const needsRedis: Array<[string, () => Promise<Answer>]> = [
      ['GET /readyz', () => readyz()],
      ['POST /quote', () => call('POST', '/quote', { body: quoteBody })],
      ['POST /quote/reverse', () => call('POST', '/quote/reverse', { body: { source_amount: 10, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' } })],
      ['POST /quote/onramp', () => call('POST', '/quote/onramp', { body: { fiat_amount: 100, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'PIX', target_currency: 'BRL' } })],
      ['POST /transaction', () => call('POST', '/transaction', { body: { quote_id: secondQuote.json['quote_id'], user_id: `user-${randomUUID()}`, account_number: '@maria.perez' } })],
    ];
    for (const [what, send] of needsRedis) assertUnavailable(await send(), what);
    // Bad input is a 4xx whatever is down: a quote pricing refuses needs no Redis, with or without an
    // Idempotency-Key (whose retry would look for the first attempt's offer).
    for (const idempotencyKey of [undefined, randomUUID()]) {
      const tooSmall = await call('POST', '/quote', { body: { ...quoteBody, amount: 1 }, ...(idempotencyKey === undefined ? {} : { idempotencyKey }) });
      assert.equal(tooSmall.status, 400, JSON.stringify(tooSmall.json));
      assert.equal(tooSmall.json['code'], 'minimum');
    }
    // Every other route: whatever it answers, never a 500 (routes served from the store may answer).
    const others: Array<[string, () => Promise<Answer>]> = [
      ['GET /healthz', () => call('GET', '/healthz', { anonymous: true })],
      ['GET /public/corridors', () => call('GET', '/public/corridors', { anonymous: true })],
      ['GET /transaction/:id', () => call('GET', `/transaction/${transactionId}`)],
      ['GET /transactions', () => call('GET', '/transactions')],
      ['GET /events', () => call('GET', '/events')],
      ['POST /sandbox/deposits', () => call('POST', '/sandbox/deposits', { body: { transaction_id: transactionId } })],
      ['POST /payments/notify', () => call('POST', '/payments/notify', { body: { blockchain: 'SOLANA', on_chain_tx: '5'.repeat(88), transaction_id: transactionId } })],
      ['POST /ops/transactions/reconcile-hash', () => call('POST', '/ops/transactions/reconcile-hash', { ops: true, body: { blockchain: 'STELLAR', on_chain_tx: 'a'.repeat(64), transaction_id: transactionId } })],
      ['GET /metrics', () => call('GET', '/metrics', { ops: true })],
    ];
    for (const [what, send] of others) {
      const answer = await send();
      assert.ok(answer.status < 500 || answer.status === 503, `${what}: ${answer.status} ${JSON.stringify(answer.json)}`);
      if (answer.status === 503) assertUnavailable(answer, what);
    }
    // Once the edge has noticed (its lease reads fail), the refusal names Redis and comes at once.
    await eventually(async () => assertUnavailable(await call('POST', '/quote', { body: quoteBody }), 'POST /quote', /redis/i), 10_000, 100);
    await eventually(() => {
      for (const client of ['bus', 'leases']) {
        assert.equal(linesWith(edge, /^Redis connection lost$/).filter((line) => line['client'] === client).length, 1, `one outage line for the ${client} client`);
      }
    }, 10_000, 100);
  } finally {
    await fleet.redis.restart();
  }

  await eventually(async () => assert.equal((await readyz()).status, 200), 30_000, 100);
  await eventually(async () => {
    const again = await call('POST', '/quote', { body: quoteBody });
    assert.equal(again.status, 200, JSON.stringify(again.json));
  }, 20_000, 200);
  // A quote needs no shard worker, so its answer does not say the worker has reconnected yet: each
  // process's recovery lines are waited for (each client reconnects on its own backoff).
  await eventually(() => {
    for (const process of [edge, shard]) {
      assert.doesNotMatch(process.output(), /Unhandled error event/, `${process.name}: nothing raw from ioredis`);
      for (const client of ['bus', 'leases']) {
        const lost = linesWith(process, /^Redis connection lost$/).filter((line) => line['client'] === client);
        assert.equal(lost.length, 1, `${process.name}: one outage line for the ${client} client: ${JSON.stringify(lost)}`);
        const restored = linesWith(process, /^Redis connection restored$/).filter((line) => line['client'] === client);
        assert.equal(restored.length, 1, `${process.name}: one recovery line for the ${client} client`);
        assert.ok(Number(restored[0]?.['outageMs']) > 0 && Number(restored[0]?.['errors']) >= 1, JSON.stringify(restored[0]));
      }
    }
  }, 20_000, 100);
  assert.equal(linesWith(edge, /request failed/).length, 0, 'no request was treated as a bug');
});

test('a request sent while its shard had an owner still waits for its reply, even once the edge refuses new ones for that shard', async () => {
  await eventually(async () => assert.equal((await readyz()).status, 200), 15_000, 100);
  const [first, second] = [await quoteId(), await quoteId()];
  const pid = shard.child.pid;
  assert.ok(pid !== undefined);
  // The only worker freezes: its leases are still held, so the edge sends this request and waits.
  process.kill(pid, 'SIGSTOP');
  let waiting: Promise<Answer> | null = null;
  try {
    // Its own bound: the freeze, the grace, the worker's recovery; still below the ask timeout.
    waiting = acceptance(first, askTimeoutMs - 3_000).catch((error: unknown) => ({ status: 0, retryAfter: null, json: { error: String(error) } }));
    // Its leases lapse, the grace runs out: new requests are refused at once. The worker renewed its
    // shards' leases at slightly different times, so they lapse one by one: wait until /readyz says
    // none is served (not merely "some of N"), or the acceptance's shard may still be within its grace.
    await eventually(async () => assertUnavailable(await readyz(), '/readyz', /no shard worker is serving requests right now/i), 15_000, 100);
    assertUnavailable(await acceptance(second), 'a new acceptance', /no shard worker/i);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  // The worker takes its shards back and answers the request that was already sent.
  const answered = await waiting;
  assert.equal(answered.status, 200, JSON.stringify(answered.json));
  await eventually(async () => assert.equal((await readyz()).status, 200), 15_000, 100);
});
