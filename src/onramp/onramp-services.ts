// Onramp (BRL paid by PIX → USDC delivered on Stellar, Solana or Celo), assembled for the
// composition root:
//
//   const onramp = await createOnrampServices(ctx, { rail: rails.rail, sandboxRail: rails.sandbox,
//                                                   adapters: chains.adapters, setups: chains.setups,
//                                                   destinations: chains.destinations });
//   edge deps:   { onramp: onramp.acceptance, sandbox: onramp.sandboxDriver(chains.sandbox) }
//   watcher:     roles.push(await onramp.startDeliveryWorker(), onramp.startNoticeWorker());
//
// - `acceptance` (edge): inventory check + idempotent PIX charge before the acceptance is answered.
// - `intake`: PIX payment notices → the inbox (stored first) → PixPaymentReceived to the transaction
//   actor; `startNoticeWorker()` (watcher role) applies the notices stored but not applied yet.
// - `startDeliveryWorker()` (watcher role): DeliveryRequested rows → chain send → CryptoDelivered /
//   CryptoDeliveryFailed. The PIX refunds that follow a failure are the rails' payout worker's.
// Decisions: docs/onramp.md.
import { randomUUID } from 'node:crypto';
import type { ChainAdapter } from '../chains/chains.ts';
import type { ChainSetups } from '../chains/config.ts';
import type { DestinationCheck } from '../chains/destinations.ts';
import type { CryptoAsset, Network } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import type { Rail } from '../rails/rails.ts';
import type { SandboxRail } from '../rails/sandbox-rail.ts';
import type { ServiceContext } from '../ports/context.ts';
import type { OnrampAcceptance, SandboxDriver } from '../ports/ports.ts';
import { OnrampCharges } from './charges.ts';
import { DeliveryWorker, type DeliveryWorkerOptions, type DeliveryWorkerStats } from './delivery-worker.ts';
import { PixNoticeIntake, type PixNoticeIntakeOptions } from './intake.ts';
import { NoticeWorker, type NoticeWorkerOptions, type NoticeWorkerStats } from './notice-worker.ts';
import { ActorOnrampInventory, type OnrampInventory } from './inventory.ts';
import { sandboxPixPayments, withPixPayments } from './sandbox-driver.ts';
import { sandboxFunding } from './sandbox-funding.ts';
import type { HealthCheck } from '../lifecycle/health.ts';

export type DeliveryTuning = Partial<
  Pick<DeliveryWorkerOptions, 'claimLeaseMs' | 'claimBatchMax' | 'inFlightMax' | 'inFlightPerKeyMax' | 'tickMs' | 'retryDelayMsMin' | 'retryDelayMsMax' | 'askTimeoutMs' | 'stuckAfterMs'>
>;

export interface OnrampServicesOptions {
  readonly rail: Pick<Rail, 'createPixCharge'>;
  /** The sandbox rail (sandbox mode): simulated PIX payments. Null with a production rail. */
  readonly sandboxRail: Pick<SandboxRail, 'simulatePixPayment'> | null;
  readonly adapters: ReadonlyMap<Network, ChainAdapter>;
  readonly setups: ChainSetups;
  /** What an onramp destination is (chains: own addresses, tokens, chain lookups). */
  readonly destinations: DestinationCheck;
  /** Starting inventory per network/asset the store has no record of (default 1,000,000 each). */
  readonly inventory?: { readonly initial?: Partial<Record<`${Network}/${CryptoAsset}`, Decimal>>; readonly initialDefault?: Decimal };
  readonly delivery?: DeliveryTuning;
  /** Retry delays of stored PIX notices, and the inbox worker's round. */
  readonly notices?: { readonly inbox?: PixNoticeIntakeOptions['inbox']; readonly worker?: Pick<NoticeWorkerOptions, 'tickMs' | 'batchMax' | 'leaseMs'> };
}

export interface RunningNoticeWorker {
  readonly name: 'watcher';
  stats(): NoticeWorkerStats;
  health(): HealthCheck;
  stop(): Promise<void>;
}

export interface RunningDeliveryWorker {
  readonly name: 'watcher';
  stats(): DeliveryWorkerStats;
  health(): HealthCheck;
  /** Graceful: waits at most `waitMs` for sends in flight, then hands back every claimed row. */
  stop(waitMs?: number): Promise<void>;
}

export interface OnrampServices {
  readonly acceptance: OnrampAcceptance;
  readonly intake: PixNoticeIntake;
  readonly inventory: OnrampInventory;
  /** The sandbox helpers with POST /sandbox/pix-payments handled here (sandbox rail only). */
  sandboxDriver(base: SandboxDriver): SandboxDriver;
  startDeliveryWorker(): Promise<RunningDeliveryWorker>;
  /** The PIX notice inbox worker (watcher role): applies notices stored but not applied yet. */
  startNoticeWorker(): RunningNoticeWorker;
}

export async function createOnrampServices(ctx: ServiceContext, options: OnrampServicesOptions): Promise<OnrampServices> {
  const actors = await ctx.actorClient('onramp');
  const inventory = new ActorOnrampInventory({
    store: ctx.store,
    actors,
    ...(options.inventory?.initial !== undefined ? { initial: options.inventory.initial } : {}),
    ...(options.inventory?.initialDefault !== undefined ? { initialDefault: options.inventory.initialDefault } : {}),
  });
  const acceptance = new OnrampCharges({
    store: ctx.store,
    rail: options.rail,
    inventory,
    destinations: options.destinations,
    setups: () => options.setups,
    clock: ctx.clock,
    log: ctx.log.child({ component: 'onramp' }),
  });
  const intake = new PixNoticeIntake({ store: ctx.store, actors, clock: ctx.clock, log: ctx.log.child({ component: 'pix-notices' }), ...(options.notices?.inbox ? { inbox: options.notices.inbox } : {}) });
  const sandboxRail = options.sandboxRail;
  // Networks on the sandbox chain; every other one is live (fake money never moves real money there).
  const sandboxNetworks = new Set<Network>(Object.values(options.setups).flatMap((setup) => (setup?.mode === 'sandbox' ? [setup.network] : [])));

  return {
    acceptance,
    intake,
    inventory,
    sandboxDriver(base) {
      if (sandboxRail === null) return base;
      return withPixPayments(base, sandboxPixPayments({ store: ctx.store, rail: sandboxRail, intake, sandboxNetworks, clock: ctx.clock }));
    },
    async startDeliveryWorker() {
      const worker = new DeliveryWorker({
        store: ctx.store,
        adapters: options.adapters,
        actors,
        inventory,
        sandboxNetworks,
        funding: sandboxFunding(ctx.store),
        clock: ctx.clock,
        log: ctx.log.child({ component: 'deliveries' }),
        owner: `deliveries-${ctx.processId}-${randomUUID().slice(0, 8)}`,
        ...options.delivery,
      });
      worker.start();
      return { name: 'watcher', stats: () => worker.stats(), health: () => worker.health(), stop: (waitMs) => worker.stop(waitMs) };
    },
    startNoticeWorker() {
      const worker = new NoticeWorker({ intake, clock: ctx.clock, log: ctx.log.child({ component: 'pix-notices' }), ...options.notices?.worker });
      worker.start();
      return { name: 'watcher', stats: () => worker.stats(), health: () => worker.health(), stop: () => worker.stop() };
    },
  };
}
