// The onramp crypto delivery worker (watcher role): executes the transaction actor's
// DeliveryRequested rows (outbox topic `deliveries`) and reports each final outcome back.
//
// For each row, keyed by the transaction id:
//   1. A recorded final failure (`onramp_deliveries/<txId>` says failed) is never sent again: the
//      failure is (re)reported and the row is done.
//   2. A transaction that is no longer PROCESSING_PAYMENT is not sent to (PAYMENT_COMPLETED: the
//      outcome was reported before a crash; anything else: operations changed it) and the row is done.
//   3. The amount is held in the inventory (once per key) before the first send; an inventory that
//      cannot cover it is a final failure (`insufficient_inventory`) without any send.
//   4. `adapter.send` with the idempotency key `delivery:<txId>`: the adapters record the signed
//      transaction before broadcasting it, so a retry (this worker, another one after the claim
//      lapses, a restart) is the same transfer, never a second one.
//        confirmed → ask CryptoDelivered {onChainId} → PAYMENT_COMPLETED; row done.
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
import { settlesWithin } from '../service/shutdown.ts';

/** Final outcomes recorded per transaction before they are reported (so a failure is never re-sent). */
export const onrampDeliveriesCollection = 'onramp_deliveries';
/** Reasons passed to the actor are bounded. */
export const reasonCharsMax = 200;

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
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Unique per worker process: the outbox claim owner. */
  readonly owner: string;
  readonly topic?: string;
  readonly claimLeaseMs?: number;
  readonly claimBatchMax?: number;
  readonly inFlightMax?: number;
  readonly tickMs?: number;
  readonly retryDelayMsMin?: number;
  readonly retryDelayMsMax?: number;
  readonly askTimeoutMs?: number;
  readonly stuckAfterMs?: number;
}

interface Entry {
  readonly delivery: Delivery;
  attempts: number;
  nextAttemptAtMs: number;
  lastError: string | null;
  running: boolean;
  stuckLogged: boolean;
}

export interface DeliveryWorkerStats {
  readonly inFlight: number;
  readonly delivered: number;
  readonly failed: number;
  readonly attempts: number;
  readonly malformedRows: number;
  /** Rows waiting longer than `stuckAfterMs` since they were requested. */
  readonly stuck: number;
  readonly retrying: ReadonlyArray<{ readonly transactionId: string; readonly network: Network; readonly attempts: number; readonly lastError: string | null }>;
}

type Outcome = { readonly kind: 'delivered'; readonly onChainId: string } | { readonly kind: 'failed'; readonly reason: string };

