// The `edge` role: the partner-facing HTTP server (uWebSockets.js) on PORT. Every endpoint of the
// spec (docs/api.md), built on the toolkit in src/edge/ and turned into commands to the actors
// through the edge's own actor client. Capabilities owned by other roles (chains, rails, sandbox)
// come in as `EdgeDeps`; an endpoint whose capability is absent answers 503 `service_unavailable`.
// The edge watches the shard leases (src/service/shard-watch.ts): not ready, and asks refused at
// once with 503, while a shard has no live worker or Redis does not answer.
import { RequestTimeoutError } from '../bus/request-reply.ts';
import { RateLimitedLog } from '../bus/outage-log.ts';
import { systemClock } from '../bus/bus.ts';
import { createHttpApp } from '../edge/http-app.ts';
import type { HttpAppOptions, HttpAppStats, RequestHead, Route } from '../edge/http-types.ts';
import { opsGuard, partnerGuard, publicGuard } from '../edge/auth.ts';
import { authThrottleMetrics, createPublicThrottle, publicThrottleMetrics } from '../edge/auth-throttle.ts';
import { createClientAddressResolver } from '../edge/client-address.ts';
import { parseCidrList } from '../domain/ip-address.ts';
import { createIdempotency } from '../edge/idempotency.ts';
import { createNotifyBudget, defaultNotifyBudgetConfig, type NotifyBudgetConfig } from '../edge/notify-budget.ts';
import { createRateLimiter, defaultRateLimitConfig, inProcessRateLimit, type PartnerRateLimit, type TokenBucketConfig } from '../edge/rate-limit.ts';
import { createSharedRateLimit } from '../edge/shared-rate-limit.ts';
import { createInProcessKycQuota, createSharedKycQuota, type KycQuota } from '../edge/kyc-quota.ts';
import { RedisTokenBuckets } from '../bus/redis-token-buckets.ts';
import { edgeActors, type EdgeActors, type EdgeDeps, type EdgeEnv } from '../edge/routes/common.ts';
import { kycRoutes } from '../edge/routes/kyc.ts';
import { createEdgeMetrics, metricsRoutes } from '../edge/routes/metrics.ts';
import { opsRoutes } from '../edge/routes/ops.ts';
import { paymentRoutes } from '../edge/routes/payments.ts';
import { publicRoutes } from '../edge/routes/public.ts';
import { quoteRoutes } from '../edge/routes/quotes.ts';
import { sandboxRoutes } from '../edge/routes/sandbox.ts';
import { sandboxRehearsalRoutes } from '../edge/routes/sandbox-rehearsals.ts';
import { transactionRoutes } from '../edge/routes/transactions.ts';
import { unmatchedDecisions, unmatchedDepositRoutes } from '../edge/routes/unmatched-deposits.ts';
import { eventsRoutes } from '../edge/routes/events.ts';
import { referenceRoutes } from '../edge/routes/reference.ts';
import { receiptRoutes } from '../edge/routes/receipts.ts';
import { loadReceiptSigner } from '../edge/receipt-signing.ts';
import { createCorridorHealth, healthThresholdsOf, type CorridorHealth } from '../edge/corridor-health.ts';
import { createEventLogReader } from '../webhooks/event-log.ts';
import type { ServiceContext } from '../ports/context.ts';
import { outageLogTo } from './context.ts';
import { createClusterStats } from '../actors/cluster-stats.ts';
import type { HealthCheck } from '../lifecycle/health.ts';
import { renderFamilies, type MetricFamily } from '../lifecycle/metrics.ts';
import { storageUsageMetrics } from './storage-usage.ts';
import { startShardWatch, type ShardWatch } from './shard-watch.ts';
import { createPasswordVerifier, portalRoutes, type PortalWebhooks } from '../portal/index.ts';

export interface EdgeRoleOptions {
  /** Per-partner token bucket; `defaultRateLimitConfig` (200/s, bursts of 400) by default. */
  readonly rateLimit?: TokenBucketConfig;
  /** Per-partner budget of notifies that cannot fund their transaction; 10, refilled at 2 a minute, by default. */
  readonly notifyBudget?: NotifyBudgetConfig;
  /** The webhooks service the partner portal acts through (docs/portal.md); no portal without it. */
  readonly portal?: PortalWebhooks;
}

