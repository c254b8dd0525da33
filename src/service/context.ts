// What every role is built from: configuration, the clock, the logger, the bus, leases, the store,
// the partner directory and key ring. Built once per process by `createContext`.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import { systemClock, type Bus } from '../bus/bus.ts';
import type { Leases } from '../bus/leases.ts';
import { MemoryBus } from '../bus/memory-bus.ts';
import { MemoryLeases } from '../bus/memory-leases.ts';
import { MemoryOffers } from '../bus/memory-offers.ts';
import { RedisBus } from '../bus/redis-bus.ts';
import { RedisLeases } from '../bus/redis-leases.ts';
import { RedisOffers } from '../bus/redis-offers.ts';
import { Requester } from '../bus/request-reply.ts';
import { OutageLog, type OutageLogFn } from '../bus/outage-log.ts';
import type { RedisConnectionLog } from '../bus/redis-connection.ts';
import type { ShardGate } from '../bus/shard-coverage.ts';
import { replyStreamKey } from '../bus/shards.ts';
import { ActorClient } from '../actors/client.ts';
import { runtimeReadModelIndexes } from '../actors/store-adapter.ts';
import { loadCorridorsFile, loadDefaultCorridors } from '../config/corridors.ts';
import type { EnvConfig, Role } from '../config/env.ts';
import { defaultLimitsConfig, loadLimitsFile } from '../config/limits.ts';
import { loadPartnersFile } from '../config/partners.ts';
import type { CorridorConfig } from '../domain/corridors.ts';
import type { LimitsConfig } from '../domain/limits.ts';
import { createKeyRing, generateApiKey, sha256Hex } from '../edge/auth.ts';
import { createAuthThrottle } from '../edge/auth-throttle.ts';
import { LmdbStore } from '../store/lmdb-store.ts';
import { MongoStore } from '../store/mongo-store.ts';
import { defaultReadModelIndexes, type ReadModelIndex, type SnapshotStore } from '../store/store.ts';
import { withEncryptedBlobs } from '../store/encrypted-blobs.ts';
import { retentionReadModelIndexes } from './retention.ts';
import { storageUsageReadModelIndexes } from './storage-usage.ts';
import type { DataKeyring } from '../store/data-encryption.ts';
import { dataKeyringFromEnv, sandboxDataKeyId } from '../store/data-keys.ts';
import type { LiveConfig, ServiceContext } from '../ports/context.ts';
import { quoteOfferCodec, type QuoteOffers } from '../ports/quote-offers.ts';
import { demoPartnerId, PartnerDirectory, partnerFromConfig } from '../ports/partners.ts';
import { webhookReadModelIndexes } from '../webhooks/records.ts';
import { demoPortalAdminEmail, hashPasswordSync, portalReadModelIndexes } from '../portal/index.ts';
import { onrampReadModelIndexes } from '../onramp/pix-inbox.ts';
import { join } from 'node:path';
import { joinDeployment, type SharedDemoKey } from './deployment-membership.ts';

/** Read-model indexes of every role (declared once, created at start). */
export const serviceReadModelIndexes: ReadModelIndex[] = [
  ...defaultReadModelIndexes, ...runtimeReadModelIndexes, ...webhookReadModelIndexes, ...onrampReadModelIndexes, ...retentionReadModelIndexes,
  ...storageUsageReadModelIndexes, ...portalReadModelIndexes,
];

function liveConfig(corridors: CorridorConfig, limits: LimitsConfig): LiveConfig {
  let rates = { ...corridors.rates };
  return {
    corridors: () => corridors,
    limits: () => limits,
    rates: () => rates,
    setRate(currency, rate) {
      rates = { ...rates, [currency]: rate };
    },
  };
}

export interface ContextOverrides {
  readonly bus?: Bus;
  readonly leases?: Leases;
  readonly quoteOffers?: QuoteOffers;
  readonly store?: SnapshotStore;
  readonly log?: Logger;
  readonly clock?: { nowMs(): number };
}

/** Lines of the bus's outage logs (src/bus/outage-log.ts) through the process's logger. */
export function outageLogTo(log: Logger): OutageLogFn {
  return (level, message, fields) => log[level](fields, message);
}

/**
 * The roles that read or write personal data: the edge stores KYC documents, the shard workers run
 * the KYC actor. Only they are given (and need) DATA_ENCRYPTION_KEY.
 */
export const dataKeyRoles: readonly Role[] = ['all', 'edge', 'shard'];

