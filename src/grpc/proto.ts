// Loads our .proto files (proto/) with @grpc/proto-loader; one place for the loader options so
// servers and clients agree: field names as written, 64-bit integers as strings, defaults filled.
import { loadPackageDefinition, ServerCredentials, type GrpcObject, type Server } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { join } from 'node:path';

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
 * Binds `server` (insecure: the links run on a private network, authenticated by the ops key) and
 * returns its port and a stop that is graceful first, cancelling calls still running after `graceMs`.
 */
export async function listenGrpc(server: Server, host: string, port: number, graceMs = 5_000): Promise<ListeningGrpc> {
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
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
