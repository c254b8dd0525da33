// The transaction reference: standard Base64 (RFC 4648 §4, with padding) of the 16 bytes of the
// transaction id. 16 bytes → 24 characters ending in "==", which fits a Stellar text memo
// (28 bytes). It is written by hand: src/domain has no Buffer.
//
// Reading is strict: only the exact text we would have produced maps back to an id. Wrong length,
// characters outside the standard alphabet (including URL-safe '-' and '_'), missing padding and
// non-canonical encodings (non-zero bits in the last character's unused low bits) all give null,
// so one id has exactly one reference and a memo can be matched by plain string equality.
import { uuidFromBytes, uuidToBytes, uuidByteLength } from './ids.ts';

export const transactionReferenceLength = 24;

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function sextetOf(character: string): number {
  return alphabet.indexOf(character); // −1 when not in the alphabet ('=' included)
}

function encodeBase64(bytes: Uint8Array): string {
  let text = '';
  for (let index = 0; index < bytes.length; index += 3) {
    const first = bytes[index] ?? 0;
    const second = bytes[index + 1];
    const third = bytes[index + 2];
    const group = (first << 16) | ((second ?? 0) << 8) | (third ?? 0);
    text += alphabet[(group >> 18) & 63];
    text += alphabet[(group >> 12) & 63];
    text += second === undefined ? '=' : alphabet[(group >> 6) & 63];
    text += third === undefined ? '=' : alphabet[group & 63];
  }
  return text;
}

/** The Base64 reference (Stellar memo) of a canonical transaction id. */
export function transactionReference(transactionId: string): string {
  const reference = encodeBase64(uuidToBytes(transactionId));
  if (reference.length !== transactionReferenceLength) {
    throw new Error(`reference invariant violated: length ${reference.length}`);
  }
  return reference;
}

/** The transaction id a reference encodes, or null when `reference` is not exactly one we issue. */
export function transactionIdFromReference(reference: unknown): string | null {
  if (typeof reference !== 'string' || reference.length !== transactionReferenceLength) return null;
  if (!reference.endsWith('==')) return null;
  const bytes = new Uint8Array(uuidByteLength);
  let byteIndex = 0;
  let buffer = 0;
  let bufferedBits = 0;
  for (const character of reference.slice(0, transactionReferenceLength - 2)) {
    const sextet = sextetOf(character);
    if (sextet < 0) return null;
    buffer = ((buffer << 6) | sextet) & 0xfff;
    bufferedBits += 6;
    if (bufferedBits >= 8) {
      bufferedBits -= 8;
      bytes[byteIndex] = (buffer >> bufferedBits) & 0xff;
      byteIndex += 1;
    }
  }
  // 22 characters carry 132 bits: 128 of data and 4 that a canonical encoder leaves at zero.
  if (byteIndex !== uuidByteLength || bufferedBits !== 4 || (buffer & 0x0f) !== 0) return null;
  return uuidFromBytes(bytes);
}
