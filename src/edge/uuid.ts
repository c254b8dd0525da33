// Random (version 4) UUIDs for the ids the edge draws on every request: the request id, and the
// quote or transaction id and command id. The randomness is crypto.randomUUID's: the OS CSPRNG
// through randomFillSync, drawn in batches. What differs is the text: Node's randomUUID
// concatenates about thirty pieces per id (garbage the edge made three times per quote); here the
// 36 characters are written into one buffer and read out as one string.
import { randomFillSync } from 'node:crypto';

const bytesPerUuid = 16;
const uuidsPerBatch = 256;
const entropy = Buffer.alloc(bytesPerUuid * uuidsPerBatch);
/** Next unused byte of `entropy`; at the end means the batch is spent (it starts spent). */
let entropyOffset = entropy.length;

const hexDigits = Buffer.from('0123456789abcdef', 'latin1');
/** Where the two hex digits of each of the 16 bytes go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`. */
const digitOffsets = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34] as const;
const text = Buffer.alloc(36, 0x2d); // '-' where no digit is written

/** A random UUID, e.g. `0b5e9f3c-2d4a-4c1e-9a7b-5f3e2d1c0b9a` (lower-case, RFC 9562 version 4). */
export function randomUuid(): string {
  if (entropyOffset === entropy.length) {
    randomFillSync(entropy);
    entropyOffset = 0;
  }
  const start = entropyOffset;
  entropyOffset += bytesPerUuid;
  for (let index = 0; index < bytesPerUuid; index += 1) {
    let byte = entropy[start + index] ?? 0;
    if (index === 6) byte = (byte & 0x0f) | 0x40; // version 4
    else if (index === 8) byte = (byte & 0x3f) | 0x80; // variant 10xx
    const at = digitOffsets[index] ?? 0;
    text[at] = hexDigits[byte >> 4] ?? 0;
    text[at + 1] = hexDigits[byte & 0x0f] ?? 0;
  }
  return text.toString('latin1');
}
