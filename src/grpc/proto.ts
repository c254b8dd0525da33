// Loads our .proto files (proto/) with @grpc/proto-loader; one place for the loader options so
// servers and clients agree: field names as written, 64-bit integers as strings, defaults filled.
import { loadPackageDefinition, type GrpcObject, type Server } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { join } from 'node:path';
import { serverCredentials, type ServerTls } from './link-security.ts';

const protoDir = join(import.meta.dirname, '../../proto');

export function loadProto(file: string): GrpcObject {
  const definition = loadSync(join(protoDir, file), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  return loadPackageDefinition(definition);
}

/** Walks `payments.admin.v1` style paths in a loaded package. */
export function lookup(root: GrpcObject, path: string): unknown {
  let current: unknown = root;
  for (const part of path.split('.')) current = (current as Record<string, unknown>)[part];
  return current;
}

export interface ListeningGrpc {
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Binds `server` on `host:port` with `tls` (TLS, mutual TLS, or plaintext on a loopback host only:
 * src/grpc/link-security.ts) and returns its port and a stop that is graceful first, cancelling
 * calls still running after `graceMs`.
 */
export async function listenGrpc(server: Server, host: string, port: number, tls: ServerTls, graceMs = 5_000): Promise<ListeningGrpc> {
  const credentials = serverCredentials(host, tls);
  // An IPv6 literal needs brackets before the port.
  const bindHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bindHost}:${port}`, credentials, (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
  });
  return {
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
