// How bus entries look in Redis, and how Redis' replies are read back (RESP2 shapes: the connection
// speaks RESP2). Entry encoding: field `payload` holds the payload; each header `k` is the field
// `h:k`. A reply shape we do not expect is a bug or a broken server: throw.
import { BusError, assertPositiveInteger, type AppendOptions, type BusEntry, type EntryId, type Headers } from './bus.ts';

const payloadField = 'payload';
const headerFieldPrefix = 'h:';


function fail(what: string, value: unknown): never {
  throw new Error(`unexpected Redis reply for ${what}: ${JSON.stringify(value)?.slice(0, 200)}`);
}

export function asArray(what: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) fail(what, value);
  return value as unknown[];
}

export function asString(what: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return fail(what, value);
}

export function asInteger(what: string, value: unknown): number {
  const parsed = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(parsed)) fail(what, value);
  return parsed;
}

export interface RawEntry {
  readonly id: EntryId;
  /** null when the entry was trimmed away while pending. */
  readonly fields: { payload: string; headers: Headers } | null;
}

function parseFields(value: unknown): { payload: string; headers: Headers } {
  const flat = asArray('entry fields', value);
  let payload: string | undefined;
  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = asString('field name', flat[i]);
    const fieldValue = asString('field value', flat[i + 1]);
    if (field === payloadField) payload = fieldValue;
    else if (field.startsWith(headerFieldPrefix)) headers[field.slice(headerFieldPrefix.length)] = fieldValue;
  }
  if (payload === undefined) fail('entry without payload', value);
  return { payload, headers };
}

export function parseRawEntries(value: unknown): RawEntry[] {
  return asArray('entries', value).map((item) => {
    const pair = asArray('entry', item);
    const id = asString('entry id', pair[0]);
    const fields = pair[1] == null || pair[1] === false ? null : parseFields(pair[1]);
    return { id, fields };
  });
}

export function toEntry(stream: string, raw: RawEntry, deliveryCount: number): BusEntry | null {
  if (raw.fields === null) return null;
  return { stream, id: raw.id, payload: raw.fields.payload, headers: raw.fields.headers, deliveryCount };
}

/** XREADGROUP's `[[stream, entries], …] | null`, new entries only (delivery count 1). */
export function parseReadReply(value: unknown): BusEntry[] {
  if (value == null) return [];
  const result: BusEntry[] = [];
  for (const item of asArray('xreadgroup', value)) {
    const pair = asArray('xreadgroup stream', item);
    const stream = asString('stream name', pair[0]);
    for (const raw of parseRawEntries(pair[1])) {
      const entry = toEntry(stream, raw, 1);
      if (entry !== null) result.push(entry);
    }
  }
  return result;
}

/** Flat `[name, value, name, value, …]` (XINFO in RESP2) to a record. */
export function flatRecord(what: string, value: unknown): Record<string, unknown> {
  const flat = asArray(what, value);
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[asString(what, flat[i])] = flat[i + 1];
  return record;
}

/** XADD's arguments after the command name: `stream [MAXLEN ~ n] * payload <p> h:<name> <value>…`. */
export function appendArguments(stream: string, payload: string, options: AppendOptions): Array<string | number> {
  const args: Array<string | number> = [stream];
  if (options.maxLenApprox !== undefined) {
    assertPositiveInteger('maxLenApprox', options.maxLenApprox);
    args.push('MAXLEN', '~', options.maxLenApprox);
  }
  args.push('*', payloadField, payload);
  const headers = options.headers;
  if (headers !== undefined) {
    for (const name of Object.keys(headers)) {
      if (name === '') throw new BusError('invalid_argument', 'header names must not be empty');
      args.push(headerFieldPrefix + name, headers[name] ?? '');
    }
  }
  return args;
}

export function entryIdOf(reply: unknown): EntryId {
  return asString('xadd', reply);
}