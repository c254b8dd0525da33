// Baseline 2, the transport's ceiling (edge half): uWebSockets.js → Redis stream → a separate
// worker process (transport-worker.ts) → reply stream → the waiting HTTP response. No business
// logic anywhere: the worker answers the same bytes POST /quote answers. Shaped like our
// request/reply over streams: one command stream, one reply stream per edge, XADD through an
// auto-pipelined ioredis client, one blocking XREAD loop on the reply stream.
// Env: PORT, REDIS_URL, BENCH_STREAM_PREFIX. Prints `listening <port>` when bound.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import uWS from 'uWebSockets.js';

const bodyBytesMax = 64 * 1024;
const pendingMax = 20_000;
const replyTimeoutMs = 10_000;
const readCount = 1_000;
const readBlockMs = 1_000;
const streamLengthMax = 100_000;

const port = Number(process.env['PORT'] ?? '0');
const redisUrl = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const prefix = process.env['BENCH_STREAM_PREFIX'] ?? 'bench-transport:';
const commandStream = `${prefix}cmd`;
const replyStream = `${prefix}reply:${randomBytes(4).toString('hex')}`;

interface Pending {
  readonly res: uWS.HttpResponse;
  aborted: boolean;
  readonly timer: NodeJS.Timeout;
}

const client = new Redis(redisUrl, { enableAutoPipelining: true, maxRetriesPerRequest: 3 });
const reader = new Redis(redisUrl, { maxRetriesPerRequest: null });
const pending = new Map<string, Pending>();
let nextId = 0;
let running = true;

function answer(entry: Pending, status: string, body: string): void {
  clearTimeout(entry.timer);
  if (entry.aborted) return;
  entry.res.cork(() => {
    entry.res.writeStatus(status).writeHeader('content-type', 'application/json').end(body);
  });
}

async function replyLoop(): Promise<void> {
  // The reply stream is this process's own (random name): reading it from the start misses nothing.
  let lastId = '0';
  while (running) {
    const result = (await reader.xread('COUNT', readCount, 'BLOCK', readBlockMs, 'STREAMS', replyStream, lastId)) as
      | [string, [string, string[]][]][]
      | null;
    if (result === null) continue;
    for (const [, entries] of result) {
      for (const [id, fields] of entries) {
        lastId = id;
        const requestId = fields[1] ?? '';
        const entry = pending.get(requestId);
        if (entry === undefined) continue;
        pending.delete(requestId);
        answer(entry, '200 OK', fields[3] ?? '');
      }
    }
  }
}

const app = uWS.App();
app.any('/*', (res) => {
  const chunks: Buffer[] = [];
  let received = 0;
  const requestId = String((nextId += 1));
  let entry: Pending | null = null;
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
    if (entry !== null) entry.aborted = true;
  });
  res.onData((chunk, isLast) => {
    received += chunk.byteLength;
    if (received > bodyBytesMax || aborted) return;
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!isLast) return;
    if (pending.size >= pendingMax) {
      res.cork(() => res.writeStatus('503 Service Unavailable').end('{"code":"overloaded"}'));
      return;
    }
    const created: Pending = {
      res,
      aborted,
      timer: setTimeout(() => {
        pending.delete(requestId);
        answer(created, '503 Service Unavailable', '{"code":"timeout"}');
      }, replyTimeoutMs),
    };
    entry = created;
    pending.set(requestId, created);
    client
      .xadd(commandStream, 'MAXLEN', '~', streamLengthMax, '*', 'id', requestId, 'reply', replyStream, 'body', Buffer.concat(chunks))
      .catch(() => {
        pending.delete(requestId);
        answer(created, '503 Service Unavailable', '{"code":"bus_error"}');
      });
  });
});
app.listen('127.0.0.1', port, (token) => {
  if (token === false) {
    process.stderr.write(`transport edge could not listen on ${port}\n`);
    process.exit(1);
  }
  process.stdout.write(`listening ${port}\n`);
});
replyLoop().catch((error: unknown) => {
  if (running) {
    process.stderr.write(`reply loop failed: ${String(error)}\n`);
    process.exit(1);
  }
});
process.on('SIGTERM', () => {
  running = false;
  reader.disconnect();
  client.disconnect();
  process.exit(0);
});
