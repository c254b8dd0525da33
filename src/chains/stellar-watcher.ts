// The Stellar deposit watcher (docs/stellar.md, "Watcher"): one loop per deposit account that
// pages through Horizon from the persisted cursor, then follows the payments stream (SSE), and
// hands each transaction that credits us to `onTransfer` in ledger order. The cursor is written to
// the store only after `onTransfer` resolved, so a restart neither skips nor re-delivers (a crash
// between the two re-delivers once; the core treats a repeated transfer as a no-op).
//
// Failure handling: any error (stream dropped, Horizon down, onTransfer rejected) closes the
// stream; the loop waits (1 s doubling to 60 s), pages from the persisted cursor and streams again.
// A silent stream is checked by a probe of Horizon: a failed probe marks the account 'stale' (an
// alert) and reconnects; a probe that shows payments newer than our cursor reconnects too.
import type { Logger } from 'pino';
import type { ObservedTransfer, TransferWatcher, WatcherStatus } from './chains.ts';
import { horizonErrorText, type HorizonClient } from './stellar-horizon.ts';
import {
  classifyPayment,
  comparePagingTokens,
  horizonPageSizeMax,
  isPagingToken,
  transactionTransfers,
  type PaymentRecord,
  type StellarAssetIssuers,
  type TransactionRecord,
  type UnmatchedCredit,
} from './stellar-records.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import { toFixedString } from '../domain/money.ts';

export const cursorCollection = 'chain_cursors';
export const unmatchedCollection = 'chain_unmatched';

export const reconnectDelayMsMinDefault = 1_000;
export const reconnectDelayMsMaxDefault = 60_000;
export const staleAfterMsDefault = 10 * 60_000;
/** The SDK reopens a stream that has been silent this long (proxies drop idle connections). */
export const streamIdleReconnectMsDefault = 5 * 60_000;
/** Records received but not yet handled; beyond it the stream is closed and paging catches up. */
export const streamQueueRecordsMaxDefault = 1_000;
export const stopTimeoutMsDefault = 10_000;

export type OnTransfer = (transfer: ObservedTransfer, cursor: string) => Promise<void>;

export interface StellarWatcherOptions {
  readonly horizon: HorizonClient;
  readonly store: Pick<SnapshotStore, 'get' | 'put'>;
  /** Every deposit account to watch (the current one first; older ones stay watched after a rotation). */
  readonly accounts: readonly string[];
  readonly assets: StellarAssetIssuers;
  readonly clock: { nowMs(): number };
  readonly log: Logger;
  /** Where to start when no cursor is persisted: 'beginning' (default), 'now', or a paging token. */
  readonly startCursor?: string;
  readonly reconnectDelayMsMin?: number;
  readonly reconnectDelayMsMax?: number;
  readonly staleAfterMs?: number;
  /** How often a streaming account checks whether it has been silent for `staleAfterMs`. */
  readonly probeIntervalMs?: number;
  readonly streamIdleReconnectMs?: number;
  readonly streamQueueRecordsMax?: number;
  readonly pageSize?: number;
  readonly stopTimeoutMs?: number;
}

/** One account's health, for operators (WatcherStatus aggregates these). */
export interface StellarAccountStatus {
  readonly account: string;
  readonly state: WatcherStatus['state'];
  readonly cursor: string | null;
  readonly lastEventAtMs: number | null;
  /** Last successful answer from Horizon (page, stream record, probe). */
  readonly lastContactAtMs: number | null;
  readonly reconnects: number;
  readonly nextReconnectDelayMs: number;
  readonly lastError: string | null;
  readonly transfersDelivered: number;
  readonly unmatchedCredits: number;
}

const statePriority: Readonly<Record<WatcherStatus['state'], number>> = { stopped: 0, streaming: 1, starting: 2, reconnecting: 3, stale: 4 };

export class StellarWatcher implements TransferWatcher {
  readonly network = 'STELLAR' as const;
  private readonly watches: AccountWatch[];
  private started = false;

  constructor(options: StellarWatcherOptions) {
    if (options.accounts.length === 0) throw new Error('the Stellar watcher needs at least one deposit account');
    const accounts = new Set(options.accounts);
    this.watches = [...accounts].map((account) => new AccountWatch(account, accounts, options));
  }

  start(onTransfer: OnTransfer): Promise<void> {
    if (this.started) throw new Error('the Stellar watcher is already started');
    this.started = true;
    for (const watch of this.watches) watch.start(onTransfer);
    return Promise.resolve();
  }

