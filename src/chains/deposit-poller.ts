// The deposit poller: finds Solana/Celo deposits that nobody notified, by address. It runs in the
// watcher role under the watcher lease (one active process; src/chains/watcher-lease.ts), one per
// network with per-transaction addresses.
//
// Each round walks the `deposit_watch` read model of its network (the transaction actor keeps there
// every payout that awaits its deposit, or expired without one), newest expiry first, in bounded
// pages, and stops at the first transaction that expired more than `lateWatchMs` ago: expired ones
// are still polled that long, so a late deposit is found and refunded. For each transaction whose
// frozen address is its own (never a legacy shared address: every transfer of everyone reaches
// that one) it asks the chain `transfersInto(address, limit)` and hands each transfer to the
// deposit intake's `claimAtOwnAddress`, the same checks and the same deposit actor claim as a
// notify; the deposit actor stays the one writer of "which transaction does this transfer fund".
//
// Bounds: at most `addressesPerRoundMax` addresses per round (a round resumes where the last one
// stopped, wrapping around, so every address is visited in turn), `transfersPerAddressMax`
// transfers per address, pages of `pageSize`. Transfers whose claim was settled (linked, refused,
// or not a transfer into the address) are remembered (at most `settledMax`) and not asked again;
// one not final yet is asked again next round. A failing round (the RPC node or the store is
// down) is visible in `status()` (state `reconnecting`, `lastError`) and retried after a bounded
// backoff.
import type { Logger } from 'pino';
import { depositWatchCollection } from '../actors/transaction-actor.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import type { WatcherStatus } from './chains.ts';
import type { PerTransactionDeposits } from './deposit-addresses.ts';
import type { AddressClaimOutcome } from './deposits.ts';
import { describeError } from './send-helpers.ts';

export interface DepositPollerTuning {
  /** How long after its expiry a transaction's address is still polled. Default 24 h. */
  readonly lateWatchMs?: number;
  /** Pause between rounds. Default 10 s. */
  readonly roundMs?: number;
  /** Addresses asked per round at most. Default 200. */
  readonly addressesPerRoundMax?: number;
  /** Chain transactions asked per address. Default 10. */
  readonly transfersPerAddressMax?: number;
  /** Page size of the walk over `deposit_watch`. Default 100. */
  readonly pageSize?: number;
  /** Longest pause after failed rounds. Default 60 s. */
  readonly retryDelayMsMax?: number;
}

export interface DepositPollerOptions extends DepositPollerTuning {
  readonly port: PerTransactionDeposits;
  readonly store: SnapshotStore;
  readonly intake: { claimAtOwnAddress(transactionId: string, network: 'SOLANA' | 'CELO', onChainTx: string): Promise<AddressClaimOutcome> };
  readonly clock: { nowMs(): number };
  readonly log: Logger;
}

/** What one round did (for tests and logs). */
export interface PollRound {
  readonly addresses: number;
  readonly claimed: number;
}

const settledMax = 10_000;

/** Outcomes after which a transfer need not be asked about again for this transaction. */
const settledOutcomes: ReadonlySet<AddressClaimOutcome> = new Set(['enqueued', 'alreadyProcessed', 'refused', 'invalid', 'not_own_address']);

interface WatchEntry {
  readonly transactionId: string;
  readonly address: string;
  readonly expiresAtMs: number;
}

function watchEntryOf(doc: JsonObject): WatchEntry | null {
  const { transactionId, depositAddress, expiresAtMs } = doc;
  if (typeof transactionId !== 'string' || typeof depositAddress !== 'string' || typeof expiresAtMs !== 'number') return null;
  return { transactionId, address: depositAddress, expiresAtMs };
}

export class DepositPoller {
  readonly network: 'SOLANA' | 'CELO';
  private readonly lateWatchMs: number;
  private readonly roundMs: number;
  private readonly addressesPerRoundMax: number;
  private readonly transfersPerAddressMax: number;
  private readonly pageSize: number;
  private readonly retryDelayMsMax: number;
  /** `<transactionId> <onChainId>` of settled claims, oldest first (a Map keeps insertion order). */
  private readonly settled = new Map<string, true>();
  /** Where the next round resumes in the walk (an offset into the newest-expiry-first order). */
  private resumeOffset = 0;
  private running = false;
  /** Set by stop(): a round in progress ends after the address being asked. */
  private stopRequested = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private current: WatcherStatus;