export class DeliveryWorker {
  private readonly entries = new Map<string, Entry>();
  private readonly malformed = new Set<string>();
  private running = false;
  /** Set by stop(): rows claimed from then on go straight back. */
  private stopRequested = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private counters = { delivered: 0, failed: 0, attempts: 0 };
  private readonly topic: string;
  private readonly claimLeaseMs: number;
  private readonly claimBatchMax: number;
  private readonly inFlightMax: number;
  private readonly tickMs: number;
  private readonly retryDelayMsMin: number;
  private readonly retryDelayMsMax: number;
  private readonly askTimeoutMs: number;
  private readonly stuckAfterMs: number;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.topic = options.topic ?? outboxTopicDeliveries;
    this.claimLeaseMs = options.claimLeaseMs ?? 60_000;
    this.claimBatchMax = options.claimBatchMax ?? 32;
    this.inFlightMax = options.inFlightMax ?? 256;
    this.tickMs = options.tickMs ?? 250;
    this.retryDelayMsMin = options.retryDelayMsMin ?? 500;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 30_000;
    this.askTimeoutMs = options.askTimeoutMs ?? 10_000;
    this.stuckAfterMs = options.stuckAfterMs ?? 15 * 60_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopRequested = false;
    this.loop = this.run();
  }

  /**
   * Stops claiming, waits at most `waitMs` for the sends in flight, then hands every row back so
   * another worker continues at once instead of waiting for the claims to lapse. A send still
   * running then is repeated by the next holder with the same idempotency key (one transfer).
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    this.running = false;
    this.stopRequested = true;
    this.wake?.();
    if (this.loop !== null && !(await settlesWithin(this.loop, waitMs))) {
      this.options.log.warn({ waitMs }, 'delivery worker stopping with sends in flight; their rows are handed back');
    }
    this.loop = null;
    const ids = [...this.entries.keys()];
    this.entries.clear();
    if (ids.length > 0) await this.options.store.outboxRelease(ids, this.options.owner).catch(() => undefined);
  }

  stats(): DeliveryWorkerStats {
    const nowMs = this.options.clock.nowMs();
    const entries = [...this.entries.values()];
    return {
      inFlight: entries.length,
      ...this.counters,
      malformedRows: this.malformed.size,
      stuck: entries.filter((entry) => nowMs - entry.delivery.requestedAtMs > this.stuckAfterMs).length,
      retrying: entries
        .filter((entry) => entry.attempts > 0)
        .map((entry) => ({ transactionId: entry.delivery.transactionId, network: entry.delivery.network, attempts: entry.attempts, lastError: entry.lastError })),
    };
  }

  /** One round: claim new rows, then attempt every due delivery. Exposed for tests and ops. */
  async tick(): Promise<void> {
    await this.claim();
    const nowMs = this.options.clock.nowMs();
    const due = [...this.entries.values()].filter((entry) => !entry.running && entry.nextAttemptAtMs <= nowMs);
    await Promise.all(due.map((entry) => this.attempt(entry)));
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.tick();
      } catch (error) {
        this.options.log.error({ error: error instanceof Error ? error.message : String(error) }, 'delivery round failed; retrying');
      }
      if (this.running) await this.sleep(this.tickMs);
    }
  }

  private async claim(): Promise<void> {
    const room = Math.min(this.claimBatchMax, this.inFlightMax - this.entries.size);
    if (room <= 0) return;
    const rows = await this.options.store.outboxClaim(this.topic, this.options.owner, room, this.claimLeaseMs, this.options.clock.nowMs());
    if (this.stopRequested) {
      // stop() ran while we were claiming and may already have handed back what it held.
      if (rows.length > 0) await this.options.store.outboxRelease(rows.map((row) => row.id), this.options.owner).catch(() => undefined);
      return;
    }
    for (const row of rows) {
      if (this.entries.has(row.id)) continue; // ours; its lease lapsed and is now renewed
      const delivery = deliveryOf(row);
      if (delivery === null) {
        // A bug: never dropped silently; it keeps coming back to the log until operations act.
        if (!this.malformed.has(row.id)) this.options.log.error({ rowId: row.id }, 'malformed delivery row; left in the outbox for operations');
        this.malformed.add(row.id);
        continue;
      }
      this.entries.set(row.id, { delivery, attempts: 0, nextAttemptAtMs: 0, lastError: null, running: false, stuckLogged: false });
    }
  }

  private backoffMs(attempts: number): number {
    return Math.min(this.retryDelayMsMax, this.retryDelayMsMin * 2 ** Math.min(Math.max(attempts - 1, 0), 20));
  }

  private async attempt(entry: Entry): Promise<void> {
    entry.running = true;
    const { delivery } = entry;
    const log = this.options.log;
    try {
      this.counters.attempts += 1;
      const outcome = await this.execute(delivery);
      if (outcome === 'done') {
        await this.finish(delivery);
        return;
      }
      if (outcome === null) {
        this.retryLater(entry, 'not final yet (pending)');
        return;
      }
      await this.report(delivery, outcome);
      if (outcome.kind === 'delivered') this.counters.delivered += 1;
      else this.counters.failed += 1;
      await this.finish(delivery);
    } catch (error) {
      this.retryLater(entry, error instanceof Error ? error.message : String(error));
      log.warn({ transactionId: delivery.transactionId, network: delivery.network, attempts: entry.attempts, error: entry.lastError }, 'delivery attempt failed; will retry');
    } finally {
      entry.running = false;
    }
  }

  private retryLater(entry: Entry, error: string): void {
    entry.attempts += 1;
    entry.lastError = error;
    entry.nextAttemptAtMs = this.options.clock.nowMs() + this.backoffMs(entry.attempts);
    const waitedMs = this.options.clock.nowMs() - entry.delivery.requestedAtMs;
    if (waitedMs > this.stuckAfterMs && !entry.stuckLogged) {
      entry.stuckLogged = true;
      this.options.log.error(
        { transactionId: entry.delivery.transactionId, network: entry.delivery.network, attempts: entry.attempts, waitedMs, lastError: entry.lastError },
        'onramp delivery stuck; check the chain and the hot wallet',
      );
    }
  }

  private async finish(delivery: Delivery): Promise<void> {
    await this.options.store.outboxMarkDone([delivery.rowId]);
    this.entries.delete(delivery.rowId);
  }

  /** The outcome to report, 'done' when there is nothing left to do, null when not final yet. */
  private async execute(delivery: Delivery): Promise<Outcome | 'done' | null> {
    const { store, inventory, log } = this.options;
    const key = deliveryIdempotencyKey(delivery.transactionId);
    const recorded = await store.get(onrampDeliveriesCollection, delivery.transactionId);
    if (recorded?.['outcome'] === 'failed') {
      await inventory.release(key, delivery.network, delivery.asset, delivery.amount);
      return { kind: 'failed', reason: typeof recorded['reason'] === 'string' ? recorded['reason'] : 'delivery_failed' };
    }
    const tx = await store.get(transactionsCollection, delivery.transactionId);
    const status = tx?.['status'];
    if (status !== 'PROCESSING_PAYMENT') {
      if (status !== 'PAYMENT_COMPLETED') log.warn({ transactionId: delivery.transactionId, status: typeof status === 'string' ? status : null }, 'delivery row for a transaction that is not processing; not sent');
      return 'done';
    }
    const held = await inventory.hold(key, delivery.network, delivery.asset, delivery.amount);
    if (held === 'insufficient') return this.failFinally(delivery, 'insufficient_inventory');
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
        return { kind: 'delivered', onChainId: sent.onChainId };
      case 'pending':
        log.info({ transactionId: delivery.transactionId, network: delivery.network, onChainId: sent.onChainId }, 'delivery broadcast, not final yet');
        return null;
      case 'failed':
        if (sent.retryable) throw new Error(sent.reason.slice(0, reasonCharsMax));
        return this.failFinally(delivery, sent.reason);
    }
  }

  /** Records the failure as final BEFORE anything else, so no later attempt sends; then releases the hold. */
  private async failFinally(delivery: Delivery, reason: string): Promise<Outcome> {
    const bounded = reason.slice(0, reasonCharsMax);
    await this.options.store.put(onrampDeliveriesCollection, delivery.transactionId, { outcome: 'failed', reason: bounded, atMs: this.options.clock.nowMs() });
    await this.options.inventory.release(deliveryIdempotencyKey(delivery.transactionId), delivery.network, delivery.asset, delivery.amount);
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

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
