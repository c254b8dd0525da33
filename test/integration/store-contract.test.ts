// One contract suite for every SnapshotStore adapter (STYLE: one conformance kit per port).
// The embedded LMDB store always runs; MongoDB runs when MONGODB_URL points at a replica set.
// Each test gets its own temp directory / database name and removes it at the end.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { open as openLmdb } from 'lmdb';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { MongoStore } from '../../src/store/mongo-store.ts';
import { StoreUsageError, blobBytesMax, blobPartBytes, outboxRowId } from '../../src/store/store.ts';
import type {
  CommitWrite, JsonObject, OutboxRow, ReadModelIndex, SnapshotStore, StoreOptions,
} from '../../src/store/store.ts';
import { crashActorKeys, crashCollection, crashTopic } from '../support/store-crash-writer.ts';

interface Harness {
  /** Opens a store at this harness's location (the same data every time). */
  open(options?: StoreOptions): Promise<SnapshotStore>;
  /** What blob streams left behind: parts and staging entries in storage (read past the port). */
  blobStreamLeftovers(): Promise<number>;
  destroy(): Promise<void>;
}

interface Adapter {
  name: string;
  skip: string | false;
  harness(): Harness;
}

function lmdbAdapter(plainMaps: boolean): Adapter {
  return {
    name: plainMaps ? 'lmdb (plain maps)' : 'lmdb',
    skip: false,
    harness() {
      const dir = mkdtempSync(join(tmpdir(), `store-contract-${randomUUID().slice(0, 8)}-`));
      return {
        async open(options = {}) {
          const store = new LmdbStore({ ...options, dir, plainMaps });
          await store.init();
          return store;
        },
        async blobStreamLeftovers() {
          const env = openLmdb({ path: dir, maxDbs: 32, readOnly: true });
          try {
            const parts = [...env.openDB({ name: 'blobChunks', encoding: 'binary' }).getKeys()].length;
            const staging = [...env.openDB({ name: 'blobMeta' }).getKeys({ start: ['staging'], end: ['staging', Buffer.from([0xff])] })].length;
            return parts + staging;
          } finally {
            await env.close();
          }
        },
        destroy() {
          rmSync(dir, { recursive: true, force: true });
          return Promise.resolve();
        },
      };
    },
  };
}

