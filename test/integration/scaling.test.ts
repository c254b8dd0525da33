// Scaling under load: shard workers go 1 → 3 → 2 (two started, one stopped gracefully with SIGTERM,
// then one killed with SIGKILL) while a client keeps sending commands the whole time. Leases
// rebalance so every shard keeps exactly one owner; at the end every command was applied exactly
// once. A shard passes from its old owner to its new one without an ownerless interval (the old
// owner releases at once and the taker hears of it within a poll, src/actors/shard-worker.ts), so
// a hand-over adds at most two seconds to a request sent while workers join or leave gracefully.
//
// That bound is checked against a control group measured at the same moments: the shards that kept
// their owner through the phase. On a quiet machine their slowest request is ~100 ms, so the check
// is the plain "no request over two seconds"; on a loaded one (two test suites side by side, new worker
// processes compiling at start-up) every request slows alike, and only what the hand-over itself
// adds is held to the bound. An ownerless interval (the defect this guards: shards unowned for
// seconds) shows up on the moved shards alone. The test prints each phase's p99 and slowest request
// for both groups, and how many requests saw a timeout.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startWorkerFleet, type WorkerFleet } from '../support/worker-fleet.ts';
import { eventually } from '../support/eventually.ts';

const shardCount = 12;
/**
 * What a partner would notice: a request held up by a hand-over for longer than this. The defect
 * it guards costs a lease round (3.3 s on the production TTL, below); 2 s leaves room for what a
 * moved shard's first requests pay on a loaded machine (its actors loaded from the store by the
 * new owner: 1.5 s against 0.4 s on the shards that stayed, seen once beside the whole suite).
 */
const handOverBoundMs = 2_000;
/**
 * The production default lease TTL (10 s, rounds every 3.3 s). Hand-overs do not wait for a round
 * (the old owner releases, the taker hears of it within a poll); only the killed worker's shards do.
 * On this TTL a joiner that missed the releases made for it waited a whole round (3.5–4.2 s on the
 * moved shards under load, 2 of 4 runs), which the short 1.5 s TTL hid (test/integration/shard-handover.test.ts).
 */
const workerEnv = { LEASE_TTL_MS: '10000' };
let fleet: WorkerFleet;

before(async () => {
  // On a real local Redis Cluster (3 masters + 3 replicas), as operators run it: every shard
  // stream is its own slot, so hand-overs also move a worker's per-slot readers.
  fleet = await startWorkerFleet(shardCount, { cluster: true });
});

after(async () => {
  await fleet.stop();
});

/** The owner of every shard's lease (`shard:<n>` → worker). */
async function ownersByShard(): Promise<Map<string, string>> {
  const holders = await fleet.leases.listAll('shard:');
  return new Map(holders.map((holder) => [holder.name, holder.owner]));
}

/** Owners of the shard leases: every shard has exactly one, and each owner holds about its share. */
async function ownership(): Promise<Map<string, number>> {
  const holders = await fleet.leases.listAll('shard:');
  assert.equal(holders.length, shardCount, 'every shard has an owner');
  assert.equal(new Set(holders.map((holder) => holder.name)).size, shardCount, 'one lease per shard');
  const counts = new Map<string, number>();
  for (const holder of holders) counts.set(holder.owner, (counts.get(holder.owner) ?? 0) + 1);
  return counts;
}

/** The p99 and slowest of some request times (ms). */
function latencies(times: readonly number[]): { requests: number; p99Ms: number; slowestMs: number } {
  const sorted = [...times].sort((a, b) => a - b);
  return { requests: sorted.length, p99Ms: sorted[Math.floor(sorted.length * 0.99)] ?? 0, slowestMs: sorted.at(-1) ?? 0 };
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
  /** Owner of each shard when the phase began, and when it ended. */
  readonly ownersBefore: Map<string, string>;
  ownersAfter: Map<string, string>;
}

