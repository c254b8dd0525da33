// A typed-enough client of the admin service: one promise-returning call per RPC, with the ops key
// in metadata. Used by the CLI (admin-cli.ts) and the tests. Over TLS, trusting only the CA it is
// given; plaintext only to a loopback address (a development service with ADMIN_TLS=off), so the
// ops key never crosses a network in clear.
import { Metadata, type ChannelCredentials, type ChannelOptions, type Client, type ServiceError } from '@grpc/grpc-js';
import { channelCredentials, type ClientTls } from './link-security.ts';
import { loadProto, lookup } from './proto.ts';

type Unary = (request: Record<string, unknown>, metadata: Metadata, options: { deadline: number }, callback: (error: ServiceError | null, reply: Record<string, unknown>) => void) => void;

export interface AdminClient {
  call(method: string, request?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): void;
}

export interface AdminClientOptions {
  /** TLS with the CA of the admin's certificate (src/grpc/link-security.ts `adminClientTls`), or plaintext to loopback. */
  readonly transport: ClientTls;
  readonly deadlineMs?: number;
}

export function createAdminClient(address: string, opsApiKey: string, options: AdminClientOptions): AdminClient {
  const Constructor = lookup(loadProto('admin.proto'), 'payments.admin.v1.Admin') as new (address: string, creds: ChannelCredentials, options: ChannelOptions) => Client;
  const transport = channelCredentials(address, options.transport);
  const client = new Constructor(address, transport.credentials, transport.options);
  const deadlineMs = options.deadlineMs ?? 10_000;
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
