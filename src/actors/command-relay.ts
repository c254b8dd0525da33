// Commands that actors send to each other travel through the store's outbox (topic
// `outboxTopicCommandBatches`, one row per write holding its commands; rows of the older
// `outboxTopicCommands`, one command each, are still relayed): the sending actor's write holds the
// command row, so a command is sent if and only if the write that decided it committed. The shard worker relays the rows of each of
// its batches at once, and sweeps the outbox for rows nobody relayed (a worker died between its
// write and the relay) in every lease round. Relaying twice is harmless: receivers dedupe by
// commandId.
//
// Local delivery: a row whose every command is for a shard this worker owns is not appended to a
// stream at all; the worker applies it in a batch of its own right away (`LocalDelivery`,
// shard-worker.ts) and the row is marked done once those commands are durable. A row that could
// not be applied so (its actor's write refused, say) goes out through its streams after all, and
// the sweep still relays whatever neither path marked done. docs/actors.md, "Local delivery".
import type { OutboxRowWrite } from './actor-store.ts';
import { outboxBatchMax } from '../store/store.ts';
import { envelopeFromJson } from './codec.ts';
import type { CommandEnvelope, LogLevel } from './envelope.ts';
import { commandsPerRowMax, outboxTopicCommandBatches, outboxTopicCommands, type ActorRuntime } from './runtime.ts';

/** Whether a row carries commands (either topic). */
export function isCommandRow(row: OutboxRowWrite): boolean {
  return row.topic === outboxTopicCommandBatches || row.topic === outboxTopicCommands;
}

/**
 * The envelopes of a command row: its one envelope (`commands`), or its batch (`command-batches`:
 * 1 to `commandsPerRowMax`), and how many of its items are not envelopes. Written by the runtime
 * itself, so only corruption makes an item unreadable: such an item can never be delivered, and it
 * must not take the other commands of its row with it (a refusal's releases travel together).
 * A row that is not a list at all, or of the wrong size, carries nothing that can be delivered.
 */
export function envelopesOfRow(row: OutboxRowWrite): { readonly envelopes: CommandEnvelope[]; readonly unreadable: number } {
  const items: readonly unknown[] =
    row.topic === outboxTopicCommands
      ? [row.payload]
      : Array.isArray(row.payload) && row.payload.length > 0 && row.payload.length <= commandsPerRowMax
        ? row.payload
        : [];
  const envelopes: CommandEnvelope[] = [];
  for (const item of items) {
    const envelope = envelopeFromJson(item);
    if (envelope !== null) envelopes.push(envelope);
  }
  return { envelopes, unreadable: items.length === 0 ? 1 : items.length - envelopes.length };
}

/** Applies commands in the worker's own batches, without a stream round trip (shard-worker.ts). */
export interface LocalDelivery {
  /** Whether every one of these commands can be applied here now (its shard owned, not recovering). */
  accepts(envelopes: readonly CommandEnvelope[]): boolean;
  /**
   * Applies each row's commands; resolves, per row in order, whether all of them are durable (or
   * were refused as malformed, which no redelivery changes). Never rejects.
   */
  deliver(rows: ReadonlyArray<readonly CommandEnvelope[]>): Promise<boolean[]>;
}

export interface CommandRelayOptions {
  readonly store: {
    /** Command rows not yet relayed (left by a worker that crashed between commit and append). */
    pendingCommandRows(limit: number): Promise<OutboxRowWrite[]>;
    markOutboxDone(ids: readonly string[]): Promise<void>;
  };
  readonly runtime: Pick<ActorRuntime, 'sendAll'>;
  readonly log: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
  /** Without it, every row goes through its streams. */
  readonly local?: LocalDelivery;
}

interface CarriedRow {
  readonly id: string;
  readonly envelopes: readonly CommandEnvelope[];
}

export class CommandRelay {
  /** Command rows relayed and not yet marked done (see markRelayedDone). */
  private readonly relayedRowIds: string[] = [];
  private markingDone: Promise<void> | null = null;
  /** Rows being applied by local delivery: the sweep leaves them alone meanwhile. */
  private readonly deliveringLocally = new Set<string>();
  /** Local deliveries not yet settled (their fallback sends included), for `settled`. */
  private readonly localRuns = new Set<Promise<void>>();

  constructor(private readonly options: CommandRelayOptions) {}

