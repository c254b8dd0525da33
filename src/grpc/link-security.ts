// How our gRPC servers and clients protect what travels: TLS on the admin service, mutual TLS on
// the internal links (payout, chains), plaintext only between two ends on this host's loopback.
// Certificates and keys come from files named in the environment, read once at start (a rotated
// certificate takes a restart); a missing or unreadable file stops start-up naming its variable.
// The internal links may also carry a key of their own (INTERNAL_LINK_KEY, metadata
// `x-internal-link-key`), compared in constant time; it is never the operators' ops key.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { credentials, ServerCredentials, type ChannelCredentials, type ChannelOptions, type Metadata } from '@grpc/grpc-js';
import type { EnvConfig } from '../config/env.ts';
import { addressHost, isLoopbackHost } from '../config/link-binds.ts';

/** How one of our servers listens. */
export type ServerTls =
  | {
      readonly kind: 'tls';
      readonly certPem: Buffer;
      readonly keyPem: Buffer;
      /** Mutual TLS: only clients presenting a certificate signed by this CA get a connection. */
      readonly clientCaPem: Buffer | null;
    }
  | { readonly kind: 'plaintext' };

/** How one of our clients dials. */
export type ClientTls =
  | {
      readonly kind: 'tls';
      /** The CA the server's certificate must chain to (the only one trusted). */
      readonly caPem: Buffer;
      /** This process's identity on a mutual-TLS link. */
      readonly certPem?: Buffer;
      readonly keyPem?: Buffer;
      /** The name expected in the server's certificate when it is not the host dialled. */
      readonly serverName?: string;
    }
  | { readonly kind: 'plaintext' };

export const linkKeyMetadata = 'x-internal-link-key';

/** The credentials to bind `host` with; plaintext on anything but loopback is a bug of ours or a bad configuration. */
export function serverCredentials(host: string, tls: ServerTls): ServerCredentials {
  if (tls.kind === 'plaintext') {
    if (!isLoopbackHost(host)) throw new Error(`refusing to serve gRPC without TLS on ${host}: plaintext is for a loopback bind only`);
    return ServerCredentials.createInsecure();
  }
  return ServerCredentials.createSsl(tls.clientCaPem, [{ private_key: tls.keyPem, cert_chain: tls.certPem }], tls.clientCaPem !== null);
}

/** The credentials (and channel options) to dial `address` with; plaintext only to loopback. */
export function channelCredentials(address: string, tls: ClientTls): { readonly credentials: ChannelCredentials; readonly options: ChannelOptions } {
  if (tls.kind === 'plaintext') {
    const host = addressHost(address);
    if (!isLoopbackHost(host)) throw new Error(`refusing to dial ${host} without TLS: plaintext is for a loopback address only (the key would cross the network in clear)`);
    return { credentials: credentials.createInsecure(), options: {} };
  }
  return {
    credentials: credentials.createSsl(tls.caPem, tls.keyPem ?? null, tls.certPem ?? null),
    options: tls.serverName === undefined ? {} : { 'grpc.ssl_target_name_override': tls.serverName },
  };
}

