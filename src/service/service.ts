// The composition root's body: builds the context and starts the roles this process runs.
// `all` runs every role in one process (the default of `npm start`).
import { randomUUID } from 'node:crypto';
import type { EnvConfig, Role } from '../config/env.ts';
import { serviceBehaviors } from './behaviors.ts';
import type { ServiceContext } from '../ports/context.ts';
import { createContext, requireDataKeys, type ContextOverrides } from './context.ts';
import { startShardRole } from './shard-role.ts';
import { retentionConfigOf, startRetentionLoop } from './retention.ts';
import { applyPartnerOverrides, startPartnerRefresh } from '../ports/partner-overrides.ts';
import { startAdminServer, type AdminCapabilities } from '../grpc/admin-server.ts';
import { createRailServices, type RailServices } from './rail-services.ts';
import { createWebhookServices } from '../webhooks/index.ts';
import { createChainServices, type ChainServices, type ChainServicesOptions } from '../chains/chain-services.ts';
import { loadChainsFile } from '../chains/config.ts';
import { mainnetNetworks, sandboxStartRefusal } from '../chains/sandbox-guard.ts';
import { linkChainServices } from '../grpc/chains-link.ts';
import { createOnrampServices } from '../onramp/onramp-services.ts';
import { settlesWithin, shutdownBudget, stopPhases, type StopPhase } from '../lifecycle/shutdown.ts';
import type { HealthCheck } from '../lifecycle/health.ts';
import { startHealthListener, type HealthListener } from './health-listener.ts';
import { authThrottleMetrics } from '../edge/auth-throttle.ts';
import type { MetricFamily } from '../lifecycle/metrics.ts';
import { deliveryMetrics, payoutMetrics, refundMetrics, shardMetrics, watcherMetrics } from './role-metrics.ts';

export interface RunningRole {
  readonly name: Role;
  /** When it stops relative to the other roles (src/lifecycle/shutdown.ts). */
  readonly phase: StopPhase;
  /** Stops taking work, waits at most `waitMs` for work in flight, hands back what it still holds. */
  stop(waitMs: number): Promise<void>;
  /** Its checks on the health listener (HEALTH_PORT), if it runs loops. */
  health?(): readonly HealthCheck[];
  /** Its numbers on the health listener's GET /metrics. */
  metrics?(): readonly MetricFamily[];
}

export interface StopOptions {
  /** The whole shutdown's bound; default SHUTDOWN_GRACE_MS. */
  readonly graceMs?: number;
}

export interface RunningService {
  readonly ctx: ServiceContext;
  /** The edge's bound port, when this process runs the edge. */
  readonly port: number | null;
  /** The admin gRPC service's bound port, when this process runs it. */
  readonly adminPort: number | null;
  /** The health listener's bound port, when HEALTH_PORT is set. */
  readonly healthPort: number | null;
  /** The fiat side in this process (sandbox rail knobs, the edge's liquidity view), or null. */
  readonly rails: RailServices | null;
  /**
   * Graceful stop, bounded by the grace period: the intake roles (edge drain, payout, watcher,
   * webhooks, admin) stop together and finish or hand back their work in flight, then the shard
   * worker finishes its batch and releases its leases, then the shared connections close.
   */
  stop(options?: StopOptions): Promise<void>;
}

function runs(env: EnvConfig, role: Role): boolean {
  return env.ROLE === 'all' || env.ROLE === role;
}

// The chain SDKs (viem, @solana/web3.js, the Stellar SDK) and the edge's routes cost ~2.6 s of CPU
// to load (measured: a shard, payout, watcher or webhooks process starts in ~1.6 s of CPU instead
// of ~4.2 s). So the live adapters are imported only with CHAINS_FILE, and the edge (whose address
// checks use the SDKs) only by a process that runs it: restarts in a rolling upgrade are quicker.
async function liveChains(env: EnvConfig): Promise<NonNullable<ChainServicesOptions['live']>> {
  if (env.CHAINS_FILE === undefined) return {};
  return (await import('../chains/live-chains.ts')).liveChainFactories;
}

