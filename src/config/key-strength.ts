// How strong a configured key or secret is, estimated from the string alone. Pure: no I/O.
//
// The service cannot know how a key was made, so it estimates an upper bound of its entropy as if
// each character had been drawn at random from the alphabet of the character classes it uses:
//
//   bits = length × log2(alphabet)
//
// where the alphabet is the sum of the classes present: lower-case letters 26, upper-case letters
// 26, digits 10, other visible ASCII 33 (anything else, e.g. non-ASCII, also counts in this last
// class). Two refinements keep the estimate honest for the usual shapes:
// - a hex string (digits and a–f only, or digits and A–F only) counts 16, not 36: that is what
//   `openssl rand -hex` writes, and its real entropy is 4 bits a character;
// - a string made of a shorter unit repeated (`abcabcabc…`, `aaaa…`) counts only that unit.
// So 32 random hex characters are 128 bits (the minimum); `openssl rand -hex 32` (256 bits) and
// `openssl rand -base64 32` (≈ 264) pass easily; a 16-character key of letters and digits (≈ 95)
// or a placeholder such as `replace-me` does not. The estimate catches short, single-class and
// repeated keys; it cannot tell a random key from a long memorable phrase, so operators must still
// generate keys with a CSPRNG (docs/security.md).

/** The least estimated entropy a configured key or secret must have. */
export const keyBitsMin = 128;

const lowerCase = /[a-z]/;
const upperCase = /[A-Z]/;
const digit = /[0-9]/;
const other = /[^a-zA-Z0-9]/;
const lowerHex = /^[0-9a-f]+$/;
const upperHex = /^[0-9A-F]+$/;

/**
 * The length of the shortest unit the text repeats, when it repeats one at least twice
 * (`abcabcab` → 3); otherwise the whole length. Prefix function (Knuth–Morris–Pratt).
 */
function repeatedUnitLength(characters: readonly string[]): number {
  const length = characters.length;
  if (length < 2) return length;
  const border = new Array<number>(length).fill(0);
  for (let index = 1; index < length; index += 1) {
    let candidate = border[index - 1] ?? 0;
    while (candidate > 0 && characters[index] !== characters[candidate]) candidate = border[candidate - 1] ?? 0;
    if (characters[index] === characters[candidate]) candidate += 1;
    border[index] = candidate;
  }
  const period = length - (border[length - 1] ?? 0);
  // A random string has a short border now and then (its last character equals its first); only a
  // period that fits at least twice is a repetition.
  return period * 2 <= length ? period : length;
}

function alphabetSize(text: string): number {
  if (lowerHex.test(text) || upperHex.test(text)) return 16;
  let size = 0;
  if (lowerCase.test(text)) size += 26;
  if (upperCase.test(text)) size += 26;
  if (digit.test(text)) size += 10;
  if (other.test(text)) size += 33;
  return size;
}

/** Estimated entropy of `text` in bits (see the header); 0 for an empty text. */
export function estimatedKeyBits(text: string): number {
  const characters = [...text];
  if (characters.length === 0) return 0;
  const unitLength = repeatedUnitLength(characters);
  return Math.floor(unitLength * Math.log2(alphabetSize(text)));
}

export type KeyStrength = { readonly ok: true; readonly bits: number } | { readonly ok: false; readonly bits: number; readonly reason: string };

/**
 * Whether `text` is strong enough to be a key or secret. The reason names `label` and the
 * estimate, never the value itself.
 */
export function checkKeyStrength(label: string, text: string, bitsMin: number = keyBitsMin): KeyStrength {
  const bits = estimatedKeyBits(text);
  if (bits >= bitsMin) return { ok: true, bits };
  return {
    ok: false,
    bits,
    reason:
      `${label} is too weak: about ${bits} bits of entropy estimated, at least ${bitsMin} needed ` +
      `(length × log2 of its character classes' alphabet); use a random key, e.g. \`openssl rand -hex 32\``,
  };
}
