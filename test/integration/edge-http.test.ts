// The edge HTTP toolkit over real HTTP: a small app built with createHttpApp, driven by fetch and
// raw sockets. Covers routing (404/405/HEAD/OPTIONS), body caps (Content-Length and chunked),
// JSON and multipart parsing, magic bytes, auth (X-API-Key, Bearer), rate limiting, request ids,
// handler failures and timeouts, aborted clients, the access log, and a seeded garbage run.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHttpApp } from '../../src/edge/http-app.ts';
import { emptyResponse, jsonResponse } from '../../src/edge/http-response.ts';
import type { HttpApp, Listening, Route } from '../../src/edge/http-types.ts';
import { parseJsonBody } from '../../src/edge/body.ts';
import { createEdgeLogger } from '../../src/edge/access-log.ts';
import { createKeyRing, partnerGuard, opsGuard, sha256Hex } from '../../src/edge/auth.ts';
import { createRateLimiter } from '../../src/edge/rate-limit.ts';
import { parseMultipart } from '../../src/edge/multipart.ts';
import { checkDocumentType } from '../../src/edge/magic-bytes.ts';
import { errorResponse } from '../../src/edge/errors.ts';
import { eventually } from '../support/eventually.ts';

const acmeKey = 'acme-live-key-0123456789abcdef';
const acmeSecondKey = 'acme-rotated-key-fedcba9876543210';
const otherKey = 'other-partner-key-000000000000';
const limitedKey = 'limited-partner-key-11111111111';
const opsKey = 'ops-key-2222222222222222222222';
const secretErrorText = 'db password is hunter2';
const bodyBytesMax = 1024;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const pngBytes = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 7)]);
const jpegBytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 9)]);

interface Harness {
  base: string;
  port: number;
  listening: Listening;
  app: HttpApp;
  logLines: string[];
  advanceClockMs(ms: number): void;
}

function buildHarness(): { app: HttpApp; logLines: string[]; advanceClockMs(ms: number): void } {
  const logLines: string[] = [];
  const logger = createEdgeLogger({ destination: { write: (line: string) => void logLines.push(line) } });
  const keyRing = createKeyRing();
  keyRing.setPartnerKeys('acme', [sha256Hex(acmeKey), sha256Hex(acmeSecondKey).toUpperCase()]);
  keyRing.setPartnerKeys('other', [sha256Hex(otherKey)]);
  keyRing.setPartnerKeys('limited', [sha256Hex(limitedKey)]);
  keyRing.setOpsKeys([sha256Hex(opsKey)]);
  let nowMs = 0;
  const generous = createRateLimiter({ config: { ratePerSecond: 1_000_000, burst: 1_000_000 }, nowMs: () => nowMs });
  const strict = createRateLimiter({ config: { ratePerSecond: 0.5, burst: 2 }, nowMs: () => nowMs });
  const partner = partnerGuard({ keyRing, rateLimiter: generous });

  const routes: Route[] = [
    { method: 'GET', pattern: '/public/ping', handler: () => Promise.resolve(jsonResponse(200, { pong: true })) },
    {
      method: 'GET',
      pattern: '/transaction/:id',
      guard: partner,
      handler: (ctx) => Promise.resolve(jsonResponse(200, { id: ctx.params['id'], partnerId: ctx.partnerId, query: ctx.query })),
    },
    { method: 'DELETE', pattern: '/transaction/:id', guard: partner, handler: () => Promise.resolve(emptyResponse(204)) },
    { method: 'GET', pattern: '/transactions/list', guard: partner, handler: (ctx) => Promise.resolve(jsonResponse(200, { list: true, query: ctx.query })) },
    { method: 'GET', pattern: '/transactions/:id', handler: () => Promise.resolve(jsonResponse(200, { param: true })) },
    {
      method: 'POST',
      pattern: '/echo',
      handler: (ctx) => {
        const parsed = parseJsonBody(ctx);
        return Promise.resolve(parsed.ok ? jsonResponse(200, { echo: parsed.value, remote: ctx.remoteAddress }) : parsed.response);
      },
    },
    {
      method: 'POST',
      pattern: '/throw',
      handler: () => Promise.reject(new Error(secretErrorText)),
    },
    {
      method: 'POST',
      pattern: '/slow',
      handler: async (ctx) => {
        await sleep(50); // kept: a slow handler is what these tests need
        return jsonResponse(200, { bytes: ctx.body.length });
      },
    },
    {
      method: 'POST',
      pattern: '/limited',
      guard: partnerGuard({ keyRing, rateLimiter: strict }),
      handler: (ctx) => Promise.resolve(jsonResponse(200, { partnerId: ctx.partnerId })),
    },
    {
      method: 'POST',
      pattern: '/ops/reconcile',
      guard: opsGuard({ keyRing }),
      handler: () => Promise.resolve(jsonResponse(200, { ops: true })),
    },
    {
      method: 'POST',
      pattern: '/kyc',
      guard: partner,
      bodyBytesMax: 8 * 1024,
      handler: async (ctx) => {
        const form = await parseMultipart(ctx.headers['content-type'], ctx.body, {
          fileFieldName: 'document',
          limits: { fileBytesMax: 4 * 1024, fieldsCountMax: 4, fieldBytesMax: 64 },
        });
        if (!form.ok) return form.response;
        const type = checkDocumentType(form.value.file.declaredType, form.value.file.bytes);
        if (!type.ok) return errorResponse('invalid_request', type.reason);
        return jsonResponse(201, {
          status: 'APPROVED',
          fields: form.value.fields,
          type: type.type,
          filename: form.value.file.filename,
          size: form.value.file.bytes.length,
        });
      },
    },
  ];
  const app = createHttpApp({ routes, logger, bodyBytesMax });
  return { app, logLines, advanceClockMs: (ms) => (nowMs += ms) };
}

let h: Harness;

before(async () => {
  const built = buildHarness();
  const listening = await built.app.listen('127.0.0.1', 0);
  h = { ...built, listening, port: listening.port, base: `http://127.0.0.1:${listening.port}` };
});

after(() => {
  h.listening.close();
});

/**
 * The JSON body; an error body's `request_id` is checked against the `X-Request-Id` header (every
 * error body carries it) and left out, so the assertions below compare what the route decided.
 */
async function json(response: Response): Promise<Record<string, unknown>> {
  const { request_id: requestId, ...body } = (await response.json()) as Record<string, unknown>;
  if (response.status >= 400 && 'code' in body) assert.equal(requestId, response.headers.get('x-request-id'), 'error body request_id = X-Request-Id');
  else assert.equal(requestId, undefined);
  return body;
}

/**
 * Sends raw bytes on a fresh connection and returns what the server sent: once the text matches
 * `until` (an answer on a connection the server keeps open), or once the server closes it. The
 * time limit only ends a wait that would otherwise hang; a loaded machine answers late, not never.
 */
function rawExchange(bytes: string | Buffer, until?: RegExp, timeoutMs = 5_000, port = h.port): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    const finish = (): void => {
      clearTimeout(timer);
      resolve(received);
    };
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (until?.test(received) === true) {
        socket.destroy();
        finish();
      }
    });
    socket.on('error', finish);
    socket.on('close', finish);
    socket.write(bytes);
  });
}