/**
 * Starts the roles `env.ROLE` names on one context. Long because it is the composition root: each
 * role's wiring in start-up order, which matters (the liquidity view before the edge, the health
 * listener last, the roles stopped again if any start fails); read top to bottom it is what a
 * process runs, and the wiring of each role already lives in its own module (edge-role.ts, …).
 */
export async function startService(env: EnvConfig, overrides: ContextOverrides = {}): Promise<RunningService> {
  // Read once, before anything is opened: every role refuses sandbox mode next to a mainnet chain
  // (without the operator's consent), not only those that build the chain services.
  const chainsFile = env.CHAINS_FILE === undefined ? null : loadChainsFile(env.CHAINS_FILE);
  const refusal = sandboxStartRefusal(chainsFile, { sandbox: env.sandbox, sandboxWithMainnet: env.SANDBOX_WITH_MAINNET !== undefined });
  if (refusal !== null) throw new Error(refusal);
  const ctx = await createContext(env, overrides);
  if (env.sandbox && mainnetNetworks(chainsFile).length > 0) {
    ctx.log.warn({ mainnet: mainnetNetworks(chainsFile) }, 'sandbox mode next to mainnet chains (SANDBOX_WITH_MAINNET): the sandbox helpers still refuse them, and sandbox PIX payments are never delivered on them');
  }
  const roles: RunningRole[] = [];
  let port: number | null = null;
  let adminPort: number | null = null;
  let rails: RailServices | null = null;
  let health: HealthListener | null = null;
  try {
    // The fiat side: the sandbox rail in sandbox mode (no production provider adapter exists yet,
    // and createRailServices refuses to start without one rather than pay nobody).
    rails = env.sandbox ? createRailServices(ctx) : null;
    const railServices = rails;
    const webhooks = createWebhookServices(ctx, { transport: { connectTimeoutMs: env.WEBHOOK_CONNECT_TIMEOUT_MS, firstByteTimeoutMs: env.WEBHOOK_FIRST_BYTE_TIMEOUT_MS } });
    // The crypto side: real adapters for configured networks, the sandbox chain for the rest.
    // Verification and reconciliation go over the chains link when the watcher runs apart (CHAINS_GRPC_URL).
    const linked =
      runs(env, 'edge') || runs(env, 'watcher') || runs(env, 'admin') ? linkChainServices(ctx, await createChainServices(ctx, { chainsFile, live: await liveChains(env) })) : null;
    if (linked) roles.push({ name: 'all', phase: 'shared', stop: () => linked.closeLink() });
    const chains: ChainServices | null = linked;
    // Onramp: PIX charges at acceptance (edge), PIX payment notices, crypto deliveries (watcher).
    const onramp =
      railServices && chains
        ? await createOnrampServices(ctx, { rail: railServices.rail, sandboxRail: railServices.sandbox, adapters: chains.adapters, setups: chains.setups, destinations: chains.destinations })
        : null;
    const capabilities: AdminCapabilities = {
      ...(chains ? { reconciler: chains.reconciler } : {}),
      webhooks: { deliveries: webhooks.deliveries, destinations: webhooks.destinations },
      ...(railServices?.sandbox ? { sandboxRail: railServices.sandbox } : {}),
    };
    // Admin changes (keys, disabled users) win over the partners file, in every process.
    await applyPartnerOverrides(ctx);
    const refresh = startPartnerRefresh(ctx);
    roles.push({ name: 'all', phase: 'shared', stop: async () => refresh.stop() });
    if (runs(env, 'shard')) {
      const shard = await startShardRole({
        bus: ctx.bus,
        leases: ctx.leases,
        store: ctx.store,
        behaviors: serviceBehaviors({
          corridors: () => ctx.config.corridors(),
          rates: () => ctx.config.rates(),
          limits: () => ctx.config.limits(),
          partnerFee: (partnerId) => ctx.partners.get(partnerId)?.fees,
          dataKeys: requireDataKeys(ctx),
          sandbox: env.sandbox,
        }),
        workerId: `${ctx.processId}-${randomUUID().slice(0, 8)}`,
        keyPrefix: ctx.keyPrefix,
        shardCount: ctx.shardCount,
        clock: ctx.clock,
        batchesInFlightMax: env.SHARD_BATCHES_IN_FLIGHT,
        linkedSteps: env.SHARD_LINKED_STEPS,
        actorsInMemoryMax: env.SHARD_ACTORS_IN_MEMORY_MAX,
        ...(env.SHARD_ACTOR_MEMORY_MAX_BYTES !== undefined ? { actorBytesInMemoryMax: env.SHARD_ACTOR_MEMORY_MAX_BYTES } : {}),
        leaseTtlMs: env.SHARD_LEASE_TTL_MS,
        log: (level, message, fields) => ctx.log[level](fields ?? {}, message),
      });
      roles.push({ name: 'shard', phase: 'shard', stop: () => shard.stop(), health: () => shard.worker.health(), metrics: () => shardMetrics(shard.runtime) });
      // Retention sweeps (src/service/retention.ts) run with the shard role, in one process at a time.
      const retention = startRetentionLoop({
        store: ctx.store,
        leases: ctx.leases,
        owner: ctx.processId,
        config: retentionConfigOf(env),
        partnerIds: () => ctx.partners.all().map((partner) => partner.id),
        clock: ctx.clock,
        intervalMs: env.RETENTION_SWEEP_INTERVAL_MS,
        onSweep: (report) => ctx.log.info({ ...report }, 'retention sweep removed expired records'),
        onError: (error) => ctx.log.warn({ error: String(error) }, 'retention sweep failed; the next round tries again'),
      });
      roles.push({ name: 'shard', phase: 'intake', stop: () => retention.stop() });
    }
    if (runs(env, 'edge')) {
      // Acceptance needs a fresh liquidity reading: the cached view refreshes in the background.
      if (railServices) await railServices.liquidity.start();
      const { startEdgeRole } = await import('./edge-role.ts');
      const edge = await startEdgeRole(ctx, {
        ...(railServices ? { liquidity: railServices.liquidity } : {}),
        ...(chains
          ? {
              paymentContexts: chains.paymentContexts,
              depositVerifier: chains.depositVerifier,
              reconciler: chains.reconciler,
              chainAvailability: chains.chainAvailability,
            }
          : {}),
        ...(onramp ? { onramp: onramp.acceptance } : {}),
        ...(chains ? { sandbox: onramp ? onramp.sandboxDriver(chains.sandbox) : chains.sandbox } : {}),
      }, {
        rateLimit: { ratePerSecond: env.EDGE_RATE_LIMIT_PER_SECOND, burst: env.EDGE_RATE_LIMIT_BURST },
        notifyBudget: { perMinute: env.NOTIFY_MISMATCH_PER_MINUTE, burst: env.NOTIFY_MISMATCH_BURST },
        portal: { destinations: webhooks.destinations, deliveries: webhooks.deliveries, events: webhooks.events },
      });
      port = edge.port;
      roles.push({ name: 'edge', phase: 'intake', stop: (waitMs) => edge.stop(waitMs), health: () => edge.health() });
    }
    if (railServices && runs(env, 'payout')) {
      const payout = await railServices.startPayoutRole();
      roles.push({ name: 'payout', phase: 'intake', stop: (waitMs) => payout.stop(waitMs), health: () => [payout.health()], metrics: () => payoutMetrics(payout.worker.stats()) });
    }
    if (chains && runs(env, 'watcher')) {
      const watcher = await chains.startWatcherRole();
      roles.push({ name: 'watcher', phase: 'intake', stop: (waitMs) => watcher.stop(waitMs), health: () => watcher.health(), metrics: () => [...watcherMetrics(watcher.watchers(), watcher.active()), ...refundMetrics(watcher.refunds())] });
    }
    if (onramp && runs(env, 'watcher')) {
      const deliveries = await onramp.startDeliveryWorker();
      roles.push({ name: 'watcher', phase: 'intake', stop: (waitMs) => deliveries.stop(waitMs), health: () => [deliveries.health()], metrics: () => deliveryMetrics(deliveries.stats()) });
      const notices = onramp.startNoticeWorker();
      roles.push({ name: 'watcher', phase: 'intake', stop: () => notices.stop(), health: () => [notices.health()] });
    }
    if (runs(env, 'webhooks')) {
      const dispatcher = await webhooks.startWebhooksRole();
      roles.push({ name: 'webhooks', phase: 'intake', stop: (waitMs) => dispatcher.stop(waitMs), health: () => [dispatcher.health()], metrics: () => dispatcher.metrics() });
    }
    if (runs(env, 'admin')) {
      const admin = await startAdminServer(ctx, capabilities);
      adminPort = admin.port;
      roles.push({ name: 'admin', phase: 'intake', stop: () => admin.stop() });
    }
    if (env.HEALTH_PORT !== undefined) {
      // Last, so every role's checks are there from its first answer.
      health = await startHealthListener({
        host: env.HOST,
        port: env.HEALTH_PORT,
        role: env.ROLE,
        unreadyAfterMs: env.HEALTH_UNREADY_AFTER_MS,
        checks: () => roles.flatMap((role) => role.health?.() ?? []),
        // The process's failed authentications too (the admin service's, and this listener's own).
        metrics: () => [...roles.flatMap((role) => role.metrics?.() ?? []), ...authThrottleMetrics(ctx.authThrottle.stats())],
        isOpsKey: (presented) => ctx.keyRing.isOpsKey(presented),
        authFailed: (address) => ctx.authThrottle.failed('ops', address, { method: 'GET', route: '/metrics', listener: 'health' }),
      });
    }
  } catch (error) {
    await stopRoles(ctx, roles, env.SHUTDOWN_GRACE_MS);
    await rails?.close();
    await ctx.close();
    throw error;
  }
  return {
    ctx,
    port,
    adminPort,
    healthPort: health?.port ?? null,
    rails,
    async stop(options = {}) {
      // /readyz says `stopping` from the first moment; /healthz answers until the roles are gone.
      health?.markStopping();
      await stopRoles(ctx, roles, options.graceMs ?? env.SHUTDOWN_GRACE_MS);
      await health?.close();
      await rails?.close();
      await ctx.close();
    },
  };
}