function readPem(variable: string, path: string | undefined, why: string): Buffer {
  if (path === undefined) throw new Error(`${variable} is required: ${why}`);
  let pem: Buffer;
  try {
    pem = readFileSync(path);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path} (${error instanceof Error && 'code' in error ? String(error.code) : String(error)})`);
  }
  if (!pem.includes('-----BEGIN ')) throw new Error(`${variable}: ${path} is not a PEM file`);
  return pem;
}

type AdminServerEnv = Pick<EnvConfig, 'ADMIN_TLS' | 'ADMIN_TLS_CERT_FILE' | 'ADMIN_TLS_KEY_FILE'>;
type InternalEnv = Pick<EnvConfig, 'INTERNAL_TLS' | 'INTERNAL_TLS_CA_FILE' | 'INTERNAL_TLS_CERT_FILE' | 'INTERNAL_TLS_KEY_FILE' | 'INTERNAL_TLS_SERVER_NAME'>;

/** The admin service: its certificate (operators authenticate with the ops key inside the TLS). */
export function adminServerTls(env: AdminServerEnv): ServerTls {
  if (!env.ADMIN_TLS) return { kind: 'plaintext' };
  const why = 'the admin service is served over TLS (or ADMIN_TLS=off for a loopback-only development service)';
  return { kind: 'tls', certPem: readPem('ADMIN_TLS_CERT_FILE', env.ADMIN_TLS_CERT_FILE, why), keyPem: readPem('ADMIN_TLS_KEY_FILE', env.ADMIN_TLS_KEY_FILE, why), clientCaPem: null };
}

function internalIdentity(env: InternalEnv): { readonly caPem: Buffer; readonly certPem: Buffer; readonly keyPem: Buffer } {
  const why = 'the internal links use mutual TLS (or INTERNAL_TLS=off with INTERNAL_LINK_KEY, loopback only, for development)';
  return {
    caPem: readPem('INTERNAL_TLS_CA_FILE', env.INTERNAL_TLS_CA_FILE, why),
    certPem: readPem('INTERNAL_TLS_CERT_FILE', env.INTERNAL_TLS_CERT_FILE, why),
    keyPem: readPem('INTERNAL_TLS_KEY_FILE', env.INTERNAL_TLS_KEY_FILE, why),
  };
}

/** A link server: only a peer with a certificate from the internal CA is let in. */
export function internalServerTls(env: InternalEnv): ServerTls {
  if (!env.INTERNAL_TLS) return { kind: 'plaintext' };
  const identity = internalIdentity(env);
  return { kind: 'tls', certPem: identity.certPem, keyPem: identity.keyPem, clientCaPem: identity.caPem };
}

/** A link client: trusts the internal CA only and presents this process's certificate. */
export function internalClientTls(env: InternalEnv): ClientTls {
  if (!env.INTERNAL_TLS) return { kind: 'plaintext' };
  const identity = internalIdentity(env);
  return { kind: 'tls', ...identity, ...(env.INTERNAL_TLS_SERVER_NAME === undefined ? {} : { serverName: env.INTERNAL_TLS_SERVER_NAME }) };
}

/**
 * The admin CLI's transport: ADMIN_TLS_CA_FILE (the CA of the admin's certificate; ADMIN_TLS_SERVER_NAME
 * when dialling it under another name, e.g. through a port-forward), or ADMIN_TLS=off for a
 * development service on loopback. Neither: refused, rather than sending the ops key in clear.
 */
export function adminClientTls(env: Readonly<Record<string, string | undefined>>): ClientTls {
  const plaintext = env.ADMIN_TLS === 'off' || env.ADMIN_TLS === '0' || env.ADMIN_TLS === 'false';
  const caFile = env.ADMIN_TLS_CA_FILE;
  if (caFile !== undefined && caFile !== '') {
    if (plaintext) throw new Error('ADMIN_TLS=off and ADMIN_TLS_CA_FILE contradict each other: unset one');
    const serverName = env.ADMIN_TLS_SERVER_NAME;
    return { kind: 'tls', caPem: readPem('ADMIN_TLS_CA_FILE', caFile, ''), ...(serverName === undefined || serverName === '' ? {} : { serverName }) };
  }
  if (plaintext) return { kind: 'plaintext' };
  throw new Error('ADMIN_TLS_CA_FILE must name the CA of the admin service’s certificate (or ADMIN_TLS=off for a development service on loopback)');
}

/** Constant time (both sides hashed to 32 bytes first, so lengths do not leak either). */
function sameSecret(expected: string, presented: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(expected), digest(presented));
}

/** True when no link key is configured, or the call presents it. */
export function linkKeyAccepted(expected: string | undefined, metadata: Metadata): boolean {
  if (expected === undefined) return true;
  const presented = metadata.get(linkKeyMetadata)[0];
  return typeof presented === 'string' && sameSecret(expected, presented);
}