describe('routing', () => {
  test('unknown path → 404 not_found', async () => {
    const response = await fetch(`${h.base}/nope`);
    assert.equal(response.status, 404);
    assert.deepEqual(await json(response), { code: 'not_found', reason: 'No such endpoint', retryable: false });
  });

  test('known path, wrong method → 405 method_not_allowed with Allow', async () => {
    const response = await fetch(`${h.base}/echo`, { method: 'PUT', body: '{}' });
    assert.equal(response.status, 405);
    assert.equal(response.headers.get('allow'), 'POST, OPTIONS');
    const body = await json(response);
    assert.equal(body['code'], 'method_not_allowed');
    assert.equal(body['retryable'], false);
    const patch = await fetch(`${h.base}/transaction/abc`, { method: 'PATCH' });
    assert.equal(patch.status, 405);
    assert.equal(patch.headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS');
  });

  test('OPTIONS answers 204 with Allow; HEAD is served by GET without a body', async () => {
    const options = await fetch(`${h.base}/transaction/abc`, { method: 'OPTIONS' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('allow'), 'GET, HEAD, DELETE, OPTIONS');
    const head = await fetch(`${h.base}/public/ping`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String('{"pong":true}'.length));
    assert.equal(await head.text(), '');
    assert.equal((await fetch(`${h.base}/nope`, { method: 'OPTIONS' })).status, 404);
  });

  test('HEAD keeps the connection usable (no stray body bytes)', async () => {
    const raw = await rawExchange('HEAD /public/ping HTTP/1.1\r\nHost: x\r\n\r\nGET /public/ping HTTP/1.1\r\nHost: x\r\n\r\n', /\{"pong":true\}/);
    const responses = raw.split('HTTP/1.1 ').filter((part) => part.length > 0);
    assert.equal(responses.length, 2, raw);
    assert.ok(responses[1]?.endsWith('{"pong":true}'), raw);
  });

  test('params are decoded; static segments beat params; trailing slash tolerated', async () => {
    const response = await fetch(`${h.base}/transaction/a%20b%2Fc/?x=1&y=%C3%A9`, { headers: { 'x-api-key': acmeKey } });
    assert.equal(response.status, 200);
    assert.deepEqual(await json(response), { id: 'a b/c', partnerId: 'acme', query: { x: '1', y: 'é' } });
    const list = await fetch(`${h.base}/transactions/list`, { headers: { 'x-api-key': acmeKey } });
    assert.deepEqual(await json(list), { list: true, query: {} });
    assert.deepEqual(await json(await fetch(`${h.base}/transactions/other`)), { param: true });
    const malformed = await fetch(`${h.base}/transaction/%E0%A4%A`, { headers: { 'x-api-key': acmeKey } });
    assert.equal(malformed.status, 400);
  });

  test('query strings are bounded: too many or duplicated → 400, too long → 414', async () => {
    const headers = { 'x-api-key': acmeKey };
    const many = Array.from({ length: 40 }, (_, i) => `p${i}=1`).join('&');
    const tooMany = await fetch(`${h.base}/transactions/list?${many}`, { headers });
    assert.equal(tooMany.status, 400);
    assert.equal((await json(tooMany))['reason'], 'Too many query parameters');
    const duplicated = await fetch(`${h.base}/transactions/list?a=1&a=2`, { headers });
    assert.equal(duplicated.status, 400);
    const long = await fetch(`${h.base}/transactions/list?a=${'x'.repeat(5000)}`, { headers });
    assert.equal(long.status, 414);
    assert.deepEqual(await json(long), { code: 'uri_too_long', reason: 'Query string too long', retryable: false });
  });

  test('oversized request headers → 431 headers_too_large', async () => {
    const response = await fetch(`${h.base}/public/ping`, { headers: { 'x-filler': 'f'.repeat(20 * 1024) } });
    assert.equal(response.status, 431);
    assert.deepEqual(await json(response), { code: 'headers_too_large', reason: 'Request headers too large', retryable: false });
  });
});

/**
 * Writes `parts` in order, each in its own write once the previous one has left, and answers what
 * the server sent until it closed. `between` runs after each part but the last has left (default:
 * a 20 ms pause); a test that needs the server to have read a part before the next one arrives
 * passes `serverTurned`.
 */
function untilServerCloses(
  port: number,
  parts: readonly (string | Buffer)[],
  timeoutMs = 5_000,
  between: () => Promise<void> = () => new Promise((resolve) => setTimeout(resolve, 20)),
): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedByServer: false });
    }, timeoutMs);
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedByServer: true });
    });
    const writeFrom = (index: number): void => {
      const part = parts[index];
      if (part === undefined || socket.destroyed) return;
      // The next part leaves in a later read of the server's: after this one was flushed and `between` passed.
      socket.write(part, () => {
        if (index + 1 < parts.length) void between().then(() => writeFrom(index + 1));
      });
    };
    socket.once('connect', () => writeFrom(0));
  });
}

/**
 * Resolves once the server has answered a request on another connection, sent after the caller's
 * bytes had left: its event loop has turned since, and read what was waiting on every socket. On a
 * loaded machine a fixed pause is not enough for that (both parts would arrive in one read).
 */
