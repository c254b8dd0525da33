// The onramp crypto delivery worker (watcher role): executes the transaction actor's
// DeliveryRequested rows (outbox topic `deliveries`) and reports each final outcome back.
//
// For each row, keyed by the transaction id:
//   1. A recorded final failure (`onramp_deliveries/<txId>` says failed) is never sent again: the
//      failure is (re)reported and the row is done.
//   2. A transaction that is no longer PROCESSING_PAYMENT is not sent to (PAYMENT_COMPLETED: the
//      outcome was reported before a crash; anything else: operations changed it) and the row is done.
//   3. A delivery on a live chain (not the sandbox chain) whose PIX payment was faked by the sandbox
//      (sandbox-funding.ts) is a final failure (`sandbox_payment_on_live_chain`), recorded before it
//      is reported, whatever was recorded before: nothing is sent, ever (fake money never moves
//      real money; docs/security.md).
//   4. Before the first send only: the amount is held in the inventory, then `onramp_deliveries/
//      <txId>` records `sending` (putIfAbsent) before the adapter is called. An inventory that
//      cannot cover it is a final failure (`insufficient_inventory`), recorded with putIfAbsent
//      too: whichever of `sending` and `failed` is written first decides, so a delivery whose
//      transfer may be on its way is never failed (and refunded) for want of inventory, and a
//      delivery failed that way is never sent. Once `sending` is recorded, the inventory is not
//      asked for a hold again: the send decides. Too many holds open at once (`too_many_holds`) is
//      not a failure: the row is retried later, nothing sent.
//   5. `adapter.send` with the idempotency key `delivery:<txId>`: the adapters record the signed
//      transaction before broadcasting it, so a retry (this worker, another one after the claim
//      lapses, a restart) is the same transfer, never a second one.
//        confirmed → the hold is consumed (closed for good), then ask CryptoDelivered {onChainId}
//          → PAYMENT_COMPLETED; row done.
//        pending, or a retryable failure → tried again with bounded exponential backoff, forever
//          (an unconfirmed hash is never reported as delivered, and a transfer that may still land
//          is never refunded); an error is logged once the row has waited `stuckAfterMs`.
//        a non-retryable failure → recorded as final first, then the hold is released, then ask
//          CryptoDeliveryFailed {reason} → PAYMENT_FAILED and the BRL refund (rails: refunds.pix).
//   Reports use `ask` with the command id `delivery-result:<txId>` (one outcome per delivery, so a
//   repeat is a replay) and the row is marked done only after the actor applied it.
// Decisions: docs/onramp.md.
import type { Logger } from 'pino';
import type { JsonValue } from '../actors/envelope.ts';
import { fromJsonValue, toJsonValue } from '../actors/state-codec.ts';
import { outboxTopicDeliveries, transactionActorType, transactionsCollection, type DomainReply } from '../actors/transaction-actor.ts';
import type { ChainAdapter } from '../chains/chains.ts';
import type { ActorAsker } from '../chains/deposits.ts';
import { cryptoAssets, isOneOf, networks, type CryptoAsset, type Network } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import type { CryptoDeliveredCommand, CryptoDeliveryFailedCommand } from '../domain/transaction.ts';
import type { OutboxRow, SnapshotStore } from '../store/store.ts';
import type { OnrampInventory } from './inventory.ts';
import type { SandboxFunding } from './sandbox-funding.ts';
import { OutboxJobs, backoffMs, type OutboxJobEntry } from '../store/outbox-jobs.ts';
import type { HealthCheck } from '../lifecycle/health.ts';

/**
 * Per transaction: `sending` once a send may have gone out (written before the first), then the
 * final failure when there is one, recorded before it is reported (so a failure is never re-sent).
 */
export const onrampDeliveriesCollection = 'onramp_deliveries';
/** The failure reason of a delivery refused because its PIX payment was faked by the sandbox. */
export const sandboxPaymentOnLiveChain = 'sandbox_payment_on_live_chain';
/** Reasons passed to the actor are bounded. */
export const reasonCharsMax = 200;

function failedOutcome(recorded: Readonly<Record<string, unknown>>): Outcome {
  return { kind: 'failed', reason: typeof recorded['reason'] === 'string' ? recorded['reason'] : 'delivery_failed' };
}

export function deliveryIdempotencyKey(transactionId: string): string {
  return `delivery:${transactionId}`;
}

export function deliveryResultCommandId(transactionId: string): string {
  return `delivery-result:${transactionId}`;
}

