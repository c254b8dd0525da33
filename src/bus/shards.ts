// Key → shard routing and the names of the streams and leases that belong to a shard.
//
// The shard of a key is FNV-1a (32 bit) over the key's UTF-8 bytes, modulo the shard count. It must
// never change: every worker and edge computes it independently, and a different function (or a
// different SHARDS setting) would route one actor's commands to two owners.
//
// Stream names carry a Redis Cluster hash tag: `<prefix>cmd:{<group tag>}:<shard>`. Everything
// inside `{…}` decides the slot, so the streams of one shard group (8 consecutive shards,
// shard-groups.ts) sit on one slot and one XREADGROUP reads them together. The prefix isolates
// deployments and tests; it must not contain braces (they would become the hash tag instead).
// Releases before shard groups named a shard's stream `<prefix>cmd:{<shard>}` (one slot per
// shard): `legacyCommandStreamKey`, still drained by the shard worker after an upgrade.

import { shardGroupOf, shardGroupTag } from './shard-groups.ts';

export const shardCountDefault = 64;
export const shardCountMax = 16_384;

/**
 * Trim bounds (approximate, never below): an entry is lost only if it is still undelivered or
 * unacknowledged after this many newer entries reached the same stream. At 20k commands/s spread
 * over 64 shards that is about 5 minutes of a shard without a working owner; lease TTLs are seconds.
 * See docs/bus.md.
 */
export const commandStreamMaxLenApprox = 100_000;
/** Replies are consumed by one edge at once and useless after its request timeout (seconds). */
export const replyStreamMaxLenApprox = 100_000;

const fnvOffsetBasis = 0x811c9dc5;
const fnvPrime = 0x01000193;
const encoder = new TextEncoder();

/** FNV-1a, 32 bit, over the UTF-8 bytes of `text`; an unsigned integer. */
export function fnv1a32(text: string): number {
  let hash = fnvOffsetBasis;
  // Actor ids are ASCII almost always (uuids, counter keys): hash the char codes, which are their
  // UTF-8 bytes, without encoding (this runs for every command). Anything else goes through UTF-8.
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code > 0x7f) return fnv1a32Utf8(text);
    hash ^= code;
    hash = Math.imul(hash, fnvPrime);
  }
  return hash >>> 0;
}

function fnv1a32Utf8(text: string): number {
  let hash = fnvOffsetBasis;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, fnvPrime);
  }
  return hash >>> 0;
}

export function assertShardCount(shardCount: number): void {
  if (!Number.isSafeInteger(shardCount) || shardCount < 1 || shardCount > shardCountMax) {
    throw new RangeError(`shard count must be an integer in 1..${shardCountMax}, got ${shardCount}`);
  }
}

/** The shard in `0 .. shardCount-1` that owns `key` (e.g. an actor id `transaction/<id>`). */
export function shardOf(key: string, shardCount: number): number {
  assertShardCount(shardCount);
  return fnv1a32(key) % shardCount;
}

/** A key prefix or name part must not contain `{` or `}`: those would move the hash tag. */
export function assertNoBraces(what: string, value: string): void {
  if (/[{}]/.test(value)) throw new RangeError(`${what} must not contain '{' or '}': ${JSON.stringify(value)}`);
}

function assertShard(shard: number): void {
  if (!Number.isSafeInteger(shard) || shard < 0 || shard >= shardCountMax) {
    throw new RangeError(`not a shard number: ${shard}`);
  }
}

/** The consumer group every shard worker reads the command streams through (one per deployment). */
export const commandGroup = 'shard-workers';

/** `<prefix>cmd:{<group tag>}:<shard>`: the command stream of one shard. */
export function commandStreamKey(prefix: string, shard: number): string {
  assertNoBraces('key prefix', prefix);
  assertShard(shard);
  return `${prefix}cmd:{${shardGroupTag(shardGroupOf(shard))}}:${shard}`;
}

/** `<prefix>cmd:{<shard>}`: a shard's command stream before shard groups (drained after the upgrade). */
export function legacyCommandStreamKey(prefix: string, shard: number): string {
  assertNoBraces('key prefix', prefix);
  assertShard(shard);
  return `${prefix}cmd:{${shard}}`;
}

/** Every shard's command stream, shard 0 first. */
export function commandStreamKeys(prefix: string, shardCount: number): string[] {
  assertShardCount(shardCount);
  return Array.from({ length: shardCount }, (_, shard) => commandStreamKey(prefix, shard));
}

const decimal = /^(0|[1-9]\d*)$/;

/**
 * The shard of a command stream name made by `commandStreamKey` or `legacyCommandStreamKey`, or
 * null for any other name (a group tag that is not the shard's own included).
 */
export function shardOfCommandStream(prefix: string, stream: string): number | null {
  if (!stream.startsWith(`${prefix}cmd:{`)) return null;
  const rest = stream.slice(prefix.length + 5);
  const close = rest.indexOf('}');
  if (close < 0) return null;
  if (close === rest.length - 1) {
    const digits = rest.slice(0, close);
    return decimal.test(digits) && Number(digits) < shardCountMax ? Number(digits) : null;
  }
  const digits = rest.slice(close + 2);
  if (rest[close + 1] !== ':' || !decimal.test(digits) || Number(digits) >= shardCountMax) return null;
  const shard = Number(digits);
  return rest.slice(0, close) === shardGroupTag(shardGroupOf(shard)) ? shard : null;
}

/** `<prefix>reply:{<edgeId>}`: the reply stream of one edge process. */
export function replyStreamKey(prefix: string, edgeId: string): string {
  assertNoBraces('key prefix', prefix);
  assertNoBraces('edge id', edgeId);
  if (edgeId === '') throw new RangeError('edge id must not be empty');
  return `${prefix}reply:{${edgeId}}`;
}

/** What every shard's lease name starts with (for `Leases.listAll`). */
export const shardLeasePrefix = 'shard:';

/** The lease name a worker holds while it owns a shard (see leases.ts). */
export function shardLeaseName(shard: number): string {
  assertShard(shard);
  return `${shardLeasePrefix}${shard}`;
}