test('workers 1 → 3 → 2 under load: one owner per shard throughout, no hand-over wait over two seconds, every command applied exactly once', async () => {
  await fleet.startWorker('s1', workerEnv);
  await balancedOver(1);
  let stopped = false;
  const load = fleet.sendUntil(() => stopped, 16, 60);
  const phases: Phase[] = [];
  const begin = async (name: string): Promise<void> => {
    const owners = await ownersByShard();
    const last = phases.at(-1);
    if (last !== undefined) {
      last.toMs = Date.now();
      last.timeouts = fleet.timeouts - last.timeoutsBefore;
      last.ownersAfter = owners;
    }
    phases.push({ name, fromMs: Date.now(), toMs: Number.POSITIVE_INFINITY, timeoutsBefore: fleet.timeouts, timeouts: 0, ownersBefore: owners, ownersAfter: owners });
  };
  const answeredSince = (sinceMs: number): number => fleet.requestTimes.filter((request) => request.sentAtMs >= sinceMs).length;

  let sent = 0;
  try {
    await begin('one worker');
    const loadStartedMs = Date.now();
    await eventually(() => assert.ok(answeredSince(loadStartedMs) >= 300, 'the one worker is answering the load'), 60_000);

    await begin('scale out 1 → 3');
    const second = await fleet.startWorker('s2', workerEnv);
    const third = await fleet.startWorker('s3', workerEnv);
    await balancedOver(3);
    // Some requests go on under the new ownership before the next change.
    const scaledOutMs = Date.now();
    await eventually(() => assert.ok(answeredSince(scaledOutMs) >= 200, 'requests answered after the scale-out'), 60_000);

    await begin('graceful stop 3 → 2 (SIGTERM)');
    await fleet.terminate(second);
    await balancedOver(2);
    const stoppedOneMs = Date.now();
    await eventually(() => assert.ok(answeredSince(stoppedOneMs) >= 200, 'requests answered after the graceful stop'), 60_000);

    await begin('start one, kill one (SIGKILL)');
    await fleet.startWorker('s4', workerEnv);
    await fleet.kill(third);
    await balancedOver(2);
    await begin('done');
  } finally {
    // Whatever failed above, the senders stop, so the test ends and `after` can stop the fleet.
    stopped = true;
    sent = await load;
  }

  const report = phases.slice(0, -1).map((phase) => {
    const inPhase = fleet.requestTimes.filter((request) => request.sentAtMs >= phase.fromMs && request.sentAtMs < phase.toMs);
    const moved = (shard: number): boolean => phase.ownersBefore.get(`shard:${shard}`) !== phase.ownersAfter.get(`shard:${shard}`);
    return {
      phase: phase.name,
      ...latencies(inPhase.map((request) => request.ms)),
      movedShards: Array.from({ length: shardCount }, (_, shard) => shard).filter(moved).length,
      moved: latencies(inPhase.filter((request) => moved(request.shard)).map((request) => request.ms)),
      stayed: latencies(inPhase.filter((request) => !moved(request.shard)).map((request) => request.ms)),
      timeouts: phase.timeouts,
      ms: phase.toMs - phase.fromMs,
    };
  });
  console.log(`scaling under load, per phase: ${JSON.stringify(report)}`);
  for (const name of ['scale out 1 → 3', 'graceful stop 3 → 2 (SIGTERM)']) {
    const row = report.find((entry) => entry.phase === name);
    assert.ok(row !== undefined && row.moved.requests > 0 && row.stayed.requests > 0, `requests were sent during "${name}" to shards that moved and to shards that stayed`);
    // A request that timed out (3 s) and was retried counts with its whole time, timeout and retry
    // included, so it is held to the same bound as every other.
    const boundMs = handOverBoundMs + row.stayed.slowestMs;
    assert.ok(
      row.moved.slowestMs <= boundMs,
      `a hand-over adds at most ${handOverBoundMs} ms during "${name}": slowest on the ${row.movedShards} moved shards ${row.moved.slowestMs} ms, on the shards that stayed ${row.stayed.slowestMs} ms`,
    );
  }
  assert.equal(await fleet.assertExactlyOnce(), sent);
});
