// What the actor runtime needs from the SnapshotStore: load a snapshot, look up an applied
// command's stored reply, and commit one actor's new version atomically (snapshot, dedupe log,
// outbox rows, read models), fenced by the shard lease token.
import type { JsonValue, ReadModelWrite } from './envelope.ts';

export interface OutboxRowWrite {
  /** `${actorId}:${version}:${index}`: effects are idempotent by this id. */
  readonly id: string;
  readonly topic: string;
  readonly payload: JsonValue;
  readonly partitionKey?: string;
}

export interface ActorCommit {
  readonly actorId: string;
  /** 0 for an actor that has never been written. */
  readonly expectedVersion: number;
  readonly newVersion: number;
  /** The full new state; null when the actor has no state (only effects were recorded). */
  readonly state: JsonValue;
  readonly fence: { readonly shard: number; readonly token: number };
  readonly appliedCommands: ReadonlyArray<{ readonly commandId: string; readonly reply: JsonValue }>;
  readonly outbox: readonly OutboxRowWrite[];
  readonly readModels: readonly ReadModelWrite[];
}

export type CommitResult = 'ok' | 'version_conflict' | 'fenced';
/** One write of a batch: its result, or the error that kept it from being written. */
export type BatchCommitResult = CommitResult | { readonly error: unknown };

export interface ActorStore {
  load(actorId: string): Promise<{ version: number; state: JsonValue } | null>;
  /** The stored reply of an applied command (null if it had none), or undefined if never applied. */
  getAppliedReply(actorId: string, commandId: string): Promise<JsonValue | undefined>;
  /** A record of an actor's parts (src/actors/actor-parts.ts) by its id; null when there is none. */
  loadPart(partId: string): Promise<{ [key: string]: JsonValue } | null>;
  commit(write: ActorCommit): Promise<CommitResult>;
  /**
   * The writes of one batch (different actors, or one actor's writes in order), durable together;
   * each is checked and applied as `commit` would, and fails or is refused on its own.
   */
  commitBatch(writes: readonly ActorCommit[]): Promise<BatchCommitResult[]>;
  /** Linked writes: all durable together (true), or none written (false: one would be refused). */
  commitAllOrNothing(writes: readonly ActorCommit[]): Promise<boolean>;
}
