// The per-partner rate limit is configured by the environment: past the burst a partner gets 429
// with Retry-After, while unauthenticated corridors are unaffected.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEnv } from '../../src/config/env.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { checkedFetch } from '../support/openapi-validation.ts';

const demoKey = 'demo-key-for-the-rate-limit-test-0123';
let dir: string;
let service: RunningService;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rate-'));
  service = await startService(
    readEnv({
      PORT: '0', GRPC_PORT: '0', ADMIN_TLS: 'off', DATA_DIR: dir, LOG_LEVEL: 'silent', DEMO_API_KEY: demoKey, SHARDS: '4',
      EDGE_RATE_LIMIT_PER_SECOND: '0.5', EDGE_RATE_LIMIT_BURST: '3',
    }),
  );
});

after(async () => {
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('EDGE_RATE_LIMIT_* sets the bucket: the 4th request in a burst of 3 is 429 with Retry-After', async () => {
  const base = `http://127.0.0.1:${service.port}`;
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let index = 0; index < 4; index += 1) {
    const response = await checkedFetch(`${base}/transaction/00000000-0000-4000-8000-000000000000`, { headers: { 'x-api-key': demoKey } });
    statuses.push(response.status);
    if (response.status === 429) {
      retryAfter = response.headers.get('retry-after');
      const body = (await response.json()) as { code: string; reason: string };
      assert.equal(body.code, 'rate_limited');
      assert.ok(body.reason.length > 0);
    } else {
      await response.arrayBuffer();
    }
  }
  assert.deepEqual(statuses, [404, 404, 404, 429]);
  assert.ok(retryAfter !== null && Number(retryAfter) >= 1);
  assert.equal((await checkedFetch(`${base}/public/corridors`)).status, 200);
});
