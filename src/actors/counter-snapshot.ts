// A limit counter's snapshot. A counter is written on every command that sends a result,
// refusals included, and the edge reads the hot one (the service-wide method × day counter) for
// its early refusal on every acceptance; both must cost what one command changed, not the day.
//
// Format 4 (this one): the snapshot holds the totals and, per bucket of `src/domain/counter.ts`,
// how many entries it lists; each non-empty bucket's entries are a part of the actor, a record of
// its own written in the same commit only when the bucket changed (src/actors/actor-parts.ts):
//   { reservedAmount, reservedCount, foldedAmount, foldedCount, bucketSizes: number[64], bucketDigests: number[64] }
// (`bucketDigests`: FNV-1a of each bucket's text, so that a part from another moment than its
// snapshot — a restore from a copy that was not taken at one point in time — is refused on load
// even when it lists as many entries: an entry open in one and completed in the other would
// otherwise load, and a later release would give back a completed reservation.)
// A bucket's part is one string of lines, a line per entry: `<flag> <amount as fixed text>
// <transaction id>`, flag `o` (open), `c` (completed) or `r` (released: a tombstone, not in the
// totals); an id holding a newline is stored percent-encoded with the flag in upper case (`O`,
// `C`, `R`). A string costs the store a copy, not a walk, and a bucket's string is built again only
// when the bucket changed (kept per bucket object; the edge's decoder keeps the buckets it parsed
// per string). A reservation thus writes a snapshot of a few hundred bytes and one bucket, where
// format 3 wrote every bucket's lines in the snapshot (≈ 50 bytes per transaction in flight).
// Earlier formats still load (a running service is upgraded in place) and are written anew in
// this one (every non-empty bucket then becomes a part): format 3 held the lines in the snapshot
// (`bucketLines: string[64]`), format 2 every entry in one string `entryLines`, format 1 an object
// per entry (`entries: { [id]: { amount: {decimal__}, completed } }`).
import {
  bucketIndexOf,
  fnv1a,
  counterBucketCount,
  emptyCounter,
  type CounterBucket,
  type CounterEntry,
  type CounterEntryStatus,
  type CounterState,
} from '../domain/counter.ts';
import { add, compare, decimal, decimalFromExactString, toFixedString, zero, type Decimal } from '../domain/money.ts';
import type { JsonValue } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

const lineSeparator = '\n';
const statusFlags: Readonly<Record<CounterEntryStatus, string>> = { open: 'o', completed: 'c', released: 'r' };
const flagStatuses: Readonly<Record<string, CounterEntryStatus>> = { o: 'open', c: 'completed', r: 'released' };

function entryLine(transactionId: string, entry: CounterEntry): string {
  const escaped = transactionId.includes(lineSeparator);
  const flag = statusFlags[entry.status];
  const id = escaped ? encodeURIComponent(transactionId) : transactionId;
  return `${escaped ? flag.toUpperCase() : flag} ${toFixedString(entry.amount)} ${id}`;
}

function parseEntryLine(line: string): [string, CounterEntry] {
  const amountEnd = line.indexOf(' ', 2);
  const flag = line[0];
  const status = flag === undefined ? undefined : flagStatuses[flag.toLowerCase()];
  if (line[1] !== ' ' || amountEnd < 0 || flag === undefined || status === undefined) {
    throw new Error(`counter snapshot: bad entry line ${JSON.stringify(line.slice(0, 80))}`);
  }
  const parsed = decimalFromExactString(line.slice(2, amountEnd));
  // A negative entry would hold an amount against the cap's totals while counting less: refused.
  if (parsed.units < 0n) throw new Error(`counter snapshot: negative amount in ${JSON.stringify(line.slice(0, 80))}`);
  const rawId = line.slice(amountEnd + 1);
  const transactionId = flag !== flag.toLowerCase() ? decodeURIComponent(rawId) : rawId;
  return [transactionId, { amount: decimal(parsed.units, parsed.scale), status }];
}

function parseLines(text: string): Array<[string, CounterEntry]> {
  return text === '' ? [] : text.split(lineSeparator).map(parseEntryLine);
}

interface CounterSnapshot {
  readonly reservedAmount: JsonValue;
  readonly reservedCount: number;
  readonly foldedAmount: JsonValue;
  readonly foldedCount: number;
  readonly bucketSizes: readonly number[];
  readonly bucketDigests: readonly number[];
}

/** A bucket's part: its lines, how many, and the text's digest. */
interface EncodedBucket {
  readonly text: string;
  readonly lines: number;
  readonly digest: number;
}

