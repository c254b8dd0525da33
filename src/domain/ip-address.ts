// IP addresses as bytes: parsing (IPv4 dotted quads; IPv6 in full, compressed or with an IPv4
// tail, as uWS and proxies write them), CIDR ranges, and the key a per-address bucket is kept
// under. Pure: no I/O.
//
// Bucket keys: an IPv4 address is its own key; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what
// a dual-stack socket reports for an IPv4 peer) is the IPv4 address; any other IPv6 address is
// keyed by its /64. One host or one customer of an ISP usually holds a whole /64 (2^64
// addresses), so a bucket per IPv6 address would let anyone step around a limit by counting up.

export type IpBytes = Uint8Array;

export interface Cidr {
  /** 4 or 16 bytes, with the bits beyond `prefixBits` cleared. */
  readonly bytes: IpBytes;
  readonly prefixBits: number;
}

/** Longest text we try to read as an address (a full IPv6 address with an IPv4 tail is 45). */
const addressCharsMax = 64;
const ipv4Pattern = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const hexGroupPattern = /^[0-9A-Fa-f]{1,4}$/;

function parseIpv4(text: string): IpBytes | null {
  const match = ipv4Pattern.exec(text);
  if (match === null) return null;
  const bytes = new Uint8Array(4);
  for (let index = 0; index < 4; index += 1) {
    const part = match[index + 1] ?? '';
    // No leading zeros: `010` is octal to some parsers and decimal to others.
    if (part.length > 1 && part.startsWith('0')) return null;
    const value = Number(part);
    if (value > 255) return null;
    bytes[index] = value;
  }
  return bytes;
}

/** The 16-bit groups of one side of `::` (an IPv4 tail counts as two groups); null when malformed. */
function ipv6Groups(text: string, allowIpv4Tail: boolean): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (const [index, part] of parts.entries()) {
    if (allowIpv4Tail && index === parts.length - 1 && part.includes('.')) {
      const tail = parseIpv4(part);
      if (tail === null) return null;
      groups.push(((tail[0] ?? 0) << 8) | (tail[1] ?? 0), ((tail[2] ?? 0) << 8) | (tail[3] ?? 0));
      continue;
    }
    if (!hexGroupPattern.test(part)) return null;
    groups.push(Number.parseInt(part, 16));
  }
  return groups;
}

function parseIpv6(text: string): IpBytes | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;
  const head = ipv6Groups(halves[0] ?? '', !compressed);
  const tail = compressed ? ipv6Groups(halves[1] ?? '', true) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (compressed ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, index) => {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  });
  return bytes;
}

/**
 * The bytes of an IPv4 or IPv6 address, or null when the text is not one. An IPv6 zone (`%eth0`)
 * and surrounding brackets are dropped; an IPv4-mapped IPv6 address becomes its 4 IPv4 bytes.
 */
export function parseIp(text: string): IpBytes | null {
  let candidate = text.trim();
  if (candidate.length === 0 || candidate.length > addressCharsMax) return null;
  if (candidate.startsWith('[') && candidate.endsWith(']')) candidate = candidate.slice(1, -1);
  const zone = candidate.indexOf('%');
  if (zone >= 0) candidate = candidate.slice(0, zone);
  const bytes = candidate.includes(':') ? parseIpv6(candidate) : parseIpv4(candidate);
  return bytes === null ? null : unmapIpv4(bytes);
}

/** `::ffff:a.b.c.d` → `a.b.c.d` (4 bytes); anything else unchanged. */
function unmapIpv4(bytes: IpBytes): IpBytes {
  if (bytes.length !== 16) return bytes;
  for (let index = 0; index < 10; index += 1) if (bytes[index] !== 0) return bytes;
  if (bytes[10] !== 0xff || bytes[11] !== 0xff) return bytes;
  return bytes.slice(12);
}

function hexGroup(bytes: IpBytes, group: number): string {
  return (((bytes[group * 2] ?? 0) << 8) | (bytes[group * 2 + 1] ?? 0)).toString(16);
}

/** Canonical text: dotted quad, or eight lower-case hex groups (uncompressed; for logs and keys). */
export function formatIp(bytes: IpBytes): string {
  if (bytes.length === 4) return Array.from(bytes).join('.');
  return Array.from({ length: 8 }, (_, group) => hexGroup(bytes, group)).join(':');
}

/** The per-address bucket key of an address (see the header); the raw text when it is not an address. */
export function addressBucketKey(address: string): string {
  const bytes = parseIp(address);
  if (bytes === null) return address.slice(0, addressCharsMax);
  if (bytes.length === 4) return formatIp(bytes);
  return `${Array.from({ length: 4 }, (_, group) => hexGroup(bytes, group)).join(':')}::/64`;
}

function clearHostBits(bytes: IpBytes, prefixBits: number): IpBytes {
  const masked = Uint8Array.from(bytes);
  for (let bit = prefixBits; bit < masked.length * 8; bit += 1) {
    const index = bit >> 3;
    masked[index] = (masked[index] ?? 0) & ~(0x80 >> (bit & 7));
  }
  return masked;
}

/** `10.0.0.0/8`, `2001:db8::/32`, or one address (a /32 or /128); null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const [addressText = '', prefixText, ...rest] = text.trim().split('/');
  if (rest.length > 0) return null;
  const bytes = parseIp(addressText);
  if (bytes === null) return null;
  const bitsMax = bytes.length * 8;
  // An IPv4-mapped range (`::ffff:10.0.0.0/104`) is read as the IPv4 range it denotes.
  const mappedOffset = addressText.includes(':') && bytes.length === 4 ? 96 : 0;
  if (prefixText === undefined) return { bytes, prefixBits: bitsMax };
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefixBits = Number(prefixText) - mappedOffset;
  if (prefixBits < 0 || prefixBits > bitsMax) return null;
  return { bytes: clearHostBits(bytes, prefixBits), prefixBits };
}

export function cidrContains(cidr: Cidr, address: IpBytes): boolean {
  if (address.length !== cidr.bytes.length) return false;
  const fullBytes = cidr.prefixBits >> 3;
  for (let index = 0; index < fullBytes; index += 1) if (address[index] !== cidr.bytes[index]) return false;
  const restBits = cidr.prefixBits & 7;
  if (restBits === 0) return true;
  const mask = (0xff << (8 - restBits)) & 0xff;
  return ((address[fullBytes] ?? 0) & mask) === (cidr.bytes[fullBytes] ?? 0);
}

export type CidrListParse = { readonly ok: true; readonly cidrs: readonly Cidr[] } | { readonly ok: false; readonly reason: string };

/** Most ranges in one list (a proxy fleet's subnets, not a database). */
export const cidrListLengthMax = 256;

/** A comma- or space-separated list of CIDR ranges or addresses (empty: none). */
export function parseCidrList(text: string): CidrListParse {
  const entries = text.split(/[\s,]+/).filter((entry) => entry.length > 0);
  if (entries.length > cidrListLengthMax) return { ok: false, reason: `at most ${cidrListLengthMax} ranges` };
  const cidrs: Cidr[] = [];
  for (const entry of entries) {
    const cidr = parseCidr(entry);
    if (cidr === null) return { ok: false, reason: `'${entry.slice(0, addressCharsMax)}' is not an IP address or CIDR range` };
    cidrs.push(cidr);
  }
  return { ok: true, cidrs };
}
