// The sandbox chain's transfer watcher (the TransferWatcher port): streams one network's feed of
// the sandbox ledger (sandbox-chain.ts) as a real watcher streams Horizon's payments, so the
// watcher role runs the same code in sandbox mode as on a live network.
import type { Network } from '../domain/assets.ts';
import type { ObservedTransfer, TransferWatcher, WatcherStatus } from './chains.ts';

/** What the watcher reads from the sandbox ledger, for one network (SandboxChain.watcher). */
export interface SandboxFeed {
  readonly network: Network;
  /** The watcher-outage knob: while it is set the watcher reports reconnecting and reads nothing. */
  watcherOutage(): Promise<boolean>;
  /** The feed entry after `cursor` (0 = from the start), or null at the end. */
  next(cursor: number): Promise<{ readonly seq: number; readonly transfer: ObservedTransfer } | null>;
  /** The persisted cursor (0 when none). */
  cursor(): Promise<number>;
  saveCursor(seq: number): Promise<void>;
}

/**
 * Streams the network's feed from the persisted cursor, one transfer at a time; the cursor moves
 * only after `onTransfer` resolved. A failing handler is retried (bounded backoff) with the same
 * transfer: nothing is skipped, and the status says so.
 */
export class SandboxTransferWatcher implements TransferWatcher {
  readonly network: Network;
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private current: WatcherStatus;

  constructor(
    private readonly feed: SandboxFeed,
    private readonly pollMs: number,
    private readonly retryDelayMsMax: number,
    private readonly clock: { nowMs(): number },
  ) {
    this.network = feed.network;
    this.current = { network: feed.network, state: 'stopped', cursor: null, lastEventAtMs: null, reconnects: 0, lastError: null };
  }

  status(): WatcherStatus {
    return this.current;
  }

  async start(onTransfer: (transfer: ObservedTransfer, cursor: string) => Promise<void>): Promise<void> {
    if (this.running) return;
    this.running = true;
    const cursor = await this.feed.cursor();
    this.current = { ...this.current, state: 'starting', cursor: String(cursor) };
    this.loop = this.run(onTransfer, cursor);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = null;
    this.current = { ...this.current, state: 'stopped' };
  }

  private async run(onTransfer: (transfer: ObservedTransfer, cursor: string) => Promise<void>, from: number): Promise<void> {
    let cursor = from;
    let failures = 0;
    while (this.running) {
      try {
        if (await this.feed.watcherOutage()) {
          this.current = { ...this.current, state: 'reconnecting', lastError: 'sandbox watcher outage (knob)' };
          await this.sleep(this.pollMs);
          continue;
        }
        this.current = { ...this.current, state: 'streaming' };
        const next = await this.feed.next(cursor);
        if (next === null) {
          await this.sleep(this.pollMs);
          continue;
        }
        await onTransfer(next.transfer, String(next.seq));
        cursor = next.seq;
        await this.feed.saveCursor(cursor);
        failures = 0;
        this.current = { ...this.current, cursor: String(cursor), lastEventAtMs: this.clock.nowMs(), lastError: null };
      } catch (error) {
        failures += 1;
        this.current = {
          ...this.current,
          state: 'reconnecting',
          reconnects: this.current.reconnects + 1,
          lastError: error instanceof Error ? error.message : String(error),
        };
        await this.sleep(Math.min(this.retryDelayMsMax, this.pollMs * 2 ** Math.min(failures, 10)));
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const wake = (): void => done();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = wake;
    });
  }
}
