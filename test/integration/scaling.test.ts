// Scaling under load: shard workers go 1 → 3 → 2 (two started, one stopped gracefully with SIGTERM,
// then one killed with SIGKILL) while a client keeps sending commands the whole time. Leases
// rebalance so every shard keeps exactly one owner; at the end every command was applied exactly
// once. A shard passes from its old owner to its new one without an ownerless interval (the old
// owner releases at once and the taker hears of it within a poll, src/actors/shard-worker.ts), so
// no request sent while workers join or leave gracefully waits more than a second. The test prints
// the rebalance times, each phase's p99 and slowest request, and how many requests saw a timeout.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startWorkerFleet, type WorkerFleet } from '../support/worker-fleet.ts';
import { eventually } from '../support/eventually.ts';

const shardCount = 12;
/** What a partner would notice: a request held up by a hand-over for longer than this. */
const handOverBoundMs = 1_000;
let fleet: WorkerFleet;

before(async () => {
  // On a real local Redis Cluster (3 masters + 3 replicas), as operators run it: every shard
  // stream is its own slot, so hand-overs also move a worker's per-slot readers.
  fleet = await startWorkerFleet(shardCount, { cluster: true });
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

async function balancedOver(workers: number): Promise<void> {
  await eventually(async () => {
    const counts = await ownership();
    assert.equal(counts.size, workers, `shards spread over ${workers} workers`);
    for (const count of counts.values()) assert.ok(count <= Math.ceil(shardCount / workers), 'no worker above its fair share');
  }, 30_000, 50);
}

interface Phase {
  readonly name: string;
  readonly fromMs: number;
  toMs: number;
  readonly timeoutsBefore: number;
  timeouts: number;
}

test('workers 1 → 3 → 2 under load: one owner per shard throughout, no hand-over wait over a second, every command applied exactly once', async () => {
  await fleet.startWorker('s1');
  await balancedOver(1);
  let stopped = false;
  const load = fleet.sendUntil(() => stopped, 16, 60);
  const phases: Phase[] = [];
  const begin = (name: string): void => {
    const last = phases.at(-1);
    if (last !== undefined) {
      last.toMs = Date.now();
      last.timeouts = fleet.timeouts - last.timeoutsBefore;
    }
    phases.push({ name, fromMs: Date.now(), toMs: Number.POSITIVE_INFINITY, timeoutsBefore: fleet.timeouts, timeouts: 0 });
  };
  const answeredSince = (sinceMs: number): number => fleet.requestTimes.filter((request) => request.sentAtMs >= sinceMs).length;

  let sent = 0;
  try {
    begin('one worker');
    const loadStartedMs = Date.now();
    await eventually(() => assert.ok(answeredSince(loadStartedMs) >= 300, 'the one worker is answering the load'), 60_000);

    begin('scale out 1 → 3');
    const second = await fleet.startWorker('s2');
    const third = await fleet.startWorker('s3');
    await balancedOver(3);
    // Some requests go on under the new ownership before the next change.
    const scaledOutMs = Date.now();
    await eventually(() => assert.ok(answeredSince(scaledOutMs) >= 200, 'requests answered after the scale-out'), 60_000);

    begin('graceful stop 3 → 2 (SIGTERM)');
    await fleet.terminate(second);
    await balancedOver(2);
    const stoppedOneMs = Date.now();
    await eventually(() => assert.ok(answeredSince(stoppedOneMs) >= 200, 'requests answered after the graceful stop'), 60_000);

    begin('start one, kill one (SIGKILL)');
    await fleet.startWorker('s4');
    await fleet.kill(third);
    await balancedOver(2);
    begin('done');
  } finally {
    // Whatever failed above, the senders stop, so the test ends and `after` can stop the fleet.
    stopped = true;
    sent = await load;
  }

  const report = phases.slice(0, -1).map((phase) => {
    const times = fleet.requestTimes.filter((request) => request.sentAtMs >= phase.fromMs && request.sentAtMs < phase.toMs).map((r) => r.ms).sort((a, b) => a - b);
    return { phase: phase.name, requests: times.length, p99Ms: times[Math.floor(times.length * 0.99)] ?? 0, slowestMs: times.at(-1) ?? 0, timeouts: phase.timeouts, ms: phase.toMs - phase.fromMs };
  });
  console.log(`scaling under load, per phase: ${JSON.stringify(report)}`);
  for (const name of ['scale out 1 → 3', 'graceful stop 3 → 2 (SIGTERM)']) {
    const row = report.find((entry) => entry.phase === name);
    assert.ok(row !== undefined && row.requests > 0, `requests were sent during "${name}"`);
    assert.equal(row.timeouts, 0, `no request timed out during "${name}"`);
    assert.ok(row.slowestMs <= handOverBoundMs, `no request over ${handOverBoundMs} ms during "${name}": slowest ${row.slowestMs} ms`);
  }
  assert.equal(await fleet.assertExactlyOnce(), sent);
});
