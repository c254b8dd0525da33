// What the processes of one deployment (one KEY_PREFIX on one Redis) agree on at start, kept in
// Redis because it is the one thing they all share:
// - the sandbox demo partner's credentials, when DEMO_API_KEY or DEMO_PORTAL_PASSWORD is not set:
//   the first process to start stores the SHA-256 of the key and the scrypt hash of the portal
//   password it generated (SET NX, one JSON value), every later one adopts them. So a key or a
//   password printed by one process works on every edge; only its creator ever saw them.
// - which hosts run on an embedded store (LMDB under DATA_DIR): processes on one host share that
//   directory, processes on two hosts would each write their own store and disagree about every
//   transaction. Each such process registers its host with an expiry it renews; a process whose
//   host differs from a live registration refuses to start (registerStoreHostScript).
// Keys: `<prefix>deployment:demo-credentials`, `<prefix>deployment:embedded-store-hosts`.
import { createRedisClient, throwBusError, type RedisClient, type RedisConnectionLog } from './redis-connection.ts';
import { defineScripts, registerStoreHostScript } from './redis-scripts.ts';
import { assertNoBraces } from './shards.ts';

/** How long a host's registration lives without renewal; renewed every third of it. */
export const storeHostRegistrationMs = 30_000;

export interface DemoCredentialHashes {
  readonly keySha256: string;
  readonly portalPasswordScrypt: string;
}

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
   * Offers the hashes of a freshly generated demo key and portal password; returns the
   * deployment's and whether they are the ones offered (this process is the first, and the only
   * one that knows the key and the password).
   */
  async adoptDemoCredentials(offered: DemoCredentialHashes): Promise<{ readonly hashes: DemoCredentialHashes; readonly offeredWon: boolean }> {
    let previous: string | null;
    try {
      // SET … NX GET: one atomic step that sets when absent and answers what was there.
      previous = (await this.client.call('SET', `${this.keyPrefix}deployment:demo-credentials`, JSON.stringify(offered), 'NX', 'GET')) as string | null;
    } catch (error) {
      throwBusError(error);
    }
    if (previous === null) return { hashes: offered, offeredWon: true };
    const stored = JSON.parse(previous) as Partial<DemoCredentialHashes>;
    if (typeof stored.keySha256 !== 'string' || typeof stored.portalPasswordScrypt !== 'string') {
      throw new Error(`${this.keyPrefix}deployment:demo-credentials holds something else than demo credentials; delete it and restart`);
    }
    return { hashes: { keySha256: stored.keySha256, portalPasswordScrypt: stored.portalPasswordScrypt }, offeredWon: false };
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
