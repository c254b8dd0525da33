// The crypto side, assembled for the composition root: one adapter per offered network (live from
// CHAINS_FILE through the factories the root passes, or the sandbox chain), the per-transaction
// deposit addresses of Solana and Celo, payment_context, the deposit intake (notify, reconcile,
// watched transfers), chain availability, the onramp destination check, the sandbox test helpers,
// and the watcher role (the Stellar-style watchers and the deposit pollers under the watcher lease;
// the chain refund and sweep workers).
import { randomUUID } from 'node:crypto';
import { networks, type Network } from '../domain/assets.ts';
import { compare, rescale, toJsonNumber } from '../domain/money.ts';
import type { Quote } from '../domain/quote.ts';
import { fromJsonValue } from '../actors/state-codec.ts';
import { transactionsCollection } from '../actors/transaction-actor.ts';
import { transactionReference } from '../domain/reference.ts';
import type { ChainAvailability, DepositVerifier, PaymentContexts, Reconciler, SandboxDriver, SandboxResult } from '../ports/ports.ts';
import type { ServiceContext } from '../ports/context.ts';
import type { AccountLookup, ChainAdapter, TransferWatcher, WatcherStatus } from './chains.ts';
import { loadChainsFile, resolveChainSetups, type ChainSetup, type ChainSetups, type ChainsFile } from './config.ts';
import { isPerTransactionDeposits, type PerTransactionDeposits } from './deposit-addresses.ts';
import { DepositPoller, type DepositPollerTuning } from './deposit-poller.ts';
import { DepositIntake } from './deposits.ts';
import { createDestinationCheck, type DestinationCheck } from './destinations.ts';
import { DepositSetupGate } from './deposit-setup-gate.ts';
import { createChainAvailability, createPaymentContexts, type PerTransactionPorts } from './payment-context.ts';
import { RefundWorker, type RefundWorkerOptions, type RefundWorkerStatus } from './refunds.ts';
import { SweepWorker, type SweepWorkerOptions, type SweepWorkerStatus } from './sweeps.ts';
import { SandboxChain } from './sandbox-chain.ts';
import { WatcherLease } from './watcher-lease.ts';
import { settlesWithin } from '../lifecycle/shutdown.ts';
import { watchersCheck, type HealthCheck } from '../lifecycle/health.ts';

/** Builds the real adapter (and, for push networks, the watcher) of a network in the chains file. */
export type LiveChainFactory = (setup: Extract<ChainSetup, { mode: 'live' }>, ctx: ServiceContext) => {
  readonly adapter: ChainAdapter;
  readonly watcher?: TransferWatcher;
  /** What is at an address (onramp destinations); needed on Solana and Celo. */
  readonly accounts?: AccountLookup;
  /** The hot wallet sends go out from (null without a signer): never an onramp destination. */
  readonly hotWallet?: string | null;
  /** Per-transaction deposit addresses (Solana, Celo); default: the adapter, when it offers them. */
  readonly deposits?: PerTransactionDeposits;
};

export type RefundTuning = Partial<Pick<RefundWorkerOptions, 'claimLeaseMs' | 'claimBatchMax' | 'inFlightMax' | 'inFlightPerKeyMax' | 'tickMs' | 'retryDelayMsMin' | 'retryDelayMsMax' | 'parkedRetryDelayMs' | 'askTimeoutMs' | 'topic'>>;
export type SweepTuning = Partial<Pick<SweepWorkerOptions, 'claimLeaseMs' | 'claimBatchMax' | 'inFlightMax' | 'inFlightPerKeyMax' | 'tickMs' | 'retryDelayMsMin' | 'retryDelayMsMax' | 'parkedRetryDelayMs' | 'topic'>>;

export interface ChainServicesOptions {
  /** The parsed chains file; default: CHAINS_FILE of the environment, if set. */
  readonly chainsFile?: ChainsFile | null;
  /** Real adapters per network; a network in the chains file without one stops start-up. */
  readonly live?: Partial<Record<Network, LiveChainFactory>>;
  readonly refunds?: RefundTuning;
  readonly sweeps?: SweepTuning;
  /** The deposit pollers of Solana and Celo (src/chains/deposit-poller.ts). */
  readonly depositPoller?: DepositPollerTuning;
  /** How often the sandbox watcher polls its feed. */
  readonly sandboxWatcherPollMs?: number;
  /** The `watchers` lease's TTL (src/chains/watcher-lease.ts); default 10 s. */
  readonly watcherLeaseTtlMs?: number;
}

