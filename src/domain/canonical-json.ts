// The JSON Canonicalization Scheme (RFC 8785, "JCS"): the one byte sequence a JSON value signs as.
// A settlement receipt is signed over these bytes (src/domain/receipt.ts, docs/receipts.md), so a
// verifier that re-serialises the receipt it parsed gets the very bytes we signed, whatever its
// JSON library did to whitespace or key order.
// The rules, as RFC 8785 §3.2 states them:
// - no whitespace;
// - object members sorted by their names' UTF-16 code units (JavaScript's default string order);
// - strings as ECMAScript's JSON.stringify writes them (RFC 8785 §3.2.2.2 is that algorithm);
// - numbers as ECMAScript's Number.prototype.toString (§3.2.2.3), which JSON.stringify also uses.
// What JCS refuses, this refuses (it is the I-JSON subset, RFC 7493): non-finite numbers, lone
// surrogates in strings or names, duplicate names (impossible in a JavaScript object), and
// anything that is not JSON (undefined, functions, bigint). Receipts hold no numbers but integers:
// money is always a decimal string, so no float formatting question ever reaches a signature.

export class CanonicalJsonError extends Error {
  override readonly name = 'CanonicalJsonError';
}

/** A lone (unpaired) UTF-16 surrogate: not I-JSON, so not canonicalisable. */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function canonicalString(text: string, where: string): string {
  if (loneSurrogate.test(text)) throw new CanonicalJsonError(`${where}: a lone surrogate is not I-JSON`);
  return JSON.stringify(text);
}

function canonicalValue(value: unknown, where: string, depth: number): string {
  if (depth > 64) throw new CanonicalJsonError(`${where}: nested deeper than 64 levels`);
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return canonicalString(value, where);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new CanonicalJsonError(`${where}: ${String(value)} is not a JSON number`);
    // -0 serialises as 0 (RFC 8785 §3.2.2.3); JSON.stringify does the same.
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item, index) => canonicalValue(item, `${where}[${index}]`, depth + 1)).join(',')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const names = Object.keys(record).sort();
    const members = names.map((name) => `${canonicalString(name, where)}:${canonicalValue(record[name], `${where}.${name}`, depth + 1)}`);
    return `{${members.join(',')}}`;
  }
  throw new CanonicalJsonError(`${where}: a ${typeof value} is not JSON`);
}

/** The RFC 8785 text of a JSON value; throws CanonicalJsonError on anything JCS refuses. */
export function canonicalize(value: unknown): string {
  return canonicalValue(value, '$', 0);
}

/** The RFC 8785 bytes (UTF-8) of a JSON value: what a signature covers. */
export function canonicalBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalize(value));
}