export interface EdgeRole {
  readonly port: number;
  /** Graceful: drains for at most `waitMs` (default SHUTDOWN_GRACE_MS); see `stop` below. */
  stop(waitMs?: number): Promise<void>;
  /** Its checks on the health listener: `shard-owners`. */
  health(): readonly HealthCheck[];
}

/**
 * After the drain, the edge keeps answering until no request has arrived for this long: requests a
 * client (or a load balancer that has not yet seen /readyz turn 503) sent just before are answered
 * here instead of meeting a process that is closing its connections to Redis and the store.
 */
export const edgeQuietMs = 250;

/** Every route of the partner edge, in one list (the toolkit rejects duplicates at build time). */
export function edgeRoutes(env: EdgeEnv): Route[] {
  return [
    ...publicRoutes(env),
    ...quoteRoutes(env),
    ...transactionRoutes(env),
    // Signed settlement receipts and the keys that verify them.
    ...receiptRoutes(env),
    ...unmatchedDepositRoutes(env),
    ...kycRoutes(env),
    ...paymentRoutes(env),
    ...opsRoutes(env),
    ...sandboxRoutes(env),
    ...sandboxRehearsalRoutes(env),
    // The partner's event log (GET /events): catch up on missed webhooks, in order, without gaps.
    ...eventsRoutes({ guard: env.partnerGuard, events: createEventLogReader(env.ctx.store) }),
    // The OpenAPI document and the reference page rendered from it (GET /openapi.json, GET /docs).
    ...referenceRoutes(env),
  ];
}

/** Asks that got no reply in time: one log line per this long at most (with a count). */
const askTimeoutLogIntervalMs = 60_000;

export async function startEdgeRole(ctx: ServiceContext, deps: EdgeDeps = {}, options: EdgeRoleOptions = {}): Promise<EdgeRole> {
  const log = outageLogTo(ctx.log);
  const shards = await startShardWatch({ leases: ctx.leases, shardCount: ctx.shardCount, graceMs: ctx.env.SHARD_LEASE_TTL_MS, log });
  try {
    return await startEdgeWithWatch(ctx, deps, options, shards);
  } catch (error) {
    shards.stop();
    throw error;
  }
}

async function startEdgeWithWatch(
  ctx: ServiceContext,
  deps: EdgeDeps,
  options: EdgeRoleOptions,
  shards: ShardWatch,
): Promise<EdgeRole> {
  const askTimeouts = new RateLimitedLog({
    log: outageLogTo(ctx.log),
    clock: systemClock,
    level: 'warn',
    message: 'actor asks got no reply in time; answered 503',
    intervalMs: askTimeoutLogIntervalMs,
  });
  const actors = edgeActors(await ctx.actorClient('edge', { gate: shards }), {
    timeoutMs: ctx.env.EDGE_ASK_TIMEOUT_MS,
    onFailure: (error) => {
      if (error instanceof RequestTimeoutError) askTimeouts.note({ timeoutMs: error.timeoutMs });
    },
  });
  const rateLimiter = partnerRateLimit(ctx, options.rateLimit ?? defaultRateLimitConfig);
  const kycQuota = kycSubmissionQuota(ctx);
  try {
    return await startEdgeApp(ctx, deps, options, shards, actors, { rateLimiter, kycQuota });
  } catch (error) {
    await rateLimiter.close();
    await kycQuota.close();
    throw error;
  }
}

/** The KYC submission quotas: shared through Redis with the Redis bus, this process's otherwise. */
function kycSubmissionQuota(ctx: ServiceContext): KycQuota {
  const config = { perUserPerDay: ctx.env.KYC_SUBMISSIONS_PER_USER_PER_DAY, perPartnerPerDay: ctx.env.KYC_SUBMISSIONS_PER_PARTNER_PER_DAY };
  const redisUrl = ctx.env.REDIS_URL;
  if (redisUrl === undefined) return createInProcessKycQuota(config, () => ctx.clock.nowMs());
  return createSharedKycQuota({ ...sharedBuckets(ctx, redisUrl, 'the KYC submission quota did not answer; submissions are allowed meanwhile'), config });
}

/** Token buckets in Redis for every edge, and where their failures go: one log line per interval at most. */
function sharedBuckets(ctx: ServiceContext, redisUrl: string, failureMessage: string): { buckets: RedisTokenBuckets; onFailure: (error: unknown) => void } {
  const failures = new RateLimitedLog({
    log: outageLogTo(ctx.log),
    clock: systemClock,
    level: 'warn',
    message: failureMessage,
    intervalMs: rateLimitFailureLogIntervalMs,
  });
  return {
    buckets: new RedisTokenBuckets({ redis: redisUrl, keyPrefix: ctx.keyPrefix, connectionLog: { log: outageLogTo(ctx.log) } }),
    onFailure: (error) => failures.note({ error: String(error) }),
  };
}

