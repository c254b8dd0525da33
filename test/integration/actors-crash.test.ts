// Crash and restart against a real Redis: shard workers run as separate processes and are killed
// with SIGKILL while commands flow. Another worker takes over their shards; every command the
// client sent (retrying on timeouts with the same command id) is applied exactly once — checked by
// comparing the client's command log with each actor's final state — and a full restart recovers
// the state from snapshots and pending stream entries.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { Requester, RequestTimeoutError } from '../../src/bus/request-reply.ts';
import { replyStreamKey } from '../../src/bus/shards.ts';
import { ActorClient } from '../../src/actors/client.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from '../support/redis-server.ts';
import { tallyActorType, type TallyState } from '../support/tally-actor.ts';

const shardCount = 16;
const actorsCount = 40;

let redis: PrivateRedis;
let storeDir: string;
let keyPrefix: string;
let bus: RedisBus;
let requester: Requester;
let client: ActorClient;
const children = new Set<ChildProcess>();
/** The client's command log: every command id sent, by actor key. */
const sent = new Map<string, string[]>();

async function startWorker(workerId: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, '../support/shard-worker-child.ts'), redis.url, keyPrefix, storeDir, String(shardCount), workerId],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${workerId} not ready: ${stderr}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${workerId} exited (${code}): ${stderr}`));
    });
  });
  await ready;
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/** Sends one command, retrying with the same id until a reply arrives (at-least-once client). */
async function sendTally(actorKey: string): Promise<void> {
  const commandId = randomUUID();
  const log = sent.get(actorKey) ?? [];
  log.push(commandId);
  sent.set(actorKey, log);
  for (let attempt = 0; attempt < 20; attempt += 1) {
    try {
      await client.ask(tallyActorType, actorKey, 'add', null, { commandId, timeoutMs: 3_000 });
      return;
    } catch (error) {
      if (!(error instanceof RequestTimeoutError)) throw error;
    }
  }
  throw new Error(`command ${commandId} never acknowledged`);
}

async function sendMany(count: number, inFlight: number, onProgress?: (done: number) => Promise<void> | void): Promise<void> {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await sendTally(`a${index % actorsCount}`);
        done += 1;
        await onProgress?.(done);
      }
    }),
  );
}

/** Every command in the log applied exactly once, nothing else applied. */
async function assertExactlyOnce(): Promise<number> {
  const store = new LmdbStore({ dir: storeDir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  let total = 0;
  try {
    for (const [actorKey, commandIds] of sent) {
      const snapshot = await store.load(`${tallyActorType}/${actorKey}`);
      assert.ok(snapshot, `actor ${actorKey} has a snapshot`);
      const state = snapshot.state as unknown as TallyState;
      assert.equal(new Set(state.commandIds).size, state.commandIds.length, `no command applied twice on ${actorKey}`);
      assert.equal(state.count, state.commandIds.length);
      assert.deepEqual([...state.commandIds].sort(), [...commandIds].sort(), `actor ${actorKey} applied exactly what was sent`);
      total += state.count;
    }
  } finally {
    await store.close();
  }
  return total;
}

before(async () => {
  redis = await startRedis();
  storeDir = mkdtempSync(join(tmpdir(), 'crash-store-'));
  keyPrefix = randomKeyPrefix();
  bus = new RedisBus({ redis: redis.url });
  requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, `client-${randomUUID()}`), blockMs: 200 });
  client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: () => Date.now() });
});

after(async () => {
  for (const child of [...children]) await kill(child);
  await requester.close();
  await bus.close();
  await redis.stop();
  rmSync(storeDir, { recursive: true, force: true });
});

test('a worker killed with SIGKILL while commands flow: another takes its shards, every command applies exactly once', async () => {
  const first = await startWorker('w1');
  await startWorker('w2');
  let killed = false;
  await sendMany(1_200, 24, async (done) => {
    if (!killed && done >= 300) {
      killed = true;
      await kill(first);
    }
  });
  assert.ok(killed);
  assert.equal(await assertExactlyOnce(), 1_200);
});

test('a worker that dies between a durable write and its reply: the next owner replays, never re-applies', async () => {
  for (const child of [...children]) await kill(child);
  // w5 dies right after its 50th durable write, before replying or acknowledging.
  const doomed = await startWorker('w5', { CRASH_AFTER_COMMITS: '50' });
  const exited = once(doomed, 'exit');
  const flow = sendMany(400, 16);
  await exited;
  await startWorker('w6');
  await flow;
  assert.equal(await assertExactlyOnce(), 1_600);
});

test('all workers restarted: state is recovered from snapshots and pending entries, and keeps counting exactly', async () => {
  for (const child of [...children]) await kill(child);
  // Commands sent while no worker runs wait in the streams.
  const waiting = sendMany(200, 20);
  await new Promise((resolve) => setTimeout(resolve, 300));
  await startWorker('w3');
  await startWorker('w4');
  await waiting;
  assert.equal(await assertExactlyOnce(), 1_800);
});