async function serverTurned(): Promise<void> {
  await rawExchange('GET /public/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
}

describe('request line, headers and GET bodies', () => {
  test('a path or a query string over its cap → 414 uri_too_long', async () => {
    const path = await fetch(`${h.base}/transaction/${'p'.repeat(3000)}`, { headers: { 'x-api-key': acmeKey } });
    assert.equal(path.status, 414);
    assert.deepEqual(await json(path), { code: 'uri_too_long', reason: 'Path too long', retryable: false });
    const query = await fetch(`${h.base}/public/ping?q=${'q'.repeat(8000)}`);
    assert.equal(query.status, 414);
    assert.equal((await json(query))['reason'], 'Query string too long');
  });

  test('a GET or HEAD with a body → 400 invalid_request, the body unread and the connection closed', async () => {
    const get = await untilServerCloses(h.port, ['GET /public/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello']);
    assert.match(get.text, /^HTTP\/1\.1 400 Bad Request/);
    assert.match(get.text, /\{"code":"invalid_request","reason":"A GET request must not have a body","retryable":false,"request_id":"[^"]+"\}$/);
    assert.equal(get.closedByServer, true);
    const chunked = await untilServerCloses(h.port, ['GET /transactions/list HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n']);
    assert.match(chunked.text, /^HTTP\/1\.1 400 Bad Request/);
    const head = await rawExchange('HEAD /public/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello');
    assert.match(head, /^HTTP\/1\.1 400 Bad Request/);
    // Without a body (or with Content-Length: 0) a GET is served as usual.
    const empty = await rawExchange('GET /public/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', /\{"pong":true\}$/);
    assert.match(empty, /^HTTP\/1\.1 200 OK[\s\S]*\{"pong":true\}$/);
  });

  // What uWS (20.30) itself does before any of our code runs (docs/edge-http.md, "What uWS refuses
  // before us"): it closes the connection without an answer. These tests hold that documented
  // behaviour so a uWS upgrade that changes it is noticed.
  test('uWS: more than 48 header fields → no answer, the connection closed by uWS\'s idle timeout', async () => {
    const fields = (count: number): string => Array.from({ length: count }, (_, i) => `X-F${i}: v\r\n`).join('');
    const fits = await untilServerCloses(h.port, [`GET /public/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${fields(46)}\r\n`]);
    assert.match(fits.text, /^HTTP\/1\.1 200 OK/, '48 fields (Host, Connection and 46 more) are served');
    // uWS keeps waiting for a head it can parse; its idle timeout (about 10 s) ends the connection.
    const tooMany = await untilServerCloses(h.port, [`GET /public/ping HTTP/1.1\r\nHost: x\r\n${fields(48)}\r\n`], 30_000);
    assert.deepEqual(tooMany, { text: '', closedByServer: true });
  });

  test('uWS: a request head over 4 KiB that arrives in more than one read → connection closed without a status', async () => {
    const head = `GET /public/ping?q=${'q'.repeat(3000)} HTTP/1.1\r\nHost: x\r\nX-Filler: ${'f'.repeat(2000)}`;
    const split = await untilServerCloses(h.port, [head, '\r\n\r\n'], 5_000, serverTurned);
    assert.deepEqual(split, { text: '', closedByServer: true });
    // The same head in one read reaches us, and is answered by our own limits.
    const whole = await untilServerCloses(h.port, [`GET /public/ping?q=${'q'.repeat(5000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]);
    assert.match(whole.text, /^HTTP\/1\.1 414 URI Too Long/);
  });
});

describe('bodies', () => {
  test('Content-Length above the cap → 413 payload_too_large without reading', async () => {
    const response = await fetch(`${h.base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(4 * 1024 * 1024, 0x20),
    });
    assert.equal(response.status, 413);
    assert.deepEqual(await json(response), {
      code: 'payload_too_large',
      reason: `Request body exceeds ${bodyBytesMax} bytes`,
      retryable: false,
    });
    assert.equal(response.headers.get('connection'), 'close');
  });

  test('a chunked body crossing the cap → 413 as soon as it is crossed', async () => {
    let sentBytes = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sentBytes >= 64 * 1024 * 1024) return controller.close();
        sentBytes += 16 * 1024;
        controller.enqueue(new Uint8Array(16 * 1024).fill(0x20));
      },
    });
    const init: RequestInit & { duplex: 'half' } = { method: 'POST', body: stream, duplex: 'half' };
    const response = await fetch(`${h.base}/echo`, init);
    assert.equal(response.status, 413);
    assert.equal((await json(response))['code'], 'payload_too_large');
    assert.ok(sentBytes < 64 * 1024 * 1024, 'the server stopped the upload early');
    await eventually(() => assert.equal(h.app.stats().bodyBytesInFlight, 0));
  });

  test('a chunked body under the cap is read whole', async () => {
    const raw = await rawExchange(
      'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n' +
        '4\r\n{"a"\r\n3\r\n:1}\r\n0\r\n\r\n',
      /"echo":\{"a":1\}/,
    );
    assert.match(raw, /^HTTP\/1\.1 200 OK/);
    assert.match(raw, /"echo":\{"a":1\}/);
  });

  test('malformed JSON → 400 invalid_request "Malformed JSON body"; wrong type → 415', async () => {
    for (const body of ['{"a":', '', '\uFEFF{}', 'nul']) {
      const response = await fetch(`${h.base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.deepEqual(await json(response), { code: 'invalid_request', reason: 'Malformed JSON body', retryable: false });
    }
    const invalidUtf8 = await fetch(`${h.base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from([0x22, 0xff, 0x22]) });
    assert.equal(invalidUtf8.status, 400);
    const wrongType = await fetch(`${h.base}/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    assert.equal(wrongType.status, 415);
    assert.equal((await json(wrongType))['code'], 'unsupported_media_type');
    const ok = await fetch(`${h.base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json; charset=UTF-8' }, body: '{"a":[1,2]}' });
    assert.equal(ok.status, 200);
    assert.deepEqual((await json(ok))['echo'], { a: [1, 2] });
  });

  test('a client that disconnects mid-body does not hurt the server', async () => {
    for (let i = 0; i < 5; i += 1) {
      const socket = net.connect(h.port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n' + 'x'.repeat(300));
      await sleep(10); // kept: the client going away mid-body, a moment after it began, is what is tested
      socket.destroy();
    }
    // And one that disconnects while the handler is running.
    const socket = net.connect(h.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc');
    await sleep(10); // kept: the client going away while the (50 ms) handler runs is what is tested
    socket.destroy();
    const response = await fetch(`${h.base}/public/ping`);
    assert.equal(response.status, 200);
    await eventually(() => {
      assert.deepEqual(h.app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
      const aborted = h.logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['aborted'] === true);
      assert.ok(aborted.length >= 6, `aborted lines: ${aborted.length}`);
    });
  });
});

describe('request ids and failures', () => {
  test('a request id is generated when absent, echoed when sane, replaced when not', async () => {
    const generated = await fetch(`${h.base}/public/ping`);
    assert.match(generated.headers.get('x-request-id') ?? '', uuidPattern);
    const echoed = await fetch(`${h.base}/public/ping`, { headers: { 'x-request-id': 'partner-req.42:a_b' } });
    assert.equal(echoed.headers.get('x-request-id'), 'partner-req.42:a_b');
    for (const bad of ['x'.repeat(129), 'has space', '<script>', 'a,b']) {
      const replaced = await fetch(`${h.base}/public/ping`, { headers: { 'x-request-id': bad } });
      assert.match(replaced.headers.get('x-request-id') ?? '', uuidPattern, bad);
    }
    const notFound = await fetch(`${h.base}/nope`, { headers: { 'x-request-id': 'on-errors-too' } });
    assert.equal(notFound.headers.get('x-request-id'), 'on-errors-too');
    // The error body names it too: a partner logging only bodies can still quote it to support.
    assert.equal((await notFound.json() as Record<string, unknown>)['request_id'], 'on-errors-too');
  });

  test('a throwing handler → 500 server_error with a generic reason; the server stays up', async () => {
    const response = await fetch(`${h.base}/throw`, { method: 'POST', headers: { 'x-request-id': 'boom-1' } });
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.deepEqual(JSON.parse(text), { code: 'server_error', reason: 'Internal error', retryable: true, request_id: 'boom-1' });
    assert.ok(!text.includes('hunter2'));
    const errorLine = h.logLines.find((line) => line.includes('"requestId":"boom-1"') && line.includes('"level":50'));
    assert.ok(errorLine?.includes(secretErrorText), 'the real error is logged');
    assert.equal((await fetch(`${h.base}/public/ping`)).status, 200);
  });

  test('a handler that outlives handlerTimeoutMs → 503 service_unavailable', async () => {
    const logger = createEdgeLogger({ destination: { write: () => undefined } });
    const errors: unknown[] = [];
    const app = createHttpApp({
      logger,
      handlerTimeoutMs: 50,
      onError: (error) => void errors.push(error),
      routes: [{ method: 'GET', pattern: '/hang', handler: () => new Promise(() => undefined) }],
    });
    const listening = await app.listen('127.0.0.1', 0);
    try {
      const response = await fetch(`http://127.0.0.1:${listening.port}/hang`);
      assert.equal(response.status, 503);
      assert.deepEqual(await json(response), {
        code: 'service_unavailable',
        reason: 'The request took too long; retry later',
        retryable: true,
      });
      assert.equal(app.stats().inFlightRequests, 0);
    } finally {
      listening.close();
    }
  });
});

describe('server-wide limits', () => {
  test('a body not received within bodyReadTimeoutMs → 408; over the in-flight body budget → 503', async () => {
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      bodyReadTimeoutMs: 100,
      bodyBytesInFlightMax: 500,
      routes: [{ method: 'POST', pattern: '/upload', handler: (ctx) => Promise.resolve(jsonResponse(200, { bytes: ctx.body.length })) }],
    });
    const listening = await app.listen('127.0.0.1', 0);
    try {
      const raw = await new Promise<string>((resolve) => {
        const socket = net.connect(listening.port, '127.0.0.1');
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString('latin1')));
        socket.on('error', () => resolve(received));
        socket.on('close', () => resolve(received));
        socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n' + 'x'.repeat(10));
      });
      assert.match(raw, /^HTTP\/1\.1 408 Request Timeout/);
      assert.match(raw, /"code":"request_timeout"/);
      const base = `http://127.0.0.1:${listening.port}`;
      const busy = await fetch(`${base}/upload`, { method: 'POST', body: Buffer.alloc(800) });
      assert.equal(busy.status, 503);
      assert.deepEqual(await json(busy), { code: 'service_unavailable', reason: 'Server busy; retry later', retryable: true });
      const fits = await fetch(`${base}/upload`, { method: 'POST', body: Buffer.alloc(400) });
      assert.deepEqual(await json(fits), { bytes: 400 });
      assert.deepEqual(app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
    } finally {
      listening.close();
    }
  });

  test('drain: no new connections; a request in flight and one arriving on an open connection are answered, then each connection closes', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      routes: [
        { method: 'GET', pattern: '/hold', handler: async () => (await held, jsonResponse(200, { held: true })) },
        { method: 'GET', pattern: '/quick', handler: () => Promise.resolve(jsonResponse(200, { quick: true })) },
      ],
    });
    const listening = await app.listen('127.0.0.1', 0);
    const open = (): Promise<net.Socket> =>
      new Promise((resolve, reject) => {
        const socket = net.connect(listening.port, '127.0.0.1', () => resolve(socket));
        socket.once('error', reject);
      });
    /** Everything the server sends on `socket` until it closes it (or 3 s pass). */
    const untilClosed = (socket: net.Socket): Promise<{ text: string; closedByServer: boolean }> =>
      new Promise((resolve) => {
        let text = '';
        const timer = setTimeout(() => resolve({ text, closedByServer: false }), 3_000);
        socket.on('data', (chunk) => (text += chunk.toString('latin1')));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearTimeout(timer);
          resolve({ text, closedByServer: true });
        });
      });
    try {
      const busy = await open();
      const idle = await open();
      const busyDone = untilClosed(busy);
      const idleDone = untilClosed(idle);
      busy.write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
      await eventually(() => assert.equal(app.stats().inFlightRequests, 1));
      const drained = listening.drain(5_000);
      assert.equal(app.draining(), true);
      // New connections are refused once the drain has begun.
      await assert.rejects(open(), (error: NodeJS.ErrnoException) => error.code === 'ECONNREFUSED');
      // A keep-alive connection opened before still gets its answer, and is then closed.
      idle.write('GET /quick HTTP/1.1\r\nHost: x\r\n\r\n');
      const idleSeen = await idleDone;
      assert.match(idleSeen.text, /^HTTP\/1\.1 200 OK/);
      assert.match(idleSeen.text, /"quick":true/);
      assert.equal(idleSeen.closedByServer, true);
      // The drain waits for the request in flight, which gets its full answer.
      let settled = false;
      void drained.then(() => (settled = true));
      await sleep(100); // kept: that nothing happens for a while (the drain keeps waiting) is what is tested
      assert.equal(settled, false, 'the drain waits while a request is in flight');
      release();
      assert.equal(await drained, 0);
      const busySeen = await busyDone;
      assert.match(busySeen.text, /^HTTP\/1\.1 200 OK/);
      assert.match(busySeen.text, /"held":true/);
      assert.equal(busySeen.closedByServer, true);
    } finally {
      release();
      listening.close();
    }
  });

  test('drain gives up after its timeout and reports what is still in flight', async () => {
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      handlerTimeoutMs: 2_000,
      routes: [{ method: 'GET', pattern: '/stuck', handler: () => new Promise<never>(() => undefined) }],
    });
    const listening = await app.listen('127.0.0.1', 0);
    const socket = net.connect(listening.port, '127.0.0.1');
    socket.on('error', () => undefined);
    try {
      socket.write('GET /stuck HTTP/1.1\r\nHost: x\r\n\r\n');
      await eventually(() => assert.equal(app.stats().inFlightRequests, 1));
      assert.equal(await listening.drain(200), 1);
    } finally {
      socket.destroy();
      listening.close();
    }
  });

  test('route patterns are checked when the app is built', () => {
    const logger = createEdgeLogger({ destination: { write: () => undefined } });
    const handler = (): Promise<never> => Promise.reject(new Error('unused'));
    assert.throws(() => createHttpApp({ logger, routes: [{ method: 'GET', pattern: 'no-slash', handler }] }));
    assert.throws(() => createHttpApp({ logger, routes: [{ method: 'GET', pattern: '/a/:id/:id', handler }] }));
    assert.throws(() =>
      createHttpApp({ logger, routes: [{ method: 'GET', pattern: '/a/:id', handler }, { method: 'GET', pattern: '/a/:other', handler }] }),
    );
  });
});

