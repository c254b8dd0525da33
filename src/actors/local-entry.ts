// A batch entry that never went through Redis: commands one actor sent to another whose shard the
// same worker owns, handed from the relay straight to the worker's next batch (local delivery:
// shard-worker.ts, command-relay.ts, docs/actors.md "Local delivery"). It carries its envelopes as
// the sending write's outbox row holds them, so nothing is encoded for a stream nor parsed back;
// the runtime still checks each against its actor type's command map on arrival, as for any entry.
//
// `stream` is the real command stream of the shard its commands belong to (every envelope of one
// local entry is for that one shard), so a local entry left pending sends that shard through
// recovery like a stream entry would. It is never acknowledged to the bus: its outbox row is what
// stands for it, marked done once the entry's commands are durable, and relayed again by the
// outbox sweep otherwise.
import type { BusEntry } from '../bus/bus.ts';
import { headerBatchCount } from '../bus/request-reply.ts';
import type { CommandEnvelope } from './envelope.ts';

let localSeq = 0;

export class LocalEntry implements BusEntry {
  readonly id: string;
  readonly payload = '';
  readonly headers: Record<string, string>;
  readonly deliveryCount = 1;

  constructor(
    readonly stream: string,
    readonly envelopes: readonly CommandEnvelope[],
  ) {
    localSeq += 1;
    this.id = `local-${localSeq}`;
    // Counted like a stream entry's batch, so batches stay bounded by commands (codec.ts).
    this.headers = { [headerBatchCount]: String(envelopes.length) };
  }
}

export function isLocalEntry(entry: BusEntry): entry is LocalEntry {
  return entry instanceof LocalEntry;
}