/** A DeliveryRequested row, decoded and checked. */
export interface Delivery {
  readonly rowId: string;
  readonly transactionId: string;
  readonly network: Network;
  readonly asset: CryptoAsset;
  readonly amount: Decimal;
  readonly destination: string;
  readonly requestedAtMs: number;
}

export function deliveryOf(row: Pick<OutboxRow, 'id' | 'payload'>): Delivery | null {
  const payload = fromJsonValue<Record<string, unknown> | null>(row.payload);
  if (payload === null || typeof payload !== 'object' || payload['type'] !== 'DeliveryRequested') return null;
  const { transactionId, network, asset, amount, destination, atMs } = payload;
  if (typeof transactionId !== 'string' || !isOneOf(networks, network) || !isOneOf(cryptoAssets, asset)) return null;
  if (typeof destination !== 'string' || destination.length === 0 || typeof atMs !== 'number') return null;
  const value = amount as Decimal | null;
  if (value === null || typeof value !== 'object' || typeof value.units !== 'bigint' || value.units <= 0n) return null;
  return { rowId: row.id, transactionId, network, asset, amount: value, destination, requestedAtMs: atMs };
}

export interface DeliveryWorkerOptions {
  readonly store: SnapshotStore;
  readonly adapters: ReadonlyMap<Network, ChainAdapter>;
  readonly actors: ActorAsker;
  readonly inventory: OnrampInventory;
  /**
   * The networks on the sandbox chain. Every other network is live: a send there moves real
   * tokens, so a delivery funded by the sandbox (`funding`) is never sent there.
   */
  readonly sandboxNetworks: ReadonlySet<Network>;
  readonly funding: Pick<SandboxFunding, 'isSandboxFunded'>;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Unique per worker process: the outbox claim owner. */
  readonly owner: string;
  readonly topic?: string;
  readonly claimLeaseMs?: number;
  readonly claimBatchMax?: number;
  readonly inFlightMax?: number;
  /** Deliveries of one network held at most (default half of `inFlightMax`). */
  readonly inFlightPerKeyMax?: number;
  readonly tickMs?: number;
  readonly retryDelayMsMin?: number;
  readonly retryDelayMsMax?: number;
  readonly askTimeoutMs?: number;
  readonly stuckAfterMs?: number;
}

/** A delivery held (or deferred) by this worker; `stuckLogged` so the stuck error is logged once. */
interface DeliveryJob {
  readonly delivery: Delivery;
  stuckLogged: boolean;
}

export interface DeliveryWorkerStats {
  /** Deliveries this worker holds: being attempted now (one waiting for its next try is not held). */
  readonly inFlight: number;
  readonly delivered: number;
  readonly failed: number;
  readonly attempts: number;
  readonly malformedRows: number;
  /** Rows held or deferred by this worker, waiting longer than `stuckAfterMs` since they were requested. */
  readonly stuck: number;
  /** Deliveries that failed at least once: held, or deferred by this worker until their next try. */
  readonly retrying: ReadonlyArray<{ readonly transactionId: string; readonly network: Network; readonly attempts: number; readonly lastError: string | null }>;
}

type Outcome = { readonly kind: 'delivered'; readonly onChainId: string } | { readonly kind: 'failed'; readonly reason: string };