describe('fair shares: no caller can starve the others', () => {
  /** A small app: each partner may hold 2 requests, 1,000 body bytes and 1 upload; unauthenticated callers 2 requests. */
  async function sharesApp(): Promise<{ app: HttpApp; listening: Listening; base: string; release(): void }> {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const keyRing = createKeyRing();
    keyRing.setPartnerKeys('acme', [sha256Hex(acmeKey)]);
    keyRing.setPartnerKeys('other', [sha256Hex(otherKey)]);
    const guard = partnerGuard({ keyRing });
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      partnerShare: { requestsInFlightMax: 2, bodyBytesInFlightMax: 1_000, uploadsInFlightMax: 1 },
      anonymousShare: { requestsInFlightMax: 2, bodyBytesInFlightMax: 1_000 },
      bodyBytesInFlightMax: 2_500,
      // Stalled bodies hold their budget here for as long as a test needs (the rate check has its own test).
      bodyBytesPerSecondMin: 0,
      routes: [
        { method: 'GET', pattern: '/hold', guard, handler: async () => (await held, jsonResponse(200, { held: true })) },
        { method: 'GET', pattern: '/public/hold', handler: async () => (await held, jsonResponse(200, { held: true })) },
        { method: 'GET', pattern: '/quick', guard, handler: (ctx) => Promise.resolve(jsonResponse(200, { partnerId: ctx.partnerId })) },
        { method: 'GET', pattern: '/public/quick', handler: () => Promise.resolve(jsonResponse(200, { quick: true })) },
        { method: 'POST', pattern: '/echo', guard, handler: (ctx) => Promise.resolve(jsonResponse(200, { bytes: ctx.body.length })) },
        { method: 'POST', pattern: '/public/echo', handler: (ctx) => Promise.resolve(jsonResponse(200, { bytes: ctx.body.length })) },
      ],
    });
    const listening = await app.listen('127.0.0.1', 0);
    return { app, listening, base: `http://127.0.0.1:${listening.port}`, release };
  }

  /** A POST whose head and first `sentBytes` body bytes are sent, the rest never: it holds what it reserved. */
  function stalledPost(port: number, path: string, key: string | null, contentLength: number, sentBytes: number): net.Socket {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const auth = key === null ? '' : `X-API-Key: ${key}\r\n`;
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${contentLength}\r\n\r\n${'x'.repeat(sentBytes)}`);
    return socket;
  }

  test('requests in flight: a partner at its share gets 429 with Retry-After; another partner is served', async () => {
    const { app, listening, base, release } = await sharesApp();
    try {
      const holding = [fetch(`${base}/hold`, { headers: { 'x-api-key': acmeKey } }), fetch(`${base}/hold`, { headers: { 'x-api-key': acmeKey } })];
      await eventually(() => assert.equal(app.stats().inFlightRequests, 2));
      const third = await fetch(`${base}/quick`, { headers: { 'x-api-key': acmeKey } });
      assert.equal(third.status, 429);
      assert.equal(third.headers.get('retry-after'), '1');
      assert.deepEqual(await json(third), {
        code: 'rate_limited',
        reason: 'Too many requests in flight for this API key; retry after the Retry-After delay',
        retryable: true,
      });
      const other = await fetch(`${base}/quick`, { headers: { 'x-api-key': otherKey } });
      assert.deepEqual(await json(other), { partnerId: 'other' });
      const anonymous = await fetch(`${base}/public/quick`);
      assert.equal(anonymous.status, 200);
      release();
      for (const response of await Promise.all(holding)) assert.equal(response.status, 200);
      assert.equal((await fetch(`${base}/quick`, { headers: { 'x-api-key': acmeKey } })).status, 200, 'the share is back once they finish');
    } finally {
      release();
      listening.close();
    }
  });

  test('body bytes: a partner holding its share of stalled bodies gets 429; another partner and the unauthenticated share are served', async () => {
    const { app, listening, base, release } = await sharesApp();
    const stalled = [stalledPost(listening.port, '/echo', acmeKey, 900, 800)];
    try {
      await eventually(() => assert.equal(app.stats().bodyBytesInFlight, 800));
      const over = await fetch(`${base}/echo`, { method: 'POST', headers: { 'x-api-key': acmeKey }, body: 'y'.repeat(300) });
      assert.equal(over.status, 429);
      assert.equal((await json(over))['reason'], 'Too many request bytes in flight for this API key; retry after the Retry-After delay');
      assert.equal(over.headers.get('connection'), 'close');
      const other = await fetch(`${base}/echo`, { method: 'POST', headers: { 'x-api-key': otherKey }, body: 'y'.repeat(300) });
      assert.deepEqual(await json(other), { bytes: 300 });
      // Several partners together can still fill the server's budget (2,500 bytes): then it is 503 for everyone.
      stalled.push(stalledPost(listening.port, '/echo', otherKey, 900, 800), stalledPost(listening.port, '/public/echo', null, 900, 800));
      await eventually(() => assert.equal(app.stats().bodyBytesInFlight, 2_400));
      const busy = await fetch(`${base}/echo`, { method: 'POST', headers: { 'x-api-key': otherKey }, body: 'y'.repeat(150) });
      assert.equal(busy.status, 503);
      assert.deepEqual(await json(busy), { code: 'service_unavailable', reason: 'Server busy; retry later', retryable: true });
      for (const socket of stalled) socket.destroy();
      await eventually(() => assert.deepEqual(app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 }));
    } finally {
      for (const socket of stalled) socket.destroy();
      release();
      listening.close();
    }
  });

  test('unauthenticated requests share one small budget: beyond it 503, while partners are served', async () => {
    const { app, listening, base, release } = await sharesApp();
    try {
      const holding = [fetch(`${base}/public/hold`), fetch(`${base}/public/hold`)];
      await eventually(() => assert.equal(app.stats().inFlightRequests, 2));
      const third = await fetch(`${base}/public/quick`);
      assert.equal(third.status, 503);
      assert.deepEqual(await json(third), {
        code: 'service_unavailable',
        reason: 'Too many unauthenticated requests in flight; retry later',
        retryable: true,
      });
      assert.equal((await fetch(`${base}/quick`, { headers: { 'x-api-key': acmeKey } })).status, 200);
      release();
      await Promise.all(holding);
    } finally {
      release();
      listening.close();
    }
  });

  test('a body arriving slower than the minimum rate is cut with 408 after its window, and its budget is freed', async () => {
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      bodyRateWindowMs: 200,
      bodyBytesPerSecondMin: 10_000,
      routes: [{ method: 'POST', pattern: '/upload', handler: (ctx) => Promise.resolve(jsonResponse(200, { bytes: ctx.body.length })) }],
    });
    const listening = await app.listen('127.0.0.1', 0);
    try {
      // Stalled after its first bytes: the first window (the grace) brings too little.
      const stalled = await untilServerCloses(listening.port, ['POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n' + 'x'.repeat(3_000)]);
      assert.match(stalled.text, /^HTTP\/1\.1 408 Request Timeout/);
      assert.match(stalled.text, /\{"code":"request_timeout","reason":"Request body arriving too slowly","retryable":true,"request_id":"[^"]+"\}$/);
      assert.equal(stalled.closedByServer, true);
      // A trickle: a fast start does not buy a slow rest, every window must bring its share.
      const trickle = ['POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n' + 'x'.repeat(20_000), ...Array.from({ length: 200 }, () => 'x'.repeat(10))];
      const slow = await untilServerCloses(listening.port, trickle);
      assert.match(slow.text, /^HTTP\/1\.1 408 Request Timeout/);
      assert.deepEqual(app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
      // A body that keeps up is read as usual.
      const fine = await fetch(`http://127.0.0.1:${listening.port}/upload`, { method: 'POST', body: Buffer.alloc(40_000) });
      assert.deepEqual(await json(fine), { bytes: 40_000 });
    } finally {
      listening.close();
    }
  });
});

