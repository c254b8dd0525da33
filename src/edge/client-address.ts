// Who the client of a request is, for per-address limits and logs. Pure: no I/O.
//
// The TCP peer is the client, unless the peer is one of the operator's proxies (TRUSTED_PROXIES, a
// CIDR list; empty by default). Only then is `X-Forwarded-For` read, from the right: each proxy
// appends the address it received the request from, so the rightmost entries were written by our
// own proxies and the first entry (from the right) that is not a trusted proxy is the client. Any
// entry further left was written by the client itself and proves nothing. An entry that is not an
// address stops the walk: the last trusted hop is then taken as the client (the proxy's own
// bucket), never the garbage. Without trusted proxies the header is ignored entirely, so a client
// cannot pick the address its failures are counted under.
import { cidrContains, formatIp, parseIp, type Cidr, type IpBytes } from '../domain/ip-address.ts';

/** Entries of `X-Forwarded-For` looked at, from the right (a chain of proxies is short). */
export const forwardedHopsMax = 16;

export interface ClientAddressResolver {
  /** The client's address (canonical text) for a request from `peer` with this `X-Forwarded-For`. */
  resolve(peer: string, forwardedFor: string | undefined): string;
}

function isTrusted(trusted: readonly Cidr[], address: IpBytes): boolean {
  return trusted.some((cidr) => cidrContains(cidr, address));
}

export function createClientAddressResolver(trustedProxies: readonly Cidr[]): ClientAddressResolver {
  const trusted = [...trustedProxies];
  return {
    resolve(peer, forwardedFor) {
      const peerBytes = parseIp(peer);
      if (peerBytes === null) return peer;
      if (trusted.length === 0 || forwardedFor === undefined || !isTrusted(trusted, peerBytes)) return formatIp(peerBytes);
      let client = peerBytes;
      const hops = forwardedFor.split(',');
      for (let index = hops.length - 1; index >= 0 && index >= hops.length - forwardedHopsMax; index -= 1) {
        const hop = parseIp(hops[index] ?? '');
        if (hop === null) break;
        client = hop;
        if (!isTrusted(trusted, hop)) break;
      }
      return formatIp(client);
    },
  };
}
