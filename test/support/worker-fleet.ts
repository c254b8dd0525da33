// A fleet of shard-worker processes over one private Redis and one shared store directory, with a
// client that sends tally commands at-least-once (retrying timeouts with the same command id) and
// keeps the command log, so tests can check exactly-once application after crashes and rebalances.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { Requester, RequestTimeoutError } from '../../src/bus/request-reply.ts';
import { replyStreamKey, shardOf } from '../../src/bus/shards.ts';
import { actorId } from '../../src/actors/envelope.ts';
import { ActorClient } from '../../src/actors/client.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { randomKeyPrefix, startRedis } from './redis-server.ts';
import { startRedisCluster } from './redis-cluster.ts';
import { tallyActorType, type TallyState } from './tally-actor.ts';

export interface WorkerFleet {
  readonly client: ActorClient;
  readonly leases: RedisLeases;
  readonly storeDir: string;
  readonly shardCount: number;
  /** Requests that timed out at least once before succeeding (a client-visible error, retried). */
  timeouts: number;
  /**
   * Every tally sent so far: when it was sent, how long it took to be acknowledged (retries
   * included), and the shard its actor lives on.
   */
  readonly requestTimes: Array<{ readonly sentAtMs: number; readonly ms: number; readonly shard: number }>;
  startWorker(workerId: string, env?: Record<string, string>): Promise<ChildProcess>;
  kill(child: ChildProcess): Promise<void>;
  /** SIGTERM: the worker finishes its batch and releases its leases. */
  terminate(child: ChildProcess): Promise<void>;
  running(): ChildProcess[];
  sendTally(actorKey: string): Promise<void>;
  /** Commands handed to the client so far, answered or not. */
  sentCount(): number;
  sendMany(count: number, inFlight: number, actors: number, onProgress?: (done: number) => Promise<void> | void): Promise<void>;
  /** Like `sendMany`, with no count: each of `inFlight` senders stops once `stop()` is true; answers how many were sent. */
  sendUntil(stop: () => boolean, inFlight: number, actors: number): Promise<number>;
  /** Every command in the log applied exactly once, nothing else; returns the total applied. */
  assertExactlyOnce(): Promise<number>;
  stop(): Promise<void>;
}

export interface FleetOptions {
  /** A real local Redis Cluster (3 masters, each with a replica) instead of one server. */
  readonly cluster?: boolean;
}

export async function startWorkerFleet(shardCount: number, options: FleetOptions = {}): Promise<WorkerFleet> {
  const redis: { readonly url: string; stop(): Promise<void> } = options.cluster === true ? await startRedisCluster({ masters: 3, replicas: 1 }) : await startRedis();
  const storeDir = mkdtempSync(join(tmpdir(), 'fleet-store-'));
  const keyPrefix = randomKeyPrefix();
  const bus = new RedisBus({ redis: redis.url });
  const leases = new RedisLeases({ redis: redis.url, keyPrefix });
  const requester = await Requester.start({ bus, replyStream: replyStreamKey(keyPrefix, `client-${randomUUID()}`), blockMs: 200 });
  const client = new ActorClient({ bus, requester, keyPrefix, shardCount, nowMs: () => Date.now() });
  const children = new Set<ChildProcess>();
  const sent = new Map<string, string[]>();

  const fleet: WorkerFleet = {
    client,
    leases,
    storeDir,
    shardCount,
    timeouts: 0,
    requestTimes: [],
    async startWorker(workerId, env = {}) {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join(import.meta.dirname, 'shard-worker-child.ts'), redis.url, keyPrefix, storeDir, String(shardCount), workerId],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
      );
      children.add(child);
      child.once('exit', () => children.delete(child));
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-4_000);
      });
      await new Promise<void>((resolve, reject) => {
        // A bound against a hang, not a timing: two test suites side by side took over 30 s to start one.
        const timer = setTimeout(() => reject(new Error(`worker ${workerId} not ready: ${stderr}`)), 90_000);
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
      return child;
    },
    async kill(child) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },
    async terminate(child) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
    running: () => [...children],
    sentCount: () => [...sent.values()].reduce((count, log) => count + log.length, 0),
    async sendTally(actorKey) {
      const commandId = randomUUID();
      const log = sent.get(actorKey) ?? [];
      log.push(commandId);
      sent.set(actorKey, log);
      let timedOut = false;
      const sentAtMs = Date.now();
      for (let attempt = 0; attempt < 20; attempt += 1) {
        try {
          await client.ask(tallyActorType, actorKey, 'add', null, { commandId, timeoutMs: 3_000 });
          if (timedOut) fleet.timeouts += 1;
          fleet.requestTimes.push({ sentAtMs, ms: Date.now() - sentAtMs, shard: shardOf(actorId(tallyActorType, actorKey), shardCount) });
          return;
        } catch (error) {
          if (!(error instanceof RequestTimeoutError)) throw error;
          timedOut = true;
        }
      }
      throw new Error(`command ${commandId} never acknowledged`);
    },
    async sendMany(count, inFlight, actors, onProgress) {
      let next = 0;
      let done = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < count) {
            const index = next;
            next += 1;
            await fleet.sendTally(`a${index % actors}`);
            done += 1;
            await onProgress?.(done);
          }
        }),
      );
    },
    async sendUntil(stop, inFlight, actors) {
      let next = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (!stop()) {
            const index = next;
            next += 1;
            await fleet.sendTally(`a${index % actors}`);
          }
        }),
      );
      return next;
    },
    async assertExactlyOnce() {
      const store = new LmdbStore({ dir: storeDir, readModelIndexes: serviceReadModelIndexes });
      await store.init();
      let total = 0;
      try {
        for (const [actorKey, commandIds] of sent) {
          const snapshot = await store.load(`${tallyActorType}/${actorKey}`);
          assert.ok(snapshot, `actor ${actorKey} has a snapshot`);
          const state = snapshot.state as unknown as TallyState;
          assert.equal(new Set(state.commandIds).size, state.commandIds.length, `no command applied twice on ${actorKey}`);
          assert.equal(state.count, state.commandIds.length, `count matches the applied commands on ${actorKey}`);
          assert.deepEqual([...state.commandIds].sort(), [...commandIds].sort(), `actor ${actorKey} applied exactly what was sent`);
          total += state.count;
        }
      } finally {
        await store.close();
      }
      return total;
    },
    async stop() {
      for (const child of [...children]) await fleet.kill(child);
      await requester.close();
      await bus.close();
      await leases.close();
      await redis.stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
  return fleet;
}