describe('minimum body rate and a busy event loop', () => {
  test('bytes that reached the socket while the event loop was busy count for the window: no false 408', async () => {
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      bodyRateWindowMs: 200,
      bodyBytesPerSecondMin: 10_000, // 2,000 bytes per window
      routes: [{ method: 'POST', pattern: '/upload', handler: (ctx) => Promise.resolve(jsonResponse(200, { bytes: ctx.body.length })) }],
    });
    const listening = await app.listen('127.0.0.1', 0);
    const socket = net.connect(listening.port, '127.0.0.1');
    socket.setNoDelay(true);
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    try {
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n' + 'x'.repeat(1_000));
      await eventually(() => assert.equal(app.stats().bodyBytesInFlight, 1_000));
      // The rest leaves at once, then this process is busy past the window's end: when the window's
      // timer fires, the rest is in the socket, not yet read.
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          socket.write('x'.repeat(49_000));
          const busyUntil = Date.now() + 500;
          while (Date.now() < busyUntil) {
            // a GC pause, a burst of work
          }
          resolve();
        }, 0),
      );
      await eventually(() => assert.match(received, /^HTTP\/1\.1 \d{3}/));
      assert.match(received, /^HTTP\/1\.1 200 OK[\s\S]*\{"bytes":50000\}$/);
    } finally {
      socket.destroy();
      listening.close();
    }
  });
});

