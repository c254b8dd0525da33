// Commands that actors send to each other travel through the store's outbox (topic
// `outboxTopicCommands`): the sending actor's write holds the command row, so a command is sent if
// and only if the write that decided it committed. The shard worker relays the rows of each of
// its batches at once, and sweeps the outbox for rows nobody relayed (a worker died between its
// write and the relay) in every lease round. Relaying twice is harmless: receivers dedupe by
// commandId.
import type { OutboxRowWrite } from './actor-store.ts';
import { outboxBatchMax } from '../store/store.ts';
import { envelopeFromJson } from './codec.ts';
import type { CommandEnvelope, LogLevel } from './envelope.ts';
import { outboxTopicCommands, type ActorRuntime } from './runtime.ts';

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
    const commandRows = rows.filter((row) => row.topic === outboxTopicCommands);
    if (commandRows.length === 0) return;
    const envelopes: CommandEnvelope[] = [];
    for (const row of commandRows) {
      const envelope = envelopeFromJson(row.payload);
      // Written by the runtime itself, so only a corrupt row gets here: it can never be delivered.
      if (envelope === null) this.options.log('error', 'an outbox command row is not a command envelope; dropped', { rowId: row.id });
      else envelopes.push(envelope);
    }
    // The commands of one batch for one shard go out in one entry (`ActorRuntime.sendAll`).
    await this.options.runtime.sendAll(envelopes);
    for (const row of commandRows) this.relayedRowIds.push(row.id);
    await this.markRelayedDone();
  }

  /** The sweep: rows still pending in the outbox (up to 1,000), relayed again. */
  async relayPending(): Promise<void> {
    // Re-sending a row another worker is relaying right now is harmless: receivers dedupe by
    // commandId. Malformed rows cannot be relayed; they are marked done so they do not block.
    const rows = await this.options.store.pendingCommandRows(1_000);
    const malformed = rows.filter((row) => envelopeFromJson(row.payload) === null);
    if (malformed.length > 0) {
      this.options.log('error', 'dropping malformed command rows from the outbox', { count: malformed.length });
      await this.options.store.markOutboxDone(malformed.map((row) => row.id));
    }
    await this.relay(rows.filter((row) => !malformed.includes(row)));
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
