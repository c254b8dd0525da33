// How other roles talk to actors: `ask` sends a command to the actor's shard stream and awaits its
// reply (request/reply over the bus); `tell` sends one that expects no reply. A command id makes
// a retry of the same logical command safe: the actor applies it once and replays its reply.
import { randomUUID } from 'node:crypto';
import type { Bus } from '../bus/bus.ts';
import type { Reply, Requester, RequestOptions } from '../bus/request-reply.ts';
import { commandStreamKey, shardOf } from '../bus/shards.ts';
import { encodeEnvelope } from './codec.ts';
import { actorId, type CommandEnvelope, type JsonValue } from './envelope.ts';

export interface ActorClientOptions {
  readonly bus: Bus;
  readonly requester: Requester;
  readonly keyPrefix: string;
  readonly shardCount: number;
  readonly nowMs: () => number;
  readonly streamLengthMax?: number;
}

export interface AskOptions {
  readonly commandId?: string;
  readonly timeoutMs?: number;
}

function parseReplyPayload(reply: Reply): unknown {
  return JSON.parse(reply.payload);
}

export class ActorClient {
  constructor(private readonly options: ActorClientOptions) {}

  streamFor(actorType: string, actorKey: string): string {
    return commandStreamKey(this.options.keyPrefix, shardOf(actorId(actorType, actorKey), this.options.shardCount));
  }

  /** Never throws: every failure is a rejection. Not `async`: the edge asks once per request. */
  ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, options: AskOptions = {}): Promise<Reply> {
    let stream: string;
    try {
      stream = this.streamFor(actorType, actorKey);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const commandId = options.commandId ?? randomUUID();
    // One object shape for every ask (a conditional spread here made each call a slow-path literal).
    const requestOptions: RequestOptions = { timeoutMs: options.timeoutMs, maxLenApprox: this.options.streamLengthMax ?? 1_000_000 };
    return this.options.requester
      .request(
        stream,
        (replyTo) => encodeEnvelope({ commandId, actorType, actorKey, kind, payload, replyTo, sentAtMs: this.options.nowMs() }),
        requestOptions,
      )
      .then(parseReplyPayload) as Promise<Reply>;
  }

  async tell(actorType: string, actorKey: string, kind: string, payload: JsonValue, commandId: string): Promise<void> {
    const envelope: CommandEnvelope = { commandId, actorType, actorKey, kind, payload, sentAtMs: this.options.nowMs() };
    await this.options.bus.append(this.streamFor(actorType, actorKey), encodeEnvelope(envelope), {
      maxLenApprox: this.options.streamLengthMax ?? 1_000_000,
    });
  }
}