export interface WatcherRole {
  watchers(): WatcherStatus[];
  /** True while this process holds the `watchers` lease and runs the watchers (else: standby). */
  active(): boolean;
  refunds(): RefundWorkerStatus;
  sweeps(): SweepWorkerStatus;
  /** The health listener's checks: the watchers' states, the lease rounds, the refund and sweep workers' rounds. */
  health(): HealthCheck[];
  /**
   * Graceful: the watchers stop after the transfer they are handling (each watcher saves its
   * cursor only after a transfer was handed over, so the next watcher resumes exactly there), the
   * lease is released (a standby process takes over at its next round), and the refund worker
   * hands back its rows; waits at most `waitMs`.
   */
  stop(waitMs?: number): Promise<void>;
}

export interface ChainServices {
  readonly setups: ChainSetups;
  readonly adapters: ReadonlyMap<Network, ChainAdapter>;
  /** Per-transaction deposit addresses by network (Solana, Celo; a live adapter without them is absent). */
  readonly perTransaction: PerTransactionPorts;
  readonly paymentContexts: PaymentContexts;
  readonly depositVerifier: DepositVerifier;
  readonly reconciler: Reconciler;
  readonly chainAvailability: ChainAvailability;
  readonly sandbox: SandboxDriver;
  /** The sandbox ledger (null when every network is live): knobs and lookups for tests and admin. */
  readonly sandboxChain: SandboxChain | null;
  readonly intake: DepositIntake;
  /** Whether an address may receive onramp crypto as a wallet (own addresses, tokens, chain lookups). */
  readonly destinations: DestinationCheck;
  /** The watcher role: Stellar-style watchers, deposit pollers, the chain refund and sweep workers. */
  startWatcherRole(): Promise<WatcherRole>;
}

/** A well-formed transaction id, only to check at start that a network derives addresses. */
const addressProbeTransactionId = '00000000-0000-4000-8000-000000000000';

function sandboxError(status: 400 | 404, code: string, reason: string): SandboxResult {
  return { ok: false, status, code, reason };
}