describe('streamed bodies (uploads)', () => {
  interface UploadApp {
    app: HttpApp;
    listening: Listening;
    base: string;
    /** What each upload's handler saw: bytes read and how its stream ended. */
    seen: { bytes: number; ending: string }[];
  }

  /** `/upload` reads its body as a stream, pausing 2 ms every 64 KiB (a store writing parts), and answers the SHA-256. */
  async function uploadApp(): Promise<UploadApp> {
    const keyRing = createKeyRing();
    keyRing.setPartnerKeys('acme', [sha256Hex(acmeKey)]);
    keyRing.setPartnerKeys('other', [sha256Hex(otherKey)]);
    const guard = partnerGuard({ keyRing });
    const seen: UploadApp['seen'] = [];
    const app = createHttpApp({
      logger: createEdgeLogger({ destination: { write: () => undefined } }),
      bodyRateWindowMs: 1_000,
      bodyBytesPerSecondMin: 10_000,
      partnerShare: { uploadsInFlightMax: 1 },
      routes: [
        {
          method: 'POST',
          pattern: '/upload',
          guard,
          bodyMode: 'streamed',
          bodyBytesMax: 4 * 1024 * 1024,
          handler: async (ctx) => {
            const hash = createHash('sha256');
            let bytes = 0;
            let sinceRest = 0;
            try {
              for await (const chunk of ctx.bodyStream ?? []) {
                const data = chunk as Buffer;
                hash.update(data);
                bytes += data.length;
                sinceRest += data.length;
                if (sinceRest >= 64 * 1024) {
                  sinceRest = 0;
                  await sleep(2);
                }
              }
            } catch (error) {
              seen.push({ bytes, ending: error instanceof Error ? error.message : String(error) });
              throw error;
            }
            seen.push({ bytes, ending: 'end' });
            return jsonResponse(200, { bytes, sha256: hash.digest('hex'), buffered: ctx.body.length });
          },
        },
        { method: 'POST', pattern: '/echo', guard, handler: (ctx) => Promise.resolve(jsonResponse(200, { bytes: ctx.body.length })) },
        {
          method: 'POST',
          pattern: '/refuse-unread',
          guard,
          bodyMode: 'streamed',
          handler: () => Promise.resolve(errorResponse('unsupported_media_type', 'Not this type')),
        },
      ],
    });
    const listening = await app.listen('127.0.0.1', 0);
    return { app, listening, base: `http://127.0.0.1:${listening.port}`, seen };
  }

  test('the handler reads the whole body as it arrives, with a length or chunked', async () => {
    const { app, listening, base } = await uploadApp();
    try {
      const bytes = randomBytes(3 * 1024 * 1024);
      const expected = createHash('sha256').update(bytes).digest('hex');
      const sized = await fetch(`${base}/upload`, { method: 'POST', headers: { 'x-api-key': acmeKey }, body: bytes });
      assert.deepEqual(await json(sized), { bytes: bytes.length, sha256: expected, buffered: 0 });
      let offset = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= bytes.length) return controller.close();
          controller.enqueue(bytes.subarray(offset, offset + 100_000));
          offset += 100_000;
        },
      });
      const init: RequestInit & { duplex: 'half' } = { method: 'POST', headers: { 'x-api-key': acmeKey }, body: stream, duplex: 'half' };
      const chunked = await fetch(`${base}/upload`, init);
      assert.deepEqual(await json(chunked), { bytes: bytes.length, sha256: expected, buffered: 0 });
      assert.deepEqual(app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
    } finally {
      listening.close();
    }
  });

  test('a handler that answers without reading its streamed body: the answer is sent and the connection closed', async () => {
    const { app, listening } = await uploadApp();
    try {
      const seen = await untilServerCloses(listening.port, [
        `POST /refuse-unread HTTP/1.1\r\nHost: x\r\nX-API-Key: ${acmeKey}\r\nContent-Length: 50000\r\n\r\n${'z'.repeat(10_000)}`,
      ]);
      assert.match(seen.text, /^HTTP\/1\.1 415 Unsupported Media Type[\s\S]*"reason":"Not this type"/);
      assert.equal(seen.closedByServer, true);
      await eventually(() => assert.deepEqual(app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 }));
    } finally {
      listening.close();
    }
  });

  test('uploads have their own slots: a partner at its upload share gets 429 for another upload, not for its JSON calls', async () => {
    const { app, listening, base, seen } = await uploadApp();
    const socket = net.connect(listening.port, '127.0.0.1');
    socket.on('error', () => undefined);
    try {
      socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\nX-API-Key: ${acmeKey}\r\nContent-Length: 1000000\r\n\r\n${'u'.repeat(5_000)}`);
      await eventually(() => assert.equal(app.stats().uploadsInFlight, 1));
      const second = await fetch(`${base}/upload`, { method: 'POST', headers: { 'x-api-key': acmeKey }, body: 'small' });
      assert.equal(second.status, 429);
      assert.equal((await json(second))['reason'], 'Too many uploads in flight for this API key; retry after the Retry-After delay');
      assert.deepEqual(await json(await fetch(`${base}/echo`, { method: 'POST', headers: { 'x-api-key': acmeKey }, body: 'json' })), { bytes: 4 });
      const otherUpload = await fetch(`${base}/upload`, { method: 'POST', headers: { 'x-api-key': otherKey }, body: 'other' });
      assert.equal((await json(otherUpload))['bytes'], 5);
      // The stalled upload is cut by the rate check: the handler sees its stream fail, the slot is free again.
      await eventually(() => assert.equal(app.stats().uploadsInFlight, 0));
      await eventually(() => assert.ok(seen.some((entry) => entry.ending === 'request body cut: too_slow' && entry.bytes === 5_000), JSON.stringify(seen)));
      const again = await fetch(`${base}/upload`, { method: 'POST', headers: { 'x-api-key': acmeKey }, body: 'again' });
      assert.equal(again.status, 200);
    } finally {
      socket.destroy();
      listening.close();
    }
  });

  test('a streamed body over the cap → 413 as it crosses it; a client gone mid-upload ends the handler\'s stream', async () => {
    const { app, listening, base, seen } = await uploadApp();
    try {
      let sentBytes = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sentBytes >= 64 * 1024 * 1024) return controller.close();
          sentBytes += 256 * 1024;
          controller.enqueue(new Uint8Array(256 * 1024));
        },
      });
      const init: RequestInit & { duplex: 'half' } = { method: 'POST', headers: { 'x-api-key': acmeKey }, body: stream, duplex: 'half' };
      const response = await fetch(`${base}/upload`, init);
      assert.equal(response.status, 413);
      assert.equal((await json(response))['reason'], `Request body exceeds ${4 * 1024 * 1024} bytes`);
      assert.ok(sentBytes < 64 * 1024 * 1024, 'the server stopped the upload early');
      await eventually(() => assert.ok(seen.some((entry) => entry.ending === 'request body cut: too_large')));

      const socket = net.connect(listening.port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\nX-API-Key: ${acmeKey}\r\nContent-Length: 1000000\r\n\r\n${'u'.repeat(7_000)}`);
      await eventually(() => assert.equal(app.stats().uploadsInFlight, 1));
      socket.destroy();
      await eventually(() => assert.ok(seen.some((entry) => entry.ending === 'request body cut: aborted'), JSON.stringify(seen)));
      await eventually(() => assert.deepEqual(app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 }));
    } finally {
      listening.close();
    }
  });
});

