// How much memory the actors a shard worker keeps cost, in bytes, and how much they may cost.
//
// Counting actors alone did not bound memory: after sustained load a worker held about 97,000
// actors in a few hundred MB, past the 512 MiB its manifests give it, because an actor's state
// ranges from a tally (tens of bytes) to a transaction with its events (kilobytes). So each actor
// in memory carries an estimate of its size, the runtime keeps the sum, and it passivates the least
// recently used actors when either the count or the bytes pass their cap.
//
// The estimate is deliberately simple and errs high: V8's real layout varies with hidden classes
// and string representation, and what matters is that the sum grows with what the actors hold.
// Its constants were checked against the growth of `process.memoryUsage().heapUsed` (after a full
// GC) for 20,000 in-memory actors of two shapes: a tally, estimated 725 bytes against 690
// measured, and a quote-like state with six events, 2,103 against 1,686. It errs high, as it should.

/** Per actor: the ActiveActor object, its id string, its empty Set and Map, and the runtime's map entry. */
export const actorOverheadBytes = 480;
/** Per command id remembered by an actor (a 36-character id in a Set, plus its reply slot). */
export const rememberedCommandBytes = 96;

// Property names are interned by V8 (one copy for every object with that key), so a property
// costs its slot; strings are one byte a character when they are ASCII (ids, amounts, codes).
const objectBytes = 32;
const propertyBytes = 8;
const arrayBytes = 32;
const elementBytes = 8;
const numberBytes = 16;
const stringHeaderBytes = 16;

/**
 * Bytes an already-encoded state (plain JSON data: what a behaviour's `encode` returns) takes once
 * decoded, estimated from its shape: strings by length, objects and arrays by their slots.
 */
export function estimateJsonBytes(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return elementBytes;
  if (typeof value === 'number' || typeof value === 'bigint') return numberBytes;
  if (typeof value === 'string') return stringHeaderBytes + value.length;
  if (Array.isArray(value)) {
    let bytes = arrayBytes;
    for (const item of value) bytes += elementBytes + estimateJsonBytes(item);
    return bytes;
  }
  if (typeof value === 'object') {
    let bytes = objectBytes;
    for (const item of Object.values(value as Record<string, unknown>)) {
      bytes += propertyBytes + estimateJsonBytes(item);
    }
    return bytes;
  }
  return elementBytes;
}

/** The share of the V8 heap limit that actors may fill by default: the rest is the process's own. */
export const actorHeapShare = 0.4;

/**
 * The byte cap for actors in memory: `configuredBytes` when set (`SHARD_ACTOR_MEMORY_MAX_BYTES`),
 * else a share of the heap limit the process runs under (`--max-old-space-size`, which the
 * manifests set from the container's memory limit).
 */
export function actorBytesCap(heapLimitBytes: number, configuredBytes?: number): number {
  if (configuredBytes !== undefined && Number.isFinite(configuredBytes) && configuredBytes > 0) return Math.floor(configuredBytes);
  return Math.floor(heapLimitBytes * actorHeapShare);
}
