// Command envelopes on the wire: JSON, validated on the way in (a stream entry is untrusted input
// to the worker: a malformed one is logged and acknowledged, never retried forever). An entry holds
// one envelope (a JSON object: relays, timers, tells) or a batch of them (a JSON array: the edge's
// asks of one event-loop turn for one shard, request-reply.ts `requestInBatch`).
import { batchRequestsMax, headerBatchCount } from '../bus/request-reply.ts';
import type { BusEntry } from '../bus/bus.ts';
import type { CommandEnvelope, JsonValue } from './envelope.ts';

export function encodeEnvelope(envelope: CommandEnvelope): string {
  return JSON.stringify(envelope);
}

/**
 * Commands as stream entries: per stream, in order, up to `batchRequestsMax` envelopes in one
 * entry (a JSON array, each envelope encoded once), a lone one as a plain envelope.
 */
export function commandEntries(envelopes: readonly CommandEnvelope[], streamOf: (envelope: CommandEnvelope) => string): Array<{ stream: string; payload: string; count: number }> {
  const byStream = new Map<string, string[]>();
  for (const envelope of envelopes) {
    const stream = streamOf(envelope);
    const texts = byStream.get(stream);
    if (texts === undefined) byStream.set(stream, [encodeEnvelope(envelope)]);
    else texts.push(encodeEnvelope(envelope));
  }
  const entries: Array<{ stream: string; payload: string; count: number }> = [];
  for (const [stream, texts] of byStream) {
    for (let start = 0; start < texts.length; start += batchRequestsMax) {
      const chunk = texts.slice(start, start + batchRequestsMax);
      entries.push({ stream, payload: chunk.length === 1 ? (chunk[0] ?? '') : `[${chunk.join(',')}]`, count: chunk.length });
    }
  }
  return entries;
}

/** The commands an entry says it holds (its `n` header; 1 without one), within 1…`batchRequestsMax`. */
export function entryCommandCount(entry: BusEntry): number {
  const count = Number(entry.headers[headerBatchCount] ?? 1);
  return Number.isSafeInteger(count) ? Math.min(Math.max(count, 1), batchRequestsMax) : 1;
}

/**
 * Entries read from the shard streams, cut in order into batches of at most `commandsMax`
 * commands (an entry is never split; one holding more than `commandsMax` is a batch of its own).
 * A read of `batchSizeMax` entries may hold 64 times as many commands since entries are batched:
 * the runtime's batch (one durable write, its replies) stays bounded by commands, as it was.
 */
export function batchesOfCommands(entries: readonly BusEntry[], commandsMax: number): BusEntry[][] {
  const batches: BusEntry[][] = [];
  let current: BusEntry[] = [];
  let commands = 0;
  for (const entry of entries) {
    const count = entryCommandCount(entry);
    if (current.length > 0 && commands + count > commandsMax) {
      batches.push(current);
      current = [];
      commands = 0;
    }
    current.push(entry);
    commands += count;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

/**
 * The commands of one stream entry, parsed once: one envelope, or each of a batch in order (null
 * for an item that is not an envelope). Null when the entry is neither: not JSON, an empty array,
 * or more than `batchRequestsMax` items.
 */
export function decodeEntryEnvelopes(text: string): Array<CommandEnvelope | null> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) {
    const single = envelopeFromJson(parsed);
    return single === null ? null : [single];
  }
  const items = parsed as unknown[];
  if (items.length === 0 || items.length > batchRequestsMax) return null;
  return items.map((item) => envelopeFromJson(item));
}

/** An envelope from parsed JSON (an outbox row's payload, a dead letter); null when it is not one. */
export function envelopeFromJson(parsed: unknown): CommandEnvelope | null {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  const candidate = parsed as Record<string, unknown>;
  if (
    !isNonEmptyString(candidate.commandId) ||
    !isNonEmptyString(candidate.actorType) ||
    !isNonEmptyString(candidate.actorKey) ||
    !isNonEmptyString(candidate.kind) ||
    typeof candidate.sentAtMs !== 'number'
  ) {
    return null;
  }
  const replyTo = candidate.replyTo as Record<string, unknown> | undefined;
  if (replyTo !== undefined && (!isNonEmptyString(replyTo.stream) || !isNonEmptyString(replyTo.requestId))) {
    return null;
  }
  return {
    commandId: candidate.commandId,
    actorType: candidate.actorType,
    actorKey: candidate.actorKey,
    kind: candidate.kind,
    payload: (candidate.payload ?? null) as JsonValue,
    ...(replyTo !== undefined ? { replyTo: { stream: replyTo.stream as string, requestId: replyTo.requestId as string } } : {}),
    sentAtMs: candidate.sentAtMs,
  };
}
