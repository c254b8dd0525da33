// Which IP addresses a production webhook may be sent to: public unicast only (docs/webhooks.md,
// "Destination URLs"). Pure: no I/O (the caller resolves names and hands us the addresses).
//
// IPv4: everything outside the special-purpose ranges of the IANA registry is public.
// IPv6 is decided on the address's 16 bytes, not its text, because one address has many spellings
// (`::ffff:7f00:1`, `0:0:0:0:0:ffff:127.0.0.1`) and several forms carry an IPv4 address that a
// translator, tunnel or dual stack would reach — a check on the IPv6 ranges alone lets loopback,
// private or metadata addresses through them:
// - IPv4-mapped `::ffff:0:0/96` and NAT64's well-known `64:ff9b::/96`: allowed only when the IPv4
//   address they carry is public;
// - 6to4 `2002::/16` carries an IPv4 address in bytes 2–5: allowed only when that one is public;
// - IPv4-compatible `::/96` (deprecated), IPv4-translated `::ffff:0:0:0/96` (SIIT) and everything
//   else outside the global unicast block `2000::/3` (NAT64 local use, discard, unique and link
//   local, multicast, SRv6, reserved space): refused;
// - inside `2000::/3`: the IETF protocol assignments `2001::/23` (Teredo `2001::/32`, which hides
//   its client's IPv4 address, benchmarking, ORCHID …) and the documentation ranges are refused.
// An address with a zone (`fe80::1%eth0`) or that does not parse is refused.
import { BlockList, isIP } from 'node:net';

// Every IPv4 range that is not the public internet (IANA special-purpose registry).
const blockedV4 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blockedV4.addSubnet(network, prefix, 'ipv4');
}

const ipv6ByteLength = 16;
const hexGroup = /^[0-9a-f]{1,4}$/i;

/** The eight 16-bit groups of one side of `::` (an IPv4 tail counts as two), or null. */
function groupsOf(text: string, allowV4Tail: boolean): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (const [index, part] of parts.entries()) {
    if (allowV4Tail && index === parts.length - 1 && part.includes('.')) {
      if (isIP(part) !== 4) return null;
      const [a = 0, b = 0, c = 0, d = 0] = part.split('.').map(Number);
      groups.push((a << 8) | b, (c << 8) | d);
    } else if (hexGroup.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return null;
    }
  }
  return groups;
}

/** The 16 bytes of an IPv6 address in any valid spelling (no zone), or null. */
export function ipv6Bytes(text: string): Uint8Array | null {
  if (isIP(text) !== 6 || text.includes('%')) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = groupsOf(halves[0] ?? '', halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '', true) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(ipv6ByteLength);
  groups.forEach((group, index) => {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  });
  return bytes;
}

function v4Text(bytes: Uint8Array, offset: number): string {
  return `${bytes[offset] ?? 0}.${bytes[offset + 1] ?? 0}.${bytes[offset + 2] ?? 0}.${bytes[offset + 3] ?? 0}`;
}

function zeros(bytes: Uint8Array, from: number, to: number): boolean {
  return bytes.subarray(from, to).every((byte) => byte === 0);
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((byte, index) => bytes[index] === byte);
}

function isPublicV4(address: string): boolean {
  return !blockedV4.check(address, 'ipv4');
}

/** Public unicast IPv6, by the rules in the header. */
function isPublicV6(bytes: Uint8Array): boolean {
  const first = bytes[0] ?? 0;
  const second = bytes[1] ?? 0;
  const third = bytes[2] ?? 0;
  if (zeros(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return isPublicV4(v4Text(bytes, 12)); // ::ffff:a.b.c.d
  if (zeros(bytes, 0, 12)) return false; // ::a.b.c.d (IPv4-compatible), ::, ::1
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b]) && zeros(bytes, 4, 12)) return isPublicV4(v4Text(bytes, 12)); // 64:ff9b::/96
  if ((first & 0xe0) !== 0x20) return false; // outside 2000::/3
  if (first === 0x20 && second === 0x01 && (third & 0xfe) === 0) return false; // 2001::/23, Teredo included
  if (startsWith(bytes, [0x20, 0x01, 0x0d, 0xb8])) return false; // 2001:db8::/32 documentation
  if (first === 0x3f && second === 0xff && (third & 0xf0) === 0) return false; // 3fff::/20 documentation
  if (first === 0x20 && second === 0x02) return isPublicV4(v4Text(bytes, 2)); // 2002::/16 6to4
  return true;
}

/** True for any address that is not a public unicast address (and for anything that is not an IP). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !isPublicV4(address);
  if (family !== 6) return true;
  const bytes = ipv6Bytes(address);
  return bytes === null || !isPublicV6(bytes);
}
