// A typed-enough client of the admin service: one promise-returning call per RPC, with the ops key
// in metadata. Used by the CLI (admin-cli.ts) and the tests.
import { credentials, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadProto, lookup } from './proto.ts';

type Unary = (request: Record<string, unknown>, metadata: Metadata, options: { deadline: number }, callback: (error: ServiceError | null, reply: Record<string, unknown>) => void) => void;

export interface AdminClient {
  call(method: string, request?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): void;
}

export function createAdminClient(address: string, opsApiKey: string, deadlineMs = 10_000): AdminClient {
  const Constructor = lookup(loadProto('admin.proto'), 'payments.admin.v1.Admin') as new (address: string, creds: ReturnType<typeof credentials.createInsecure>) => Client;
  const client = new Constructor(address, credentials.createInsecure());
  return {
    call(method, request = {}) {
      const unary = (client as unknown as Record<string, Unary | undefined>)[method];
      if (typeof unary !== 'function') return Promise.reject(new Error(`unknown admin method ${method}`));
      const metadata = new Metadata();
      metadata.set('x-ops-api-key', opsApiKey);
      return new Promise((resolve, reject) => {
        unary.call(client, request, metadata, { deadline: Date.now() + deadlineMs }, (error, reply) => (error ? reject(error) : resolve(reply)));
      });
    },
    close: () => client.close(),
  };
}
