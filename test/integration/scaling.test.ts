// Scaling under load: shard workers go 1 → 3 → 2 (two started, one stopped gracefully with SIGTERM,
// then one killed with SIGKILL) while a client keeps sending commands. Leases rebalance so every
// shard keeps exactly one owner; at the end every command was applied exactly once. The test
// prints the rebalance time and how many requests saw an error (a timeout, retried): the goal is
// zero on graceful changes, and only retried timeouts on a kill.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startWorkerFleet, type WorkerFleet } from '../support/worker-fleet.ts';
import { eventually } from '../support/eventually.ts';

const shardCount = 12;
let fleet: WorkerFleet;

before(async () => {
  fleet = await startWorkerFleet(shardCount);
});

after(async () => {
  await fleet.stop();
});

/** Owners of the shard leases: every shard has exactly one, and each owner holds about its share. */
async function ownership(): Promise<Map<string, number>> {
  const holders = await fleet.leases.listAll('shard:');
  assert.equal(holders.length, shardCount, 'every shard has an owner');
  assert.equal(new Set(holders.map((holder) => holder.name)).size, shardCount, 'one lease per shard');
  const counts = new Map<string, number>();
  for (const holder of holders) counts.set(holder.owner, (counts.get(holder.owner) ?? 0) + 1);
  return counts;
}

async function balancedOver(workers: number): Promise<number> {
  const startedAtMs = Date.now();
  await eventually(async () => {
    const counts = await ownership();
    assert.equal(counts.size, workers, `shards spread over ${workers} workers`);
    for (const count of counts.values()) assert.ok(count <= Math.ceil(shardCount / workers), 'no worker above its fair share');
  }, 20_000, 50);
  return Date.now() - startedAtMs;
}

test('workers 1 → 3 → 2 under load: one owner per shard throughout, every command applied exactly once', async () => {
  const first = await fleet.startWorker('s1');
  await balancedOver(1);
  let phase = 'one worker';
  const errorsByPhase = new Map<string, number>();
  let lastTimeouts = 0;
  const notePhase = (next: string): void => {
    errorsByPhase.set(phase, fleet.timeouts - lastTimeouts);
    lastTimeouts = fleet.timeouts;
    phase = next;
  };
  let answered = 0;
  const load = fleet.sendMany(3_000, 16, 60, (done) => {
    answered = done;
  });

  await eventually(() => assert.ok(answered >= 300, 'a tenth of the load answered by the one worker'), 60_000);
  notePhase('scale out to 3');
  const joinStartedMs = Date.now();
  const second = await fleet.startWorker('s2');
  const third = await fleet.startWorker('s3');
  const scaleOutMs = (await balancedOver(3)) + (Date.now() - joinStartedMs);

  notePhase('graceful stop (SIGTERM)');
  await fleet.terminate(second);
  const gracefulMs = await balancedOver(2);

  notePhase('start one, kill one (SIGKILL)');
  await fleet.startWorker('s4');
  await fleet.kill(third);
  const killMs = await balancedOver(2);
  await load;
  notePhase('done');

  console.log(
    `rebalance: scale-out ${scaleOutMs} ms, graceful stop ${gracefulMs} ms, kill ${killMs} ms; ` +
      `requests that saw an error (timeout, then retried OK) by phase: ${JSON.stringify(Object.fromEntries(errorsByPhase))}`,
  );
  const times = fleet.requestTimes.map((request) => request.ms).sort((a, b) => a - b);
  console.log(`request latency over the whole run: p99 ${times[Math.floor(times.length * 0.99)] ?? 0} ms, slowest ${times.at(-1) ?? 0} ms`);
  assert.equal(errorsByPhase.get('graceful stop (SIGTERM)'), 0, 'no request saw an error during the graceful stop');
  assert.equal(await fleet.assertExactlyOnce(), 3_000);
  void first;
});