/** Limiter batches that failed: one log line per this long at most (the Redis client logs the outage too). */
const rateLimitFailureLogIntervalMs = 60_000;

/**
 * The per-partner limit: shared by every edge through Redis when the Redis bus is used
 * (src/edge/shared-rate-limit.ts), this process's own buckets otherwise.
 */
function partnerRateLimit(ctx: ServiceContext, config: TokenBucketConfig): PartnerRateLimit {
  const redisUrl = ctx.env.REDIS_URL;
  if (redisUrl === undefined) return inProcessRateLimit(createRateLimiter({ config }));
  return createSharedRateLimit({ ...sharedBuckets(ctx, redisUrl, 'the shared rate limit did not answer; this edge uses its own buckets for a while'), config });
}

async function startEdgeApp(
  ctx: ServiceContext,
  deps: EdgeDeps,
  options: EdgeRoleOptions,
  shards: ShardWatch,
  actors: EdgeActors,
  limits: { readonly rateLimiter: PartnerRateLimit; readonly kycQuota: KycQuota },
): Promise<EdgeRole> {
  const { rateLimiter, kycQuota } = limits;
  const clientAddress = clientAddressOf(ctx.env.TRUSTED_PROXIES);
  const credentials = { keyRing: ctx.keyRing, authThrottle: ctx.authThrottle, clientAddress };
  const ops = opsGuard(credentials);
  const publicThrottle = createPublicThrottle({
    config: { ratePerSecond: ctx.env.PUBLIC_RATE_LIMIT_PER_SECOND, burst: ctx.env.PUBLIC_RATE_LIMIT_BURST },
    log: (fields, message) => ctx.log.warn(fields, message),
  });
  // Set once the app exists (the routes are built before it).
  let draining = (): boolean => false;
  const env: EdgeEnv = {
    ctx,
    deps,
    actors,
    idempotency: createIdempotency(ctx.store),
    partnerGuard: partnerGuard({ ...credentials, rateLimiter }),
    opsGuard: ops,
    publicGuard: publicGuard({ throttle: publicThrottle, clientAddress }),
    notifyBudget: createNotifyBudget(options.notifyBudget ?? defaultNotifyBudgetConfig, () => ctx.clock.nowMs()),
    kycQuota,
    draining: () => draining(),
    shards,
    receipts: await loadReceiptSigner(ctx.env, ctx.store),
    corridorHealth: corridorHealthOf(ctx, deps),
  };
  const metrics = createEdgeMetrics();
  const portal =
    options.portal === undefined
      ? []
      : portalRoutes({ ctx, webhooks: options.portal, clientAddress, passwords: await createPasswordVerifier(), receipts: env.receipts ?? null, unmatched: unmatchedDecisions(env) });
  let stats = (): HttpAppStats => ({ inFlightRequests: 0, bodyBytesInFlight: 0, uploadsInFlight: 0 });
  const app = createHttpApp({
    logger: ctx.log,
    ...fairShareOptions(ctx.env),
    routes: [
      ...edgeRoutes(env),
      ...portal,
      ...metricsRoutes({
        guard: ops,
        metrics,
        gauges: () => ({ ...stats(), actorRequestsPending: actors.pending() }),
        cluster: createClusterStats({
          bus: ctx.bus,
          leases: ctx.leases,
          store: ctx.store,
          keyPrefix: ctx.keyPrefix,
          shardCount: ctx.shardCount,
          clock: ctx.clock,
        }),
        nowMs: () => ctx.clock.nowMs(),
        stored: async () => renderFamilies([...(await storageUsageMetrics(ctx.store, ctx.clock.nowMs())), ...(await corridorHealthMetrics(env))]),
        extra: () => renderFamilies([...authThrottleMetrics(ctx.authThrottle.stats()), ...publicThrottleMetrics(publicThrottle.stats())]),
      }),
    ],
    onRequestFinished: (entry) => {
      try {
        metrics.observe(entry);
      } catch (error) {
        ctx.log.warn({ error: String(error) }, 'metrics observation failed');
      }
    },
  });
  stats = () => app.stats();
  draining = () => app.draining();
  const listening = await app.listen(ctx.env.HOST, ctx.env.PORT);
  return {
    port: listening.port,
    // Graceful: no new connections, /readyz turns 503, requests in flight get their answers (their
    // commands are already on the streams), then a short quiet period, then the role stops. The
    // actor client (and the shard, in `all` mode) closes after this.
    stop: async (waitMs = ctx.env.SHUTDOWN_GRACE_MS) => {
      const startedAtMs = Date.now();
      let left = await listening.drain(waitMs);
      if (left === 0) left = await untilQuiet(() => app.stats().inFlightRequests, startedAtMs + waitMs);
      if (left > 0) ctx.log.warn({ inFlightRequests: left }, 'edge stopped with requests still in flight');
      else ctx.log.info({ drainMs: Date.now() - startedAtMs }, 'edge drained');
      await rateLimiter.close();
      await kycQuota.close();
      shards.stop();
    },
    health: () => [shards.check()],
  };
}