/** The data keys of a role that holds personal data (a bug to ask in another role). */
export function requireDataKeys(ctx: ServiceContext): DataKeyring {
  if (ctx.dataKeys === null) throw new Error(`role ${ctx.env.ROLE} holds no data encryption key`);
  return ctx.dataKeys;
}

export async function createContext(env: EnvConfig, overrides: ContextOverrides = {}): Promise<ServiceContext> {
  const processId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const log = overrides.log ?? pino({ level: env.LOG_LEVEL, base: { role: env.ROLE, processId } });
  const clock = overrides.clock ?? { nowMs: () => Date.now() };
  // Before anything is opened: outside sandbox mode a role that holds personal data does not start
  // without its key (the error says which variable and how to make one).
  const dataKeys = dataKeyRoles.includes(env.ROLE) ? dataKeyringFromEnv(env) : null;
  if (dataKeys?.current.id === sandboxDataKeyId) {
    log.warn('DATA_ENCRYPTION_KEY is not set: personal data is encrypted under the public sandbox key (sandbox mode only)');
  }
  // Connection outages of the Redis clients go to the log, one line when lost and one when back.
  const connectionLog: RedisConnectionLog = { log: outageLogTo(log) };
  // Before the store is opened: an embedded store on a second host of the deployment is refused.
  const membership = await joinDeployment(env, { embeddedStore: overrides.store === undefined && !env.MONGODB_URL, clock, log, connectionLog });
  const bus = overrides.bus ?? (env.REDIS_URL ? new RedisBus({ redis: env.REDIS_URL, connectionLog }) : new MemoryBus());
  const leases =
    overrides.leases ??
    (env.REDIS_URL ? new RedisLeases({ redis: env.REDIS_URL, keyPrefix: env.KEY_PREFIX, connectionLog }) : new MemoryLeases());
  const store = withEncryptedBlobs(
    overrides.store ??
      (env.MONGODB_URL
        ? new MongoStore({ url: env.MONGODB_URL, dbName: env.MONGODB_DB, readModelIndexes: serviceReadModelIndexes })
        : new LmdbStore({ dir: join(env.DATA_DIR, 'store'), readModelIndexes: serviceReadModelIndexes, plainMaps: env.STORE_PLAIN_MAPS })),
    dataKeys,
  );
  await store.init().catch(async (error: unknown) => {
    await membership.close();
    throw error;
  });

  // Quote offers live where the bus does: shared by every edge through Redis, or in this process.
  const offersConfig = { perPartnerMax: env.QUOTE_OFFERS_PER_PARTNER_MAX, graceMs: env.QUOTE_OFFER_GRACE_MS, codec: quoteOfferCodec, clock };
  const quoteOffers: QuoteOffers =
    overrides.quoteOffers ??
    (env.REDIS_URL ? new RedisOffers({ ...offersConfig, redis: env.REDIS_URL, keyPrefix: env.KEY_PREFIX, connectionLog }) : new MemoryOffers(offersConfig));

  const corridors = env.CORRIDORS_FILE ? loadCorridorsFile(env.CORRIDORS_FILE) : loadDefaultCorridors();
  const limits = env.LIMITS_FILE ? loadLimitsFile(env.LIMITS_FILE) : defaultLimitsConfig;
  const { keyRing, partners, generatedKeys } = partnerAccess(env, log, membership.demoKey);

  const authThrottle = createAuthThrottle({
    config: { ratePerSecond: env.AUTH_FAILURES_PER_MINUTE / 60, burst: env.AUTH_FAILURES_BURST },
    log: (fields, message) => log.warn(fields, message),
  });

  const requesters: Requester[] = [];
  return {
    env,
    processId,
    clock,
    log,
    bus,
    leases,
    store,
    quoteOffers,
    dataKeys,
    keyPrefix: env.KEY_PREFIX,
    shardCount: env.SHARDS,
    config: liveConfig(corridors, limits),
    partners,
    keyRing,
    authThrottle,
    generatedKeys,
    actorClient: actorClientFactory({ bus, log, processId, keyPrefix: env.KEY_PREFIX, shardCount: env.SHARDS, clock }, requesters),
    async close() {
      for (const requester of requesters) await requester.close();
      await bus.close();
      await leases.close();
      await quoteOffers.close();
      await store.close();
      await membership.close();
    },
  };
}

/**
 * The partner directory (from PARTNERS_FILE) and the key ring with the ops key and, in sandbox
 * mode only, the demo partner's key; a key the process had to generate is handed back to print.
 */
