// A shard worker in its own process, for crash and scaling tests: the tally actor plus the service's actors,
// over a Redis bus and leases, with an embedded store directory shared with the test (LMDB allows
// several processes on one machine). Prints "ready" once it has started; runs until killed.
// Usage: node --import tsx test/support/shard-worker-child.ts <redis url> <key prefix> <store dir> <shards> <worker id>
import { RedisBus } from '../../src/bus/redis-bus.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { startShardRole } from '../../src/service/shard-role.ts';
import { tallyBehavior } from './tally-actor.ts';
import type { ActorBehavior } from '../../src/actors/envelope.ts';
import { serviceBehaviors } from '../../src/service/behaviors.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';

async function main(): Promise<void> {
  const [redisUrl, keyPrefix, storeDir, shards, workerId] = process.argv.slice(2);
  if (!redisUrl || keyPrefix === undefined || !storeDir || !shards || !workerId) throw new Error('usage: <redis> <prefix> <dir> <shards> <id>');
  const bus = new RedisBus({ redis: redisUrl });
  const leases = new RedisLeases({ redis: redisUrl, keyPrefix });
  const store = new LmdbStore({ dir: storeDir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  const corridors = loadDefaultCorridors();
  const crashAfterCommits = Number(process.env.CRASH_AFTER_COMMITS ?? 0);
  let commits = 0;
  const role = await startShardRole({
    bus,
    leases,
    store,
    behaviors: [
      tallyBehavior() as unknown as ActorBehavior<unknown>,
      ...serviceBehaviors({
        dataKeys: sandboxDataKeyring(),
        corridors: () => corridors,
        rates: () => corridors.rates,
        limits: () => defaultLimitsConfig,
        partnerFee: () => undefined,
      }),
    ],
    workerId,
    keyPrefix,
    shardCount: Number(shards),
    clock: { nowMs: () => Date.now() },
    // LEASE_TTL_MS: the scaling test runs the production default's proportions (rounds of 3 s).
    leaseTtlMs: Number(process.env.LEASE_TTL_MS ?? 1_500),
    // CRASH_AFTER_COMMITS=N: die by SIGKILL right after the N-th durable write, before its reply
    // and acknowledgement, so the next owner must recognise the already-applied commands.
    ...(crashAfterCommits > 0
      ? {
          afterCommit: () => {
            commits += 1;
            if (commits >= crashAfterCommits) process.kill(process.pid, 'SIGKILL');
          },
        }
      : {}),
    readBlockMs: 200,
    log: (level, message, fields) => {
      if (level === 'error') process.stderr.write(`${workerId} ${message} ${JSON.stringify(fields)}\n`);
    },
  });
  process.stdout.write('ready\n');
  const stop = (): void => {
    role.stop().then(
      async () => {
        await bus.close();
        await leases.close();
        await store.close();
        process.exit(0);
      },
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`worker failed: ${String(error)}\n`);
  process.exit(1);
});
