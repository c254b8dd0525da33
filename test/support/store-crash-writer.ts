// Child process for the store crash test: commits to a few actors in parallel loops until killed.
// After each commit resolves (durable) it prints "<actorKey> <version>" on stdout, so the parent
// knows the lowest version each actor must have after a SIGKILL. Every commit writes the state,
// one outbox row, one read-model doc and one applied-command reply, all tied to the version.
// Usage: node --import tsx test/support/store-crash-writer.ts <lmdb dir>
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { outboxRowId } from '../../src/store/store.ts';

export const crashActorKeys = ['crash-a', 'crash-b', 'crash-c', 'crash-d'] as const;
export const crashTopic = 'crash';
export const crashCollection = 'crash_models';

async function writeLoop(store: LmdbStore, actorKey: string): Promise<void> {
  for (let version = 1; ; version += 1) {
    const result = await store.commit({
      actorKey,
      expectedVersion: version - 1,
      newVersion: version,
      state: { counter: version, actorKey },
      fence: { shard: 0, token: 1 },
      appliedCommands: [{ commandId: `${actorKey}-cmd-${version}`, reply: { version } }],
      outbox: [{ id: outboxRowId(actorKey, version, 0), topic: crashTopic, payload: { actorKey, version } }],
      readModels: [{ collection: crashCollection, id: actorKey, doc: { version } }],
    });
    if (result !== 'ok') throw new Error(`unexpected ${result} for ${actorKey} v${version}`);
    process.stdout.write(`${actorKey} ${version}\n`);
  }
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (dir === undefined) throw new Error('usage: store-crash-writer.ts <dir>');
  const store = new LmdbStore({ dir });
  await store.init();
  process.stdout.write('ready\n');
  await Promise.all(crashActorKeys.map((actorKey) => writeLoop(store, actorKey)));
}

if (process.argv[1]?.endsWith('store-crash-writer.ts')) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