  constructor(private readonly options: DepositPollerOptions) {
    this.network = options.port.network;
    this.lateWatchMs = options.lateWatchMs ?? 24 * 3_600_000;
    this.roundMs = options.roundMs ?? 10_000;
    this.addressesPerRoundMax = options.addressesPerRoundMax ?? 200;
    this.transfersPerAddressMax = options.transfersPerAddressMax ?? 10;
    this.pageSize = options.pageSize ?? 100;
    this.retryDelayMsMax = options.retryDelayMsMax ?? 60_000;
    for (const [name, value] of [['roundMs', this.roundMs], ['addressesPerRoundMax', this.addressesPerRoundMax], ['transfersPerAddressMax', this.transfersPerAddressMax], ['pageSize', this.pageSize]] as const) {
      if (!Number.isSafeInteger(value) || value < 1) throw new Error(`deposit poller ${name} must be a positive integer`);
    }
    if (!Number.isSafeInteger(this.lateWatchMs) || this.lateWatchMs < 0) throw new Error('deposit poller lateWatchMs must be a non-negative integer');
    this.current = { network: this.network, state: 'stopped', cursor: null, lastEventAtMs: null, reconnects: 0, lastError: null };
  }

  status(): WatcherStatus {
    return this.current;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopRequested = false;
    this.current = { ...this.current, state: 'starting' };
    this.loop = this.run();
  }

  /** Stops after the address being asked; a claim in flight completes (claims are idempotent anyway). */
  async stop(): Promise<void> {
    this.running = false;
    this.stopRequested = true;
    this.wake?.();
    await this.loop;
    this.loop = null;
    this.current = { ...this.current, state: 'stopped' };
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let pauseMs = this.roundMs;
      try {
        await this.round();
        failures = 0;
        this.current = { ...this.current, state: 'streaming', lastError: null };
      } catch (error) {
        failures += 1;
        const lastError = describeError(error);
        this.current = { ...this.current, state: 'reconnecting', reconnects: this.current.reconnects + 1, lastError };
        this.options.log.warn({ network: this.network, failures, error: lastError }, 'deposit poller round failed; retrying');
        pauseMs = Math.min(this.retryDelayMsMax, this.roundMs * 2 ** Math.min(failures, 10));
      }
      if (this.running) await this.sleep(pauseMs);
    }
  }

  /** One round (see the header). Exposed for tests and ops; throws when the store or chain fails. */
  async round(): Promise<PollRound> {
    const oldestExpiryMs = this.options.clock.nowMs() - this.lateWatchMs;
    let offset = this.resumeOffset;
    let addresses = 0;
    let claimed = 0;
    while (addresses < this.addressesPerRoundMax && !this.stopRequested) {
      const limit = Math.min(this.pageSize, this.addressesPerRoundMax - addresses);
      const page = await this.options.store.list(depositWatchCollection, { where: { network: this.network }, orderBy: 'expiresAtMs', direction: 'desc', offset, limit });
      let windowEnded = page.items.length < limit;
      for (const item of page.items) {
        if (this.stopRequested) break;
        const entry = watchEntryOf(item.doc);
        offset += 1;
        if (entry === null) continue;
        if (entry.expiresAtMs < oldestExpiryMs) {
          windowEnded = true; // the rest expired even earlier
          break;
        }
        addresses += 1;
        claimed += await this.poll(entry);
      }
      if (windowEnded) {
        offset = 0;
        break;
      }
    }
    this.resumeOffset = offset;
    this.current = { ...this.current, cursor: String(offset) };
    return { addresses, claimed };
  }

  /** Asks the chain about one address and claims what it finds; answers how many were newly linked. */
  private async poll(entry: WatchEntry): Promise<number> {
    const { port } = this.options;
    // Only a transaction's own address: a legacy shared address receives everyone's transfers.
    if (!sameAddress(this.network, port.addressFor(entry.transactionId), entry.address)) return 0;
    const onChainIds = await port.transfersInto(entry.address, this.transfersPerAddressMax);
    let claimed = 0;
    for (const onChainId of onChainIds) {
      const key = `${entry.transactionId} ${onChainId}`;
      if (this.settled.has(key)) continue;
      const outcome = await this.options.intake.claimAtOwnAddress(entry.transactionId, this.network, onChainId);
      if (settledOutcomes.has(outcome)) this.remember(key);
      if (outcome === 'enqueued') {
        claimed += 1;
        this.current = { ...this.current, lastEventAtMs: this.options.clock.nowMs() };
        this.options.log.info({ network: this.network, transactionId: entry.transactionId, onChainId }, 'deposit found at its transaction\'s address');
      }
    }
    return claimed;
  }

  private remember(key: string): void {
    this.settled.set(key, true);
    if (this.settled.size <= settledMax) return;
    const oldest = this.settled.keys().next();
    if (oldest.done !== true) this.settled.delete(oldest.value);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const finish = (): void => done();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = finish;
    });
  }
}

function sameAddress(network: 'SOLANA' | 'CELO', a: string, b: string): boolean {
  return network === 'CELO' ? a.toLowerCase() === b.toLowerCase() : a === b;
}