  /** Relays the command rows among `rows` (locally where it can), then marks them done. */
  async relay(rows: readonly OutboxRowWrite[]): Promise<void> {
    const local: CarriedRow[] = [];
    const remote: CarriedRow[] = [];
    for (const row of rows) {
      if (!isCommandRow(row) || this.deliveringLocally.has(row.id)) continue;
      const carried = envelopesOfRow(row);
      if (carried.unreadable > 0) this.options.log('error', 'an outbox command row holds items that are not command envelopes; those are dropped', { rowId: row.id, unreadable: carried.unreadable, delivered: carried.envelopes.length });
      const accepted = carried.envelopes.length > 0 && this.options.local?.accepts(carried.envelopes) === true;
      (accepted ? local : remote).push({ id: row.id, envelopes: carried.envelopes });
    }
    if (local.length > 0) this.deliverLocally(local);
    await this.sendThroughStreams(remote);
  }

  /** Appends the rows' commands to their streams, then marks the rows done. */
  private async sendThroughStreams(rows: readonly CarriedRow[]): Promise<void> {
    if (rows.length === 0) return;
    // The commands of one batch for one shard go out in one entry (`ActorRuntime.sendAll`).
    await this.options.runtime.sendAll(rows.flatMap((row) => row.envelopes));
    for (const row of rows) this.relayedRowIds.push(row.id);
    await this.markRelayedDone();
  }

  /**
   * Hands the rows to local delivery without waiting: each row durable there is marked done; the
   * others go through their streams at once (their shard is in recovery by then, which applies
   * them after the commands it replays), or, if that fails too, wait for the sweep.
   */
  private deliverLocally(rows: readonly CarriedRow[]): void {
    const local = this.options.local;
    if (local === undefined) return;
    for (const row of rows) this.deliveringLocally.add(row.id);
    const run = local
      .deliver(rows.map((row) => row.envelopes))
      .then(async (durable) => {
        for (const row of rows) this.deliveringLocally.delete(row.id);
        const done = rows.filter((_, index) => durable[index] === true);
        if (done.length > 0) {
          for (const row of done) this.relayedRowIds.push(row.id);
          void this.markRelayedDone().catch(() => undefined);
        }
        await this.sendThroughStreams(rows.filter((_, index) => durable[index] !== true));
      })
      .catch((error: unknown) => {
        for (const row of rows) this.deliveringLocally.delete(row.id);
        this.options.log('warn', 'commands not applied locally could not be relayed either; the outbox sweep will retry', { error: String(error) });
      })
      .finally(() => this.localRuns.delete(run));
    this.localRuns.add(run);
  }

  /** The sweep: rows still pending in the outbox (up to 1,000), relayed again. */
  async relayPending(): Promise<void> {
    // Re-sending a row another worker is relaying right now is harmless: receivers dedupe by
    // commandId. A row's unreadable items are logged and dropped by `relay`, its readable ones
    // delivered, and the row marked done either way, so it does not block.
    await this.relay(await this.options.store.pendingCommandRows(1_000));
  }

  /**
   * Resolves once the local deliveries started so far have settled (their fallback sends too) and
   * the rows relayed so far are marked done (or that write failed).
   */
  async settled(): Promise<void> {
    while (this.localRuns.size > 0) await Promise.all([...this.localRuns]);
    await this.markingDone?.catch(() => undefined);
  }

  /**
   * Marks relayed command rows done, many relays per store write: while one write is in flight,
   * the rows relayed meanwhile wait for the next (each write costs a sync; under load every batch
   * relays some). A row not yet marked when the worker dies is relayed again by the outbox sweep,
   * which is harmless: receivers dedupe by commandId.
   */
  private markRelayedDone(): Promise<void> {
    if (this.markingDone === null) {
      const run = this.drainRelayedRows();
      this.markingDone = run;
      // Cleared once settled (a failure reaches the callers through `run` itself). Rows relayed
      // after the drain's last look start the next drain; if that one fails, they stay in the
      // outbox and the sweep relays them again.
      run.finally(() => {
        if (this.markingDone === run) this.markingDone = null;
        if (this.relayedRowIds.length > 0) this.markRelayedDone().catch(() => undefined);
      }).catch(() => undefined);
    }
    return this.markingDone;
  }

  private async drainRelayedRows(): Promise<void> {
    while (this.relayedRowIds.length > 0) {
      await this.options.store.markOutboxDone(this.relayedRowIds.splice(0, outboxBatchMax));
    }
  }
}
