// Where the admin service and the internal links may run without TLS: only where nobody but this
// host can reach them. Pure checks of the environment (no I/O, no name resolution), run by readEnv
// so that a plaintext service on a reachable interface, or a plaintext client dialling another
// host, stops start-up with a message naming the variable (docs/security.md, "Internal links and
// the admin service").
import { isIP } from 'node:net';

/**
 * True for an address only this host can reach: IPv4 127.0.0.0/8, IPv6 ::1 (also as
 * ::ffff:127.x.y.z) and the name `localhost`. No other name counts: it would take a DNS lookup
 * (and trust in its answer) to know where it points.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost') return true;
  if (isIP(lower) === 4) return lower.startsWith('127.');
  if (isIP(lower) === 6) return lower === '::1' || lower === '0:0:0:0:0:0:0:1' || (lower.startsWith('::ffff:127.') && isIP(lower.slice(7)) === 4);
  return false;
}

/** The host part of a `host:port` address (`[v6]:port` too); the whole text when there is no port. */
export function addressHost(address: string): string {
  if (address.startsWith('[')) {
    const end = address.indexOf(']');
    return end > 0 ? address.slice(1, end) : address;
  }
  const colon = address.lastIndexOf(':');
  // More than one colon and no brackets: a bare IPv6 address without a port.
  return colon > 0 && address.indexOf(':') === colon ? address.slice(0, colon) : address;
}

/** The part of the environment the checks read. */
export interface LinkBindsEnv {
  readonly ADMIN_HOST: string;
  readonly ADMIN_TLS: boolean;
  readonly ADMIN_TLS_CERT_FILE?: string | undefined;
  readonly ADMIN_TLS_KEY_FILE?: string | undefined;
  readonly INTERNAL_HOST: string;
  readonly INTERNAL_TLS: boolean;
  readonly INTERNAL_LINK_KEY?: string | undefined;
  readonly OPS_API_KEY?: string | undefined;
  readonly PAYOUT_GRPC_URL?: string | undefined;
  readonly CHAINS_GRPC_URL?: string | undefined;
}

export interface LinkBindsIssue {
  /** The variable to change. */
  readonly variable: string;
  readonly message: string;
}

/**
 * What is wrong with how the admin service and the internal links would be exposed. Checked for
 * every role (one environment file is often shared by every role of a host): a combination that is
 * unsafe for one role is a mistake for all of them.
 */
export function linkBindsIssues(env: LinkBindsEnv): LinkBindsIssue[] {
  const issues: LinkBindsIssue[] = [];
  if (!env.ADMIN_TLS) {
    if (!isLoopbackHost(env.ADMIN_HOST)) {
      issues.push({ variable: 'ADMIN_HOST', message: `ADMIN_TLS=off serves the ops key in clear: bind a loopback address (127.0.0.1), or turn TLS on (ADMIN_TLS_CERT_FILE, ADMIN_TLS_KEY_FILE)` });
    }
    if (env.ADMIN_TLS_CERT_FILE !== undefined || env.ADMIN_TLS_KEY_FILE !== undefined) {
      issues.push({ variable: 'ADMIN_TLS', message: 'is off but certificate files are given: set ADMIN_TLS=on (or remove ADMIN_TLS_CERT_FILE/ADMIN_TLS_KEY_FILE)' });
    }
  }
  if (!env.INTERNAL_TLS) {
    if (!isLoopbackHost(env.INTERNAL_HOST)) {
      issues.push({ variable: 'INTERNAL_HOST', message: 'INTERNAL_TLS=off serves the internal links in clear: bind a loopback address (127.0.0.1), or turn mutual TLS on (INTERNAL_TLS_CA_FILE, _CERT_FILE, _KEY_FILE)' });
    }
    for (const variable of ['PAYOUT_GRPC_URL', 'CHAINS_GRPC_URL'] as const) {
      const address = env[variable];
      if (address !== undefined && !isLoopbackHost(addressHost(address))) {
        issues.push({ variable, message: `INTERNAL_TLS=off would send the link credential in clear to ${addressHost(address)}: only a loopback address may be dialled without TLS` });
      }
    }
    if (env.INTERNAL_LINK_KEY === undefined) {
      issues.push({ variable: 'INTERNAL_LINK_KEY', message: 'is required with INTERNAL_TLS=off: without a client certificate it is the links’ only credential' });
    }
  }
  if (env.INTERNAL_LINK_KEY !== undefined && env.INTERNAL_LINK_KEY === env.OPS_API_KEY) {
    issues.push({ variable: 'INTERNAL_LINK_KEY', message: 'must differ from OPS_API_KEY: the operators’ key never opens an internal link' });
  }
  return issues;
}