describe('multipart and magic bytes', () => {
  function kycForm(file: Blob, filename = 'id.png'): FormData {
    const form = new FormData();
    form.append('userId', 'user-1');
    form.append('fullName', 'Fulano de Tal');
    form.append('document', file, filename);
    return form;
  }
  const auth = { 'x-api-key': acmeKey };

  test('happy path: fields and one document', async () => {
    const response = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: kycForm(new Blob([pngBytes], { type: 'image/png' }), '../../etc/id.png') });
    assert.equal(response.status, 201);
    assert.deepEqual(await json(response), {
      status: 'APPROVED',
      fields: { userId: 'user-1', fullName: 'Fulano de Tal' },
      type: 'image/png',
      filename: 'id.png',
      size: pngBytes.length,
    });
  });

  test('declared type that does not match the bytes → 400', async () => {
    const response = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: kycForm(new Blob([jpegBytes], { type: 'image/png' })) });
    assert.equal(response.status, 400);
    const body = await json(response);
    assert.equal(body['code'], 'invalid_request');
    assert.equal(body['reason'], 'Document declared as image/png but its content is image/jpeg');
  });

  test('broken multipart → 400 invalid_request with a reason', async () => {
    const cases: { contentType: string; body: string; reason: RegExp }[] = [
      { contentType: 'multipart/form-data; boundary=XYZ', body: '--XYZ\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue', reason: /Malformed multipart body/ },
      { contentType: 'multipart/form-data', body: 'garbage', reason: /boundary/ },
      { contentType: 'multipart/form-data; boundary=XYZ', body: 'no parts at all', reason: /Malformed multipart body|file part is required/ },
      {
        contentType: 'multipart/form-data; boundary=XYZ',
        body: '--XYZ\r\nContent-Disposition: form-data; name="userId"\r\n\r\nu\r\n--XYZ--\r\n',
        reason: /A file part is required/,
      },
      {
        // Cut off inside a file part under the wrong name: refused for the name, nothing thrown later.
        contentType: 'multipart/form-data; boundary=XYZ',
        body: '--XYZ\r\nContent-Disposition: form-data; name="photo"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG',
        reason: /The file part must be named 'document'/,
      },
    ];
    for (const { contentType, body, reason } of cases) {
      const response = await fetch(`${h.base}/kyc`, { method: 'POST', headers: { ...auth, 'content-type': contentType }, body });
      assert.equal(response.status, 400, body);
      const parsed = await json(response);
      assert.equal(parsed['code'], 'invalid_request');
      assert.match(String(parsed['reason']), reason);
    }
    const notMultipart = await fetch(`${h.base}/kyc`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(notMultipart.status, 415);
  });

  test('caps: two files, oversized file, oversized field, wrong file field, body cap', async () => {
    const twoFiles = kycForm(new Blob([pngBytes], { type: 'image/png' }));
    twoFiles.append('other', new Blob([pngBytes], { type: 'image/png' }), 'b.png');
    const two = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: twoFiles });
    assert.equal(two.status, 400);
    assert.equal((await json(two))['reason'], 'Exactly one file part is expected');

    const big = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: kycForm(new Blob([pngBytes, Buffer.alloc(5 * 1024)], { type: 'image/png' })) });
    assert.equal(big.status, 413);
    assert.equal((await json(big))['reason'], 'Document exceeds 4096 bytes');

    const longField = kycForm(new Blob([pngBytes], { type: 'image/png' }));
    longField.append('address', 'x'.repeat(100));
    const long = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: longField });
    assert.equal(long.status, 400);
    assert.equal((await json(long))['reason'], "Field 'address' exceeds 64 bytes");

    const wrongName = new FormData();
    wrongName.append('photo', new Blob([pngBytes], { type: 'image/png' }), 'a.png');
    const wrong = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: wrongName });
    assert.equal(wrong.status, 400);

    const huge = await fetch(`${h.base}/kyc`, { method: 'POST', headers: auth, body: kycForm(new Blob([pngBytes, Buffer.alloc(20 * 1024)], { type: 'image/png' })) });
    assert.equal(huge.status, 413);
    assert.equal((await json(huge))['reason'], 'Request body exceeds 8192 bytes');
  });
});