export async function createChainServices(ctx: ServiceContext, options: ChainServicesOptions = {}): Promise<ChainServices> {
  const file = options.chainsFile !== undefined ? options.chainsFile : ctx.env.CHAINS_FILE ? loadChainsFile(ctx.env.CHAINS_FILE) : null;
  const setups = resolveChainSetups(file, { sandbox: ctx.env.sandbox, corridors: ctx.config.corridors() });
  const sandboxSetups = networks.map((network) => setups[network]).filter((setup): setup is ChainSetup => setup?.mode === 'sandbox');
  const sandboxChain = sandboxSetups.length > 0 ? new SandboxChain({ store: ctx.store, clock: ctx.clock, setups: sandboxSetups }) : null;

  const adapters = new Map<Network, ChainAdapter>();
  const perTransaction = new Map<Network, PerTransactionDeposits>();
  const watchers: TransferWatcher[] = [];
  const accountLookups = new Map<Network, AccountLookup>();
  const hotWallets: Partial<Record<Network, string[]>> = {};
  for (const network of networks) {
    const setup = setups[network];
    if (setup === undefined) continue;
    if (setup.mode === 'sandbox') {
      if (sandboxChain === null) throw new Error('sandbox chain missing');
      adapters.set(network, sandboxChain.adapter(network));
      // The sandbox sends from its deposit address (already one of our own addresses).
      accountLookups.set(network, sandboxChain.accounts(network));
      // Stellar pushes payments (memo-bound); Solana and Celo get an address per transaction.
      if (network === 'STELLAR') watchers.push(sandboxChain.watcher(network, options.sandboxWatcherPollMs !== undefined ? { pollMs: options.sandboxWatcherPollMs } : {}));
      else perTransaction.set(network, sandboxChain.perTransaction(network));
      continue;
    }
    const factory = options.live?.[network];
    if (factory === undefined) throw new Error(`chains file: ${network} is configured but this build has no ${network} adapter wired`);
    const built = factory(setup, ctx);
    adapters.set(network, built.adapter);
    if (built.watcher) watchers.push(built.watcher);
    if (built.accounts) accountLookups.set(network, built.accounts);
    if (built.hotWallet) hotWallets[network] = [built.hotWallet];
    const deposits = built.deposits ?? (isPerTransactionDeposits(built.adapter) ? built.adapter : undefined);
    if (deposits !== undefined && network !== 'STELLAR') {
      // An adapter that offers the port but cannot derive addresses (its configuration is
      // incomplete) would fail every acceptance and every notify: refuse to start instead.
      try {
        deposits.addressFor(addressProbeTransactionId);
      } catch (error) {
        throw new Error(`chains file: ${network} cannot derive per-transaction deposit addresses (${error instanceof Error ? error.message : String(error)})`);
      }
      perTransaction.set(network, deposits);
    }
    if (deposits === undefined && network !== 'STELLAR') {
      ctx.log.warn({ network }, 'this network\'s adapter has no per-transaction deposit addresses: new transactions get the shared address, bound by notify under the legacy rule');
    }
  }
  const destinations = createDestinationCheck({ setups, hotWallets, lookups: accountLookups });

  const actors = await ctx.actorClient('chains');
  const intake = new DepositIntake({ store: ctx.store, adapters, perTransaction, actors, log: ctx.log.child({ component: 'deposits' }) });

  const sandbox: SandboxDriver = {
    async deposit(request) {
      const doc = await ctx.store.get(transactionsCollection, request.transactionId);
      if (doc === null || doc.partnerId !== request.partnerId) return sandboxError(404, 'not_found', 'Transaction not found');
      if (doc.direction !== 'payout') return sandboxError(404, 'not_found', 'Not a payout transaction; use /sandbox/pix-payments');
      const quote = fromJsonValue<Quote>(doc.quote ?? null);
      const setup = setups[quote.network];
      if (sandboxChain === null || setup?.mode !== 'sandbox') {
        return sandboxError(400, 'invalid_request', `${quote.network} is a live network here; fund it on chain`);
      }
      const decimals = setup.assets[quote.cryptoCurrency]?.decimals;
      if (decimals === undefined) return sandboxError(400, 'invalid_request', `${quote.cryptoCurrency} has no token on the sandbox ${quote.network}`);
      const amount = request.amount ?? quote.sourceAmount;
      if (amount.units <= 0n) return sandboxError(400, 'invalid_request', 'amount must be positive');
      const exact = rescale(amount, Math.max(decimals, amount.scale), 'floor');
      if (compare(rescale(amount, decimals, 'floor'), exact) !== 0) {
        return sandboxError(400, 'invalid_request', `amount has more than ${decimals} decimals`);
      }
      const stellar = quote.network === 'STELLAR';
      // The address the transaction's payment_context gave (its own on Solana and Celo).
      const frozenAddress = typeof doc.depositAddress === 'string' ? doc.depositAddress : null;
      const transfer = await sandboxChain.deposit({
        network: quote.network,
        asset: quote.cryptoCurrency,
        amount: rescale(amount, decimals, 'floor'),
        memo: stellar ? transactionReference(request.transactionId) : null,
        ...(frozenAddress !== null && !stellar ? { destination: frozenAddress } : {}),
      });
      return {
        ok: true,
        body: {
          blockchain: quote.network,
          on_chain_tx: transfer.onChainId,
          amount: toJsonNumber(transfer.amount),
          crypto_currency: transfer.asset,
          sender: transfer.sender,
          deposit_address: transfer.destination,
          memo: transfer.memo,
          notify: stellar ? { endpoint: null, required: false } : { endpoint: '/payments/notify', required: true },
        },
      };
    },
    async pixPayment(request) {
      const doc = await ctx.store.get(transactionsCollection, request.transactionId);
      if (doc === null || doc.partnerId !== request.partnerId) return sandboxError(404, 'not_found', 'Transaction not found');
      if (doc.direction !== 'onramp') return sandboxError(404, 'not_found', 'Not an onramp transaction');
      // The PIX side of the sandbox belongs to the rails; the composition root wires it there.
      return sandboxError(400, 'invalid_request', 'Sandbox PIX payments are not available in this build yet');
    },
  };

  // Addresses of a network are handed out only once we know we can sweep them (Celo's factory).
  const setupGate = new DepositSetupGate(perTransaction, { nowMs: () => ctx.clock.nowMs(), log: ctx.log.child({ component: 'deposit-setup' }) });
  await setupGate.start();
  const paymentContexts = createPaymentContexts(() => setups, perTransaction, (network) => setupGate.ready(network));
  const chainAvailability = createChainAvailability(() => setups);

  return {
    setups,
    adapters,
    perTransaction,
    paymentContexts,
    depositVerifier: intake,
    reconciler: intake,
    chainAvailability,
    sandbox,
    sandboxChain,
    intake,
    destinations,
    async startWatcherRole() {
      const log = ctx.log.child({ component: 'watcher' });
      const started: TransferWatcher[] = [];
      const pollers = [...perTransaction.values()].map((port) => new DepositPoller({
        port,
        store: ctx.store,
        intake,
        clock: ctx.clock,
        log: ctx.log.child({ component: 'deposit-poller', network: port.network }),
        roundMs: ctx.env.DEPOSIT_POLL_INTERVAL_MS,
        lateWatchMs: ctx.env.DEPOSIT_LATE_WATCH_MS,
        ...options.depositPoller,
      }));
      const sweeps = new SweepWorker({
        store: ctx.store,
        ports: perTransaction,
        clock: ctx.clock,
        log: ctx.log.child({ component: 'sweeps' }),
        owner: `sweeps-${ctx.processId}-${randomUUID().slice(0, 8)}`,
        ...options.sweeps,
      });
      const refunds = new RefundWorker({
        store: ctx.store,
        adapters,
        actors,
        clock: ctx.clock,
        log: ctx.log.child({ component: 'refunds' }),
        owner: `refunds-${ctx.processId}-${randomUUID().slice(0, 8)}`,
        ...options.refunds,
      });
      // How long stopping may wait for a watcher handing over a transfer: the role's stop sets it.
      let stopWaitMs = Number.POSITIVE_INFINITY;
      const stopWatchers = async (): Promise<void> => {
        await Promise.all(
          [...started.splice(0), ...pollers].map(async (watcher) => {
            // A watcher still handing over a transfer when the time is up has not moved its
            // cursor past it: the next watcher hands it over again (deposits are deduplicated).
            if (!(await settlesWithin(watcher.stop(), stopWaitMs))) log.warn({ network: watcher.network, waitMs: stopWaitMs }, 'watcher did not stop in time');
          }),
        );
      };
      // The watchers run in one process at a time (the lease holder); see watcher-lease.ts.
      const lease = new WatcherLease({
        leases: ctx.leases,
        owner: `watcher-${ctx.processId}-${randomUUID().slice(0, 8)}`,
        ...(options.watcherLeaseTtlMs !== undefined ? { ttlMs: options.watcherLeaseTtlMs } : {}),
        log,
        activate: async () => {
          for (const watcher of watchers) {
            await watcher.start(async (transfer) => intake.onWatchedTransfer(transfer));
            started.push(watcher);
            log.info({ network: watcher.network }, 'watcher started');
          }
          for (const poller of pollers) {
            poller.start();
            log.info({ network: poller.network }, 'deposit poller started');
          }
        },
        deactivate: stopWatchers,
      });
      refunds.start();
      if (perTransaction.size > 0) sweeps.start();
      const leased = watchers.length + pollers.length > 0;
      if (leased) await lease.start();
      const statuses = (): WatcherStatus[] => [...watchers.map((watcher) => watcher.status()), ...pollers.map((poller) => poller.status())];
      return {
        watchers: statuses,
        active: () => lease.active(),
        refunds: () => refunds.status(),
        sweeps: () => sweeps.status(),
        health: () => [
          watchersCheck(statuses, () => lease.active()),
          ...(leased ? [lease.health()] : []),
          refunds.health(),
          ...(perTransaction.size > 0 ? [sweeps.health()] : []),
        ],
        async stop(waitMs = Number.POSITIVE_INFINITY) {
          stopWaitMs = waitMs;
          await Promise.all([refunds.stop(waitMs), sweeps.stop(waitMs), lease.stop()]);
        },
      };
    },
  };
}