// States and buckets are immutable, so an encoding is kept per object: a refusal re-uses the whole
// snapshot, a change re-encodes its one bucket.
const encodedCounters = new WeakMap<CounterState, JsonValue>();
const encodedParts = new WeakMap<CounterState, readonly string[]>();
const encodedBuckets = new WeakMap<CounterBucket, EncodedBucket>();

function bucketEncoding(bucket: CounterBucket): EncodedBucket {
  let encoded = encodedBuckets.get(bucket);
  if (encoded === undefined) {
    const lines = Object.entries(bucket).map(([transactionId, entry]) => entryLine(transactionId, entry));
    const text = lines.join(lineSeparator);
    encoded = { text, lines: lines.length, digest: fnv1a(text) };
    encodedBuckets.set(bucket, encoded);
  }
  return encoded;
}

/**
 * Notes that `next` is `previous` with `transactionId` reserved, so that its bucket's text is the
 * previous one plus a line, not every line again (a reservation in the hot counter's bucket of a
 * busy day re-encoded hundreds of lines, each amount formatted anew). Only for a plain append: the
 * bucket grew by exactly that entry, at its end (an id that is an array index is ordered first by
 * the object, not last), and the previous text is known.
 */
export function noteReserved(previous: CounterState, next: CounterState, transactionId: string): void {
  const index = bucketIndexOf(transactionId);
  const before = previous.buckets[index];
  const after = next.buckets[index];
  if (before === undefined || after === undefined || before === after || encodedBuckets.has(after)) return;
  const known = encodedBuckets.get(before);
  const entry = Object.hasOwn(after, transactionId) ? after[transactionId] : undefined;
  if (known === undefined || entry === undefined || /^(0|[1-9][0-9]*)$/.test(transactionId)) return;
  if (Object.keys(after).length !== known.lines + 1) return;
  const line = entryLine(transactionId, entry);
  // The digest goes on from the previous text's: FNV-1a reads the text in order.
  const appended = known.text === '' ? line : `${lineSeparator}${line}`;
  encodedBuckets.set(after, { text: `${known.text}${appended}`, lines: known.lines + 1, digest: fnv1a(appended, known.digest) });
}

/** The counter's snapshot (its parts apart: `counterParts`). */
export function encodeCounter(state: CounterState): JsonValue {
  const cached = encodedCounters.get(state);
  if (cached !== undefined) return cached;
  const snapshot: CounterSnapshot = {
    reservedAmount: toJsonValue(state.reservedAmount),
    reservedCount: state.reservedCount,
    foldedAmount: toJsonValue(state.foldedAmount),
    foldedCount: state.foldedCount,
    bucketSizes: state.buckets.map((bucket) => bucketEncoding(bucket).lines),
    bucketDigests: state.buckets.map((bucket) => bucketEncoding(bucket).digest),
  };
  const json = snapshot as unknown as JsonValue;
  encodedCounters.set(state, json);
  return json;
}

/** The counter's parts: per bucket, its lines ('' for an empty bucket). */
export function counterParts(state: CounterState): readonly string[] {
  let parts = encodedParts.get(state);
  if (parts === undefined) {
    parts = state.buckets.map((bucket) => bucketEncoding(bucket).text);
    encodedParts.set(state, parts);
  }
  return parts;
}

/** The bucket sizes of a format-4 snapshot (checked), or null for an earlier format. */
function bucketSizesOf(json: JsonValue): readonly number[] | null {
  const sizes = (json as Partial<CounterSnapshot> | null)?.bucketSizes;
  if (sizes === undefined) return null;
  if (!Array.isArray(sizes) || sizes.length !== counterBucketCount || !sizes.every((size) => Number.isSafeInteger(size) && size >= 0)) {
    throw new Error('counter snapshot: bad bucket sizes');
  }
  return sizes;
}

/** The buckets a snapshot names as parts (those listing entries); none for an earlier format. */
export function counterPartNames(json: JsonValue): number[] {
  const sizes = bucketSizesOf(json);
  const names: number[] = [];
  sizes?.forEach((size, index) => {
    if (size > 0) names.push(index);
  });
  return names;
}

/** One bucket as parsed, with what it adds to the totals. */
interface DecodedBucket {
  readonly text: string;
  readonly bucket: CounterBucket;
  readonly countedAmount: Decimal;
  readonly countedCount: number;
}

