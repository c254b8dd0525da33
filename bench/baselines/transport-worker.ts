// Baseline 2, the transport's ceiling (worker half): reads the command stream through a consumer
// group, answers each entry on its reply stream with the same bytes POST /quote answers, and
// acknowledges it, one pipeline per batch. No business logic, no store.
// Env: REDIS_URL, BENCH_STREAM_PREFIX, BENCH_RESPONSE_BODY. Prints `ready` once the group exists.
import { Redis } from 'ioredis';

const readCount = 1_000;
const readBlockMs = 1_000;
const streamLengthMax = 100_000;
const group = 'bench-workers';

const redisUrl = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const prefix = process.env['BENCH_STREAM_PREFIX'] ?? 'bench-transport:';
const responseBody = process.env['BENCH_RESPONSE_BODY'] ?? '{}';
const commandStream = `${prefix}cmd`;
const consumer = `worker-${process.pid}`;

const reader = new Redis(redisUrl, { maxRetriesPerRequest: null });
const writer = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
let running = true;

async function ensureGroup(): Promise<void> {
  try {
    await writer.xgroup('CREATE', commandStream, group, '$', 'MKSTREAM');
  } catch (error) {
    if (!String(error).includes('BUSYGROUP')) throw error;
  }
}

async function loop(): Promise<void> {
  while (running) {
    const result = (await reader.xreadgroup('GROUP', group, consumer, 'COUNT', readCount, 'BLOCK', readBlockMs, 'STREAMS', commandStream, '>')) as
      | [string, [string, string[]][]][]
      | null;
    if (result === null) continue;
    const batch = writer.pipeline();
    const ids: string[] = [];
    for (const [, entries] of result) {
      for (const [id, fields] of entries) {
        ids.push(id);
        const requestId = fields[1] ?? '';
        const replyTo = fields[3] ?? '';
        batch.xadd(replyTo, 'MAXLEN', '~', streamLengthMax, '*', 'id', requestId, 'body', responseBody);
      }
    }
    if (ids.length > 0) batch.xack(commandStream, group, ...ids);
    await batch.exec();
  }
}

ensureGroup()
  .then(() => {
    process.stdout.write('ready\n');
    return loop();
  })
  .catch((error: unknown) => {
    if (running) {
      process.stderr.write(`transport worker failed: ${String(error)}\n`);
      process.exit(1);
    }
  });
process.on('SIGTERM', () => {
  running = false;
  reader.disconnect();
  writer.disconnect();
  process.exit(0);
});
