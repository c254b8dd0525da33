// What travels on a shard's command stream, and what an actor's handler returns. Everything here
// is JSON: commands cross processes, outcomes are persisted before anything becomes visible.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Where a reply goes: the asking edge's reply stream and the request it answers. */
// Wire types are type aliases, not interfaces: an alias of plain JSON fields is itself a
// `JsonValue` (an interface is not, having no index signature), so an envelope goes into an outbox
// row or a dead letter as it is.
export type ReplyTarget = {
  readonly stream: string;
  readonly requestId: string;
};

export type CommandEnvelope = {
  /** Unique per logical command: a redelivered or re-sent command carries the same id. */
  readonly commandId: string;
  /** The actor's type, e.g. 'transaction'; with `actorKey` it names exactly one actor. */
  readonly actorType: string;
  readonly actorKey: string;
  /** The command's name within the actor type. */
  readonly kind: string;
  readonly payload: JsonValue;
  readonly replyTo?: ReplyTarget;
  readonly sentAtMs: number;
};

/** The actor's identity across the system: shard routing, snapshots and dedupe use it. */
export function actorId(actorType: string, actorKey: string): string {
  return `${actorType}/${actorKey}`;
}

/** A command an actor wants delivered to another actor once its own state is durable. */
export interface CommandToSend {
  readonly actorType: string;
  readonly actorKey: string;
  readonly kind: string;
  readonly payload: JsonValue;
  /** Where the receiving actor should send its reply (usually a command back to the sender). */
  readonly replyTo?: ReplyTarget;
}

/** An outbound effect for another role (webhook, payout, chain send), written with the state. */
export interface OutboxMessage {
  readonly topic: string;
  readonly payload: JsonValue;
  /** Effects of one partition (e.g. one transaction) are delivered in order. */
  readonly partitionKey?: string;
}

export interface ReadModelWrite {
  readonly collection: string;
  readonly id: string;
  /** `null` deletes the document. */
  readonly doc: { [key: string]: JsonValue } | null;
}

export interface Outcome<State> {
  /** The actor's state after the command; `undefined` leaves it unchanged (nothing is written). */
  readonly state?: State;
  /** Reply to the command's sender; omitted when the reply is deferred (see `replies`). */
  readonly reply?: JsonValue;
  /** Replies to earlier senders whose replies were deferred (e.g. a saga that finished). */
  readonly replies?: ReadonlyArray<{ readonly to: ReplyTarget; readonly payload: JsonValue }>;
  readonly send?: readonly CommandToSend[];
  readonly outbox?: readonly OutboxMessage[];
  readonly readModels?: readonly ReadModelWrite[];
}

export interface ActorContext {
  readonly nowMs: number;
  /** The id of the command being applied; ids derived from it are stable across redeliveries. */
  readonly commandId: string;
}

// ---------------------------------------------------------------------------------------------
// Typed commands: each actor type declares a command map (per kind, a decoder of its payload), and
// the runtime decodes and checks every command on arrival, before it reaches `handle`. A command
// whose kind is not in the map, or whose payload does not decode, is logged, acknowledged and
// dropped (its asker, if any, gets `malformed_command`): a stream entry is untrusted input, and a
// malformed one must never become an `undefined` deep in a decision. Decoders: src/actors/commands.ts.

/** A payload decoded, or why it cannot be. */
export type Decoded<P> = { readonly ok: true; readonly value: P } | { readonly ok: false; readonly reason: string };

/** Checks one command kind's payload on arrival and gives it typed. */
export type PayloadDecoder<P> = (payload: JsonValue) => Decoded<P>;

/** An actor type's commands: per kind, the type of its payload. */
export type CommandPayloads = Record<string, unknown>;

/** Per kind, its payload's decoder: the runtime hands no other kind to the actor. */
export type CommandMap<C extends CommandPayloads> = { readonly [K in keyof C]: PayloadDecoder<C[K]> };

/** A command as a typed actor receives it: one of its kinds, with that kind's payload decoded. */
export type TypedCommand<C extends CommandPayloads> = {
  readonly [K in keyof C & string]: Omit<CommandEnvelope, 'kind' | 'payload'> & { readonly kind: K; readonly payload: C[K] };
}[keyof C & string];

/** The answer to a command dropped as malformed, when its sender waits for one. */
export interface MalformedCommandReply {
  readonly ok: false;
  readonly code: 'malformed_command';
  readonly reason: string;
}

/** The kind of reply a malformed command gets. */
export const malformedCommandCode = 'malformed_command';

/**
 * What an actor whose state is kept partly in records of its own declares (`ActorBehavior.parts`;
 * src/actors/actor-parts.ts). `of` must give, for a part that did
 * not change, the same string it gave before (or the one `decode` was handed): the runtime compares
 * parts by identity first, so an unchanged part costs no comparison of its text.
 */
export interface ActorParts<State> {
  /** The state's parts by index; '' for an empty part. */
  of(state: State): readonly string[];
  /** The indexes of the non-empty parts an encoded snapshot was written with (none: an older format). */
  named(encoded: JsonValue): readonly number[];
  /** The state from its snapshot and the parts it names (loaded by index). */
  decode(encoded: JsonValue, parts: ReadonlyMap<number, string>): State;
}

/**
 * An actor type: pure handling of one command at a time. The runtime loads the state, calls
 * `handle`, persists the outcome atomically, and only then replies and runs effects. `Commands`:
 * per kind, the payload `handle` receives, decoded by `commands` on arrival. Without a map (test
 * actors that take any kind), `handle` gets the raw JSON payload.
 */
export interface ActorBehavior<State, Commands extends CommandPayloads = Record<string, JsonValue>> {
  readonly type: string;
  encode(state: State): JsonValue;
  decode(json: JsonValue): State;
  /** Every kind this actor takes, with its payload's decoder (the service's actors all have one). */
  readonly commands?: CommandMap<Commands>;
  handle(state: State | null, command: TypedCommand<Commands>, ctx: ActorContext): Outcome<State>;
  /** When this actor next needs a `timer` command (e.g. a transaction's payment expiry), or null. */
  timerAtMs?(state: State): number | null;
  /**
   * True when handling a command again, against the state its first handling produced, changes
   * nothing and gives the same reply (a quote's `create`: made once, then answered from its state).
   * The runtime then keeps no dedupe-log entry (no copy of the reply) for such commands and lets
   * `handle` answer repeats. A function says it per command kind (the quote's other commands are
   * deduplicated by the log). Leave it unset for any command where that does not hold.
   */
  readonly dedupeByState?: boolean | ((kind: string) => boolean);
  /**
   * Kinds of command whose reply may come later than their handling (the acceptance saga answers
   * once every counter has replied): their first handling stores no reply. A repeat of such a
   * command (same id) that someone waits for is handed to `handle` again instead of being answered
   * from that empty record, so `handle` must answer it from the state (or add the new asker to
   * those waiting) and change nothing else.
   */
  readonly deferredReplyKinds?: ReadonlySet<string>;
  /**
   * State kept in records of its own beside the snapshot (src/actors/actor-parts.ts): set by an
   * actor whose state grows with its traffic. The runtime then decodes with `parts.decode` (never
   * `decode`) and writes only the parts that changed.
   */
  readonly parts?: ActorParts<State>;
}

/** The kind of the command the runtime sends when an actor's timer is due. */
export const timerCommandKind = 'timer';

/** Log levels the runtime uses; the composition root maps them to its logger. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Any actor type, as the runtime holds it (its commands decoded by its own map). */
export type AnyActorBehavior = ActorBehavior<unknown, CommandPayloads>;