/**
 * What a reader of one counter's successive snapshots keeps between them (the edge's early
 * refusal): per bucket index, the last bucket parsed and its text. A snapshot whose bucket has
 * the same text re-uses it, so reading a counter one reservation changed parses one bucket.
 */
export type CounterDecodeMemo = Map<number, DecodedBucket>;

export function counterDecodeMemo(): CounterDecodeMemo {
  return new Map();
}

function decodedBucket(pairs: ReadonlyArray<[string, CounterEntry]>, text: string): DecodedBucket {
  // fromEntries defines own properties, so no id (not even `__proto__`) can touch the prototype.
  const bucket: CounterBucket = Object.fromEntries(pairs);
  if (Object.keys(bucket).length !== pairs.length) throw new Error('counter snapshot: an id listed twice');
  let countedAmount = zero(0);
  let countedCount = 0;
  for (const [, entry] of pairs) {
    if (entry.status === 'released') continue;
    countedAmount = add(countedAmount, entry.amount);
    countedCount += 1;
  }
  return { text, bucket, countedAmount, countedCount };
}

function parsedBucket(index: number, text: string): DecodedBucket {
  const pairs = parseLines(text);
  for (const [transactionId] of pairs) {
    if (bucketIndexOf(transactionId) !== index) throw new Error(`counter snapshot: an id in bucket ${index} belongs to another`);
  }
  const decoded = decodedBucket(pairs, text);
  encodedBuckets.set(decoded.bucket, { text, lines: pairs.length, digest: fnv1a(text) });
  return decoded;
}

/** Bucket `index` from its text, re-using the memo's when the text is the same. */
function memoBucket(index: number, text: string, memo: CounterDecodeMemo | undefined): DecodedBucket {
  const known = memo?.get(index);
  if (known !== undefined && known.text === text) return known;
  const decoded = parsedBucket(index, text);
  memo?.set(index, decoded);
  return decoded;
}

/** Format 4: each bucket from its part, which must list as many entries as the snapshot says. */
function bucketsOfParts(json: JsonValue, sizes: readonly number[], parts: ReadonlyMap<number, string>, memo: CounterDecodeMemo | undefined): DecodedBucket[] {
  const digests = (json as Partial<CounterSnapshot>).bucketDigests;
  if (!Array.isArray(digests) || digests.length !== counterBucketCount) throw new Error('counter snapshot: bad bucket digests');
  return sizes.map((size, index) => {
    const text = size === 0 ? '' : parts.get(index);
    if (text === undefined) throw new Error(`counter snapshot: bucket ${index} has no part`);
    if (fnv1a(text) !== digests[index]) throw new Error(`counter snapshot: bucket ${index}'s part is not the one written with the snapshot`);
    const decoded = memoBucket(index, text, memo);
    if (Object.keys(decoded.bucket).length !== size) {
      throw new Error(`counter snapshot: bucket ${index} lists ${Object.keys(decoded.bucket).length} entries, the snapshot says ${size}`);
    }
    return decoded;
  });
}

/** Format 1: `entries` is an object of `{ amount: {decimal__}, completed }` per transaction id. */
function legacyEntries(json: JsonValue | undefined): Array<[string, CounterEntry]> {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error('counter snapshot: no entries');
  return Object.entries(json).map(([transactionId, entry]) => {
    const { amount, completed } = fromJsonValue<{ amount: Decimal; completed: boolean }>(entry);
    return [transactionId, { amount, status: completed === true ? 'completed' : 'open' }];
  });
}

/** Formats 1 and 2: every entry in one list, spread over the buckets in its order (its age). */
function bucketsOfList(pairs: ReadonlyArray<[string, CounterEntry]>): DecodedBucket[] {
  const lists = Array.from({ length: counterBucketCount }, (): Array<[string, CounterEntry]> => []);
  for (const pair of pairs) lists[bucketIndexOf(pair[0])]?.push(pair);
  const seen = new Set(pairs.map(([transactionId]) => transactionId));
  if (seen.size !== pairs.length) throw new Error('counter snapshot: an id listed twice');
  return lists.map((list) => decodedBucket(list, ''));
}

/** Format 3: every bucket's lines in the snapshot. */
function currentFormatBuckets(bucketLines: readonly unknown[], memo: CounterDecodeMemo | undefined): DecodedBucket[] {
  if (bucketLines.length !== counterBucketCount) throw new Error(`counter snapshot: ${bucketLines.length} buckets`);
  return bucketLines.map((text, index) => {
    if (typeof text !== 'string') throw new Error('counter snapshot: a bucket is not text');
    return memoBucket(index, text, memo);
  });
}

