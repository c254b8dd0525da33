// How other roles talk to actors: `ask` sends a command to the actor's shard stream and awaits its
// reply (request/reply over the bus); `tell` sends one that expects no reply. A command id makes
// a retry of the same logical command safe: the actor applies it once and replays its reply.
// With a `gate` (the edge's: src/service/shard-watch.ts), an ask for a shard that no live worker
// owns is refused before it is sent, instead of waiting its whole timeout for a reply.
import { randomUUID } from 'node:crypto';
import type { Bus } from '../bus/bus.ts';
import type { Requester, RequestOptions } from '../bus/request-reply.ts';
import type { ShardGate } from '../bus/shard-coverage.ts';
import { commandStreamKey, commandStreamKeys, shardOf } from '../bus/shards.ts';
import { encodeEnvelope } from './codec.ts';
import { actorId, type CommandEnvelope, type JsonValue } from './envelope.ts';

export interface ActorClientOptions {
  readonly bus: Bus;
  readonly requester: Requester;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly nowMs: () => number;
  readonly streamLengthMax?: number;
  /** Asked before every `ask`: a refusal fails the ask at once (nothing is sent). */
  readonly gate?: ShardGate;
}

export interface AskOptions {
  readonly commandId?: string;
  readonly timeoutMs?: number;
}

export class ActorClient {
  /** Every shard's command stream, named on first use (not once per ask). */
  private commandStreams: readonly string[] | null = null;

  constructor(private readonly options: ActorClientOptions) {}

  streamFor(actorType: string, actorKey: string): string {
    return this.streamOfShard(shardOf(actorId(actorType, actorKey), this.options.shardCount));
  }

  private streamOfShard(shard: number): string {
    const { keyPrefix, shardCount } = this.options;
    this.commandStreams ??= commandStreamKeys(keyPrefix, shardCount);
    return this.commandStreams[shard] ?? commandStreamKey(keyPrefix, shard);
  }

  /**
   * The actor's reply, decoded. The command is encoded once, here, and goes out with the other
   * asks of this event-loop turn for the same shard in one batched entry (request-reply.ts); the
   * reply comes parsed. Never throws: every failure is a rejection.
   */
  async ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, options: AskOptions = {}): Promise<Reply> {
    const shard = shardOf(actorId(actorType, actorKey), this.options.shardCount);
    const refusal = this.options.gate?.refusal(shard) ?? null;
    if (refusal !== null) throw refusal;
    const stream = this.streamOfShard(shard);
    const commandId = options.commandId ?? randomUUID();
    const requestOptions: RequestOptions = { timeoutMs: options.timeoutMs, maxLenApprox: this.options.streamLengthMax ?? 1_000_000 };
    const reply = await this.options.requester.requestInBatch(
      stream,
      (replyTo) => encodeEnvelope({ commandId, actorType, actorKey, kind, payload, replyTo, sentAtMs: this.options.nowMs() }),
      requestOptions,
    );
    return reply as Reply;
  }

  async tell(actorType: string, actorKey: string, kind: string, payload: JsonValue, commandId: string): Promise<void> {
    const envelope: CommandEnvelope = { commandId, actorType, actorKey, kind, payload, sentAtMs: this.options.nowMs() };
    await this.options.bus.append(this.streamFor(actorType, actorKey), encodeEnvelope(envelope), {
      maxLenApprox: this.options.streamLengthMax ?? 1_000_000,
    });
  }
}
