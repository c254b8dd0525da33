// The shared outbox job loop over several topics (the payout worker's payouts and PIX refunds): each
// round claims the topics in order, holds at most `topicShareMax` rows of one topic and
// `inFlightMax` in all, so a backlog on the first topic leaves slots for the second. Embedded store,
// a fixed clock, rounds driven by hand (`tick`).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { OutboxJobs, type OutboxJobEntry } from '../../src/store/outbox-jobs.ts';
import { outboxRowId, type CommitWrite } from '../../src/store/store.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';

let dir: string;
let store: LmdbStore;
/** Fixed: no row waits here, so no time needs to pass. */
const clock = { nowMs: () => 1_000_000 };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-jobs-topics-'));
  store = new LmdbStore({ dir });
  await store.init();
});

after(() => teardown(
  () => store.close(),
  () => rmSync(dir, { recursive: true, force: true }),
));

/** One row of `topic`, written by its own actor as an actor's commit writes it. */
async function row(topic: string, name: string): Promise<string> {
  const actorKey = `test/${name}`;
  const write: CommitWrite = {
    actorKey,
    expectedVersion: 0,
    newVersion: 1,
    state: { name },
    fence: { shard: 1, token: 1 },
    appliedCommands: [],
    outbox: [{ id: outboxRowId(actorKey, 1, 0), topic, payload: { name }, partitionKey: actorKey }],
    readModels: [],
  };
  assert.equal(await store.commit(write), 'ok');
  return outboxRowId(actorKey, 1, 0);
}

test('a loop of two topics holds at most its share of each, and the second topic gets the slots the first leaves', async () => {
  for (let index = 0; index < 6; index += 1) await row('first', `first-${index}`);
  for (let index = 0; index < 2; index += 1) await row('second', `second-${index}`);
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const attempted: string[] = [];
  const jobs: OutboxJobs<string> = new OutboxJobs<string>({
    store,
    clock,
    log: pino({ level: 'silent' }),
    owner: 'worker-a',
    topic: ['first', 'second'],
    what: 'test',
    tuning: { inFlightMax: 4, topicShareMax: 3, claimBatchMax: 4, claimLeaseMs: 60_000 },
    parse: (claimed) => (claimed.payload as { name: string }).name,
    async attempt(entry: OutboxJobEntry<string>) {
      attempted.push(`${entry.topic}:${entry.job}`);
      await released;
      await jobs.finish(entry);
    },
  });
  const round = jobs.tick();
  await eventually(() => assert.equal(attempted.length, 4));
  const held = jobs.held();
  assert.equal(held.filter((entry) => entry.topic === 'first').length, 3, 'the first topic holds its share, no more');
  assert.equal(held.filter((entry) => entry.topic === 'second').length, 1, 'the second topic gets the slot left');
  release();
  await round;
  assert.equal(jobs.held().length, 0);
  await jobs.tick();
  await jobs.tick();
  assert.equal(attempted.length, 8, 'every row of both topics attempted once');
  assert.deepEqual(await store.outboxPending('first', 100), []);
  assert.deepEqual(await store.outboxPending('second', 100), []);
  await jobs.stop();
});
