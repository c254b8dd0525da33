// Starts the whole service in-process for end-to-end tests: `startService` from the composition
// root with ROLE=all (edge, shard, watcher, payout, webhooks, admin) exactly as `npm start` wires
// it — the sandbox rail and its cached liquidity view, the sandbox chain, deposit verification,
// reconciliation, payment contexts and the sandbox helpers — on free ports (PORT, GRPC_PORT and
// PAYOUT_GRPC_PORT 0), a temp DATA_DIR (embedded store), a partners file with two test partners
// (KYC enabled with a disabled user; KYC disabled) plus the demo partner, fixed demo and ops keys,
// and for the Redis runs a private redis-server. `stop()` tears everything down.
//
// Conditions are driven through the real knobs: the sandbox rail's liquidity, outages and latency
// through the admin gRPC service (as an operator would), chain deposits through POST
// /sandbox/deposits. One exception, on purpose: `partialEdge` runs the service without its edge
// and starts an edge here with exactly the capabilities given — for tests whose subject is an
// edge WITHOUT a capability (503 service_unavailable) or an edge option the composition root does
// not expose (a small rate-limit bucket).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { hashPasswordSync } from '../../src/portal/passwords.ts';
import { readEnv } from '../../src/config/env.ts';
import type { PartnerConfig } from '../../src/config/partners.ts';
import type { PaymentMethod } from '../../src/domain/assets.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { resolveRoute } from '../../src/domain/corridors.ts';
import { toJsonNumber } from '../../src/domain/money.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { createAdminClient, type AdminClient } from '../../src/grpc/admin-client.ts';
import type { ServiceContext } from '../../src/ports/context.ts';
import type { EdgeDeps } from '../../src/edge/routes/common.ts';
import { startEdgeRole, type EdgeRole, type EdgeRoleOptions } from '../../src/service/edge-role.ts';
import type { PaymentContexts } from '../../src/ports/ports.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from './redis-server.ts';

export type BusKind = 'memory' | 'redis';

/** Partner ids of the partners file every harness writes. */
export const testPartners = {
  /** KYC enabled, KYB approved; `blockedUserId` is disabled. */
  kycOn: 'kyc-on',
  /** KYC disabled, KYB approved. */
  kycOff: 'kyc-off',
  /** KYC disabled, KYB NOT approved: its transactions count against the KYB cap (100). */
  kybPending: 'kyb-pending',
} as const;
export const blockedUserId = 'blocked-user';

/** Bound on the extra partners a harness declares (each one is a key and a rate-limit bucket). */
const extraPartnersMax = 100;

export interface ServiceHarnessOptions {
  readonly busKind?: BusKind;
  /**
   * Only for tests of an edge that deliberately lacks a capability (or needs an edge option the
   * composition root does not expose): the service runs its shard role, and the edge is started
   * here with exactly these deps and options. Without it, the service's own edge answers.
   */
  readonly partialEdge?: { readonly deps: EdgeDeps; readonly options?: EdgeRoleOptions };
  readonly shards?: number;
  /** Extra environment of the service (e.g. CHAINS_FILE); wins over the harness's defaults. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Extra partners (KYC disabled, KYB approved), `extra-0` … `extra-<n-1>`: load spread over several
   * partners stays within the real per-partner rate limit.
   */
  readonly extraPartners?: number;
  /** Webhook destinations of test partners, by partner id (the partners file's `webhook`). */
  readonly webhooks?: Readonly<Record<string, { readonly url: string; readonly secret: string }>>;
  /** Portal administrators per partner id (their passwords are hashed into the partners file). */
  readonly portalAdmins?: Readonly<Record<string, { readonly email: string; readonly password: string }>>;
  /** The service's logger (default: pino at LOG_LEVEL, silent unless HARNESS_LOG is set). */
  readonly log?: Logger;
}