describe('authentication and rate limiting', () => {
  test('X-API-Key and Authorization: Bearer both authenticate, with the same scoping', async () => {
    const viaHeader = await fetch(`${h.base}/transaction/t1`, { headers: { 'x-api-key': acmeKey } });
    assert.equal((await json(viaHeader))['partnerId'], 'acme');
    const viaBearer = await fetch(`${h.base}/transaction/t1`, { headers: { authorization: `Bearer ${acmeSecondKey}` } });
    assert.equal((await json(viaBearer))['partnerId'], 'acme');
    const lowerScheme = await fetch(`${h.base}/transaction/t1`, { headers: { authorization: `bearer ${otherKey}` } });
    assert.equal((await json(lowerScheme))['partnerId'], 'other');
  });

  test('missing, wrong, malformed or conflicting credentials → 401 authentication_failed', async () => {
    const cases: Record<string, string>[] = [
      {},
      { 'x-api-key': 'wrong-key' },
      { 'x-api-key': acmeKey.slice(0, -1) },
      { authorization: `Basic ${Buffer.from(`u:${acmeKey}`).toString('base64')}` },
      { authorization: 'Bearer' },
      { 'x-api-key': acmeKey, authorization: `Bearer ${otherKey}` },
      { 'x-api-key': opsKey },
      { 'x-api-key': 'k'.repeat(300) },
    ];
    for (const headers of cases) {
      const response = await fetch(`${h.base}/transaction/t1`, { headers });
      assert.equal(response.status, 401, JSON.stringify(headers));
      assert.equal(response.headers.get('www-authenticate'), 'Bearer');
      const body = await json(response);
      assert.equal(body['code'], 'authentication_failed');
      assert.equal(body['retryable'], false);
    }
  });

  test('the ops endpoint takes only X-OPS-API-KEY', async () => {
    const ok = await fetch(`${h.base}/ops/reconcile`, { method: 'POST', headers: { 'x-ops-api-key': opsKey } });
    assert.equal(ok.status, 200);
    const partnerKey = await fetch(`${h.base}/ops/reconcile`, { method: 'POST', headers: { 'x-ops-api-key': acmeKey } });
    assert.equal(partnerKey.status, 401);
    const wrongHeader = await fetch(`${h.base}/ops/reconcile`, { method: 'POST', headers: { 'x-api-key': opsKey } });
    assert.equal(wrongHeader.status, 401);
  });

  test('an unauthenticated upload is refused before its body is read', async () => {
    const response = await fetch(`${h.base}/kyc`, { method: 'POST', body: Buffer.alloc(6 * 1024) });
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('connection'), 'close');
  });

  test('per-partner token bucket → 429 rate_limited with Retry-After', async () => {
    const headers = { 'x-api-key': limitedKey };
    assert.equal((await fetch(`${h.base}/limited`, { method: 'POST', headers })).status, 200);
    assert.equal((await fetch(`${h.base}/limited`, { method: 'POST', headers })).status, 200);
    const limited = await fetch(`${h.base}/limited`, { method: 'POST', headers });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '2');
    assert.deepEqual(await json(limited), {
      code: 'rate_limited',
      reason: 'Rate limit reached; retry after the Retry-After delay',
      retryable: true,
    });
    // Another partner is not affected; the limited one recovers when the (fake) clock moves on.
    assert.equal((await fetch(`${h.base}/limited`, { method: 'POST', headers: { 'x-api-key': acmeKey } })).status, 200);
    h.advanceClockMs(2_000);
    assert.equal((await fetch(`${h.base}/limited`, { method: 'POST', headers })).status, 200);
  });
});

describe('access log', () => {
  test('one line per request with the fixed fields; never keys, bodies or queries', async () => {
    const before = h.logLines.length;
    await fetch(`${h.base}/transaction/t9?taxId=12345678909`, { headers: { 'x-api-key': acmeKey, 'x-request-id': 'log-check-1' } });
    await fetch(`${h.base}/echo`, { method: 'POST', headers: { authorization: `Bearer ${acmeKey}` }, body: '{"tax_id":"98765432100"}' });
    const lines = h.logLines.slice(before);
    assert.equal(lines.length, 2);
    const first = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    assert.equal(first['level'], 30);
    assert.equal(first['msg'], 'request');
    assert.equal(first['method'], 'GET');
    assert.equal(first['route'], '/transaction/:id');
    assert.equal(first['status'], 200);
    assert.equal(first['requestId'], 'log-check-1');
    assert.equal(first['partnerId'], 'acme');
    assert.equal(typeof first['durationMs'], 'number');
    const all = h.logLines.join('\n');
    for (const secret of [acmeKey, acmeSecondKey, otherKey, opsKey, '12345678909', '98765432100']) {
      assert.ok(!all.includes(secret), `log leaks ${secret}`);
    }
  });

  test('the logger redacts credential headers in any line that carries them', () => {
    const lines: string[] = [];
    const logger = createEdgeLogger({ destination: { write: (line: string) => void lines.push(line) } });
    logger.info({ headers: { 'x-api-key': acmeKey, authorization: `Bearer ${acmeKey}`, 'x-ops-api-key': opsKey, 'x-service-webhook-secret': 's3cr3t', accept: '*/*' } }, 'x');
    logger.info({ req: { headers: { 'x-api-key': acmeKey } } }, 'y');
    const text = lines.join('');
    for (const secret of [acmeKey, opsKey, 's3cr3t']) assert.ok(!text.includes(secret), secret);
    assert.match(text, /"accept":"\*\/\*"/);
  });
});

describe('robustness', () => {
  test('2,000 sequential requests with random garbage produce no 5xx', async () => {
    let seed = 0x5eed1234;
    const random = (): number => {
      // mulberry32: a seeded generator so a failure is reproducible.
      seed = (seed + 0x6d2b79f5) | 0;
      let t = seed;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
    const printable = (maxLength: number): string =>
      Array.from({ length: Math.floor(random() * maxLength) }, () => String.fromCharCode(0x20 + Math.floor(random() * 95))).join('');
    const segment = (): string => encodeURIComponent(printable(12)) || 'x';
    // Each path with the method its route serves; most requests use it, so they get past routing.
    const targets: [() => string, string][] = [
      [() => '/echo', 'POST'],
      [() => '/kyc', 'POST'],
      [() => '/limited', 'POST'],
      [() => '/ops/reconcile', 'POST'],
      [() => `/echo?${printable(40).replace(/[#\s]/g, '')}`, 'POST'],
      [() => '/public/ping', 'GET'],
      [() => `/transaction/${segment()}`, 'GET'],
      [() => `/transactions/${segment()}`, 'GET'],
      [() => '/transactions/list', 'GET'],
      [() => `/${segment()}/${segment()}`, 'GET'],
    ];
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
    const contentTypes = ['application/json', 'multipart/form-data; boundary=b', 'multipart/form-data', 'text/plain', 'image/png', printable(30)];
    const keys = [acmeKey, limitedKey, 'garbage', printable(40), `Bearer ${acmeKey}`];
    const statuses = new Map<number, number>();
    for (let i = 0; i < 2_000; i += 1) {
      const [path, routeMethod] = pick(targets);
      const method = random() < 0.8 ? routeMethod : pick(methods);
      const headers: Record<string, string> = {};
      if (random() < 0.5) headers['x-api-key'] = pick(keys).trim() || 'k';
      if (random() < 0.3) headers['authorization'] = `${pick(['Bearer', 'Basic', 'bearer', ''])} ${pick(keys)}`.trim() || 'x';
      if (random() < 0.6) headers['content-type'] = pick(contentTypes).trim() || 'a/b';
      if (random() < 0.3) headers['x-request-id'] = printable(200).trim() || 'r';
      if (random() < 0.3) headers[`x-${segment().replace(/[^a-z]/gi, '') || 'garbage'}`] = printable(50).trim() || 'v';
      const sendBody = method !== 'GET' && method !== 'HEAD' && random() < 0.8;
      const body = sendBody
        ? random() < 0.5
          ? Buffer.from(Array.from({ length: Math.floor(random() * 2048) }, () => Math.floor(random() * 256)))
          : `--b\r\nContent-Disposition: form-data; name="document"; filename="a"\r\nContent-Type: image/png\r\n\r\n${printable(200)}\r\n--b--\r\n`
        : undefined;
      const response = await fetch(`${h.base}${path()}`, { method, headers, ...(body === undefined ? {} : { body }) });
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      assert.ok(response.status < 500, `request ${i}: ${method} → ${response.status}`);
    }
    assert.ok(statuses.size >= 5, `a varied run: ${JSON.stringify([...statuses])}`);
    assert.deepEqual(h.app.stats(), { inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
  });
});