  /** Stops every account's stream; `start` may be called again (a watcher lease taken again). */
  async stop(): Promise<void> {
    await Promise.all(this.watches.map((watch) => watch.stop()));
    this.started = false;
  }

  /** The worst state of any account; cursor of the first (current) deposit account. */
  status(): WatcherStatus {
    const all = this.accountStatuses();
    const first = all[0];
    let state: WatcherStatus['state'] = first?.state ?? 'stopped';
    let lastEventAtMs: number | null = null;
    let lastError: string | null = null;
    let reconnects = 0;
    for (const one of all) {
      if (statePriority[one.state] > statePriority[state]) state = one.state;
      if (one.lastEventAtMs !== null && (lastEventAtMs === null || one.lastEventAtMs > lastEventAtMs)) lastEventAtMs = one.lastEventAtMs;
      lastError ??= one.lastError;
      reconnects += one.reconnects;
    }
    return { network: 'STELLAR', state, cursor: first?.cursor ?? null, lastEventAtMs, reconnects, lastError };
  }

  accountStatuses(): StellarAccountStatus[] {
    return this.watches.map((watch) => watch.status());
  }
}

class AccountWatch {
  private readonly delayMsMin: number;
  private readonly delayMsMax: number;
  private readonly staleAfterMs: number;
  private readonly probeIntervalMs: number;
  private state: WatcherStatus['state'] = 'stopped';
  /** undefined: not loaded yet; null: from the account's first payment. */
  private cursor: string | null | undefined = undefined;
  private lastEventAtMs: number | null = null;
  private lastContactAtMs: number | null = null;
  private reconnects = 0;
  private nextDelayMs: number;
  private lastError: string | null = null;
  private delivered = 0;
  private unmatched = 0;
  private stopped = false;
  /** True from the loop's first line to its last: a stop that timed out leaves it true. */
  private looping = false;
  private running: Promise<void> | null = null;
  private finishStream: ((reason: string | null) => void) | null = null;
  private wakeSleeper: (() => void) | null = null;
  private onTransfer: OnTransfer | null = null;

  constructor(
    readonly account: string,
    private readonly ourAccounts: ReadonlySet<string>,
    private readonly options: StellarWatcherOptions,
  ) {
    this.delayMsMin = options.reconnectDelayMsMin ?? reconnectDelayMsMinDefault;
    this.delayMsMax = Math.max(this.delayMsMin, options.reconnectDelayMsMax ?? reconnectDelayMsMaxDefault);
    this.staleAfterMs = options.staleAfterMs ?? staleAfterMsDefault;
    this.probeIntervalMs = options.probeIntervalMs ?? Math.max(1, Math.min(60_000, Math.floor(this.staleAfterMs / 4)));
    this.nextDelayMs = this.delayMsMin;
  }

  status(): StellarAccountStatus {
    return {
      account: this.account,
      state: this.state,
      cursor: this.cursor ?? null,
      lastEventAtMs: this.lastEventAtMs,
      lastContactAtMs: this.lastContactAtMs,
      reconnects: this.reconnects,
      nextReconnectDelayMs: this.nextDelayMs,
      lastError: this.lastError,
      transfersDelivered: this.delivered,
      unmatchedCredits: this.unmatched,
    };
  }

