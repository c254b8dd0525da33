// A payout is executed at most once per transaction, even when the payout worker dies mid-payout:
// a payout role runs in its own process (Redis bus and the embedded store shared with this test),
// is killed with SIGKILL after the rail has paid but before it could report, and a new process
// takes the row over once the dead worker's claim lapses. The rail's ledger shows one payout,
// liquidity went down once, and the transaction completes with that payout's reference.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import type { ActorClient } from '../../src/actors/client.ts';
import { outboxTopicPayouts } from '../../src/actors/transaction-actor.ts';
import { readEnv } from '../../src/config/env.ts';
import { decimalFromExactString, subtract, toFixedString } from '../../src/domain/money.ts';
import { payoutIdempotencyKey } from '../../src/rails/payout-worker.ts';
import { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { eventually } from '../support/eventually.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { accept, createQuote, depositExact, transactionDoc } from '../support/payout-child.ts';
import { teardown } from '../support/teardown.ts';

const shards = '8';
let redis: PrivateRedis;
let dataDir: string;
let keyPrefix: string;
let service: RunningService;
let client: ActorClient;
const children = new Set<ChildProcess>();

async function startPayoutChild(latencyMs: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../support/payout-child.ts')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      DATA_DIR: dataDir,
      KEY_PREFIX: keyPrefix,
      SHARDS: shards,
      PAYOUT_CHILD_LATENCY_MS: String(latencyMs),
      PAYOUT_CHILD_LEASE_MS: '2500',
    },
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`payout child not ready: ${stderr}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`payout child exited (${code}): ${stderr}`));
    });
  });
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

before(async () => {
  redis = await startRedis();
  dataDir = mkdtempSync(join(tmpdir(), 'payout-crash-'));
  keyPrefix = randomKeyPrefix();
  service = await startService(readEnv({ REDIS_URL: redis.url, DATA_DIR: dataDir, KEY_PREFIX: keyPrefix, SHARDS: shards, ROLE: 'shard', LOG_LEVEL: 'silent' }));
  client = await service.ctx.actorClient('test');
});

after(() => teardown(
  ...[...children].map((child) => () => kill(child)),
  () => service?.stop(),
  () => redis?.stop(),
  () => { rmSync(dataDir, { recursive: true, force: true }); },
));

test('a payout worker SIGKILLed after the rail paid: the next worker reports the same payout; paid exactly once', async () => {
  const store = service.ctx.store;
  // The test's view of the sandbox provider: the ledger and liquidity in the shared store.
  const provider = new SandboxRail({ store, clock: service.ctx.clock, settingsCacheMs: 0 });
  const liquidityBefore = decimalFromExactString('1000000.00');
  await provider.setLiquidity('BREB', liquidityBefore);

  const quote = await createQuote(client, store, { kind: 'payout', amount: 98_765.43, paymentMethod: 'BREB' });
  const transactionId = await accept(client, quote, '@recipient');
  assert.deepEqual(await depositExact(client, transactionId, quote), { ok: true, status: 'PROCESSING_PAYMENT' });
  const key = payoutIdempotencyKey(transactionId);

  // The provider answers after 5 s: the worker is killed between the payment and its report.
  const doomed = await startPayoutChild(5_000);
  const paid = await eventually(async () => {
    const entry = await provider.ledgerEntry(key);
    assert.ok(entry, 'the rail has paid');
    return entry;
  }, 30_000);
  await kill(doomed);
  assert.equal(paid.status, 'succeeded');
  assert.equal((await transactionDoc(store, transactionId)).status, 'PROCESSING_PAYMENT', 'the dead worker never reported');
  const orphan = (await store.outboxPending(outboxTopicPayouts, 1_000)).find((row) => JSON.stringify(row.payload).includes(transactionId));
  assert.ok(orphan && orphan.claimOwner !== null, 'the row is still claimed by the dead worker');

  // A new payout process takes the row over when the claim lapses and asks the rail again.
  const successor = await startPayoutChild(0);
  await eventually(async () => assert.equal((await transactionDoc(store, transactionId)).status, 'PAYMENT_COMPLETED'), 30_000);

  const after = await provider.ledgerEntry(key);
  assert.deepEqual(after, paid, 'one payout in the ledger, unchanged');
  assert.equal(toFixedString((await provider.liquidity('BREB')).amount), toFixedString(subtract(liquidityBefore, quote.targetAmount)), 'liquidity went down once');
  const snapshot = await store.load(`transaction/${transactionId}`);
  assert.ok(snapshot && JSON.stringify(snapshot.state).includes(paid.railReference), 'completed with the one payout’s reference');
  await eventually(async () => {
    const pending = await store.outboxPending(outboxTopicPayouts, 1_000);
    assert.ok(!pending.some((row) => JSON.stringify(row.payload).includes(transactionId)), 'the row is done');
  }, 10_000);
  await kill(successor);
});
