// Crash and restart against a real Redis: shard workers run as separate processes and are killed
// with SIGKILL while commands flow. Another worker takes over their shards; every command the
// client sent (retrying on timeouts with the same command id) is applied exactly once — checked by
// comparing the client's command log with each actor's final state — and a full restart recovers
// the state from snapshots and pending stream entries.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.ts';
import { once } from 'node:events';
import { startWorkerFleet, type WorkerFleet } from '../support/worker-fleet.ts';

let fleet: WorkerFleet;

before(async () => {
  fleet = await startWorkerFleet(16);
});

after(async () => {
  await fleet.stop();
});

test('a worker killed with SIGKILL while commands flow: another takes its shards, every command applies exactly once', async () => {
  const first = await fleet.startWorker('w1');
  await fleet.startWorker('w2');
  let killed = false;
  await fleet.sendMany(1_200, 24, 40, async (done) => {
    if (!killed && done >= 300) {
      killed = true;
      await fleet.kill(first);
    }
  });
  assert.ok(killed);
  assert.equal(await fleet.assertExactlyOnce(), 1_200);
});

test('a worker that dies between a durable write and its reply: the next owner replays, never re-applies', async () => {
  for (const child of fleet.running()) await fleet.kill(child);
  // w5 dies right after its 50th durable write, before replying or acknowledging.
  const doomed = await fleet.startWorker('w5', { CRASH_AFTER_COMMITS: '50' });
  const exited = once(doomed, 'exit');
  const flow = fleet.sendMany(400, 16, 40);
  await exited;
  await fleet.startWorker('w6');
  await flow;
  assert.equal(await fleet.assertExactlyOnce(), 1_600);
});

test('all workers restarted: state is recovered from snapshots and pending entries, and keeps counting exactly', async () => {
  for (const child of fleet.running()) await fleet.kill(child);
  // Commands sent while no worker runs wait in the streams.
  const sentBefore = fleet.sentCount();
  const waiting = fleet.sendMany(200, 20, 40);
  await eventually(() => assert.ok(fleet.sentCount() >= sentBefore + 20, 'the first 20 commands are sent'), 10_000);
  await fleet.startWorker('w3');
  await fleet.startWorker('w4');
  await waiting;
  assert.equal(await fleet.assertExactlyOnce(), 1_800);
});
