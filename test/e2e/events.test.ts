// GET /events through the real service: a partner that missed webhooks (here: has no destination
// at all) catches up on its events in order, from the event log the dispatcher records.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEnv } from '../../src/config/env.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually } from '../support/eventually.ts';
import { checkedFetch } from '../support/openapi-validation.ts';

const demoKey = 'demo-key-for-the-events-test-0123456789';
let dir: string;
let service: RunningService;
let base: string;

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await checkedFetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': demoKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Record<string, unknown>;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'events-'));
  service = await startService(readEnv({ PORT: '0', GRPC_PORT: '0', ADMIN_TLS: 'off', DATA_DIR: dir, LOG_LEVEL: 'silent', DEMO_API_KEY: demoKey, SHARDS: '8' }));
  base = `http://127.0.0.1:${service.port}`;
});

after(async () => {
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('events of accepted transactions are listed in order with increasing sequence numbers', async () => {
  const ids: string[] = [];
  for (let index = 0; index < 3; index += 1) {
    const quote = await post('/quote', { amount: 20_000, crypto_currency: 'USDC', network: 'STELLAR', payment_method: 'BREB', target_currency: 'COP' });
    const accepted = await post('/transaction', { quote_id: quote.quote_id, user_id: `events-user-${index}`, account_number: '@maria.perez' });
    ids.push(String(accepted.id));
  }
  const page = await eventually(async () => {
    const response = await checkedFetch(`${base}/events?after=0&limit=10`, { headers: { 'x-api-key': demoKey } });
    assert.equal(response.status, 200);
    const body = (await response.json()) as { events: Array<{ sequence: number; event: string; data: { id: string; status: string } }> };
    assert.equal(body.events.length, 3, 'three transaction.created events recorded');
    return body;
  });
  assert.deepEqual(page.events.map((event) => event.data.id), ids);
  assert.ok(page.events.every((event) => event.event === 'transaction.created' && event.data.status === 'AWAITING_PAYMENT'));
  const sequences = page.events.map((event) => event.sequence);
  assert.deepEqual([...sequences].sort((a, b) => a - b), sequences);
  assert.equal(new Set(sequences).size, 3);
  const rest = await checkedFetch(`${base}/events?after=${sequences[1]}&limit=10`, { headers: { 'x-api-key': demoKey } });
  const restBody = (await rest.json()) as { events: Array<{ data: { id: string } }> };
  assert.deepEqual(restBody.events.map((event) => event.data.id), [ids[2]]);
  const unauthenticated = await checkedFetch(`${base}/events?after=0`);
  assert.equal(unauthenticated.status, 401);
});
