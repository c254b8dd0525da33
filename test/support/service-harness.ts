// Starts the whole service in-process for end-to-end tests: `startService` from the composition
// root on a free port, a temp DATA_DIR (embedded store), a partners file with two test partners
// (KYC enabled with a disabled user; KYC disabled) plus the demo partner, fixed demo and ops keys,
// and for the Redis runs a private redis-server. `stop()` tears everything down.
//
// By default the process runs ROLE=all exactly as `npm start` wires it. A test that needs edge
// capabilities the composition root does not wire yet (deposit instructions, liquidity, …) passes
// `edge: { deps }`: the service then runs its shard role through `startService` and the edge is
// started here with those deps (the same `startEdgeRole` the composition root calls).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { readEnv } from '../../src/config/env.ts';
import type { PartnerConfig } from '../../src/config/partners.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { resolveRoute } from '../../src/domain/corridors.ts';
import { toJsonNumber } from '../../src/domain/money.ts';
import { transactionReference } from '../../src/domain/reference.ts';
import type { Quote } from '../../src/domain/quote.ts';
import type { ServiceContext } from '../../src/service/context.ts';
import { startEdgeRole, type EdgeDeps, type EdgeRole, type EdgeRoleOptions } from '../../src/service/edge-role.ts';
import type { PaymentContexts } from '../../src/service/ports.ts';
import { startService, type RunningService } from '../../src/service/service.ts';
import { randomKeyPrefix, startRedis, type PrivateRedis } from './redis-server.ts';

export type BusKind = 'memory' | 'redis';

/** Partner ids of the partners file every harness writes. */
export const testPartners = {
  /** KYC enabled, KYB approved; `blockedUserId` is disabled. */
  kycOn: 'kyc-on',
  /** KYC disabled, KYB approved. */
  kycOff: 'kyc-off',
} as const;
export const blockedUserId = 'blocked-user';

export interface ServiceHarnessOptions {
  readonly busKind?: BusKind;
  /** Start the edge here with these capabilities (the service runs its shard role). */
  readonly edge?: { readonly deps?: EdgeDeps; readonly options?: EdgeRoleOptions };
  readonly shards?: number;
}

export interface ServiceHarness {
  readonly baseUrl: string;
  readonly port: number;
  readonly demoApiKey: string;
  readonly opsApiKey: string;
  /** API key of each test partner (and `demo`). */
  readonly apiKeys: Readonly<Record<string, string>>;
  readonly ctx: ServiceContext;
  readonly busKind: BusKind;
  /** Moves the service's clock (edge and actors) forward, e.g. past a quote's expiry. */
  advanceClockMs(ms: number): void;
  stop(): Promise<void>;
}

function key(label: string): string {
  return `${label}_${randomBytes(20).toString('hex')}`;
}

export async function startServiceHarness(options: ServiceHarnessOptions = {}): Promise<ServiceHarness> {
  const busKind = options.busKind ?? 'memory';
  const dataDir = mkdtempSync(join(tmpdir(), 'service-e2e-'));
  const apiKeys: Record<string, string> = { demo: key('demo'), [testPartners.kycOn]: key('kycon'), [testPartners.kycOff]: key('kycoff') };
  const opsApiKey = key('ops');
  const partners: PartnerConfig[] = [
    {
      id: testPartners.kycOn,
      name: 'KYC-enabled test partner',
      apiKeySha256: [sha256Hex(apiKeys[testPartners.kycOn] ?? '')],
      kycEnabled: true,
      kybApproved: true,
      disabledUsers: [blockedUserId],
    },
    {
      id: testPartners.kycOff,
      name: 'KYC-disabled test partner',
      apiKeySha256: [sha256Hex(apiKeys[testPartners.kycOff] ?? '')],
      kycEnabled: false,
      kybApproved: true,
      disabledUsers: [],
    },
  ];
  const partnersFile = join(dataDir, 'partners.json');
  writeFileSync(partnersFile, JSON.stringify({ partners }));
  let redis: PrivateRedis | null = null;
  let service: RunningService | null = null;
  let edge: EdgeRole | null = null;
  try {
    if (busKind === 'redis') redis = await startRedis();
    const env = readEnv({
      PORT: '0',
      HOST: '127.0.0.1',
      ROLE: options.edge === undefined ? 'all' : 'shard',
      DATA_DIR: dataDir,
      PARTNERS_FILE: partnersFile,
      DEMO_API_KEY: apiKeys['demo'],
      OPS_API_KEY: opsApiKey,
      SANDBOX: '1',
      SHARDS: String(options.shards ?? 8),
      KEY_PREFIX: randomKeyPrefix('e2e'),
      LOG_LEVEL: process.env['HARNESS_LOG'] === undefined ? 'silent' : 'debug',
      ...(redis === null ? {} : { REDIS_URL: redis.url }),
    });
    let clockOffsetMs = 0;
    service = await startService(env, { clock: { nowMs: () => Date.now() + clockOffsetMs } });
    let port = service.port;
    if (options.edge !== undefined) {
      edge = await startEdgeRole(service.ctx, options.edge.deps ?? {}, options.edge.options ?? {});
      port = edge.port;
    }
    if (port === null) throw new Error('the service started no edge');
    const running = service;
    const startedEdge = edge;
    const startedRedis = redis;
    let stopped: Promise<void> | undefined;
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      port,
      demoApiKey: apiKeys['demo'] ?? '',
      opsApiKey,
      apiKeys,
      ctx: running.ctx,
      busKind,
      advanceClockMs(ms) {
        clockOffsetMs += ms;
      },
      stop() {
        stopped ??= (async () => {
          try {
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
    await edge?.stop();
    await service?.stop();
    await redis?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** Deposit addresses of the test deposit-instructions adapter (well-formed, not anyone's). */
export const testDepositAddresses = {
  STELLAR: 'GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H',
  SOLANA: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
  CELO: '0x000000000000000000000000000000000000dEaD',
} as const;

/**
 * A test stand-in for the chains role's deposit instructions, shaped as the spec's payment_context
 * (the real adapter comes with the chains role; the composition root will wire it).
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
