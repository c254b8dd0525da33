// UUID text and bytes, pure. Our ids are canonical lowercase UUID text (8-4-4-4-12 hex digits);
// the shell draws the randomness and passes it in, so the domain stays deterministic.
// Version and variant bits are not checked when reading: any 128-bit value in canonical text is an
// id we can address, and the transaction reference round-trips all of them.

export const uuidByteLength = 16;
export const uuidTextLength = 36;

const canonicalUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const anyCaseUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`ids invariant violated: ${what}`);
}

/** True for lowercase 8-4-4-4-12 hex text: the only form our ids are stored and compared in. */
export function isCanonicalUuid(text: unknown): text is string {
  return typeof text === 'string' && canonicalUuid.test(text);
}

/**
 * Read a UUID from outside (a path parameter, a request body): 8-4-4-4-12 hex digits in either
 * case, returned in canonical lowercase; null for anything else (braces, URNs, missing hyphens).
 */
export function parseUuid(text: unknown): string | null {
  if (typeof text !== 'string' || !anyCaseUuid.test(text)) return null;
  return text.toLowerCase();
}

/** The 16 bytes of a canonical UUID, most significant first. */
export function uuidToBytes(uuid: string): Uint8Array {
  assert(isCanonicalUuid(uuid), `not a canonical uuid: ${JSON.stringify(uuid)}`);
  const hex = uuid.replaceAll('-', '');
  const bytes = new Uint8Array(uuidByteLength);
  for (let index = 0; index < uuidByteLength; index += 1) {
    bytes[index] = Number.parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  }
  return bytes;
}

/** Canonical lowercase UUID text of 16 bytes. */
export function uuidFromBytes(bytes: Uint8Array): string {
  assert(bytes.length === uuidByteLength, `uuid needs ${uuidByteLength} bytes, got ${bytes.length}`);
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * A version-4 UUID from 16 random bytes the caller drew (RFC 9562 §5.4: version nibble 4,
 * variant bits 10). The input is not modified.
 */
export function uuidV4FromRandomBytes(randomBytes: Uint8Array): string {
  assert(randomBytes.length === uuidByteLength, `uuid v4 needs ${uuidByteLength} random bytes`);
  const bytes = Uint8Array.from(randomBytes);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  return uuidFromBytes(bytes);
}