  start(onTransfer: OnTransfer): void {
    this.onTransfer = onTransfer;
    this.stopped = false;
    // A stop that timed out (its transfer's hand-over hung) left the loop running: it carries on,
    // with the new hand-over, as the only loop of this account. Starting a second one would
    // deliver every transfer twice.
    if (this.looping) return;
    // Resume from the saved cursor: another process may have moved it while this one was stopped.
    this.cursor = undefined;
    this.state = 'starting';
    this.lastContactAtMs = this.now();
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.finishStream?.(null);
    this.wakeSleeper?.();
    if (this.running === null) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.options.stopTimeoutMs ?? stopTimeoutMsDefault);
    });
    const outcome = await Promise.race([this.running.then(() => 'done' as const), timeout]);
    clearTimeout(timer);
    if (outcome === 'timeout') this.options.log.warn({ network: 'STELLAR', account: this.account }, 'stellar watcher stop timed out (onTransfer still running)');
    this.state = 'stopped';
  }

  private now(): number {
    return this.options.clock.nowMs();
  }

  private async run(): Promise<void> {
    this.looping = true;
    try {
      await this.loop();
    } finally {
      this.looping = false;
    }
  }

  private async loop(): Promise<void> {
    let delayMs = this.delayMsMin;
    while (!this.stopped) {
      let healthy = false;
      try {
        if (this.cursor === undefined) this.cursor = await this.initialCursor();
        await this.catchUp();
        if (this.stopped) break;
        this.state = 'streaming';
        healthy = await this.streamOnce();
      } catch (error) {
        this.lastError = horizonErrorText(error);
        this.options.log.warn({ network: 'STELLAR', account: this.account, error: this.lastError }, 'stellar watcher error');
      }
      if (this.stopped) break;
      if (healthy) delayMs = this.delayMsMin;
      this.reconnects += 1;
      this.nextDelayMs = delayMs;
      this.state = this.now() - (this.lastContactAtMs ?? 0) >= this.staleAfterMs ? 'stale' : 'reconnecting';
      await this.sleep(delayMs);
      delayMs = Math.min(delayMs * 2, this.delayMsMax);
    }
    this.state = 'stopped';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      this.wakeSleeper = done;
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
    }).finally(() => {
      this.wakeSleeper = null;
    });
  }

  private cursorKey(): string {
    return `STELLAR:${this.account}`;
  }

  private async initialCursor(): Promise<string | null> {
    const saved = await this.options.store.get(cursorCollection, this.cursorKey());
    if (typeof saved?.cursor === 'string' && isPagingToken(saved.cursor)) return saved.cursor;
    const start = this.options.startCursor ?? 'beginning';
    if (start === 'beginning') return null;
    let cursor: string;
    if (start === 'now') {
      cursor = (await this.options.horizon.latestPayment(this.account))?.pagingToken ?? '0';
    } else if (isPagingToken(start)) {
      cursor = start;
    } else {
      throw new Error(`startCursor must be 'beginning', 'now' or a paging token`);
    }
    await this.persist(cursor);
    return cursor;
  }

  private async persist(cursor: string): Promise<void> {
    await this.options.store.put(cursorCollection, this.cursorKey(), { cursor, updatedAtMs: this.now() });
    this.cursor = cursor;
  }

  /** Pages from the cursor until Horizon has nothing newer (each page moves the cursor forward). */
  private async catchUp(): Promise<void> {
    const pageSize = Math.min(this.options.pageSize ?? horizonPageSizeMax, horizonPageSizeMax);
    let pageCursor = this.cursor ?? null;
    for (;;) {
      const records = await this.options.horizon.accountPayments(this.account, pageCursor, pageSize);
      this.lastContactAtMs = this.now();
      for (const record of records) {
        if (this.stopped) return;
        this.lastEventAtMs = this.now();
        await this.handle(record);
      }
      const last = records.at(-1);
      if (last === undefined || records.length < pageSize) return;
      pageCursor = last.pagingToken;
    }
  }

  /**
   * Follows the SSE stream until it fails, goes silent with Horizon unreachable, or is stopped.
   * Records are handled one at a time in arrival order. Resolves true when the connection proved
   * healthy (it delivered a record, or lived longer than the longest backoff).
   */
  private streamOnce(): Promise<boolean> {
    return new Promise((resolve) => {
      const openedAtMs = this.now();
      const queue: PaymentRecord[] = [];
      const queueMax = this.options.streamQueueRecordsMax ?? streamQueueRecordsMaxDefault;
      let finished = false;
      let deliveredAny = false;
      let wake: (() => void) | null = null;
      let closeStream: (() => void) | null = null;
      const timers: { probe?: NodeJS.Timeout } = {};

      const finish = (reason: string | null): void => {
        if (finished) return;
        finished = true;
        closeStream?.();
        clearInterval(timers.probe);
        this.finishStream = null;
        if (reason !== null) {
          this.lastError = reason;
          this.options.log.warn({ network: 'STELLAR', account: this.account, error: reason }, 'stellar stream closed');
        }
        wake?.();
      };

      const consumer = (async (): Promise<void> => {
        while (!finished) {
          const record = queue.shift();
          if (record === undefined) {
            await new Promise<void>((next) => {
              wake = next;
            });
            wake = null;
            continue;
          }
          try {
            await this.handle(record);
            deliveredAny = true;
          } catch (error) {
            finish(horizonErrorText(error));
          }
        }
      })();

      this.finishStream = finish;
      const from = this.cursor ?? '0';
      closeStream = this.options.horizon.streamPayments(
        this.account,
        from,
        {
          onRecord: (record) => {
            this.lastContactAtMs = this.now();
            this.lastEventAtMs = this.now();
            if (finished) return;
            if (queue.length >= queueMax) {
              finish(`stream backlog over ${queueMax} records; catching up by paging`);
              return;
            }
            queue.push(record);
            wake?.();
          },
          onError: (reason) => finish(reason),
        },
        this.options.streamIdleReconnectMs ?? streamIdleReconnectMsDefault,
      );
      if (finished) closeStream(); // stop() raced the opening
      if (!finished) timers.probe = setInterval(() => void this.probe(finish, () => finished), this.probeIntervalMs);
      void consumer.then(() => resolve(deliveredAny || this.now() - openedAtMs >= this.delayMsMax));
    });
  }

  /** After `staleAfterMs` without contact: is Horizon reachable, and does it have anything newer? */
  private async probe(finish: (reason: string | null) => void, isFinished: () => boolean): Promise<void> {
    if (isFinished() || this.now() - (this.lastContactAtMs ?? 0) < this.staleAfterMs) return;
    try {
      const latest = await this.options.horizon.latestPayment(this.account);
      if (isFinished()) return;
      this.lastContactAtMs = this.now();
      const cursor = this.cursor ?? '0';
      if (latest !== null && comparePagingTokens(latest.pagingToken, cursor) > 0) {
        finish('stream silent while Horizon has newer payments; catching up');
      }
    } catch (error) {
      if (isFinished()) return;
      this.state = 'stale';
      finish(`health probe failed: ${horizonErrorText(error)}`);
    }
  }

  /** One payment record: skip what the cursor already covers, deliver credits per transaction. */
  private async handle(record: PaymentRecord): Promise<void> {
    if (this.cursor != null && comparePagingTokens(record.pagingToken, this.cursor) <= 0) return;
    const meaning = classifyPayment(record, this.ourAccounts, this.options.assets);
    if (meaning.kind === 'other') {
      await this.persist(record.pagingToken);
      return;
    }
    // A credit to us: read the whole transaction, so that one transaction is one deposit per asset.
    const transaction = await this.options.horizon.transaction(record.transactionHash);
    if (transaction === null) throw new Error(`transaction ${record.transactionHash} not found on Horizon yet`);
    const payments = await this.options.horizon.transactionPayments(record.transactionHash);
    const found = transactionTransfers(transaction, payments, this.ourAccounts, this.options.assets);
    const last = found.lastPagingToken;
    const next = last !== null && comparePagingTokens(last, record.pagingToken) > 0 ? last : record.pagingToken;
    for (const credit of found.unmatched) {
      if (credit.account === this.account) await this.recordUnmatched(transaction, credit);
    }
    for (const transfer of found.transfers) {
      this.options.log.info(
        { network: 'STELLAR', account: this.account, hash: transfer.onChainId, asset: transfer.asset, amount: toFixedString(transfer.amount), cursor: next },
        'stellar deposit observed',
      );
      if (this.onTransfer === null) throw new Error('watcher not started');
      await this.onTransfer(transfer, next);
      this.delivered += 1;
    }
    await this.persist(next);
  }

  /** Another asset, a look-alike issuer or XLM sent to a deposit account: kept for operations. */
  private async recordUnmatched(transaction: TransactionRecord, credit: UnmatchedCredit): Promise<void> {
    const { record } = credit;
    const doc: JsonObject = {
      network: 'STELLAR',
      account: credit.account,
      onChainId: transaction.hash,
      operationId: record.id,
      type: record.type,
      assetType: record.assetType,
      assetCode: record.assetCode,
      assetIssuer: record.assetIssuer,
      amount: record.amountText,
      sender: record.from,
      memo: transaction.memoText,
      reason: credit.reason,
      observedAtMs: transaction.createdAtMs ?? this.now(),
      recordedAtMs: this.now(),
    };
    await this.options.store.put(unmatchedCollection, `STELLAR:${record.pagingToken}`, doc);
    this.unmatched += 1;
    this.options.log.warn(
      { network: 'STELLAR', account: credit.account, hash: transaction.hash, operationId: record.id, reason: credit.reason },
      'stellar credit is not a deposit of a configured asset (recorded, not refunded)',
    );
  }
}