/** Corridor health over the store's settlement samples and this edge's liquidity view (docs/corridor-health.md). */
function corridorHealthOf(ctx: ServiceContext, deps: EdgeDeps): CorridorHealth {
  return createCorridorHealth({
    store: ctx.store,
    config: ctx.config,
    clock: ctx.clock,
    ...(deps.liquidity === undefined ? {} : { liquidity: deps.liquidity }),
    active: (route) => deps.chainAvailability?.active(route.network, route.cryptoCurrency) ?? true,
    thresholds: healthThresholdsOf(ctx.env),
    cacheMs: ctx.env.CORRIDOR_HEALTH_CACHE_MS,
    lowLiquidityMultiple: ctx.env.CORRIDOR_HEALTH_LOW_LIQUIDITY_MULTIPLE,
  });
}

/** The corridor health families of /metrics; none when they cannot be computed now (logged). */
async function corridorHealthMetrics(env: EdgeEnv): Promise<MetricFamily[]> {
  try {
    return (await env.corridorHealth?.metrics()) ?? [];
  } catch (error) {
    env.ctx.log.warn({ error: String(error) }, 'corridor health metrics could not be computed');
    return [];
  }
}

/** The client address of a request: the TCP peer, or X-Forwarded-For from TRUSTED_PROXIES. */
function clientAddressOf(trustedProxies: string): (head: RequestHead) => string {
  const parsed = parseCidrList(trustedProxies);
  if (!parsed.ok) throw new Error(`TRUSTED_PROXIES: ${parsed.reason}`);
  const resolver = createClientAddressResolver(parsed.cidrs);
  return (head) => resolver.resolve(head.remoteAddress, head.headers['x-forwarded-for']);
}

/** The edge's fair shares and body rate from the environment (docs/edge-http.md "Fair shares"). */
function fairShareOptions(env: ServiceContext['env']): Partial<HttpAppOptions> {
  return {
    partnerShare: {
      requestsInFlightMax: env.EDGE_PARTNER_REQUESTS_IN_FLIGHT_MAX,
      bodyBytesInFlightMax: env.EDGE_PARTNER_BODY_BYTES_IN_FLIGHT_MAX,
      uploadsInFlightMax: env.EDGE_PARTNER_UPLOADS_IN_FLIGHT_MAX,
    },
    anonymousShare: { requestsInFlightMax: env.EDGE_ANONYMOUS_REQUESTS_IN_FLIGHT_MAX },
    bodyBytesInFlightMax: env.EDGE_BODY_BYTES_IN_FLIGHT_MAX,
    uploadsInFlightMax: env.EDGE_UPLOADS_IN_FLIGHT_MAX,
    bodyBytesPerSecondMin: env.EDGE_BODY_BYTES_PER_SECOND_MIN,
    bodyRateWindowMs: env.EDGE_BODY_RATE_WINDOW_MS,
  };
}

/** Waits until `inFlight()` has stayed 0 for `edgeQuietMs` (or `untilMs` passes); returns it then. */
async function untilQuiet(inFlight: () => number, untilMs: number): Promise<number> {
  const pollMs = 10;
  let quietSinceMs = Date.now();
  while (Date.now() < untilMs) {
    if (inFlight() > 0) quietSinceMs = Date.now();
    else if (Date.now() - quietSinceMs >= edgeQuietMs) return 0;
    await new Promise((wake) => setTimeout(wake, Math.min(pollMs, Math.max(0, untilMs - Date.now()))));
  }
  return inFlight();
}
