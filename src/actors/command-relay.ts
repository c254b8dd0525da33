// Commands that actors send to each other travel through the store's outbox (topic
// `outboxTopicCommandBatches`, one row per write holding its commands; rows of the older
// `outboxTopicCommands`, one command each, are still relayed): the sending actor's write holds the
// command row, so a command is sent if and only if the write that decided it committed. The shard worker relays the rows of each of
// its batches at once, and sweeps the outbox for rows nobody relayed (a worker died between its
// write and the relay) in every lease round. Relaying twice is harmless: receivers dedupe by
// commandId.
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

export interface CommandRelayOptions {
  readonly store: {
    /** Command rows not yet relayed (left by a worker that crashed between commit and append). */
    pendingCommandRows(limit: number): Promise<OutboxRowWrite[]>;
    markOutboxDone(ids: readonly string[]): Promise<void>;
  };
  readonly runtime: Pick<ActorRuntime, 'sendAll'>;
  readonly log: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
}

export class CommandRelay {
  /** Command rows relayed and not yet marked done (see markRelayedDone). */
  private readonly relayedRowIds: string[] = [];
  private markingDone: Promise<void> | null = null;

  constructor(private readonly options: CommandRelayOptions) {}

  /** Relays the command rows among `rows`, then marks them done. */
  async relay(rows: readonly OutboxRowWrite[]): Promise<void> {
    const commandRows = rows.filter(isCommandRow);
    if (commandRows.length === 0) return;
    const envelopes: CommandEnvelope[] = [];
    for (const row of commandRows) {
      const carried = envelopesOfRow(row);
      if (carried.unreadable > 0) this.options.log('error', 'an outbox command row holds items that are not command envelopes; those are dropped', { rowId: row.id, unreadable: carried.unreadable, delivered: carried.envelopes.length });
      envelopes.push(...carried.envelopes);
    }
    // The commands of one batch for one shard go out in one entry (`ActorRuntime.sendAll`).
    await this.options.runtime.sendAll(envelopes);
    for (const row of commandRows) this.relayedRowIds.push(row.id);
    await this.markRelayedDone();
  }

  /** The sweep: rows still pending in the outbox (up to 1,000), relayed again. */
  async relayPending(): Promise<void> {
    // Re-sending a row another worker is relaying right now is harmless: receivers dedupe by
    // commandId. A row's unreadable items are logged and dropped by `relay`, its readable ones
    // delivered, and the row marked done either way, so it does not block.
    await this.relay(await this.options.store.pendingCommandRows(1_000));
  }

  /** Resolves once the rows relayed so far are marked done (or that write failed). */
  async settled(): Promise<void> {
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
