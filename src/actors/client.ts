// How other roles talk to actors: `ask` sends a command to the actor's shard stream and awaits its
// reply (request/reply over the bus); `tell` sends one that expects no reply. A command id makes
// a retry of the same logical command safe: the actor applies it once and replays its reply.
// With a `gate` (the edge's: src/service/shard-watch.ts), an ask for a shard that no live worker
// owns is refused before it is sent, instead of waiting its whole timeout for a reply.
import { randomUUID } from 'node:crypto';
import type { Bus } from '../bus/bus.ts';
import type { Reply as BusReply, Requester, RequestOptions } from '../bus/request-reply.ts';
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

function parseReplyPayload(reply: BusReply): unknown {
  return JSON.parse(reply.payload);
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

  /** Never throws: every failure is a rejection. Not `async`: the edge asks once per request. */
  ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, options: AskOptions = {}): Promise<Reply> {
    return this.askRaw(actorType, actorKey, kind, payload, options).then(parseReplyPayload) as Promise<Reply>;
  }

  /**
   * `ask` without decoding the reply: the reply entry as the bus delivered it, its payload the
   * actor's reply as JSON text. For a caller that can use the text as it is (the edge answers a
   * quote with part of it). Never throws: every failure is a rejection.
   */
  askRaw(actorType: string, actorKey: string, kind: string, payload: JsonValue, options: AskOptions = {}): Promise<BusReply> {
    let stream: string;
    try {
      const shard = shardOf(actorId(actorType, actorKey), this.options.shardCount);
      const refusal = this.options.gate?.refusal(shard) ?? null;
      if (refusal !== null) return Promise.reject(refusal);
      stream = this.streamOfShard(shard);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const commandId = options.commandId ?? randomUUID();
    // One object shape for every ask (a conditional spread here made each call a slow-path literal).
    const requestOptions: RequestOptions = { timeoutMs: options.timeoutMs, maxLenApprox: this.options.streamLengthMax ?? 1_000_000 };
    return this.options.requester.request(
      stream,
      (replyTo) => encodeEnvelope({ commandId, actorType, actorKey, kind, payload, replyTo, sentAtMs: this.options.nowMs() }),
      requestOptions,
    );
  }

  async tell(actorType: string, actorKey: string, kind: string, payload: JsonValue, commandId: string): Promise<void> {
    const envelope: CommandEnvelope = { commandId, actorType, actorKey, kind, payload, sentAtMs: this.options.nowMs() };
    await this.options.bus.append(this.streamFor(actorType, actorKey), encodeEnvelope(envelope), {
      maxLenApprox: this.options.streamLengthMax ?? 1_000_000,
    });
  }
}