function partnerAccess(env: EnvConfig, log: Logger, sharedDemoKey: SharedDemoKey | null): Pick<ServiceContext, 'keyRing' | 'partners' | 'generatedKeys'> {
  const keyRing = createKeyRing();
  const partners = new PartnerDirectory(keyRing);
  for (const partner of env.PARTNERS_FILE ? loadPartnersFile(env.PARTNERS_FILE) : []) partners.set(partnerFromConfig(partner));

  const generatedKeys: { demoApiKey?: string; opsApiKey?: string; demoApiKeyElsewhere?: boolean; demoPortalPassword?: string } = {};
  const opsKey = env.OPS_API_KEY ?? (generatedKeys.opsApiKey = generateApiKey('ops'));
  keyRing.setOpsKeys([sha256Hex(opsKey)]);
  // The demo partner exists in sandbox mode only: outside it, a key anyone may know (it is in
  // every example) must not reach money. A DEMO_API_KEY set there is ignored, and the start says so.
  if (!env.sandbox && env.DEMO_API_KEY !== undefined) {
    log.warn('DEMO_API_KEY is set but sandbox mode is off (SANDBOX=0): there is no demo partner, and the key is not honoured');
  }
  if (env.sandbox) {
    // Several processes on one Redis share one generated key (src/service/deployment-membership.ts).
    // A value set in the environment wins; a generated one is the deployment's when shared.
    let demoKeySha256: string;
    if (env.DEMO_API_KEY !== undefined) demoKeySha256 = sha256Hex(env.DEMO_API_KEY);
    else if (sharedDemoKey !== null) {
      demoKeySha256 = sharedDemoKey.sha256;
      if (sharedDemoKey.generatedKey !== null) generatedKeys.demoApiKey = sharedDemoKey.generatedKey;
      else generatedKeys.demoApiKeyElsewhere = true;
    } else {
      demoKeySha256 = sha256Hex((generatedKeys.demoApiKey = generateApiKey('demo')));
    }
    if (partners.get(demoPartnerId) === undefined) {
      // The demo partner's portal administrator: the first-run path `npm start` prints (docs/portal.md).
      let passwordScrypt: string;
      if (env.DEMO_PORTAL_PASSWORD !== undefined) passwordScrypt = hashPasswordSync(env.DEMO_PORTAL_PASSWORD);
      else if (sharedDemoKey !== null) {
        passwordScrypt = sharedDemoKey.portalPasswordScrypt;
        if (sharedDemoKey.generatedPortalPassword !== null) generatedKeys.demoPortalPassword = sharedDemoKey.generatedPortalPassword;
      } else {
        passwordScrypt = hashPasswordSync((generatedKeys.demoPortalPassword = generateApiKey('portal')));
      }
      partners.set({
        id: demoPartnerId,
        name: 'Demo partner',
        apiKeySha256: [demoKeySha256],
        kycEnabled: true,
        kybApproved: true,
        disabledUsers: new Set(),
        webhook: null,
        fees: undefined,
        portalAdmins: [{ email: demoPortalAdminEmail, passwordScrypt }],
      });
    }
  }
  return { keyRing, partners, generatedKeys };
}

/** What the context's actor clients are built on. */
interface ActorClientParts {
  readonly bus: Bus;
  readonly log: Logger;
  readonly processId: string;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly clock: { nowMs(): number };
}

/** `ctx.actorClient`: each client gets its own reply stream; its requester is kept to close with the context. */
function actorClientFactory(parts: ActorClientParts, requesters: Requester[]): ServiceContext['actorClient'] {
  return async (name, options = {}) => {
    // The reply loop retries every ≤ 2 s while Redis is away: one line when it starts failing,
    // one when it reads again (not one per retry).
    const replyOutage = new OutageLog({
      log: outageLogTo(parts.log),
      clock: systemClock,
      beganMessage: 'reply loop cannot read its reply stream; retrying',
      endedMessage: 'reply loop reads its reply stream again',
      fields: { client: name },
      countName: 'failures',
    });
    const requester = await Requester.start({
      bus: parts.bus,
      replyStream: replyStreamKey(parts.keyPrefix, `${name}-${parts.processId}`),
      onError: (error) => replyOutage.failed({ error: String(error) }),
      onRecovered: () => replyOutage.recovered(),
    });
    requesters.push(requester);
    return new ActorClient({
      bus: parts.bus,
      requester,
      keyPrefix: parts.keyPrefix,
      shardCount: parts.shardCount,
      nowMs: parts.clock.nowMs,
      ...(options.gate === undefined ? {} : { gate: options.gate }),
    });
  };
}
