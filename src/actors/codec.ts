// Command envelopes on the wire: JSON, validated on the way in (a stream entry is untrusted input
// to the worker: a malformed one is logged and acknowledged, never retried forever).
import type { CommandEnvelope, JsonValue } from './envelope.ts';

export function encodeEnvelope(envelope: CommandEnvelope): string {
  return JSON.stringify(envelope);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

export function decodeEnvelope(text: string): CommandEnvelope | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return envelopeFromJson(parsed);
}

/** An envelope from parsed JSON (an outbox row's payload, a dead letter); null when it is not one. */
export function envelopeFromJson(parsed: unknown): CommandEnvelope | null {
  if (typeof parsed !== 'object' || parsed === null) return null;
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
