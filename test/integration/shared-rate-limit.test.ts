// The per-partner rate limit is shared by every edge on one Redis: two edges together admit the
// bucket once (the N+1th request across both is 429 with Retry-After), whatever the order or the
// concurrency, while another partner's bucket is untouched. When Redis stops answering, an edge
// falls back to its own bucket instead of refusing partners for the limiter's outage.
//
// The service runs every role on a private Redis (its own edge is edge A); edge B is a second edge
// role on the same Redis and key prefix. The refill is slow (one token per 100 s) so the numbers
// below do not move during a test; each test uses its own partner (its own bucket).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEnv } from '../../src/config/env.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { startEdgeRole, type EdgeRole } from '../../src/service/edge-role.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';

const burst = 6;
const rateLimit = { ratePerSecond: 0.01, burst };
const partnerIds = ['alternating', 'in-runs', 'concurrent', 'other', 'outage'] as const;
const keys: Record<string, string> = Object.fromEntries(partnerIds.map((id) => [id, `${id.replace('-', '')}_${randomBytes(20).toString('hex')}`]));
const unknownTransaction = '/transaction/00000000-0000-4000-8000-000000000000';

let dir: string;
let redis: PrivateRedis | null = null;
let service: RunningService | null = null;
let edgeB: EdgeRole | null = null;
let baseA: string;
let baseB: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shared-rate-'));
  const partnersFile = join(dir, 'partners.json');
  const partners = partnerIds.map((id) => ({ id, name: id, apiKeySha256: [sha256Hex(keys[id] ?? '')], kycEnabled: false, kybApproved: true }));
  writeFileSync(partnersFile, JSON.stringify({ partners }));
  redis = await startRedis();
  service = await startService(
    readEnv({
      PORT: '0',
      GRPC_PORT: '0',
      ADMIN_TLS: 'off',
      PAYOUT_GRPC_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      PARTNERS_FILE: partnersFile,
      SANDBOX: '1',
      SHARDS: '4',
      LOG_LEVEL: 'silent',
      REDIS_URL: redis.url,
      KEY_PREFIX: randomKeyPrefix('rate'),
      EDGE_RATE_LIMIT_PER_SECOND: String(rateLimit.ratePerSecond),
      EDGE_RATE_LIMIT_BURST: String(burst),
    }),
  );
  edgeB = await startEdgeRole(service.ctx, {}, { rateLimit });
  assert.ok(service.port !== null);
  baseA = `http://127.0.0.1:${service.port}`;
  baseB = `http://127.0.0.1:${edgeB.port}`;
});

after(async () => {
  try {
    await edgeB?.stop(1_000);
    await service?.stop();
  } finally {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function lookup(base: string, partnerId: string): Promise<{ status: number; retryAfter: string | null }> {
  const response = await fetch(`${base}${unknownTransaction}`, { headers: { 'x-api-key': keys[partnerId] ?? '' }, signal: AbortSignal.timeout(30_000) });
  await response.arrayBuffer();
  return { status: response.status, retryAfter: response.headers.get('retry-after') };
}

test('alternating between two edges: the N+1th request across both is 429 with Retry-After', async () => {
  const statuses: number[] = [];
  for (let index = 0; index < burst; index += 1) statuses.push((await lookup(index % 2 === 0 ? baseA : baseB, 'alternating')).status);
  assert.deepEqual(statuses, new Array<number>(burst).fill(404), 'the first N are answered (404: no such transaction)');
  const over = await lookup(baseA, 'alternating');
  assert.equal(over.status, 429);
  assert.ok(Number(over.retryAfter) >= 1);
  assert.equal((await lookup(baseB, 'alternating')).status, 429, 'the other edge refuses too');
});

test('in runs (three on one edge, then the rest on the other): still exactly N', async () => {
  const statuses: number[] = [];
  for (const base of [baseA, baseA, baseA, baseB, baseB, baseB, baseB, baseA]) statuses.push((await lookup(base, 'in-runs')).status);
  assert.deepEqual(statuses, [...new Array<number>(burst).fill(404), 429, 429]);
});

test('concurrent requests on both edges: never more than the bucket in all', async () => {
  const answers = await Promise.all(Array.from({ length: 4 * burst }, (_, index) => lookup(index % 2 === 0 ? baseA : baseB, 'concurrent')));
  const admitted = answers.filter((answer) => answer.status === 404).length;
  assert.equal(admitted, burst, JSON.stringify(answers.map((answer) => answer.status)));
  assert.ok(answers.every((answer) => answer.status === 404 || answer.status === 429));
});

test('another partner’s bucket is its own', async () => {
  assert.equal((await lookup(baseA, 'other')).status, 404);
  assert.equal((await lookup(baseB, 'other')).status, 404);
});

test('Redis not answering: the edge falls back to its own bucket rather than refusing', async () => {
  assert.ok(redis !== null);
  process.kill(redis.pid, 'SIGSTOP');
  try {
    const answer = await lookup(baseB, 'outage');
    assert.equal(answer.status, 404, 'admitted by the edge’s own bucket');
  } finally {
    process.kill(redis.pid, 'SIGCONT');
  }
});
