// Which webhook destinations we send to (docs/webhooks.md, "Destination URLs").
// - Only http and https; no credentials in the URL; at most 2,048 characters.
// - Production mode: https on port 443 only, and never to a private, loopback, link-local or
//   otherwise non-public address, in any IPv6 form that carries one (address-policy.ts). Checked
//   when a URL is staged (literal addresses, `localhost`) and again at every delivery, where the
//   host is resolved, EVERY address is checked, and the connection is made to the checked address
//   (no second lookup an attacker's DNS could answer differently). Port 443 only: a destination is
//   a web server, and any other port would let a webhook reach another service on a public host
//   (SMTP, Redis, SSH) with our body and secret; a partner on another port puts 443 in front.
// - Sandbox mode: anything http/https, so a partner can test against a local receiver.
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { isBlockedAddress } from './address-policy.ts';

export const destinationUrlCharsMax = 2_048;

export interface UrlPolicyMode {
  readonly sandbox: boolean;
}

export type UrlCheck = { readonly ok: true; readonly url: URL } | { readonly ok: false; readonly reason: string };

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
    // URL drops the scheme's default port, so an explicit `:443` reads as ''.
    if (url.port !== '') return { ok: false, reason: 'Only port 443 (https) is accepted outside sandbox mode' };
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

export { hostnameOf, isBlockedAddress };