export class DeliveryWorker {
  private readonly jobs: OutboxJobs<DeliveryJob>;
  private counters = { delivered: 0, failed: 0, attempts: 0 };
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;
  private readonly askTimeoutMs: number;
  private readonly stuckAfterMs: number;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.retryDelayMsMin = options.retryDelayMsMin ?? 500;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 30_000;
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
    this.stuckAfterMs = options.stuckAfterMs ?? 15 * 60_000;
    this.jobs = new OutboxJobs<DeliveryJob>({
      store: options.store,
      clock: options.clock,
      log: options.log,
      owner: options.owner,
      topic: options.topic ?? outboxTopicDeliveries,
      what: 'delivery',
      tuning: options,
      parse: (row) => {
        const delivery = deliveryOf(row);
        return delivery === null ? 'malformed' : { delivery, stuckLogged: false };
      },
      attempt: (entry) => this.attempt(entry),
      budgetKey: (job) => job.delivery.network,
    });
  }

  start(): void {
    this.jobs.start();
  }

  /**
   * Stops claiming, waits at most `waitMs` for the sends in flight, then hands every row back so
   * another worker continues at once instead of waiting for the claims to lapse. A send still
   * running then is repeated by the next holder with the same idempotency key (one transfer).
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    await this.jobs.stop(waitMs);
  }

  health(): HealthCheck {
    return this.jobs.health();
  }

  stats(): DeliveryWorkerStats {
    const nowMs = this.options.clock.nowMs();
    const entries = [...this.jobs.held(), ...this.jobs.waiting()];
    return {
      inFlight: this.jobs.held().length,
      ...this.counters,
      malformedRows: this.jobs.malformedRows(),
      stuck: entries.filter((entry) => nowMs - entry.job.delivery.requestedAtMs > this.stuckAfterMs).length,
      retrying: entries
        .filter((entry) => entry.attempts > 0)
        .map((entry) => ({ transactionId: entry.job.delivery.transactionId, network: entry.job.delivery.network, attempts: entry.attempts, lastError: entry.lastError })),
    };
  }

  /** One round: claim new rows, then attempt every due delivery. Exposed for tests and ops. */
  async tick(): Promise<void> {
    await this.jobs.tick();
  }

  private async attempt(entry: OutboxJobEntry<DeliveryJob>): Promise<void> {
    const { delivery } = entry.job;
    try {
      this.counters.attempts += 1;
      const outcome = await this.execute(delivery);
      if (outcome === 'done') {
        await this.jobs.finish(entry);
        return;
      }
      if (outcome === null) {
        this.retryLater(entry, 'not final yet (pending)');
        return;
      }
      await this.report(delivery, outcome);
      if (outcome.kind === 'delivered') this.counters.delivered += 1;
      else this.counters.failed += 1;
      await this.jobs.finish(entry);
    } catch (error) {
      this.retryLater(entry, error instanceof Error ? error.message : String(error));
      this.options.log.warn({ transactionId: delivery.transactionId, network: delivery.network, attempts: entry.attempts, error: entry.lastError }, 'delivery attempt failed; will retry');
    }
  }

  private retryLater(entry: OutboxJobEntry<DeliveryJob>, error: string): void {
    const { delivery } = entry.job;
    entry.attempts += 1;
    entry.lastError = error;
    entry.nextAttemptAtMs = this.options.clock.nowMs() + backoffMs(entry.attempts, this.retryDelayMsMin, this.retryDelayMsMax);
    const waitedMs = this.options.clock.nowMs() - delivery.requestedAtMs;
    if (waitedMs > this.stuckAfterMs && !entry.job.stuckLogged) {
      entry.job.stuckLogged = true;
      this.options.log.error(
        { transactionId: delivery.transactionId, network: delivery.network, attempts: entry.attempts, waitedMs, lastError: entry.lastError },
        'onramp delivery stuck; check the chain and the hot wallet',
      );
    }
  }

  /** The outcome to report, 'done' when there is nothing left to do, null when not final yet. */
  private async execute(delivery: Delivery): Promise<Outcome | 'done' | null> {
    const { store, inventory, log } = this.options;
    const key = deliveryIdempotencyKey(delivery.transactionId);
    const recorded = await store.get(onrampDeliveriesCollection, delivery.transactionId);
    if (recorded?.['outcome'] === 'failed') {
      await inventory.release(key, delivery.network, delivery.asset);
      return failedOutcome(recorded);
    }
    const tx = await store.get(transactionsCollection, delivery.transactionId);
    const status = tx?.['status'];
    if (status !== 'PROCESSING_PAYMENT') {
      // Completed: reported before a crash; the hold was consumed before the report (again: no-op).
      if (status === 'PAYMENT_COMPLETED') await inventory.consume(key, delivery.network, delivery.asset);
      else log.warn({ transactionId: delivery.transactionId, status: typeof status === 'string' ? status : null }, 'delivery row for a transaction that is not processing; not sent');
      return 'done';
    }
    if (!this.options.sandboxNetworks.has(delivery.network) && (await this.options.funding.isSandboxFunded(delivery.transactionId))) {
      return this.refuseSandboxFunded(delivery);
    }
    if (recorded?.['outcome'] !== 'sending') {
      const held = await inventory.hold(key, delivery.network, delivery.asset, delivery.amount);
      if (held === 'insufficient') return this.failBeforeAnySend(delivery, 'insufficient_inventory');
      if (held === 'too_many_holds') throw new Error(`too many onramp deliveries in flight on ${delivery.network}/${delivery.asset} (open inventory holds at their bound); retrying`);
      const marked = await store.putIfAbsent(onrampDeliveriesCollection, delivery.transactionId, { outcome: 'sending', atMs: this.options.clock.nowMs() });
      // Another worker on the same row recorded a final failure first: nothing was sent, report it.
      if (marked.status === 'exists' && marked.doc['outcome'] === 'failed') return failedOutcome(marked.doc);
    }
    const adapter = this.options.adapters.get(delivery.network);
    if (adapter === undefined) throw new Error(`no chain adapter for ${delivery.network}`);
    const sent = await adapter.send({
      network: delivery.network,
      asset: delivery.asset,
      amount: delivery.amount,
      destination: delivery.destination,
      idempotencyKey: key,
    });
    switch (sent.status) {
      case 'confirmed':
        log.info({ transactionId: delivery.transactionId, network: delivery.network, onChainId: sent.onChainId }, 'onramp crypto delivered');
        // Before the report: a completed transaction's row is done, and its hold must be closed.
        await inventory.consume(key, delivery.network, delivery.asset);
        return { kind: 'delivered', onChainId: sent.onChainId };
      case 'pending':
        log.info({ transactionId: delivery.transactionId, network: delivery.network, onChainId: sent.onChainId }, 'delivery broadcast, not final yet');
        return null;
      case 'failed':
        if (sent.retryable) throw new Error(sent.reason.slice(0, reasonCharsMax));
        return this.failFinally(delivery, sent.reason);
    }
  }

  /**
   * A final failure decided before the first send. Recorded only if no send was recorded first
   * (another worker holding the same row may have passed its inventory check and started one):
   * then the row is retried, and the send decides.
   */
  private async failBeforeAnySend(delivery: Delivery, reason: string): Promise<Outcome> {
    const bounded = reason.slice(0, reasonCharsMax);
    const failure = { outcome: 'failed', reason: bounded, atMs: this.options.clock.nowMs() };
    const written = await this.options.store.putIfAbsent(onrampDeliveriesCollection, delivery.transactionId, failure);
    if (written.status === 'exists' && written.doc['outcome'] !== 'failed') throw new Error(`${bounded}, but a send was recorded first; retrying`);
    this.options.log.error({ transactionId: delivery.transactionId, network: delivery.network, reason: bounded }, 'onramp delivery failed before any send; the PIX payment is refunded');
    return written.status === 'exists' ? failedOutcome(written.doc) : { kind: 'failed', reason: bounded };
  }

  /**
   * Fake money never moves real money: a delivery whose PIX payment was faked by the sandbox is
   * never sent on a live chain. Final at once, even over a `sending` record (a row left by an
   * earlier release): for money that does not exist, sending nothing is always right, and the BRL
   * "refund" that follows goes back through the sandbox rail.
   */
  private async refuseSandboxFunded(delivery: Delivery): Promise<Outcome> {
    this.options.log.error(
      { transactionId: delivery.transactionId, network: delivery.network },
      'onramp delivery refused: its PIX payment was faked by the sandbox and the network is live; nothing is sent',
    );
    return this.failFinally(delivery, sandboxPaymentOnLiveChain);
  }

  /** Records the failure as final BEFORE anything else, so no later attempt sends; then releases the hold. */
  private async failFinally(delivery: Delivery, reason: string): Promise<Outcome> {
    const bounded = reason.slice(0, reasonCharsMax);
    await this.options.store.put(onrampDeliveriesCollection, delivery.transactionId, { outcome: 'failed', reason: bounded, atMs: this.options.clock.nowMs() });
    await this.options.inventory.release(deliveryIdempotencyKey(delivery.transactionId), delivery.network, delivery.asset);
    this.options.log.error({ transactionId: delivery.transactionId, network: delivery.network, reason: bounded }, 'onramp delivery failed; the PIX payment is refunded');
    return { kind: 'failed', reason: bounded };
  }

  /** Resolves once the actor has the outcome (applied now or before, or refused for good); throws otherwise. */
  private async report(delivery: Delivery, outcome: Outcome): Promise<void> {
    const command: CryptoDeliveredCommand | CryptoDeliveryFailedCommand =
      outcome.kind === 'delivered' ? { kind: 'CryptoDelivered', onChainId: outcome.onChainId } : { kind: 'CryptoDeliveryFailed', reason: outcome.reason };
    const payload: JsonValue = toJsonValue(command);
    const reply = await this.options.actors.ask<DomainReply>(transactionActorType, delivery.transactionId, command.kind, payload, {
      commandId: deliveryResultCommandId(delivery.transactionId),
      timeoutMs: this.askTimeoutMs,
    });
    if (!reply.ok) {
      // Final on the actor's side (e.g. outcome_conflict): retrying cannot change it. Operations.
      this.options.log.error({ transactionId: delivery.transactionId, code: reply.code, outcome: outcome.kind }, 'the transaction refused the delivery report; check it by hand');
    }
  }
}
