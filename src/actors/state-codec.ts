// Actor states hold exact decimals (bigint inside); snapshots and commands are JSON. This codec
// maps every Decimal to `{ "decimal__": "<fixed text>" }` (no leading $: MongoDB forbids such
// keys) and back, keeping its scale (the fixed text has exactly `scale` fraction digits), so a
// round trip is exact for any nesting.
import { decimal, decimalFromExactString, toFixedString, type Decimal } from '../domain/money.ts';
import type { JsonValue } from './envelope.ts';

const tag = 'decimal__';

function isDecimal(value: object): value is Decimal {
  const candidate = value as Partial<Decimal>;
  return typeof candidate.units === 'bigint' && typeof candidate.scale === 'number' && Object.keys(value).length === 2;
}

/** Plain data (objects, arrays, strings, numbers, booleans, null, Decimals) → JSON value. */
export function toJsonValue(value: unknown): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('state holds a non-finite number');
    return value;
  }
  if (value === undefined) return null;
  if (typeof value === 'bigint') throw new Error('state holds a bare bigint; use a Decimal');
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item));
  if (typeof value === 'object') {
    if (isDecimal(value)) return { [tag]: toFixedString(value) };
    const out: { [key: string]: JsonValue } = {};
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const item = record[key];
      if (item !== undefined) out[key] = toJsonValue(item);
    }
    return out;
  }
  throw new Error(`state holds a ${typeof value}`);
}

/** The inverse of `toJsonValue`. */
export function fromJsonValue<T>(json: JsonValue): T {
  return revive(json) as T;
}

function revive(json: JsonValue): unknown {
  if (json === null || typeof json !== 'object') return json;
  if (Array.isArray(json)) return json.map((item) => revive(item));
  const keys = Object.keys(json);
  const tagged = json[tag];
  if (keys.length === 1 && typeof tagged === 'string') {
    const parsed = decimalFromExactString(tagged);
    return decimal(parsed.units, parsed.scale);
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key] = revive(json[key] ?? null);
  return out;
}
