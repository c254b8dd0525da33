// The composition root's body: builds the context and starts the roles this process runs.
// `all` runs every role in one process (the default of `npm start`).
import { randomUUID } from 'node:crypto';
import type { EnvConfig, Role } from '../config/env.ts';
import { serviceBehaviors } from './behaviors.ts';
import { createContext, type ContextOverrides, type ServiceContext } from './context.ts';
import { startEdgeRole } from './edge-role.ts';
import { startShardRole } from './shard-role.ts';
import { applyPartnerOverrides, startPartnerRefresh } from './partner-overrides.ts';
import { startAdminServer, type AdminCapabilities } from '../grpc/admin-server.ts';
import { createRailServices, type RailServices } from '../rails/rail-services.ts';
import { createWebhookServices } from '../webhooks/index.ts';
import { createChainServices, type ChainServices } from '../chains/chain-services.ts';
import { liveChainFactories } from '../chains/live-chains.ts';
import { linkChainServices } from '../grpc/chains-link.ts';
import { createOnrampServices } from '../onramp/onramp-services.ts';

export interface RunningRole {
  readonly name: Role;
  stop(): Promise<void>;
}

export interface RunningService {
  readonly ctx: ServiceContext;
  /** The edge's bound port, when this process runs the edge. */
  readonly port: number | null;
  /** The admin gRPC service's bound port, when this process runs it. */
  readonly adminPort: number | null;
  /** The fiat side in this process (sandbox rail knobs, the edge's liquidity view), or null. */
  readonly rails: RailServices | null;
  stop(): Promise<void>;
}

function runs(env: EnvConfig, role: Role): boolean {
  return env.ROLE === 'all' || env.ROLE === role;
}

export async function startService(env: EnvConfig, overrides: ContextOverrides = {}): Promise<RunningService> {
  const ctx = await createContext(env, overrides);
  const roles: RunningRole[] = [];
  let port: number | null = null;
  let adminPort: number | null = null;
  let rails: RailServices | null = null;
  try {
    // The fiat side: the sandbox rail in sandbox mode (no production provider adapter exists yet,
    // and createRailServices refuses to start without one rather than pay nobody).
    rails = env.sandbox ? createRailServices(ctx) : null;
    const railServices = rails;
    const webhooks = createWebhookServices(ctx);
    // The crypto side: real adapters for configured networks, the sandbox chain for the rest.
    // Verification and reconciliation go over the chains link when the watcher runs apart (CHAINS_GRPC_URL).
    const linked =
      runs(env, 'edge') || runs(env, 'watcher') || runs(env, 'admin') ? linkChainServices(ctx, await createChainServices(ctx, { live: liveChainFactories })) : null;
    if (linked) roles.push({ name: 'all', stop: () => linked.closeLink() });
    const chains: ChainServices | null = linked;
    // Onramp: PIX charges at acceptance (edge), PIX payment notices, crypto deliveries (watcher).
    const onramp =
      railServices && chains
        ? await createOnrampServices(ctx, { rail: railServices.rail, sandboxRail: railServices.sandbox, adapters: chains.adapters, setups: chains.setups })
        : null;
    const capabilities: AdminCapabilities = {
      ...(chains ? { reconciler: chains.reconciler } : {}),
      webhooks: { deliveries: webhooks.deliveries, destinations: webhooks.destinations },
      ...(railServices?.sandbox ? { sandboxRail: railServices.sandbox } : {}),
    };
    // Admin changes (keys, disabled users) win over the partners file, in every process.
    await applyPartnerOverrides(ctx);
    const refresh = startPartnerRefresh(ctx);
    roles.push({ name: 'all', stop: async () => refresh.stop() });
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
        }),
        workerId: `${ctx.processId}-${randomUUID().slice(0, 8)}`,
        keyPrefix: ctx.keyPrefix,
        shardCount: ctx.shardCount,
        clock: ctx.clock,
        log: (level, message, fields) => ctx.log[level](fields ?? {}, message),
      });
      roles.push({ name: 'shard', stop: () => shard.stop() });
    }
    if (runs(env, 'edge')) {
      // Acceptance needs a fresh liquidity reading: the cached view refreshes in the background.
      if (railServices) await railServices.liquidity.start();
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
      }, { rateLimit: { ratePerSecond: env.EDGE_RATE_LIMIT_PER_SECOND, burst: env.EDGE_RATE_LIMIT_BURST } });
      port = edge.port;
      roles.push({ name: 'edge', stop: () => edge.stop() });
    }
    if (railServices && runs(env, 'payout')) {
      const payout = await railServices.startPayoutRole();
      roles.push({ name: 'payout', stop: () => payout.stop() });
    }
    if (chains && runs(env, 'watcher')) {
      const watcher = await chains.startWatcherRole();
      roles.push({ name: 'watcher', stop: () => watcher.stop() });
    }
    if (onramp && runs(env, 'watcher')) roles.push(await onramp.startDeliveryWorker());
    if (runs(env, 'webhooks')) {
      const dispatcher = await webhooks.startWebhooksRole();
      roles.push({ name: 'webhooks', stop: () => dispatcher.stop() });
    }
    if (runs(env, 'admin')) {
      const admin = await startAdminServer(ctx, capabilities);
      adminPort = admin.port;
      roles.push({ name: 'admin', stop: () => admin.stop() });
    }
  } catch (error) {
    for (const role of roles.reverse()) await role.stop();
    await rails?.close();
    await ctx.close();
    throw error;
  }
  return {
    ctx,
    port,
    adminPort,
    rails,
    async stop() {
      // Edge first (no new work), then the workers, then the shared connections.
      for (const role of [...roles].reverse()) await role.stop();
      await rails?.close();
      await ctx.close();
    },
  };
}
