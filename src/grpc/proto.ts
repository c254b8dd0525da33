// Loads our .proto files (proto/) with @grpc/proto-loader; one place for the loader options so
// servers and clients agree: field names as written, 64-bit integers as strings, defaults filled.
import { loadPackageDefinition, type GrpcObject } from '@grpc/grpc-js';
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
