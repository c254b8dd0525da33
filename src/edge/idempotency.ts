// Idempotency-Key on POST requests: a retried request with the same key and the same body gets the
// first response again (status and body, with `Idempotent-Replayed: true`), never a second effect.
// Records live in the store's `idempotency` collection, keyed by scope (the partner id, or `ops`)
// and the SHA-256 of the key, so they survive restarts and are shared by every edge process.
//
// A record holds the request's fingerprint (route + the canonical form of the fields the endpoint
// reads: a field it ignores does not make a retry "another request"), its state and the ids the
// request draws (transaction id, quote id, command id, blob key). The ids are drawn once, when the
// record is created, and reused by every later attempt, so an attempt that dies half-way is
// finished by the next one with the same ids, and the actors' own idempotency (by actor key and
// command id) makes the effect happen once. States:
//   in_flight — an attempt is running (another request with the key gets 409 until it is stale);
//   retry     — the last attempt failed on our side (5xx, timeout): the next one may run at once;
//   done      — the response is stored and replayed.
// Outcomes stored: 2xx and non-retryable 4xx. A retryable rejection (`retryable: true`, e.g. the
// rail is down) deletes the record: the same request may succeed later, and must then draw new ids.
// Records are removed IDEMPOTENCY_TTL_HOURS (72) after they started by the retention sweep
// (src/service/retention.ts, docs/api.md).
import { createHash } from 'node:crypto';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import { errorResponse } from './errors.ts';
import type { HttpResponse } from './http-types.ts';

export const idempotencyCollection = 'idempotency';
export const idempotencyHeader = 'idempotency-key';
export const replayedHeader = 'idempotent-replayed';
/** Longest key accepted (visible ASCII). */
export const idempotencyKeyCharsMax = 255;
/**
 * An attempt still `in_flight` after this long is presumed dead (the process running it crashed)
 * and may be taken over. Above the edge's handler timeout (30 s), so a live attempt is never
 * taken over.
 */
export const inFlightStaleMs = 45_000;
/** Largest response body stored for replay; larger responses are not replayable (none are today). */
export const storedBodyCharsMax = 256 * 1024;

const keyPattern = /^[\x21-\x7e]+$/;

export type Ids = Readonly<Record<string, string>>;

export interface IdempotentRequest {
  /** Partner id, or `ops` for the ops endpoints. */
  readonly scope: string;
  /** The header's value, or undefined when the request has none. */
  readonly key: string | undefined;
  /** `fingerprint(routePattern, canonicalBody)`. */
  readonly fingerprint: string;
  readonly nowMs: number;
  /** Fresh ids for a first attempt. */
  readonly newIds: () => Ids;
}

/** Sorted-key JSON: the same document always gives the same text, whatever the key order sent. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/**
 * The members of a request body the endpoint reads, as sent: what "the same request" is compared
 * on, so a retry that adds a field the endpoint ignores is the same request (docs/api.md). A body
 * without other members gives the same canonical text as the whole body, so records written
 * before keep matching their retries.
 */
export function knownFields(body: Readonly<Record<string, unknown>>, names: readonly string[]): Record<string, unknown> {
  const known: Record<string, unknown> = {};
  for (const name of names) if (Object.hasOwn(body, name)) known[name] = body[name];
  return known;
}

export function fingerprint(routePattern: string, canonicalBody: string): string {
  return createHash('sha256').update(routePattern).update('\n').update(canonicalBody).digest('hex');
}

/** The header's value when well formed; a 400 response when present but malformed. */
export function readIdempotencyKey(headers: Readonly<Record<string, string>>): { ok: true; key: string | undefined } | { ok: false; response: HttpResponse } {
  const raw = headers[idempotencyHeader];
  if (raw === undefined) return { ok: true, key: undefined };
  const key = raw.trim();
  if (key.length === 0 || key.length > idempotencyKeyCharsMax || !keyPattern.test(key)) {
    return {
      ok: false,
      response: errorResponse('invalid_request', `Idempotency-Key must be 1–${idempotencyKeyCharsMax} visible ASCII characters`),
    };
  }
  return { ok: true, key };
}

interface StoredResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

interface IdempotencyRecord {
  readonly scope: string;
  readonly fingerprint: string;
  readonly state: 'in_flight' | 'retry' | 'done';
  readonly startedAtMs: number;
  readonly ids: Ids;
  readonly response: StoredResponse | null;
}

