// Which webhook destinations we send to (docs/webhooks.md, "Destination URLs").
// - Only http and https; no credentials in the URL; at most 2,048 characters.
// - Production mode: https only, and never to a private, loopback, link-local or otherwise
//   non-public address. Checked when a URL is staged (literal addresses, `localhost`) and again at
//   every delivery, where the host is resolved, EVERY address is checked, and the connection is
//   made to the checked address (no second lookup an attacker's DNS could answer differently).
// - Sandbox mode: anything http/https, so a partner can test against a local receiver.
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

export const destinationUrlCharsMax = 2_048;

export interface UrlPolicyMode {
  readonly sandbox: boolean;
}

export type UrlCheck = { readonly ok: true; readonly url: URL } | { readonly ok: false; readonly reason: string };

// Every range that is not the public internet (IANA special-purpose registries).
const blocked = new BlockList();
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
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address embedded in an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  for (const prefix of ['::ffff:', '64:ff9b::']) {
    if (!lower.startsWith(prefix)) continue;
    const rest = lower.slice(prefix.length);
    if (isIP(rest) === 4) return rest;
    const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest);
    if (hex?.[1] !== undefined && hex[2] !== undefined) {
      const high = parseInt(hex[1], 16);
      const low = parseInt(hex[2], 16);
      return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
    }
  }
  return null;
}

/** True for any address that is not a public unicast address (and for anything that is not an IP). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== null) return blocked.check(v4, 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true;
}

function hostnameOf(url: URL): string {
  // URL keeps brackets around IPv6 literals.
  return url.hostname.startsWith('[') && url.hostname.endsWith(']') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Syntax and static policy: what can be decided without DNS (used when staging a URL and before each delivery). */
export function checkDestinationUrl(text: string, mode: UrlPolicyMode): UrlCheck {
  if (typeof text !== 'string' || text.length === 0) return { ok: false, reason: 'The URL is empty' };
  if (text.length > destinationUrlCharsMax) return { ok: false, reason: `The URL is longer than ${destinationUrlCharsMax} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'The URL is not a valid absolute URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'Only http and https URLs are accepted' };
  if (!mode.sandbox && url.protocol !== 'https:') return { ok: false, reason: 'Only https URLs are accepted outside sandbox mode' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'The URL must not carry credentials' };
  const host = hostnameOf(url);
  if (host.length === 0) return { ok: false, reason: 'The URL has no host' };
  if (!mode.sandbox) {
    const lower = host.toLowerCase().replace(/\.$/, '');
    if (lower === 'localhost' || lower.endsWith('.localhost')) return { ok: false, reason: 'The URL points at this machine' };
    if (isIP(host) !== 0 && isBlockedAddress(host)) return { ok: false, reason: 'The URL points at a private or reserved address' };
  }
  url.hash = '';
  return { ok: true, url };
}

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

export class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError';
}

/** Most addresses we accept from one lookup (all are checked). */
const resolvedAddressesMax = 32;

/**
 * Resolves `host` and checks every address (production). Throws BlockedAddressError when any
 * address is not public (a host that resolves to one private address is refused even if others
 * are public: we cannot choose safely), or the lookup's own error.
 */
export async function resolveCheckedAddresses(host: string, mode: UrlPolicyMode): Promise<ResolvedAddress[]> {
  const literal = isIP(host);
  const addresses: ResolvedAddress[] =
    literal !== 0
      ? [{ address: host, family: literal === 4 ? 4 : 6 }]
      : (await lookup(host, { all: true, verbatim: true })).slice(0, resolvedAddressesMax).map((entry) => ({
          address: entry.address,
          family: entry.family === 6 ? 6 : 4,
        }));
  if (addresses.length === 0) throw new Error('no address');
  if (!mode.sandbox && addresses.some((entry) => isBlockedAddress(entry.address))) {
    throw new BlockedAddressError('destination resolves to a non-public address');
  }
  return addresses;
}

export { hostnameOf };
