// Local delivery, the worker's half (the relay's is in command-relay.ts): commands an actor sent to
// actors whose shards this same worker owns are applied in a batch of the worker's own at once,
// instead of being appended to their streams and read back. What it saves per command: the stream
// entry, its read, its acknowledgement and the JSON text both ways — and a Redis round trip per
// step of a saga whose actors live on one worker (docs/actors.md, "Local delivery").
//
// The outbox row that holds the commands stays until they are durable, so a worker that dies
// meanwhile loses nothing: the sweep relays the row again, and receivers dedupe by command id.
import type { BusEntry } from '../bus/bus.ts';
import { shardOfCommandStream } from '../bus/shards.ts';
import { batchesOfCommands } from './codec.ts';
import type { CommandEnvelope } from './envelope.ts';
import type { LocalDelivery } from './command-relay.ts';
import { LocalEntry } from './local-entry.ts';
import type { ActorRuntime } from './runtime.ts';

export interface LocalBatchesOptions {
  readonly runtime: Pick<ActorRuntime, 'streamFor' | 'batchSize'>;
  readonly keyPrefix: string;
  /** Whether the worker takes local batches now at all. */
  open(): boolean;
  /** Whether the worker owns `shard` now. */
  owns(shard: number): boolean;
  /** Starts applying a batch as the worker applies any; settles with the entries left pending. */
  launch(entries: readonly BusEntry[]): Promise<readonly BusEntry[]>;
}

export class LocalBatches implements LocalDelivery {
  constructor(private readonly options: LocalBatchesOptions) {}

  /** Every command is for a shard the worker owns, and it takes local batches now. */
  accepts(envelopes: readonly CommandEnvelope[]): boolean {
    if (!this.options.open()) return false;
    return envelopes.every((envelope) => {
      const shard = shardOfCommandStream(this.options.keyPrefix, this.options.runtime.streamFor(envelope.actorType, envelope.actorKey));
      return shard !== null && this.options.owns(shard);
    });
  }

  /**
   * Applies the rows' commands as if read from their streams (one local entry per row and shard,
   * cut into batches by command count as stream entries are); per row, whether none of its
   * commands was left pending. The worker's limits hold per batch: a batch it no longer takes
   * (the limit of batches in flight reached by this very call, say) is not launched, and its rows
   * go through their streams.
   */
  async deliver(rows: ReadonlyArray<readonly CommandEnvelope[]>): Promise<boolean[]> {
    const entriesOfRows = rows.map((envelopes) => this.entriesOf(envelopes));
    const launched: Array<Promise<readonly BusEntry[]>> = [];
    for (const batch of batchesOfCommands(entriesOfRows.flat(), this.options.runtime.batchSize)) {
      launched.push(this.options.open() ? this.options.launch(batch) : Promise.resolve(batch));
    }
    const pending = new Set((await Promise.all(launched)).flat());
    return entriesOfRows.map((entries) => entries.every((entry) => !pending.has(entry)));
  }

  /** A row's commands as local entries, one per shard stream, each in the row's order. */
  private entriesOf(envelopes: readonly CommandEnvelope[]): LocalEntry[] {
    const byStream = new Map<string, CommandEnvelope[]>();
    for (const envelope of envelopes) {
      const stream = this.options.runtime.streamFor(envelope.actorType, envelope.actorKey);
      const list = byStream.get(stream);
      if (list === undefined) byStream.set(stream, [envelope]);
      else list.push(envelope);
    }
    return [...byStream].map(([stream, list]) => new LocalEntry(stream, list));
  }
}