const mongoUrl = process.env.MONGODB_URL;
const mongoAdapter: Adapter = {
  name: 'mongo',
  skip: mongoUrl === undefined ? 'MONGODB_URL is not set (no MongoDB server here): Mongo adapter contract skipped' : false,
  harness() {
    const url = mongoUrl ?? '';
    const dbName = `store_contract_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    return {
      async open(options = {}) {
        const store = new MongoStore({ ...options, url, dbName });
        await store.init();
        return store;
      },
      async blobStreamLeftovers() {
        const client = new MongoClient(url);
        try {
          const db = client.db(dbName);
          return (await db.collection('blobChunks').countDocuments()) + (await db.collection('blobStaging').countDocuments());
        } finally {
          await client.close();
        }
      },
      async destroy() {
        const client = new MongoClient(url);
        try {
          await client.db(dbName).dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
  },
};

async function withStore(adapter: Adapter, options: StoreOptions, body: (store: SnapshotStore, harness: Harness) => Promise<void>): Promise<void> {
  const harness = adapter.harness();
  const store = await harness.open(options);
  try {
    await body(store, harness);
  } finally {
    await store.close();
    await harness.destroy();
  }
}

interface WriteExtras {
  shard?: number;
  token?: number;
  commandIds?: string[];
  topics?: string[];
  readModels?: CommitWrite['readModels'];
  events?: CommitWrite['events'];
}

/** A commit of version `expectedVersion + 1` with one reply per command and one row per topic. */
function write(actorKey: string, expectedVersion: number, extras: WriteExtras = {}): CommitWrite {
  const newVersion = expectedVersion + 1;
  const result: CommitWrite = {
    actorKey,
    expectedVersion,
    newVersion,
    state: { version: newVersion, note: `state of ${actorKey} at ${newVersion}` },
    fence: { shard: extras.shard ?? 1, token: extras.token ?? 1 },
    appliedCommands: (extras.commandIds ?? []).map((commandId) => ({ commandId, reply: { commandId, version: newVersion } })),
    outbox: (extras.topics ?? []).map((topic, index) => ({
      id: outboxRowId(actorKey, newVersion, index), topic, payload: { actorKey, version: newVersion, index }, partitionKey: actorKey,
    })),
    readModels: extras.readModels ?? [],
  };
  if (extras.events !== undefined) result.events = extras.events;
  return result;
}

/** A promise opened by hand: a test holds a stream at a known point with it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

async function* chunksOf(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

async function allPending(store: SnapshotStore, topic: string): Promise<OutboxRow[]> {
  const rows: OutboxRow[] = [];
  for (let afterSeq = 0; ;) {
    const page = await store.outboxPending(topic, 100, afterSeq);
    rows.push(...page);
    const last = page.at(-1);
    if (last === undefined) return rows;
    afterSeq = last.seq;
  }
}

const transactionIndex: ReadModelIndex = {
  collection: 'transactions', name: 'by_partner_user_created', equal: ['partnerId', 'userId'], orderBy: 'createdAtMs',
};

function transactionDoc(partnerId: string, userId: string, n: number): JsonObject {
  // A few equal timestamps, so the id tie-break is exercised too.
  return { partnerId, userId, createdAtMs: 1_700_000_000_000 + Math.floor(n / 2) * 1000, amount: `${n}.00` };
}

function contract(adapter: Adapter): void {
  describe(`SnapshotStore contract: ${adapter.name}`, { skip: adapter.skip }, () => {
    test('commits a new actor with expectedVersion 0 and loads it back', () => withStore(adapter, {}, async (store) => {
      assert.equal(await store.load('actor-1'), null);
      assert.equal(await store.commit(write('actor-1', 0, { events: [{ type: 'created' }, { type: 'noted' }] })), 'ok');
      assert.deepEqual(await store.load('actor-1'), { version: 1, state: { version: 1, note: 'state of actor-1 at 1' } });
      assert.equal(await store.commit(write('actor-1', 1, { events: [{ type: 'updated' }] })), 'ok');
      assert.equal((await store.load('actor-1'))?.version, 2);
      assert.deepEqual(await store.loadEvents('actor-1', 0, 10), [
        { version: 1, index: 0, event: { type: 'created' } },
        { version: 1, index: 1, event: { type: 'noted' } },
        { version: 2, index: 0, event: { type: 'updated' } },
      ]);
      assert.deepEqual((await store.loadEvents('actor-1', 1, 10)).map((event) => event.version), [2]);
      assert.equal(await store.commit({ ...write('stateless', 0), state: null }), 'ok'); // state may be any JSON
      assert.deepEqual(await store.load('stateless'), { version: 1, state: null });
    }));

    test('refuses a stale version and leaves no trace (state, outbox, read models, replies, events)', () => withStore(adapter, {}, async (store) => {
      assert.equal(await store.commit(write('actor-1', 0, { commandIds: ['cmd-1'], topics: ['t'] })), 'ok');
      const stale = (expected: number): CommitWrite => write('actor-1', expected, {
        commandIds: ['cmd-stale'], topics: ['t', 'u'], events: [{ type: 'stale' }],
        readModels: [{ collection: 'quotes', id: 'q-stale', doc: { stale: true } }],
      });
      assert.equal(await store.commit(stale(0)), 'version_conflict'); // "new" actor that exists
      assert.equal(await store.commit(stale(2)), 'version_conflict'); // from the future
      assert.deepEqual(await store.load('actor-1'), { version: 1, state: { version: 1, note: 'state of actor-1 at 1' } });
      assert.deepEqual((await allPending(store, 't')).map((row) => row.id), ['actor-1:1:0']);
      assert.deepEqual(await allPending(store, 'u'), []);
      assert.equal(await store.get('quotes', 'q-stale'), null);
      assert.equal(await store.getAppliedReply('actor-1', 'cmd-stale'), null);
      assert.deepEqual(await store.loadEvents('actor-1', 0, 10), []);
      assert.equal(await store.commit(write('actor-1', 1)), 'ok'); // the right version still works
    }));

    test('deleteActor (retention): compare-and-set on the version; the snapshot, dedupe log and events go, nothing else', () => withStore(adapter, {}, async (store) => {
      assert.equal(await store.commit(write('quote/q1', 0, { commandIds: ['c1'], events: [{ type: 'created' }], topics: ['t'], readModels: [{ collection: 'quotes', id: 'q1', doc: { kept: true } }] })), 'ok');
      assert.equal(await store.commit(write('quote/q1', 1, { commandIds: ['c2'] })), 'ok');
      assert.equal(await store.commit(write('quote/q10', 0, { commandIds: ['c1'], events: [{ type: 'other' }] })), 'ok');
      assert.equal(await store.deleteActor('quote/q1', 1), 'version_conflict', 'written since it was read');
      assert.equal((await store.load('quote/q1'))?.version, 2);
      assert.equal(await store.deleteActor('quote/q1', 2), 'ok');
      assert.equal(await store.load('quote/q1'), null);
      assert.equal(await store.getAppliedReply('quote/q1', 'c1'), null);
      assert.equal(await store.getAppliedReply('quote/q1', 'c2'), null);
      assert.deepEqual(await store.loadEvents('quote/q1', 0, 10), []);
      assert.equal(await store.deleteActor('quote/q1', 2), 'not_found');
      // Another actor (even one whose key starts with this one's) keeps everything.
      assert.equal((await store.load('quote/q10'))?.version, 1);
      assert.notEqual(await store.getAppliedReply('quote/q10', 'c1'), null);
      assert.equal((await store.loadEvents('quote/q10', 0, 10)).length, 1);
      // Outbox rows and read models written with it stay (they belong to their own retention).
      assert.deepEqual((await allPending(store, 't')).map((row) => row.id), ['quote/q1:1:0']);
      assert.deepEqual(await store.get('quotes', 'q1'), { kept: true });
      // A live owner that still holds version 2 is refused and reloads; a new start at version 0 is allowed.
      assert.equal(await store.commit(write('quote/q1', 2)), 'version_conflict');
      assert.equal(await store.commit(write('quote/q1', 0)), 'ok');
    }));

    test('fencing: below the highest token for the shard is refused, equal is allowed, higher raises', () => withStore(adapter, {}, async (store) => {
      assert.equal(await store.commit(write('a', 0, { shard: 3, token: 5 })), 'ok');
      assert.equal(await store.commit(write('a', 1, { shard: 3, token: 4, topics: ['t'], commandIds: ['late'] })), 'fenced');
      assert.equal((await store.load('a'))?.version, 1);
      assert.deepEqual(await allPending(store, 't'), []);
      assert.equal(await store.getAppliedReply('a', 'late'), null);
      assert.equal(await store.commit(write('a', 1, { shard: 3, token: 5 })), 'ok');
      assert.equal(await store.commit(write('b', 0, { shard: 3, token: 7 })), 'ok');
      assert.equal(await store.commit(write('a', 2, { shard: 3, token: 6 })), 'fenced');
      assert.equal(await store.commit(write('c', 0, { shard: 4, token: 1 })), 'ok'); // shards are independent
      assert.equal(await store.raiseFence(4, 9), 'ok');
      assert.equal(await store.raiseFence(4, 8), 'fenced');
      assert.equal(await store.commit(write('c', 1, { shard: 4, token: 1 })), 'fenced');
      assert.equal(await store.commit(write('c', 1, { shard: 4, token: 9 })), 'ok');
      // A refused write does not raise the fence either: version conflict with a higher token.
      assert.equal(await store.commit(write('c', 0, { shard: 4, token: 20 })), 'version_conflict');
      assert.equal(await store.commit(write('c', 2, { shard: 4, token: 10 })), 'ok');
    }));

    test('dedupe log: replies are replayed by commandId and only the last N per actor are kept', () => withStore(adapter, { appliedRepliesPerActorMax: 3 }, async (store) => {
      assert.equal(await store.commit(write('a', 0, { commandIds: ['c1', 'c2'] })), 'ok');
      assert.equal(await store.commit(write('b', 0, { commandIds: ['c1'] })), 'ok');
      assert.deepEqual(await store.getAppliedReply('a', 'c1'), { reply: { commandId: 'c1', version: 1 } });
      assert.equal(await store.getAppliedReply('a', 'unknown'), null);
      assert.equal(await store.commit({ ...write('a', 1), appliedCommands: [{ commandId: 'c3', reply: null }] }), 'ok');
      assert.deepEqual(await store.getAppliedReply('a', 'c3'), { reply: null }); // a null reply is still a reply
      assert.equal(await store.commit(write('a', 2, { commandIds: ['c4', 'c5'] })), 'ok');
      assert.equal(await store.getAppliedReply('a', 'c1'), null);
      assert.equal(await store.getAppliedReply('a', 'c2'), null);
      for (const commandId of ['c3', 'c4', 'c5']) assert.notEqual(await store.getAppliedReply('a', commandId), null);
      assert.deepEqual(await store.getAppliedReply('b', 'c1'), { reply: { commandId: 'c1', version: 1 } });
    }));

    test('a batch commit: each write checked as alone, in order, the refused and the invalid ones leave no trace', () => withStore(adapter, {}, async (store) => {
      assert.equal(await store.commit(write('seen', 0)), 'ok');
      const invalid: CommitWrite = { ...write('broken', 0), state: { amount: 10n } as unknown as JsonObject };
      // Big enough to be more than a handful of writes (adapters may run small batches differently).
      const results = await store.commitBatch([
        write('a', 0, { commandIds: ['c1'], topics: ['t'] }),
        write('a', 1, { commandIds: ['c2'] }), // sees the write before it
        write('seen', 0), // stale: the actor is at version 1
        invalid,
        write('b', 0, { readModels: [{ collection: 'transactions', id: 'tx-b', doc: transactionDoc('p', 'u', 1) }] }),
        write('a', 1), // stale after the second write
      ]);
      assert.deepEqual(results.slice(0, 3), ['ok', 'ok', 'version_conflict']);
      const failure = results[3];
      assert.ok(typeof failure === 'object' && failure.error instanceof StoreUsageError, 'the invalid write fails alone');
      assert.deepEqual(results.slice(4), ['ok', 'version_conflict']);
      assert.equal((await store.load('a'))?.version, 2);
      assert.equal(await store.load('broken'), null);
      assert.equal((await store.load('seen'))?.version, 1);
      assert.deepEqual(await store.getAppliedReply('a', 'c2'), { reply: { commandId: 'c2', version: 2 } });
      assert.equal((await allPending(store, 't')).length, 1);
      assert.deepEqual(await store.get('transactions', 'tx-b'), transactionDoc('p', 'u', 1));
      // A small batch, and an empty one.
      assert.deepEqual(await store.commitBatch([write('c', 0), write('c', 0)]), ['ok', 'version_conflict']);
      assert.deepEqual(await store.commitBatch([]), []);
    }));

    test('linked writes land all together or not at all', () => withStore(adapter, {}, async (store) => {
      assert.equal(await store.commit(write('seen', 0)), 'ok');
      // One refused write (stale) keeps every other from landing: no snapshot, row, reply or doc.
      assert.equal(await store.commitAllOrNothing([
        write('sender', 0, { commandIds: ['s1'], topics: ['t'] }),
        write('receiver', 0, { commandIds: ['r1'], readModels: [{ collection: 'transactions', id: 'tx-r', doc: transactionDoc('p', 'u', 1) }] }),
        write('seen', 0),
      ]), false);
      assert.equal(await store.load('sender'), null);
      assert.equal(await store.load('receiver'), null);
      assert.equal(await store.getAppliedReply('receiver', 'r1'), null);
      assert.equal((await allPending(store, 't')).length, 0);
      assert.equal(await store.get('transactions', 'tx-r'), null);
      assert.equal((await store.load('seen'))?.version, 1);
      // A write that breaks the usage rules writes nothing either.
      const invalid: CommitWrite = { ...write('broken', 0), state: { amount: 10n } as unknown as JsonObject };
      assert.equal(await store.commitAllOrNothing([write('sender', 0), invalid]), false);
      assert.equal(await store.load('sender'), null);
      // All valid: all land, in order (one actor's two steps, a later write seeing the earlier one).
      assert.equal(await store.commitAllOrNothing([
        write('sender', 0, { commandIds: ['s1'], topics: ['t'] }),
        write('receiver', 0, { commandIds: ['r1'] }),
        write('sender', 1, { commandIds: ['s2'] }),
      ]), true);
      assert.equal((await store.load('sender'))?.version, 2);
      assert.equal((await store.load('receiver'))?.version, 1);
      assert.deepEqual(await store.getAppliedReply('sender', 's2'), { reply: { commandId: 's2', version: 2 } });
      assert.equal((await allPending(store, 't')).length, 1);
      assert.equal(await store.commitAllOrNothing([]), true);
    }));

    test('invalid input is a usage error and writes nothing', () => withStore(adapter, {}, async (store) => {
      const badWrites: CommitWrite[] = [
        { ...write('a', 0, { topics: ['t'] }), outbox: [{ id: 'not-the-convention', topic: 't', payload: 1 }] },
        write('a', 0, { readModels: [{ collection: 'transactions', id: 'tx', doc: { partnerId: 'p' } }] }), // lacks index fields
        { ...write('a', 0), state: { amount: 10n } as unknown as JsonObject },
        { ...write('a', 0), newVersion: 0 },
        write('bad\0key', 0),
      ];
      for (const bad of badWrites) await assert.rejects(store.commit(bad), StoreUsageError);
      assert.equal(await store.load('a'), null);
      await assert.rejects(store.list('transactions', { where: { partnerId: 'p' }, orderBy: 'createdAtMs', limit: 10 }), StoreUsageError);
      await assert.rejects(store.list('transactions', { limit: 0 }), StoreUsageError);
    }));

    test('a batch\'s outbox rows come in its writes\' order, after the batch before and before the next; a refused write takes no place', () => withStore(adapter, {}, async (store) => {
      // The sequence is taken once per batch (lmdb: one read and one write of it per transaction).
      assert.deepEqual(await store.commitBatch([write('b1', 0, { topics: ['t', 't'] }), write('b2', 0, { topics: ['t'] })]), ['ok', 'ok']);
      assert.deepEqual(
        await store.commitBatch([write('b1', 0, { topics: ['t'] }), write('b3', 0, { topics: ['t', 't'] }), write('b2', 1, { topics: ['t'] })]),
        ['version_conflict', 'ok', 'ok'],
      );
      assert.equal(await store.commit(write('b1', 1, { topics: ['t'] })), 'ok');
      const rows = await allPending(store, 't');
      assert.deepEqual(rows.map((row) => row.id), [
        outboxRowId('b1', 1, 0), outboxRowId('b1', 1, 1), outboxRowId('b2', 1, 0),
        outboxRowId('b3', 1, 0), outboxRowId('b3', 1, 1), outboxRowId('b2', 2, 0),
        outboxRowId('b1', 2, 0),
      ]);
      assert.ok(rows.every((row, i) => i === 0 || row.seq > (rows[i - 1]?.seq ?? Infinity)));
    }));

    test('outbox rows come back in commit order per topic; afterSeq pages', () => withStore(adapter, {}, async (store) => {
      const versions = new Map<string, number>();
      const expected: string[] = [];
      for (let i = 0; i < 30; i += 1) {
        const actorKey = `actor-${i % 4}`;
        const version = versions.get(actorKey) ?? 0;
        assert.equal(await store.commit(write(actorKey, version, { topics: ['webhooks', 'payouts', 'webhooks'] })), 'ok');
        versions.set(actorKey, version + 1);
        expected.push(outboxRowId(actorKey, version + 1, 0), outboxRowId(actorKey, version + 1, 2));
      }
      const rows = await allPending(store, 'webhooks');
      assert.deepEqual(rows.map((row) => row.id), expected);
      assert.ok(rows.every((row, i) => i === 0 || row.seq > (rows[i - 1]?.seq ?? Infinity)));
      const first = rows[0];
      assert.ok(first !== undefined);
      assert.equal(typeof first.createdAtMs, 'number', 'rows carry their commit time');
      assert.ok(Math.abs((first.createdAtMs ?? 0) - Date.now()) < 60_000);
      assert.deepEqual({ ...first, seq: 0, createdAtMs: 0 }, {
        id: 'actor-0:1:0', topic: 'webhooks', seq: 0, actorKey: 'actor-0', version: 1, partitionKey: 'actor-0',
        payload: { actorKey: 'actor-0', version: 1, index: 0 }, claimOwner: null, claimExpiresAtMs: 0, createdAtMs: 0,
      });
      assert.equal((await allPending(store, 'payouts')).length, 30);
      const page = await store.outboxPending('webhooks', 5, rows[9]?.seq ?? 0);
      assert.deepEqual(page.map((row) => row.id), expected.slice(10, 15));
    }));

    test('outbox claims: two owners never share a live claim; expiry returns rows; release; markDone removes', () => withStore(adapter, {}, async (store) => {
      for (let version = 0; version < 5; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      const ids = [1, 2, 3, 4, 5].map((version) => outboxRowId('a', version, 0));
      const byA = await store.outboxClaim('t', 'owner-a', 3, 100, 1_000);
      assert.deepEqual(byA.map((row) => row.id), ids.slice(0, 3));
      assert.ok(byA.every((row) => row.claimOwner === 'owner-a' && row.claimExpiresAtMs === 1_100));
      const byB = await store.outboxClaim('t', 'owner-b', 10, 100, 1_050);
      assert.deepEqual(byB.map((row) => row.id), ids.slice(3));
      assert.deepEqual(await store.outboxClaim('t', 'owner-b', 10, 100, 1_099), []);
      assert.equal((await store.outboxPending('t', 10)).length, 5); // claimed rows are still pending
      // owner-a's lease ends at 1,100: the rows come back, to whoever claims next.
      const again = await store.outboxClaim('t', 'owner-b', 10, 100, 1_100);
      assert.deepEqual(again.map((row) => row.id), ids.slice(0, 3));
      await store.outboxRelease([ids[0] ?? ''], 'owner-a'); // not owner-a's any more: no effect
      assert.deepEqual(await store.outboxClaim('t', 'owner-c', 10, 100, 1_101), []);
      await store.outboxRelease([ids[0] ?? '', ids[3] ?? ''], 'owner-b');
      assert.deepEqual((await store.outboxClaim('t', 'owner-c', 10, 100, 1_101)).map((row) => row.id), [ids[0], ids[3]]);
      await store.outboxMarkDone([ids[0] ?? '', ids[1] ?? '', 'a:99:0']);
      assert.deepEqual((await store.outboxPending('t', 10)).map((row) => row.id), ids.slice(2));
      assert.deepEqual((await store.outboxClaim('t', 'owner-d', 10, 100, 10_000)).map((row) => row.id), ids.slice(2));
    }));

    test('outbox renew: the owner keeps its claims, live or lapsed but untaken; rows taken, released or done are lost to it', () => withStore(adapter, {}, async (store) => {
      for (let version = 0; version < 4; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      const ids = [1, 2, 3, 4].map((version) => outboxRowId('a', version, 0));
      assert.equal((await store.outboxClaim('t', 'owner-a', 10, 100, 1_000)).length, 4);
      assert.deepEqual(await store.outboxRenew(ids.slice(0, 2), 'owner-a', 100, 1_050), ids.slice(0, 2));
      // Renewed to 1,150: at 1,120 the first two are still under owner-a's claim, the other two are free.
      assert.deepEqual((await store.outboxClaim('t', 'owner-b', 10, 100, 1_120)).map((row) => row.id), ids.slice(2));
      // Lapsed at 1,150 but nobody claimed them since: still owner-a's to renew.
      assert.deepEqual(await store.outboxRenew(ids, 'owner-a', 100, 1_200), ids.slice(0, 2));
      await store.outboxRelease([ids[0] ?? ''], 'owner-a');
      await store.outboxMarkDone([ids[1] ?? '']);
      assert.deepEqual(await store.outboxRenew([...ids, 'a:99:0'], 'owner-a', 100, 1_210), []);
      assert.deepEqual(await store.outboxRenew(ids.slice(2), 'owner-b', 100, 1_210), ids.slice(2));
      assert.deepEqual(await store.outboxRenew([], 'owner-b', 100, 1_210), []);
      assert.deepEqual((await store.outboxClaim('t', 'owner-c', 10, 100, 1_300)).map((row) => row.id), [ids[0]], 'only the released row is free');
    }));

    test('outbox backlog: rows not done and rows under a live claim, per topic, counted up to a cap, and the oldest row\'s commit time', () => withStore(adapter, {}, async (store) => {
      const counts = async (topic: string, nowMs: number, countMax: number) => {
        const { rows, claimed, capped } = await store.outboxBacklog(topic, nowMs, countMax);
        return { rows, claimed, capped };
      };
      assert.deepEqual(await store.outboxBacklog('t', 1_000, 100), { rows: 0, claimed: 0, deferred: 0, parked: 0, capped: false, oldestCreatedAtMs: null });
      const before = Date.now();
      assert.equal(await store.commit(write('a', 0, { topics: ['t'] })), 'ok');
      // Kept: the later commits must carry a later commit time (the store stamps it from the real clock).
      await new Promise((resolve) => setTimeout(resolve, 20));
      const secondAt = Date.now();
      for (let version = 1; version < 6; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      assert.equal(await store.commit(write('b', 0, { topics: ['other'] })), 'ok');
      const ids = [1, 2, 3, 4, 5, 6].map((version) => outboxRowId('a', version, 0));
      await store.outboxClaim('t', 'owner-a', 2, 100, 1_000);
      assert.deepEqual(await counts('t', 1_050, 100), { rows: 6, claimed: 2, capped: false });
      assert.deepEqual(await counts('t', 1_100, 100), { rows: 6, claimed: 0, capped: false }, 'a lapsed claim is not being worked on');
      assert.deepEqual(await counts('other', 1_050, 100), { rows: 1, claimed: 0, capped: false });
      assert.deepEqual(await counts('t', 1_050, 4), { rows: 4, claimed: 2, capped: true }, 'counted up to the cap');
      assert.deepEqual(await counts('t', 1_050, 6), { rows: 6, claimed: 2, capped: false }, 'exactly the cap is not capped');
      const oldest = (await store.outboxBacklog('t', 1_050, 100)).oldestCreatedAtMs ?? 0;
      assert.ok(oldest >= before && oldest < secondAt, 'the first row committed is the oldest, claimed or not');
      await store.outboxMarkDone(ids.slice(0, 4));
      const rest = await store.outboxBacklog('t', 1_050, 100);
      assert.deepEqual({ ...rest, oldestCreatedAtMs: null }, { rows: 2, claimed: 0, deferred: 0, parked: 0, capped: false, oldestCreatedAtMs: null }, 'done rows are gone');
      assert.ok((rest.oldestCreatedAtMs ?? 0) >= secondAt, 'the oldest is now a later row');
      await assert.rejects(store.outboxBacklog('t', 1_050, 0), StoreUsageError);
    }));

    test('outbox backlog: deferred and parked rows are counted, and the oldest row may be a deferred one', () => withStore(adapter, {}, async (store) => {
      for (let version = 0; version < 4; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      const ids = [1, 2, 3, 4].map((version) => outboxRowId('a', version, 0));
      const oldest = (await store.outboxPending('t', 1))[0]?.createdAtMs ?? null;
      await store.outboxClaim('t', 'w', 3, 10_000, 1_000);
      await store.outboxDefer([
        { id: ids[0] ?? '', notBeforeMs: 5_000, attempts: 1, reason: 'refused', parked: true },
        { id: ids[1] ?? '', notBeforeMs: 2_000, attempts: 1, reason: 'timeout', parked: false },
      ], 'w');
      const at = async (nowMs: number, countMax = 100) => {
        const { rows, claimed, deferred, parked, capped } = await store.outboxBacklog('t', nowMs, countMax);
        return { rows, claimed, deferred, parked, capped };
      };
      assert.deepEqual(await at(1_500), { rows: 4, claimed: 1, deferred: 2, parked: 1, capped: false });
      assert.deepEqual(await at(2_500), { rows: 4, claimed: 1, deferred: 1, parked: 1, capped: false }, 'a due row is not deferred any more');
      assert.deepEqual(await at(6_000), { rows: 4, claimed: 1, deferred: 0, parked: 1, capped: false }, 'parked until an attempt says otherwise');
      assert.deepEqual(await at(1_500, 3), { rows: 3, claimed: 1, deferred: 2, parked: 1, capped: true });
      assert.equal((await store.outboxBacklog('t', 1_500, 100)).oldestCreatedAtMs, oldest, 'the first row committed, deferred or not');
    }));

    test('outbox defer: a row handed back until a time is neither held nor claimable before it; claims take fresh rows first, then the oldest due', () => withStore(adapter, {}, async (store, harness) => {
      for (let version = 0; version < 6; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      const ids = [1, 2, 3, 4, 5, 6].map((version) => outboxRowId('a', version, 0));
      const at = (index: number): string => ids[index] ?? '';
      assert.equal((await store.outboxClaim('t', 'w', 10, 10_000, 1_000)).length, 6);
      assert.deepEqual(await store.outboxDefer([
        { id: at(0), notBeforeMs: 5_000, attempts: 3, reason: 'the chain refuses the send', parked: true },
        { id: at(1), notBeforeMs: 3_000, attempts: 1, reason: 'node timeout', parked: false },
        { id: at(2), notBeforeMs: 2_000, attempts: 2, reason: null, parked: false },
      ], 'w'), ids.slice(0, 3));
      assert.deepEqual(await store.outboxDefer([{ id: at(3), notBeforeMs: 9_000, attempts: 1, reason: 'not mine', parked: false }], 'someone-else'), [], 'not its claim');
      assert.deepEqual(await store.outboxDefer([{ id: 'a:99:0', notBeforeMs: 9_000, attempts: 1, reason: null, parked: false }], 'w'), [], 'no such row');
      assert.deepEqual(await store.outboxRenew(ids, 'w', 10_000, 1_100), ids.slice(3), 'deferred rows are no longer held');
      const claimIds = async (owner: string, nowMs: number): Promise<string[]> => (await store.outboxClaim('t', owner, 10, 10_000, nowMs)).map((row) => row.id);
      assert.deepEqual(await claimIds('x', 1_999), [], 'nothing is due before its time');
      assert.deepEqual(await claimIds('x', 2_000), [at(2)]);
      await store.outboxRelease([at(3)], 'w');
      assert.deepEqual(await claimIds('y', 3_000), [at(3), at(1)], 'a fresh row first, then the due one');
      const parked = await store.outboxClaim('t', 'z', 10, 10_000, 5_000);
      assert.deepEqual(parked.map((row) => row.id), [at(0)]);
      assert.deepEqual(
        { ...parked[0], seq: 0, createdAtMs: 0 },
        { id: at(0), topic: 't', seq: 0, actorKey: 'a', version: 1, partitionKey: 'a', payload: { actorKey: 'a', version: 1, index: 0 },
          claimOwner: 'z', claimExpiresAtMs: 15_000, createdAtMs: 0, notBeforeMs: 5_000, attempts: 3, reason: 'the chain refuses the send', parked: true },
      );
      // Pending rows keep commit order; a row never deferred carries no deferral fields.
      const pending = await allPending(store, 't');
      assert.deepEqual(pending.map((row) => row.id), ids);
      assert.deepEqual([pending[2]?.attempts, pending[2]?.reason, pending[2]?.parked], [2, undefined, false], 'a null reason is no reason');
      assert.deepEqual([pending[4]?.notBeforeMs, pending[4]?.attempts, pending[4]?.parked], [undefined, undefined, undefined]);
      // Deferred again (and across a reopen): the new time and record replace the old ones.
      assert.deepEqual(await store.outboxDefer([{ id: at(0), notBeforeMs: 20_000, attempts: 4, reason: 'still refused', parked: true }], 'z'), [at(0)]);
      await store.close();
      const reopened = await harness.open();
      try {
        assert.deepEqual((await reopened.outboxClaim('t', 'v', 10, 10_000, 19_999)).map((row) => row.id), [at(3), at(4), at(5), at(2), at(1)], 'lapsed claims come back: fresh rows, then by due time');
        const again = await reopened.outboxClaim('t', 'v', 10, 10_000, 20_000);
        assert.deepEqual(again.map((row) => [row.id, row.attempts, row.reason]), [[at(0), 4, 'still refused']]);
        await reopened.outboxRelease([at(0)], 'v');
        assert.deepEqual((await reopened.outboxClaim('t', 'u', 10, 10_000, 20_001)).map((row) => row.id), [at(0)], 'released, a deferred row is due at once');
        await reopened.outboxMarkDone([at(0), at(1)]);
        assert.deepEqual((await allPending(reopened, 't')).map((row) => row.id), ids.slice(2));
        await assert.rejects(reopened.outboxDefer([{ id: at(2), notBeforeMs: -1, attempts: 0, reason: null, parked: false }], 'v'), StoreUsageError);
        await assert.rejects(reopened.outboxDefer([{ id: at(2), notBeforeMs: 1, attempts: 0, reason: 'x'.repeat(501), parked: false }], 'v'), StoreUsageError);
      } finally {
        await reopened.close();
      }
    }));

    test('outbox waiting rows: listed in commit order with their reason; an operator retries one now or resolves one, never one a worker is on', () => withStore(adapter, {}, async (store) => {
      for (let version = 0; version < 4; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      const ids = [1, 2, 3, 4].map((version) => outboxRowId('a', version, 0));
      const at = (index: number): string => ids[index] ?? '';
      assert.equal((await store.outboxClaim('t', 'w', 10, 1_000, 1_000)).length, 4);
      await store.outboxDefer([
        { id: at(0), notBeforeMs: 100_000, attempts: 1, reason: 'refused', parked: true },
        { id: at(1), notBeforeMs: 50_000, attempts: 2, reason: 'timeout', parked: false },
      ], 'w');
      await store.outboxRelease([at(3)], 'w');
      const waiting = await store.outboxWaiting('t', 10);
      assert.deepEqual(waiting.map((row) => [row.id, row.notBeforeMs, row.attempts, row.reason, row.parked]), [
        [at(0), 100_000, 1, 'refused', true],
        [at(1), 50_000, 2, 'timeout', false],
      ]);
      assert.deepEqual((await store.outboxWaiting('t', 1)).map((row) => row.id), [at(0)]);
      assert.deepEqual((await store.outboxWaiting('t', 10, waiting[0]?.seq ?? 0)).map((row) => row.id), [at(1)]);
      assert.deepEqual(await store.outboxWaiting('other', 10), []);

      const retried = await store.outboxRetryNow('t', at(0), 1_500);
      assert.equal(retried.result, 'ok');
      assert.deepEqual((await store.outboxClaim('t', 'x', 10, 1_000, 1_500)).map((row) => [row.id, row.parked ?? null]), [[at(3), null], [at(0), true]]);
      assert.equal((await store.outboxRetryNow('t', at(0), 1_600)).result, 'claimed', 'a worker is on it');
      assert.equal((await store.outboxResolve('t', at(0), 1_600)).result, 'claimed');
      assert.equal((await store.outboxRetryNow('t', at(2), 1_600)).result, 'not_found', 'never deferred: nothing to retry');
      assert.equal((await store.outboxResolve('t', at(2), 1_600)).result, 'not_found');
      assert.equal((await store.outboxResolve('other', at(1), 1_600)).result, 'not_found', 'another topic');
      assert.equal((await store.outboxResolve('t', 'a:99:0', 1_600)).result, 'not_found');

      const resolved = await store.outboxResolve('t', at(1), 1_600);
      assert.ok(resolved.result === 'ok');
      assert.deepEqual([resolved.row.id, resolved.row.reason, resolved.row.attempts], [at(1), 'timeout', 2]);
      assert.deepEqual((await allPending(store, 't')).map((row) => row.id), [at(0), at(2), at(3)], 'resolved is done');
      assert.deepEqual((await store.outboxClaim('t', 'y', 10, 1_000, 60_000)).map((row) => row.id), [at(2), at(3), at(0)], 'and never claimed again');
      assert.equal((await store.outboxResolve('t', at(0), 61_000)).result, 'ok', 'once the claim lapsed');
      assert.deepEqual((await store.outboxWaiting('t', 10)).map((row) => row.id), []);
    }));

    test('concurrent claims split the rows between owners', () => withStore(adapter, {}, async (store) => {
      for (let version = 0; version < 40; version += 1) assert.equal(await store.commit(write('a', version, { topics: ['t'] })), 'ok');
      const claims = await Promise.all(['o1', 'o2', 'o3', 'o4'].map((owner) => store.outboxClaim('t', owner, 15, 1_000, 5_000)));
      const claimed = claims.flat().map((row) => row.id);
      assert.equal(new Set(claimed).size, claimed.length, 'a row was claimed twice');
      // A batch may come back short when it raced another claimer; what is left is still claimable.
      const rest = (await store.outboxClaim('t', 'o5', 40, 1_000, 5_000)).map((row) => row.id);
      assert.equal(new Set([...claimed, ...rest]).size, 40);
      assert.equal(claimed.length + rest.length, 40);
    }));

    test('list: 250 transactions of one user across pages, newest first, with totals and isolation', () => withStore(adapter, { readModelIndexes: [transactionIndex] }, async (store) => {
      // Half through commits (as actors write them), half through put.
      for (let batch = 0; batch < 5; batch += 1) {
        const readModels = Array.from({ length: 25 }, (_, i) => {
          const n = batch * 25 + i;
          return { collection: 'transactions', id: `tx-${String(n).padStart(4, '0')}`, doc: transactionDoc('p1', 'u1', n) };
        });
        assert.equal(await store.commit(write('projector', batch, { readModels })), 'ok');
      }
      for (let n = 125; n < 250; n += 1) await store.put('transactions', `tx-${String(n).padStart(4, '0')}`, transactionDoc('p1', 'u1', n));
      for (let n = 0; n < 3; n += 1) await store.put('transactions', `other-partner-${n}`, transactionDoc('p2', 'u1', n));
      for (let n = 0; n < 7; n += 1) await store.put('transactions', `other-user-${n}`, transactionDoc('p1', 'u2', n));

      const query = { where: { partnerId: 'p1', userId: 'u1' }, orderBy: 'createdAtMs', direction: 'desc' as const, limit: 100 };
      const pages = [
        await store.list('transactions', { ...query, offset: 0 }),
        await store.list('transactions', { ...query, offset: 100 }),
        await store.list('transactions', { ...query, offset: 200 }),
        await store.list('transactions', { ...query, offset: 300 }),
      ];
      assert.deepEqual(pages.map((page) => page.total), [250, 250, 250, 250]);
      assert.deepEqual(pages.map((page) => page.items.length), [100, 100, 50, 0]);
      const items = pages.flatMap((page) => page.items);
      assert.equal(new Set(items.map((item) => item.id)).size, 250);
      assert.ok(items.every((item) => item.doc.partnerId === 'p1' && item.doc.userId === 'u1'));
      const expectedIds = Array.from({ length: 250 }, (_, n) => `tx-${String(n).padStart(4, '0')}`).reverse();
      assert.deepEqual(items.map((item) => item.id), expectedIds); // createdAtMs desc, then id desc
      const ascending = await store.list('transactions', { ...query, direction: 'asc', limit: 3 });
      assert.deepEqual(ascending.items.map((item) => item.id), ['tx-0000', 'tx-0001', 'tx-0002']);

      const otherPartner = await store.list('transactions', { ...query, where: { partnerId: 'p2', userId: 'u1' } });
      assert.equal(otherPartner.total, 3);
      assert.ok(otherPartner.items.every((item) => item.id.startsWith('other-partner-')));
      assert.equal((await store.list('transactions', { ...query, where: { partnerId: 'p1', userId: 'u2' } })).total, 7);
      assert.deepEqual(await store.list('transactions', { ...query, where: { partnerId: 'p3', userId: 'u1' } }), { total: 0, items: [] });
      const byId = await store.list('transactions', { limit: 2, direction: 'desc' });
      assert.equal(byId.total, 260);
      assert.deepEqual(byId.items.map((item) => item.id), ['tx-0249', 'tx-0248']);
    }));

    test('index entries follow updates and removals', () => withStore(adapter, { readModelIndexes: [transactionIndex] }, async (store) => {
      await store.put('transactions', 'tx-1', transactionDoc('p1', 'u1', 1));
      await store.put('transactions', 'tx-2', transactionDoc('p1', 'u1', 10));
      await store.put('transactions', 'tx-1', { ...transactionDoc('p1', 'u1', 20), amount: '9.99' }); // now newest
      const query = { where: { partnerId: 'p1', userId: 'u1' }, orderBy: 'createdAtMs', direction: 'desc' as const, limit: 10 };
      const page = await store.list('transactions', query);
      assert.equal(page.total, 2);
      assert.deepEqual(page.items.map((item) => [item.id, item.doc.amount]), [['tx-1', '9.99'], ['tx-2', '10.00']]);
      await store.put('transactions', 'tx-2', transactionDoc('p1', 'u9', 10)); // moves to another user
      assert.deepEqual((await store.list('transactions', query)).items.map((item) => item.id), ['tx-1']);
      await store.put('transactions', 'tx-3', transactionDoc('p1', 'u1', 5));
      assert.equal(await store.commit(write('projector', 0, { readModels: [{ collection: 'transactions', id: 'tx-3', doc: null }] })), 'ok');
      assert.equal(await store.get('transactions', 'tx-3'), null); // a null doc in a commit deletes
      assert.equal((await store.list('transactions', query)).total, 1);
      assert.equal(await store.remove('transactions', 'tx-1'), true);
      assert.equal(await store.remove('transactions', 'tx-1'), false);
      assert.deepEqual(await store.list('transactions', query), { total: 0, items: [] });
      assert.equal(await store.get('transactions', 'tx-1'), null);
    }));

    test('key-value records and an index declared after docs exist', () => withStore(adapter, { readModelIndexes: [] }, async (store, harness) => {
      await store.put('kv', 'cursor:stellar', { pagingToken: '123' });
      await store.put('kv', 'cursor:stellar', { pagingToken: '124' });
      assert.deepEqual(await store.get('kv', 'cursor:stellar'), { pagingToken: '124' });
      assert.equal(await store.get('kv', 'missing'), null);
      for (let n = 0; n < 5; n += 1) await store.put('transactions', `tx-${n}`, transactionDoc('p1', 'u1', n * 2));
      await store.close();
      const reopened = await harness.open({ readModelIndexes: [transactionIndex] });
      try {
        const page = await reopened.list('transactions', { where: { partnerId: 'p1', userId: 'u1' }, orderBy: 'createdAtMs', limit: 10 });
        assert.deepEqual(page.items.map((item) => item.id), ['tx-0', 'tx-1', 'tx-2', 'tx-3', 'tx-4']);
      } finally {
        await reopened.close();
      }
    }));

    test('putIfAbsent: 20 concurrent attempts, exactly one inserted, the rest see its doc', () => withStore(adapter, {}, async (store) => {
      const results = await Promise.all(Array.from({ length: 20 }, (_, n) =>
        store.putIfAbsent('idempotency', 'partner-1:key-1', { response: { status: 200, attempt: n } })));
      const inserted = results.filter((result) => result.status === 'inserted');
      assert.equal(inserted.length, 1);
      const stored = await store.get('idempotency', 'partner-1:key-1');
      assert.ok(stored !== null);
      for (const result of results) if (result.status === 'exists') assert.deepEqual(result.doc, stored);
      assert.deepEqual(await store.putIfAbsent('idempotency', 'partner-1:key-1', { response: 'later' }), { status: 'exists', doc: stored });
    }));

    test('blob round trip', () => withStore(adapter, {}, async (store) => {
      const bytes = new Uint8Array(randomBytes(200_000));
      await store.putBlob('kyc/p1/u1/front', bytes);
      assert.deepEqual(await store.getBlob('kyc/p1/u1/front'), bytes);
      await store.putBlob('kyc/p1/u1/front', new Uint8Array([1, 2, 3]));
      assert.deepEqual(await store.getBlob('kyc/p1/u1/front'), new Uint8Array([1, 2, 3]));
      assert.equal(await store.getBlob('kyc/p1/u1/back'), null);
    }));

    test('blob stream: stored part by part, readable whole only once complete, then replacing what was there', () => withStore(adapter, {}, async (store, harness) => {
      await store.putBlob('kyc-document:1', new Uint8Array([1, 2, 3]));
      const first = randomBytes(blobPartBytes + 1000);
      const rest = [new Uint8Array(0), randomBytes(1), randomBytes(blobPartBytes * 2), ...Array.from({ length: 50 }, () => randomBytes(997))];
      const halfway = gate();
      const resume = gate();
      async function* document(): AsyncGenerator<Uint8Array> {
        yield first;
        yield new Uint8Array(0);
        halfway.open();
        await resume.opened;
        yield* rest;
      }
      const stored = store.putBlobStream('kyc-document:1', document());
      await halfway.opened;
      // The first part is written by now (the stream asked for more), yet the old blob is what reads see.
      assert.deepEqual(await store.getBlob('kyc-document:1'), new Uint8Array([1, 2, 3]));
      resume.open();
      const expected = Buffer.concat([first, ...rest]);
      assert.equal(await stored, expected.byteLength);
      assert.deepEqual(await store.getBlob('kyc-document:1'), new Uint8Array(expected));
      // Replaced again, by a whole blob and then by another stream: each time only the new bytes remain.
      await store.putBlob('kyc-document:1', new Uint8Array([4, 5]));
      assert.deepEqual(await store.getBlob('kyc-document:1'), new Uint8Array([4, 5]));
      assert.equal(await harness.blobStreamLeftovers(), 0, 'the replaced stream left no parts');
      assert.equal(await store.putBlobStream('kyc-document:1', chunksOf([new Uint8Array([6]), new Uint8Array([7, 8])])), 3);
      assert.deepEqual(await store.getBlob('kyc-document:1'), new Uint8Array([6, 7, 8]));
      assert.equal(await store.putBlobStream('kyc-document:empty', chunksOf([])), 0);
      assert.deepEqual(await store.getBlob('kyc-document:empty'), new Uint8Array(0));
    }));

    test('blob stream: a source that fails or brings too many bytes stores nothing and keeps the previous blob', () => withStore(adapter, {}, async (store, harness) => {
      await store.putBlob('kyc-document:2', new Uint8Array([1, 2, 3]));
      async function* failing(): AsyncGenerator<Uint8Array> {
        yield randomBytes(blobPartBytes * 2 + 5);
        throw new Error('client went away');
      }
      await assert.rejects(store.putBlobStream('kyc-document:2', failing()), /client went away/);
      await assert.rejects(store.putBlobStream('kyc-document:3', failing()), /client went away/);
      const oneMiB = randomBytes(1024 * 1024);
      async function* tooBig(): AsyncGenerator<Uint8Array> {
        for (let sent = 0; sent <= blobBytesMax; sent += oneMiB.byteLength) yield oneMiB;
      }
      await assert.rejects(store.putBlobStream('kyc-document:2', tooBig()), StoreUsageError);
      assert.deepEqual(await store.getBlob('kyc-document:2'), new Uint8Array([1, 2, 3]));
      assert.equal(await store.getBlob('kyc-document:3'), null);
      assert.equal(await harness.blobStreamLeftovers(), 0, 'the parts written before the failure are gone');
      await assert.rejects(store.putBlobStream('', chunksOf([])), StoreUsageError);
      await assert.rejects(store.putBlobStream('kyc-document:4', chunksOf(['text' as unknown as Uint8Array])), StoreUsageError);
    }));

    test('deleteBlob removes a whole or a streamed blob, parts included; false when there is none', () => withStore(adapter, {}, async (store, harness) => {
      await store.putBlob('whole', new Uint8Array([1]));
      await store.putBlobStream('streamed', chunksOf([randomBytes(blobPartBytes + 1), randomBytes(3)]));
      assert.equal(await store.deleteBlob('whole'), true);
      assert.equal(await store.deleteBlob('streamed'), true);
      assert.equal(await store.deleteBlob('streamed'), false);
      assert.equal(await store.deleteBlob('never'), false);
      assert.equal(await store.getBlob('whole'), null);
      assert.equal(await store.getBlob('streamed'), null);
      assert.equal(await harness.blobStreamLeftovers(), 0);
    }));

    test('blob stream cut short by a crash: its parts are removed when a store opens after blobStagingStaleMs', async () => {
      const harness = adapter.harness();
      try {
        const store = await harness.open();
        const never = gate();
        async function* stalled(): AsyncGenerator<Uint8Array> {
          yield randomBytes(blobPartBytes + 10);
          yield randomBytes(10);
          never.open();
          await new Promise<never>(() => undefined);
        }
        const abandoned = store.putBlobStream('kyc-document:crash', stalled());
        abandoned.catch(() => undefined);
        await never.opened;
        await store.close();
        assert.ok((await harness.blobStreamLeftovers()) > 0, 'the stream had written parts');
        const fresh = await harness.open({ blobStagingStaleMs: 3_600_000 });
        await fresh.close();
        assert.ok((await harness.blobStreamLeftovers()) > 0, 'a recent stream is left alone (another process may be writing it)');
        const later = await harness.open({ blobStagingStaleMs: 0 });
        try {
          assert.equal(await harness.blobStreamLeftovers(), 0);
          assert.equal(await later.getBlob('kyc-document:crash'), null);
        } finally {
          await later.close();
        }
      } finally {
        await harness.destroy();
      }
    });

    test('close and reopen: everything is still there', async () => {
      const harness = adapter.harness();
      try {
        const store = await harness.open({ readModelIndexes: [transactionIndex] });
        assert.equal(await store.commit(write('a', 0, { commandIds: ['c1'], topics: ['t'], events: ['e'],
          readModels: [{ collection: 'transactions', id: 'tx-1', doc: transactionDoc('p1', 'u1', 1) }] })), 'ok');
        assert.equal(await store.commit(write('b', 0, { shard: 2, token: 4 })), 'ok');
        await store.putBlob('doc-1', new Uint8Array([9, 8, 7]));
        const streamed = randomBytes(blobPartBytes + 7);
        await store.putBlobStream('doc-2', chunksOf([streamed]));
        await store.close();

        const reopened = await harness.open({ readModelIndexes: [transactionIndex] });
        try {
          assert.equal((await reopened.load('a'))?.version, 1);
          assert.deepEqual(await reopened.getAppliedReply('a', 'c1'), { reply: { commandId: 'c1', version: 1 } });
          assert.deepEqual((await reopened.outboxPending('t', 10)).map((row) => row.id), ['a:1:0']);
          assert.deepEqual(await reopened.loadEvents('a', 0, 10), [{ version: 1, index: 0, event: 'e' }]);
          const page = await reopened.list('transactions', { where: { partnerId: 'p1', userId: 'u1' }, orderBy: 'createdAtMs', limit: 10 });
          assert.deepEqual(page.items.map((item) => item.id), ['tx-1']);
          assert.deepEqual(await reopened.getBlob('doc-1'), new Uint8Array([9, 8, 7]));
          assert.deepEqual(await reopened.getBlob('doc-2'), new Uint8Array(streamed));
          assert.equal(await reopened.commit(write('b', 1, { shard: 2, token: 3 })), 'fenced'); // fence survived
          assert.equal(await reopened.commit(write('a', 1, { topics: ['t'] })), 'ok');
          const seqs = (await reopened.outboxPending('t', 10)).map((row) => row.seq);
          assert.ok((seqs[1] ?? 0) > (seqs[0] ?? Infinity), 'outbox seq continues after reopen');
        } finally {
          await reopened.close();
        }
      } finally {
        await harness.destroy();
      }
    });
  });
}

contract(lmdbAdapter(false));
contract(lmdbAdapter(true));
contract(mongoAdapter);

describe('LmdbStore crash safety', () => {
  test('SIGKILL while committing: reopens cleanly, acknowledged versions and their outbox rows are intact', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'store-crash-'));
    try {
      const acked = await runWriterUntilKilled(dir, 400);
      const store = new LmdbStore({ dir });
      await store.init();
      try {
        const rows = await allPending(store, crashTopic);
        for (const actorKey of crashActorKeys) {
          const snapshot = await store.load(actorKey);
          assert.ok(snapshot !== null, `${actorKey} was never written`);
          assert.ok(snapshot.version >= (acked.get(actorKey) ?? 0), `${actorKey} lost an acknowledged commit`);
          assert.deepEqual(snapshot.state, { counter: snapshot.version, actorKey });
          const versions = rows.filter((row) => row.actorKey === actorKey).map((row) => row.version);
          assert.deepEqual(versions, Array.from({ length: snapshot.version }, (_, i) => i + 1), `${actorKey} outbox rows`);
          assert.deepEqual(await store.get(crashCollection, actorKey), { version: snapshot.version });
          assert.deepEqual(await store.getAppliedReply(actorKey, `${actorKey}-cmd-${snapshot.version}`), { reply: { version: snapshot.version } });
          assert.equal(await store.getAppliedReply(actorKey, `${actorKey}-cmd-${snapshot.version + 1}`), null);
        }
        assert.ok(rows.every((row, i) => i === 0 || row.seq > (rows[i - 1]?.seq ?? Infinity)));
        // The store still takes writes after the crash.
        const snapshot = await store.load('crash-a');
        const next = (snapshot?.version ?? 0) + 1;
        assert.equal(await store.commit({
          actorKey: 'crash-a', expectedVersion: next - 1, newVersion: next, state: { counter: next },
          fence: { shard: 0, token: 1 }, appliedCommands: [], outbox: [], readModels: [],
        }), 'ok');
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Starts the writer child, waits for `ackedMin` acknowledged commits, then SIGKILLs it. */
async function runWriterUntilKilled(dir: string, ackedMin: number): Promise<Map<string, number>> {
  const script = fileURLToPath(new URL('../support/store-crash-writer.ts', import.meta.url));
  const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script, dir], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  const acked = new Map<string, number>();
  let ackCount = 0;
  let buffered = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`writer made too little progress (${ackCount} acks): ${stderr}`)), 60_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const [actorKey, version] = line.split(' ');
        if (actorKey === undefined || version === undefined) continue;
        acked.set(actorKey, Number(version));
        ackCount += 1;
      }
      if (ackCount >= ackedMin) {
        clearTimeout(timer);
        child.kill('SIGKILL'); // mid-flight: more commits are queued or being written
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (ackCount < ackedMin) reject(new Error(`writer exited early with ${code}: ${stderr}`));
    });
  });
  assert.equal(await exited, 'SIGKILL');
  return acked;
}

describe('LMDB value encoding: a store written with msgpack records and one written with plain maps read each other', () => {
  test('values written either way come back as the same plain JSON, whichever way the reader writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'store-encoding-'));
    const state: JsonObject = { phase: 'live', tx: { id: 'tx-1', amount: { decimal__: '12.50' }, tags: ['a', { b: 1 }] } };
    const doc = transactionDoc('p', 'u', 3);
    try {
      const records = new LmdbStore({ dir, plainMaps: false });
      await records.init();
      assert.equal(await records.commit({ ...write('old', 0, { commandIds: ['c1'] }), state }), 'ok');
      await records.put('transactions', 'old-doc', doc);
      await records.close();

      const plain = new LmdbStore({ dir, plainMaps: true });
      await plain.init();
      assert.deepEqual((await plain.load('old'))?.state, state, 'records are read by a plain-maps writer');
      assert.equal(await plain.commit({ ...write('new', 0, { commandIds: ['c2'] }), state }), 'ok');
      await plain.put('transactions', 'new-doc', doc);
      await plain.close();

      const reader = new LmdbStore({ dir, plainMaps: false });
      await reader.init();
      for (const key of ['old', 'new']) assert.deepEqual((await reader.load(key))?.state, state, `${key}: plain objects, not Maps`);
      assert.deepEqual(await reader.getAppliedReply('new', 'c2'), { reply: { commandId: 'c2', version: 1 } });
      assert.deepEqual(await reader.get('transactions', 'new-doc'), doc);
      assert.equal((await reader.list('transactions', { where: { partnerId: 'p', userId: 'u' }, orderBy: 'createdAtMs', limit: 10 })).total, 2);
      await reader.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
