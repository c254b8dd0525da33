// The fiat side, wired by the composition root (it lives here, not in src/rails/, because it
// picks between the rail in this process and the payout link to another: the link is src/grpc/'s,
// a layer above the rails): the rail (the sandbox rail in sandbox mode),
// the edge's cached LiquidityView, and the `payout` role (payout worker + internal gRPC link).
//
//   const rails = createRailServices(ctx);
//   if (runs('edge'))   await rails.liquidity.start();          // before the edge accepts traffic
//   if (runs('payout')) roles.push(await rails.startPayoutRole());
//   …on shutdown: stop the roles, then await rails.close();
//
// In `all` mode everything is in-process (the link is not served; admin uses `payoutOps()` and
// `sandbox`). An edge in its own process reads liquidity over the payout link when PAYOUT_GRPC_URL
// is set, else straight from the rail (the sandbox rail keeps its state in the shared store).
import type { LogLevel } from '../actors/envelope.ts';
import { createPayoutOps, PayoutLinkClient, remoteLiquiditySource, startPayoutLinkServer, type PayoutOps } from '../grpc/payout-link.ts';
import { internalClientTls, internalServerTls } from '../grpc/link-security.ts';
import { createAuditLog } from '../audit/operator-audit.ts';
import type { ServiceContext } from '../ports/context.ts';
import { CachedLiquidityView, railLiquiditySource, type CachedLiquidityOptions } from '../rails/liquidity.ts';
import { PayoutWorker, type PayoutWorkerOptions } from '../rails/payout-worker.ts';
import type { Rail } from '../rails/rails.ts';
import { SandboxRail, type SandboxRailOptions } from '../rails/sandbox-rail.ts';
import type { HealthCheck } from '../lifecycle/health.ts';

export interface RailServicesOptions {
  readonly sandbox?: Omit<SandboxRailOptions, 'store' | 'clock'>;
  readonly worker?: Partial<Omit<PayoutWorkerOptions, 'store' | 'rail' | 'actors' | 'clock' | 'owner' | 'log'>>;
  readonly liquidity?: Partial<Pick<CachedLiquidityOptions, 'refreshIntervalMs' | 'staleAfterMs' | 'readTimeoutMs'>>;
  /** Serve the payout link. Default: only when this process runs the `payout` role alone. */
  readonly serveLink?: boolean;
  /** Default PAYOUT_GRPC_PORT (0 picks a free port). */
  readonly linkPort?: number;
}

export interface RunningPayoutRole {
  readonly worker: PayoutWorker;
  readonly ops: PayoutOps;
  /** The link's bound port, when it is served. */
  readonly linkPort: number | null;
  health(): HealthCheck;
  /** Graceful: waits at most `waitMs` for rail attempts in flight, then hands back every claimed row. */
  stop(waitMs?: number): Promise<void>;
}

export interface RailServices {
  readonly rail: Rail;
  /** The sandbox rail's knobs (admin service, sandbox helpers); null with a production rail. */
  readonly sandbox: SandboxRail | null;
  readonly liquidity: CachedLiquidityView;
  /** Payout operations of the payout role running in this process, or null. */
  payoutOps(): PayoutOps | null;
  startPayoutRole(): Promise<RunningPayoutRole>;
  /** Stops the liquidity refresh and closes the link client. */
  close(): Promise<void>;
}

export function createRailServices(ctx: ServiceContext, options: RailServicesOptions = {}): RailServices {
  if (!ctx.env.sandbox) {
    // There is no provider adapter yet: refusing to start beats paying nobody in production.
    throw new Error('no production BREB/PIX rail adapter is configured; run with SANDBOX=1 to use the sandbox rail');
  }
  const log = (level: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    ctx.log[level]({ component: 'rails', ...fields }, message);
  };
  const sandbox = new SandboxRail({ store: ctx.store, clock: ctx.clock, ...options.sandbox });
  const rail: Rail = sandbox;
  const remote =
    ctx.env.PAYOUT_GRPC_URL !== undefined && ctx.env.ROLE !== 'all' && ctx.env.ROLE !== 'payout'
      ? new PayoutLinkClient({
          address: ctx.env.PAYOUT_GRPC_URL,
          transport: internalClientTls(ctx.env),
          ...(ctx.env.INTERNAL_LINK_KEY === undefined ? {} : { linkKey: ctx.env.INTERNAL_LINK_KEY }),
        })
      : null;
  const liquidity = new CachedLiquidityView({
    source: remote === null ? railLiquiditySource(rail) : remoteLiquiditySource(remote),
    clock: ctx.clock,
    log,
    ...options.liquidity,
  });
  let ops: PayoutOps | null = null;

  return {
    rail,
    sandbox,
    liquidity,
    payoutOps: () => ops,
    async startPayoutRole() {
      const actors = await ctx.actorClient('payout');
      const worker = new PayoutWorker({
        store: ctx.store,
        rail,
        actors,
        clock: ctx.clock,
        owner: `payout-${ctx.processId}`,
        log,
        ...options.worker,
      });
      worker.start();
      const roleOps = createPayoutOps(worker, rail);
      ops = roleOps;
      const serveLink = options.serveLink ?? ctx.env.ROLE === 'payout';
      let link: Awaited<ReturnType<typeof startPayoutLinkServer>> | null = null;
      try {
        if (serveLink) {
          link = await startPayoutLinkServer({
            host: ctx.env.INTERNAL_HOST,
            port: options.linkPort ?? ctx.env.PAYOUT_GRPC_PORT,
            tls: internalServerTls(ctx.env),
            ...(ctx.env.INTERNAL_LINK_KEY === undefined ? {} : { linkKey: ctx.env.INTERNAL_LINK_KEY }),
            ops: roleOps,
            liquidity: railLiquiditySource(rail),
            clock: ctx.clock,
            isOpsKey: (presented) => ctx.keyRing.isOpsKey(presented),
            audit: createAuditLog(ctx.log, ctx.clock),
            log,
          });
        }
      } catch (error) {
        await worker.stop();
        throw error;
      }
      return {
        worker,
        ops: roleOps,
        linkPort: link?.port ?? null,
        health: () => worker.health(),
        async stop(waitMs = Number.POSITIVE_INFINITY) {
          // The link and the worker stop together: neither needs the other to finish.
          await Promise.all([link?.stop(), worker.stop(waitMs)]);
          if (ops === roleOps) ops = null;
        },
      };
    },
    async close() {
      await liquidity.stop();
      remote?.close();
    },
  };
}