function recordId(scope: string, key: string): string {
  return `${scope}:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

function toDoc(record: IdempotencyRecord): JsonObject {
  return {
    scope: record.scope,
    fingerprint: record.fingerprint,
    state: record.state,
    startedAtMs: record.startedAtMs,
    ids: { ...record.ids },
    response: record.response === null ? null : { ...record.response },
  };
}

function fromDoc(doc: JsonObject): IdempotencyRecord {
  const ids: Record<string, string> = {};
  const rawIds = doc['ids'];
  if (rawIds !== null && typeof rawIds === 'object' && !Array.isArray(rawIds)) {
    for (const [name, value] of Object.entries(rawIds)) if (typeof value === 'string') ids[name] = value;
  }
  const rawResponse = doc['response'];
  let response: StoredResponse | null = null;
  if (rawResponse !== null && typeof rawResponse === 'object' && !Array.isArray(rawResponse)) {
    const { status, contentType, body } = rawResponse;
    if (typeof status === 'number' && typeof contentType === 'string' && typeof body === 'string') response = { status, contentType, body };
  }
  const state = doc['state'];
  return {
    scope: String(doc['scope']),
    fingerprint: String(doc['fingerprint']),
    state: state === 'done' || state === 'retry' ? state : 'in_flight',
    startedAtMs: typeof doc['startedAtMs'] === 'number' ? doc['startedAtMs'] : 0,
    ids,
    response,
  };
}

function bodyText(body: HttpResponse['body']): string {
  if (body === undefined) return '';
  return typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
}

/** A rejection the same request may overcome later: its record must not pin it. */
function isRetryableRejection(response: HttpResponse): boolean {
  if (response.status < 400 || response.status >= 500) return false;
  try {
    const parsed: unknown = JSON.parse(bodyText(response.body));
    return typeof parsed === 'object' && parsed !== null && (parsed as Record<string, unknown>)['retryable'] === true;
  } catch {
    return false;
  }
}

function replay(stored: StoredResponse): HttpResponse {
  return { status: stored.status, headers: { 'content-type': stored.contentType, [replayedHeader]: 'true' }, body: stored.body };
}

export interface Idempotency {
  /**
   * Runs `execute` at most once per (scope, key) with the same ids across retries; replays,
   * conflicts (422) and concurrent attempts (409) are answered without running it.
   */
  run(request: IdempotentRequest, execute: (ids: Ids) => Promise<HttpResponse>): Promise<HttpResponse>;
}

export function createIdempotency(store: SnapshotStore): Idempotency {
  async function settle(id: string, record: IdempotencyRecord, response: HttpResponse): Promise<void> {
    if (response.status >= 500) {
      await store.put(idempotencyCollection, id, toDoc({ ...record, state: 'retry' }));
      return;
    }
    if (isRetryableRejection(response)) {
      await store.remove(idempotencyCollection, id);
      return;
    }
    const body = bodyText(response.body);
    if (body.length > storedBodyCharsMax) {
      await store.remove(idempotencyCollection, id);
      return;
    }
    const contentType = response.headers?.['content-type'] ?? 'application/json; charset=utf-8';
    await store.put(idempotencyCollection, id, toDoc({ ...record, state: 'done', response: { status: response.status, contentType, body } }));
  }

  async function attempt(id: string, record: IdempotencyRecord, execute: (ids: Ids) => Promise<HttpResponse>): Promise<HttpResponse> {
    let response: HttpResponse;
    try {
      response = await execute(record.ids);
    } catch (error) {
      await store.put(idempotencyCollection, id, toDoc({ ...record, state: 'retry' }));
      throw error;
    }
    await settle(id, record, response);
    return response;
  }

  return {
    async run(request, execute) {
      if (request.key === undefined) return execute(request.newIds());
      const id = recordId(request.scope, request.key);
      const fresh: IdempotencyRecord = {
        scope: request.scope,
        fingerprint: request.fingerprint,
        state: 'in_flight',
        startedAtMs: request.nowMs,
        ids: request.newIds(),
        response: null,
      };
      const inserted = await store.putIfAbsent(idempotencyCollection, id, toDoc(fresh));
      if (inserted.status === 'inserted') return attempt(id, fresh, execute);
      const existing = fromDoc(inserted.doc);
      if (existing.fingerprint !== request.fingerprint) {
        return errorResponse('idempotency_conflict', 'This Idempotency-Key was already used with a different request');
      }
      if (existing.state === 'done' && existing.response !== null) return replay(existing.response);
      if (existing.state === 'in_flight' && request.nowMs - existing.startedAtMs < inFlightStaleMs) {
        return errorResponse('idempotency_in_progress');
      }
      // A failed or abandoned attempt: take it over with the same ids.
      const takeover: IdempotencyRecord = { ...existing, state: 'in_flight', startedAtMs: request.nowMs };
      await store.put(idempotencyCollection, id, toDoc(takeover));
      return attempt(id, takeover, execute);
    },
  };
}
