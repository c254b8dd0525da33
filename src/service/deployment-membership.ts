// A process joins its deployment at start (when the Redis bus is used: that is what the processes
// of one deployment share) and refuses the set-ups that would break it silently
// (src/bus/redis-deployment.ts keeps the shared facts):
// - sandbox without DEMO_API_KEY (or without DEMO_PORTAL_PASSWORD): every process used to generate
//   its own demo key and portal password, so a key that worked on one edge got 401 on the next.
//   Now the first process's are the deployment's; the others adopt their hashes, and only the
//   first prints (or writes) them.
// - an embedded store (no MONGODB_URL) in processes on different hosts: each host would keep its
//   own store. The second host refuses to start, naming the first and MONGODB_URL.
// SERVICE_HOSTNAME overrides the host name a process reports (tests; a host whose name changes).
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { RedisDeployment, storeHostRegistrationMs } from '../bus/redis-deployment.ts';
import type { RedisConnectionLog } from '../bus/redis-connection.ts';
import type { EnvConfig } from '../config/env.ts';
import { generateApiKey, sha256Hex } from '../edge/auth.ts';
import { hashPasswordSync } from '../portal/passwords.ts';

export interface SharedDemoKey {
  readonly sha256: string;
  /** The key itself in the process that generated it; null in the others (they never see it). */
  readonly generatedKey: string | null;
  /** The demo portal administrator's password hash, and the password in the process that generated it. */
  readonly portalPasswordScrypt: string;
  readonly generatedPortalPassword: string | null;
}

export interface DeploymentMembership {
  /** The deployment's demo key, when this process has to use a shared one (sandbox, Redis, no DEMO_API_KEY). */
  readonly demoKey: SharedDemoKey | null;
  close(): Promise<void>;
}

const none: DeploymentMembership = { demoKey: null, close: async () => undefined };

export async function joinDeployment(
  env: EnvConfig,
  options: { readonly embeddedStore: boolean; readonly clock: { nowMs(): number }; readonly log: Logger; readonly connectionLog: RedisConnectionLog },
): Promise<DeploymentMembership> {
  const needsDemoKey = env.sandbox && (env.DEMO_API_KEY === undefined || env.DEMO_PORTAL_PASSWORD === undefined);
  if (env.REDIS_URL === undefined || (!needsDemoKey && !options.embeddedStore)) return none;
  const deployment = new RedisDeployment({ redis: env.REDIS_URL, keyPrefix: env.KEY_PREFIX, connectionLog: options.connectionLog });
  let renewal: NodeJS.Timeout | null = null;
  try {
    if (options.embeddedStore) {
      const host = env.SERVICE_HOSTNAME ?? hostname();
      const other = await deployment.registerStoreHost(host, options.clock.nowMs());
      if (other !== null) {
        throw new Error(
          `the store is embedded (DATA_DIR ${env.DATA_DIR}) and a live process of this deployment (KEY_PREFIX '${env.KEY_PREFIX}') ` +
            `uses an embedded store on another host, ${other}: each host would keep its own data. Set MONGODB_URL in every process ` +
            `(or run every process of the deployment on one host)`,
        );
      }
      renewal = setInterval(() => {
        deployment.registerStoreHost(host, options.clock.nowMs()).then(
          (conflict) => {
            if (conflict !== null) options.log.error({ host, otherHost: conflict }, 'another host registered an embedded store in this deployment');
          },
          (error: unknown) => options.log.warn({ error: String(error) }, 'could not renew the embedded store host registration'),
        );
      }, Math.floor(storeHostRegistrationMs / 3));
      renewal.unref();
    }
    let demoKey: SharedDemoKey | null = null;
    if (needsDemoKey) {
      const generated = generateApiKey('demo');
      const password = generateApiKey('portal');
      const adopted = await deployment.adoptDemoCredentials({ keySha256: sha256Hex(generated), portalPasswordScrypt: hashPasswordSync(password) });
      demoKey = {
        sha256: adopted.hashes.keySha256,
        generatedKey: adopted.offeredWon ? generated : null,
        portalPasswordScrypt: adopted.hashes.portalPasswordScrypt,
        generatedPortalPassword: adopted.offeredWon ? password : null,
      };
    }
    if (renewal === null) await deployment.close();
    return {
      demoKey,
      async close() {
        if (renewal === null) return;
        clearInterval(renewal);
        await deployment.close();
      },
    };
  } catch (error) {
    if (renewal !== null) clearInterval(renewal);
    await deployment.close();
    throw error;
  }
}
