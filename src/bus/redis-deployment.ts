// What the processes of one deployment (one KEY_PREFIX on one Redis) agree on at start, kept in
// Redis because it is the one thing they all share:
// - the sandbox demo partner's key, when DEMO_API_KEY is not set: the first process to start
//   stores the SHA-256 of the key it generated (SET NX), every later one adopts that hash. So a
//   key printed by one edge works on every edge; only its creator ever saw the key itself.
// - which hosts run on an embedded store (LMDB under DATA_DIR): processes on one host share that
//   directory, processes on two hosts would each write their own store and disagree about every
//   transaction. Each such process registers its host with an expiry it renews; a process whose
//   host differs from a live registration refuses to start (registerStoreHostScript).
// Keys: `<prefix>deployment:demo-key-sha256`, `<prefix>deployment:embedded-store-hosts`.
import { createRedisClient, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
import { defineScripts, registerStoreHostScript } from './redis-scripts.ts';
import { assertNoBraces } from './shards.ts';

/** How long a host's registration lives without renewal; renewed every third of it. */
export const storeHostRegistrationMs = 30_000;

export class RedisDeployment {
  private readonly client: RedisClient;

  constructor(options: { readonly redis: string; readonly keyPrefix: string; readonly connectionLog?: RedisConnectionLog }) {
    assertNoBraces('key prefix', options.keyPrefix);
    this.client = createRedisClient(options.redis, 'deployment', options.connectionLog ?? {});
    defineScripts(this.client, [registerStoreHostScript]);
    this.keyPrefix = options.keyPrefix;
  }

  private readonly keyPrefix: string;

  /**
   * Offers the hash of a freshly generated demo key; returns the deployment's hash and whether it
   * is the one offered (this process is the first, and the only one that knows the key).
   */
  async adoptDemoKeyHash(offeredSha256: string): Promise<{ readonly sha256: string; readonly offeredWon: boolean }> {
    try {
      // SET … NX GET: one atomic step that sets when absent and answers what was there.
      const previous = (await this.client.call('SET', `${this.keyPrefix}deployment:demo-key-sha256`, offeredSha256, 'NX', 'GET')) as string | null;
      return previous === null ? { sha256: offeredSha256, offeredWon: true } : { sha256: previous, offeredWon: false };
    } catch (error) {
      throwBusError(error);
    }
  }

  /** Registers this host as running an embedded store until `nowMs + storeHostRegistrationMs`; another live host's name, or null. */
  async registerStoreHost(host: string, nowMs: number): Promise<string | null> {
    try {
      const other = await registerStoreHostScript.run(this.client, [`${this.keyPrefix}deployment:embedded-store-hosts`], [host, nowMs, nowMs + storeHostRegistrationMs, storeHostRegistrationMs * 2]);
      return typeof other === 'string' ? other : null;
    } catch (error) {
      throwBusError(error);
    }
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => {
      this.client.disconnect();
    });
  }
}