/**
 * Stops the roles phase by phase within `graceMs`. Roles of one phase stop together (the edge
 * drains while the workers finish their attempts); a role whose stop overruns the deadline is
 * logged and left behind so the process can still close and exit in time.
 */
async function stopRoles(ctx: ServiceContext, roles: readonly RunningRole[], graceMs: number): Promise<void> {
  const startedAtMs = Date.now();
  const { waitUntilMs, deadlineMs } = shutdownBudget(graceMs, startedAtMs);
  for (const phase of stopPhases) {
    const inPhase = roles.filter((role) => role.phase === phase);
    const waitMs = phase === 'intake' ? waitUntilMs - Date.now() : deadlineMs - Date.now();
    await Promise.all(
      inPhase.map(async (role) => {
        const stopping = role.stop(Math.max(0, waitMs)).catch((error: unknown) => {
          ctx.log.error({ role: role.name, error: String(error) }, 'role stop failed');
        });
        if (!(await settlesWithin(stopping, Math.max(0, deadlineMs - Date.now())))) {
          ctx.log.warn({ role: role.name, graceMs }, 'role did not stop within the grace period; going on without it');
        }
      }),
    );
  }
  ctx.log.info({ role: ctx.env.ROLE, stopMs: Date.now() - startedAtMs }, 'roles stopped');
}