/** The sandbox rail's knobs, turned through the admin gRPC service. */
export interface SandboxRailKnobs {
  /** Sets the method's liquidity (a decimal text in its currency); the edge sees it on return. */
  setLiquidity(method: PaymentMethod, amount: string): Promise<void>;
  /** Starts or ends an outage of the method; the edge sees it on return. */
  setOutage(method: PaymentMethod, down: boolean): Promise<void>;
  /** How long every rail call takes to answer (payouts, PIX charges, liquidity reads). */
  setLatency(latencyMs: number): Promise<void>;
  /** The share (0..1) of new payouts the rail fails (drawn per idempotency key: deterministic). */
  setFailureRate(rate: number): Promise<void>;
  /** Reads the rail now, so the edge's cached liquidity view reflects the knobs. */
  refreshLiquidity(): Promise<void>;
}

export interface ServiceHarness {
  readonly baseUrl: string;
  readonly port: number;
  /** The health listener's base URL (HEALTH_PORT given in `env`), or null. */
  readonly healthUrl: string | null;
  /** The admin gRPC service's port (plaintext, loopback: ADMIN_TLS=off), or null when none runs. */
  readonly adminPort: number | null;
  readonly demoApiKey: string;
  readonly opsApiKey: string;
  /** API key of each test partner (and `demo`, and the extra partners). */
  readonly apiKeys: Readonly<Record<string, string>>;
  /** Ids of the extra partners, in order. */
  readonly extraPartnerIds: readonly string[];
  readonly ctx: ServiceContext;
  readonly busKind: BusKind;
  /** The sandbox rail's knobs; null with `partialEdge` (no admin service, no rail in that process). */
  readonly rail: SandboxRailKnobs | null;
  /** Moves the service's clock (edge and actors) forward, e.g. past a quote's expiry. */
  advanceClockMs(ms: number): void;
  /**
   * Restarts the service as an operator would: a graceful stop, then a new start on the same data
   * directory, Redis, keys and partners (the clock keeps its offset). Every actor is then loaded
   * again from its snapshot. Not with `partialEdge`. `baseUrl`, `port`, `ctx` and `rail` follow
   * the new process.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function key(label: string): string {
  return `${label}_${randomBytes(20).toString('hex')}`;
}

function partnersOf(
  apiKeys: Readonly<Record<string, string>>,
  extraIds: readonly string[],
  webhooks: ServiceHarnessOptions['webhooks'] = {},
  admins: ServiceHarnessOptions['portalAdmins'] = {},
): PartnerConfig[] {
  const partner = (id: string, name: string, kycEnabled: boolean, disabledUsers: string[]): PartnerConfig => {
    const webhook = webhooks[id];
    const admin = admins[id];
    return {
      id,
      name,
      apiKeySha256: [sha256Hex(apiKeys[id] ?? '')],
      kycEnabled,
      kybApproved: true,
      disabledUsers,
      ...(webhook === undefined ? {} : { webhook: { url: webhook.url, secret: webhook.secret } }),
      ...(admin === undefined ? {} : { portalAdmins: [{ email: admin.email, passwordScrypt: hashPasswordSync(admin.password) }] }),
    };
  };
  return [
    partner(testPartners.kycOn, 'KYC-enabled test partner', true, [blockedUserId]),
    partner(testPartners.kycOff, 'KYC-disabled test partner', false, []),
    { ...partner(testPartners.kybPending, 'Test partner awaiting KYB approval', false, []), kybApproved: false },
    ...extraIds.map((id) => partner(id, `Extra test partner ${id}`, false, [])),
  ];
}

/** The knobs, through the admin service; every call names every field (proto3 zero means "set to 0"). */
function railKnobs(admin: AdminClient, service: RunningService): SandboxRailKnobs {
  const unchanged = { liquidity: '', latency_ms: -1, failure_rate: -1, outage: '' };
  const refreshLiquidity = async (): Promise<void> => {
    const view = service.rails?.liquidity;
    if (view === undefined) throw new Error('this service runs no rail');
    // A round already running may have read the rail before the change; the second one did not.
    await view.refresh();
    await view.refresh();
  };
  return {
    async setLiquidity(method, amount) {
      await admin.call('SetSandboxRail', { ...unchanged, method, liquidity: amount });
      await refreshLiquidity();
    },
    async setOutage(method, down) {
      await admin.call('SetSandboxRail', { ...unchanged, method, outage: down ? 'on' : 'off' });
      await refreshLiquidity();
    },
    async setLatency(latencyMs) {
      await admin.call('SetSandboxRail', { ...unchanged, method: 'PIX', latency_ms: latencyMs });
    },
    async setFailureRate(rate) {
      await admin.call('SetSandboxRail', { ...unchanged, method: 'BREB', failure_rate: rate });
    },
    refreshLiquidity,
  };
}

export async function startServiceHarness(options: ServiceHarnessOptions = {}): Promise<ServiceHarness> {
  const busKind = options.busKind ?? 'memory';
  const extraCount = options.extraPartners ?? 0;
  if (!Number.isInteger(extraCount) || extraCount < 0 || extraCount > extraPartnersMax) {
    throw new RangeError(`extraPartners must be an integer in [0, ${extraPartnersMax}]`);
  }
  const extraPartnerIds = Array.from({ length: extraCount }, (_, index) => `extra-${index}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'service-e2e-'));
  const apiKeys: Record<string, string> = {
    demo: key('demo'),
    [testPartners.kycOn]: key('kycon'),
    [testPartners.kycOff]: key('kycoff'),
    [testPartners.kybPending]: key('kybpending'),
  };
  for (const id of extraPartnerIds) apiKeys[id] = key(id.replace('-', ''));
  const opsApiKey = key('ops');
  const partnersFile = join(dataDir, 'partners.json');
  writeFileSync(partnersFile, JSON.stringify({ partners: partnersOf(apiKeys, extraPartnerIds, options.webhooks, options.portalAdmins) }));
  let redis: PrivateRedis | null = null;
  let service: RunningService | null = null;
  let edge: EdgeRole | null = null;
  let admin: AdminClient | null = null;
  try {
    if (busKind === 'redis') redis = await startRedis();
    const env = readEnv({
      PORT: '0',
      GRPC_PORT: '0',
      PAYOUT_GRPC_PORT: '0',
      HOST: '127.0.0.1',
      // One process on loopback, as `npm start` runs it: the admin service without TLS (allowed on
      // a loopback ADMIN_HOST only; test/integration/admin-tls.test.ts covers the TLS service).
      ADMIN_TLS: 'off',
      ROLE: options.partialEdge === undefined ? 'all' : 'shard',
      DATA_DIR: dataDir,
      PARTNERS_FILE: partnersFile,
      DEMO_API_KEY: apiKeys['demo'],
      OPS_API_KEY: opsApiKey,
      SANDBOX: '1',
      SHARDS: String(options.shards ?? 8),
      KEY_PREFIX: randomKeyPrefix('e2e'),
      LOG_LEVEL: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug',
      ...(redis === null ? {} : { REDIS_URL: redis.url }),
      ...options.env,
    });
    let clockOffsetMs = 0;
    const clock = { nowMs: () => Date.now() + clockOffsetMs };
    const overrides = { clock, ...(options.log === undefined ? {} : { log: options.log }) };
    service = await startService(env, overrides);
    let port = service.port;
    if (options.partialEdge !== undefined) {
      edge = await startEdgeRole(service.ctx, options.partialEdge.deps, options.partialEdge.options ?? {});
      port = edge.port;
    }
    if (port === null) throw new Error('the service started no edge');
    if (service.adminPort !== null && service.rails !== null) admin = createAdminClient(`127.0.0.1:${service.adminPort}`, opsApiKey, { transport: { kind: 'plaintext' } });
    // What a restart replaces; the returned harness reads them through getters.
    let running = service;
    let runningPort = port;
    let adminClient = admin;
    const startedEdge = edge;
    const startedRedis = redis;
    let stopped: Promise<void> | undefined;
    let restarting: Promise<void> | undefined;
    return {
      get baseUrl() {
        return `http://127.0.0.1:${runningPort}`;
      },
      get port() {
        return runningPort;
      },
      get healthUrl() {
        return running.healthPort === null ? null : `http://127.0.0.1:${running.healthPort}`;
      },
      get adminPort() {
        return running.adminPort;
      },
      demoApiKey: apiKeys['demo'] ?? '',
      opsApiKey,
      apiKeys,
      extraPartnerIds,
      get ctx() {
        return running.ctx;
      },
      busKind,
      get rail() {
        return adminClient === null ? null : railKnobs(adminClient, running);
      },
      advanceClockMs(ms) {
        clockOffsetMs += ms;
      },
      async restart() {
        if (startedEdge !== null) throw new Error('restart() is not for a harness with partialEdge');
        if (stopped !== undefined) throw new Error('the harness is stopped');
        restarting = (async () => {
          adminClient?.close();
          adminClient = null;
          await running.stop();
          running = await startService(env, overrides);
          if (running.port === null) throw new Error('the restarted service started no edge');
          runningPort = running.port;
          if (running.adminPort !== null && running.rails !== null) adminClient = createAdminClient(`127.0.0.1:${running.adminPort}`, opsApiKey, { transport: { kind: 'plaintext' } });
        })();
        await restarting;
      },
      stop() {
        stopped ??= (async () => {
          try {
            // A restart under way is finished first, so what it started is stopped too.
            await restarting?.catch(() => undefined);
            adminClient?.close();
            await startedEdge?.stop();
            await running.stop();
          } finally {
            await startedRedis?.stop();
            rmSync(dataDir, { recursive: true, force: true });
          }
        })();
        return stopped;
      },
    };
  } catch (error) {
    admin?.close();
    await edge?.stop();
    await service?.stop();
    await redis?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

// ---- for bench/lib/service-entry.ts only (the e2e tests use the service's real payment contexts) ----

/** Deposit addresses of the bench's deposit-instructions stand-in (well-formed, not anyone's). */
export const testDepositAddresses = {
  STELLAR: 'GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H',
  SOLANA: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
  CELO: '0x000000000000000000000000000000000000dEaD',
} as const;

/**
 * A stand-in for the chains role's deposit instructions, shaped as the spec's payment_context. Kept
 * only because bench/lib/service-entry.ts still imports it; no test uses it.
 */
export function testPaymentContexts(ctx: ServiceContext): PaymentContexts {
  return {
    forPayout(quote: Quote, transactionId: string) {
      const resolved = resolveRoute(ctx.config.corridors(), {
        direction: quote.direction,
        cryptoCurrency: quote.cryptoCurrency,
        network: quote.network,
        paymentMethod: quote.paymentMethod,
        targetCurrency: quote.targetCurrency,
      });
      if (!resolved.ok) throw new Error(`test payment context: ${resolved.error.reason}`);
      const route = resolved.route;
      const stellar = quote.network === 'STELLAR';
      return {
        amount: toJsonNumber(quote.direction === 'payout' ? quote.sourceAmount : quote.targetAmount),
        blockchain: quote.network,
        chainFamily: route.chainFamily,
        chainId: route.chainId,
        cryptoCurrency: quote.cryptoCurrency,
        decimals: quote.tokenDecimals,
        depositAddress: testDepositAddresses[quote.network],
        memo: stellar ? transactionReference(transactionId) : null,
        memoType: stellar ? 'text' : null,
        mintAddress: stellar ? null : route.mint.identifier,
        notify: { endpoint: route.notify.endpoint, required: route.notify.required },
        rpcUrl: null,
      };
    },
  };
}
