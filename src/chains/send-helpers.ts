// What the Solana and Celo senders share: the journal layout of send attempts, the request
// fingerprint that makes "same key, different content" an explicit refusal, and failure results.
//
// Journal layout (one record per attempt, written with putIfAbsent, never updated):
//   `<NETWORK>:<key>:<n>`         attempt n (0-based): the signed bytes, their id, what they send
//   `<NETWORK>:<key>:<n>:failed`  attempt n failed finally and the caller has been told once
//   `<NETWORK>:<key>:<n>:unseen`  attempt n first looked dead (nonce used / blockhash expired, and
//                                 its own lookup empty): `seenAtMs`, the start of its settle window
// Attempt n+1 exists only when attempt n can never move money (definitively absent for the whole
// settle window of src/chains/send-settle.ts, or failed on chain at the required commitment), so at
// most one attempt per key ever transfers.
import { createHash } from 'node:crypto';
import type { Network } from '../domain/assets.ts';
import type { JsonObject } from '../store/store.ts';
import type { SendJournal, SendRequest, SendResult } from './chains.ts';

export const sendAttemptsMaxDefault = 5;
/** Keys longer than this are replaced by their SHA-256 (store identifiers are ≤ 256 bytes). */
const keyBytesMax = 160;
const reasonLengthMax = 200;

function keyPart(idempotencyKey: string): string {
  if (Buffer.byteLength(idempotencyKey, 'utf8') <= keyBytesMax && !idempotencyKey.includes('\0')) return idempotencyKey;
  return `sha256-${createHash('sha256').update(idempotencyKey, 'utf8').digest('hex')}`;
}

export function attemptKey(network: Network, idempotencyKey: string, attempt: number): string {
  return `${network}:${keyPart(idempotencyKey)}:${attempt}`;
}

export function failureKey(network: Network, idempotencyKey: string, attempt: number): string {
  return `${attemptKey(network, idempotencyKey, attempt)}:failed`;
}

/** Where the first sighting of attempt n looking dead is journaled (its settle window's start). */
export function unseenKey(network: Network, idempotencyKey: string, attempt: number): string {
  return `${attemptKey(network, idempotencyKey, attempt)}:unseen`;
}

/** The recorded attempts of a key, in order (contiguous from 0, at most `attemptsMax`). */
export async function loadAttempts(
  journal: SendJournal, network: Network, idempotencyKey: string, attemptsMax: number,
): Promise<JsonObject[]> {
  const attempts: JsonObject[] = [];
  for (let attempt = 0; attempt < attemptsMax; attempt += 1) {
    const record = await journal.get(attemptKey(network, idempotencyKey, attempt));
    if (record === null) break;
    attempts.push(record);
  }
  return attempts;
}

/** Records attempt n; when another caller recorded it first, theirs wins and is returned. */
export async function recordAttempt(
  journal: SendJournal, network: Network, idempotencyKey: string, attempt: number, record: JsonObject,
): Promise<JsonObject> {
  const result = await journal.putIfAbsent(attemptKey(network, idempotencyKey, attempt), record);
  return result.status === 'inserted' ? record : result.doc;
}

/**
 * Marks attempt n's final failure as reported. True the first time (report the failure), false
 * afterwards (the caller retried after being told: build the next attempt).
 */
export async function acknowledgeFailure(
  journal: SendJournal, network: Network, idempotencyKey: string, attempt: number, reason: string,
): Promise<boolean> {
  const result = await journal.putIfAbsent(failureKey(network, idempotencyKey, attempt), { reason });
  return result.status === 'inserted';
}

/** What a send moves, as stored with each attempt; a retry must match it. */
export interface SendFingerprint extends JsonObject {
  asset: string;
  /** Base units, decimal text. */
  amountBaseUnits: string;
  destination: string;
}

export function fingerprintOf(request: SendRequest, amountBaseUnits: bigint, destination: string): SendFingerprint {
  return { asset: request.asset, amountBaseUnits: amountBaseUnits.toString(), destination };
}

export function sameFingerprint(record: JsonObject, fingerprint: SendFingerprint): boolean {
  const stored = record.request;
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return false;
  return stored.asset === fingerprint.asset &&
    stored.amountBaseUnits === fingerprint.amountBaseUnits &&
    stored.destination === fingerprint.destination;
}

export function failed(reason: string, retryable: boolean): SendResult {
  return { status: 'failed', reason: reason.slice(0, reasonLengthMax), retryable };
}

/** A short description of an infrastructure error (class name and first line), without URLs. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const short = (error as Error & { shortMessage?: unknown }).shortMessage;
    const text = typeof short === 'string' ? short : error.message;
    // RPC URLs often carry an API key in their path or query: never repeat them.
    const line = (text.split('\n')[0] ?? '').replace(/\b(?:https?|wss?):\/\/\S+/gi, '<url>');
    return `${error.name}: ${line}`.slice(0, reasonLengthMax);
  }
  return 'unknown error';
}

export function stringField(record: JsonObject, field: string): string {
  const value = record[field];
  if (typeof value !== 'string') throw new Error(`send journal record has no string field ${field}`);
  return value;
}

export function numberField(record: JsonObject, field: string): number {
  const value = record[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new Error(`send journal record has no integer field ${field}`);
  return value;
}