/**
 * The snapshot's totals alone, with no entry listed (not checked against the entries). Enough to
 * know that a reservation is granted: `reserve` grants whatever the entries hold when the totals
 * plus the amount fit the caps (a new transaction is counted, a counted one is granted again). A
 * refusal on it is not certain (the transaction may be counted already): decode the entries then.
 */
export function decodeCounterTotals(json: JsonValue): CounterState {
  const snapshot = json as Partial<CounterSnapshot> & { readonly bucketLines?: unknown };
  // Formats 3 and 4 keep folded totals; earlier ones had none.
  const current = Array.isArray(snapshot.bucketSizes) || Array.isArray(snapshot.bucketLines);
  return {
    ...emptyCounter(),
    reservedAmount: fromJsonValue<Decimal>(snapshot.reservedAmount ?? null),
    reservedCount: Number(snapshot.reservedCount),
    foldedAmount: current ? fromJsonValue<Decimal>(snapshot.foldedAmount ?? null) : zero(0),
    foldedCount: current ? Number(snapshot.foldedCount) : 0,
  };
}

/**
 * A counter from its snapshot and its parts (by bucket index; format 4), checked: the totals must
 * be what the listed entries and the folded totals add up to.
 */
export function decodeCounter(json: JsonValue, parts: ReadonlyMap<number, string> = new Map(), memo?: CounterDecodeMemo): CounterState {
  const snapshot = json as Partial<CounterSnapshot> & { readonly bucketLines?: unknown; readonly entries?: JsonValue; readonly entryLines?: unknown };
  const sizes = bucketSizesOf(json);
  const current = sizes !== null;
  const buckets =
    sizes !== null
      ? bucketsOfParts(json, sizes, parts, memo)
      : Array.isArray(snapshot.bucketLines)
        ? currentFormatBuckets(snapshot.bucketLines, memo)
        : bucketsOfList(typeof snapshot.entryLines === 'string' ? parseLines(snapshot.entryLines) : legacyEntries(snapshot.entries));
  const state: CounterState = { ...decodeCounterTotals(json), buckets: buckets.map((decoded) => decoded.bucket) };
  // The totals are the folded ones plus the listed entries' (the domain keeps them so); a snapshot
  // that disagrees is corrupt, and loading it would let the cap drift.
  let countedAmount = state.foldedAmount;
  let countedCount = state.foldedCount;
  for (const decoded of buckets) {
    countedAmount = add(countedAmount, decoded.countedAmount);
    countedCount += decoded.countedCount;
  }
  const foldedSound = Number.isSafeInteger(state.foldedCount) && state.foldedCount >= 0 && state.foldedAmount.units >= 0n;
  if (!foldedSound || state.reservedCount !== countedCount || compare(countedAmount, state.reservedAmount) !== 0) {
    throw new Error(
      `counter snapshot: totals ${state.reservedCount} / ${toFixedString(state.reservedAmount)} disagree with ${countedCount} counted (folded and listed)`,
    );
  }
  if (current) encodedCounters.set(state, json);
  return state;
}

/**
 * The bucket whose part a reader must read to check `transactionId` against a format-4 snapshot:
 * its bucket, when the snapshot lists entries there; null when there is nothing to read (an empty
 * bucket, or an earlier format, which holds its entries).
 */
export function counterPartToRead(json: JsonValue, transactionId: string): number | null {
  const sizes = bucketSizesOf(json);
  if (sizes === null) return null;
  const index = bucketIndexOf(transactionId);
  return (sizes[index] ?? 0) > 0 ? index : null;
}

/**
 * The counter as a check of one transaction needs it (the edge's early refusal): the snapshot's
 * totals and that transaction's bucket, from `part` (its text as read after the snapshot, or null
 * when `counterPartToRead` named none or the record is gone). The other buckets are left empty and
 * nothing is checked against the totals: `reserve` reads only the totals and the transaction's
 * own entry. An earlier format holds every entry and is decoded whole (checked).
 */
export function decodeCounterForTransaction(json: JsonValue, transactionId: string, part: string | null, memo?: CounterDecodeMemo): CounterState {
  if (bucketSizesOf(json) === null) return decodeCounter(json, new Map(), memo);
  const totals = decodeCounterTotals(json);
  if (part === null) return totals;
  const index = bucketIndexOf(transactionId);
  const buckets = totals.buckets.slice();
  buckets[index] = memoBucket(index, part, memo).bucket;
  return { ...totals, buckets };
}
