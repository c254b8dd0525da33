// The watcher role's internal gRPC link (proto/chains.proto): Chains.Notify, Reconcile and
// WatcherStatus. The process that runs the `watcher` role on its own serves it; an edge or admin
// process started apart reaches deposit verification and reconciliation through it
// (`remoteDepositVerifier`, `remoteReconciler`) instead of talking to the chains itself. In `all`
// mode nothing is served: the in-process DepositIntake is used directly.
//
// Authentication (docs/security.md, "Internal links and the admin service"): served on
// INTERNAL_HOST with mutual TLS, so only a process holding a certificate of the internal CA
// connects at all, plus INTERNAL_LINK_KEY in `x-internal-link-key` when one is configured (the only
// credential on a loopback plaintext link). The operators' ops key is not a credential here: every
// call comes from another role, on behalf of a partner the edge authenticated or of an operator the
// admin service or the ops route authenticated (and audited). Transport failures never become
// a 500 at the edge: notify answers `unavailable` (503, retryable), reconcile answers `failed` with a
// generic reason. Provider and chain error texts never travel as a call's status details.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import type { Logger } from 'pino';
import type { ChainServices, WatcherRole } from '../chains/chain-services.ts';
import type { WatcherStatus } from '../chains/chains.ts';
import { isOneOf, networks } from '../domain/assets.ts';
import type { ServiceContext } from '../ports/context.ts';
import type { DepositVerifier, NotifyResult, ReconcileResult, ReconcileResultCode, Reconciler } from '../ports/ports.ts';
import { LinkError, linkCallTimeoutMsDefault, linkMessageBytesMax } from './payout-link.ts';
import { listenGrpc } from './proto.ts';
import { channelCredentials, internalClientTls, internalServerTls, linkKeyAccepted, linkKeyMetadata, type ClientTls } from './link-security.ts';

export { LinkError } from './payout-link.ts';

export const chainsProtoPath = join(import.meta.dirname, '../../proto/chains.proto');
/** HTTP/2 streams one caller may keep open on the link at once; more wait for a slot (within their deadline). */
export const linkConcurrentCallsMax = 512;
/** How long a client waits before reconnecting to a link that went away: short, so a restarted watcher is found fast. */
const reconnectBackoffMsMax = 2_000;
const reasonCharsMax = 300;
const lastErrorCharsMax = 200;

// ---- what travels (field names as in the .proto) ----

interface NotifyRequestMessage {
  blockchain: string;
  on_chain_tx: string;
  transaction_id: string;
  partner_id: string;
}

interface NotifyReplyMessage {
  result: string;
  reason: string;
  mismatched: boolean;
}

interface ReconcileRequestMessage {
  blockchain: string;
  on_chain_tx: string;
  transaction_id: string;
}

interface ReconcileReplyMessage {
  result: string;
  transaction_id: string;
  transaction_status: string;
  reason: string;
}

interface NetworkWatcherMessage {
  network: string;
  state: string;
  cursor: string;
  last_event_at_ms: number;
  reconnects: number;
  last_error: string;
}

interface WatcherStatusReplyMessage {
  watchers: NetworkWatcherMessage[];
}

// ---- the service definition, loaded once ----

let definition: ServiceDefinition | null = null;

function chainsDefinition(): ServiceDefinition {
  if (definition !== null) return definition;
  const loaded = loadSync(chainsProtoPath, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const chains = loaded['payments.chains.v1.Chains'];
  if (chains === undefined || 'format' in chains) throw new Error(`${chainsProtoPath} does not define the Chains service`);
  definition = chains as ServiceDefinition;
  return definition;
}

function method(name: string): MethodDefinition<object, object> {
  const found = chainsDefinition()[name];
  if (found === undefined) throw new Error(`proto method Chains.${name} is missing`);
  return found;
}

// ---- conversions ----

const notifyResults = ['enqueued', 'invalid', 'not_found'] as const;
const reconcileResults: readonly ReconcileResultCode[] = ['alreadyProcessed', 'enqueued', 'unresolved', 'invalid', 'notFound', 'failed'];
const watcherStates: readonly WatcherStatus['state'][] = ['starting', 'streaming', 'reconnecting', 'stale', 'stopped'];

function capped(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function nullIfEmpty(text: string): string | null {
  return text === '' ? null : text;
}

/** A watcher's last error for operators: bounded, and without URLs (a provider URL may carry a key). */
export function safeLastError(error: string | null): string {
  if (error === null) return '';
  return capped(error.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>'), lastErrorCharsMax);
}

function stringField(request: object, name: string): string {
  const value = (request as Record<string, unknown>)[name];
  if (typeof value !== 'string') throw new LinkError(grpc.status.INVALID_ARGUMENT, `${name} must be a string`);
  return value;
}

function notifyReply(result: NotifyResult): NotifyReplyMessage {
  switch (result.result) {
    case 'enqueued':
      return { result: 'enqueued', reason: '', mismatched: result.mismatched === true };
    case 'invalid':
    case 'not_found':
      return { result: result.result, reason: capped(result.reason, reasonCharsMax), mismatched: false };
    case 'unavailable':
      // An in-process verifier has no such answer; if one appears, it is the caller's 503 as well.
      throw new Error('the deposit verifier answered unavailable');
  }
}

function notifyFromReply(reply: NotifyReplyMessage): NotifyResult {
  if (!isOneOf(notifyResults, reply.result)) throw new LinkError(grpc.status.INTERNAL, 'unexpected notify result');
  if (reply.result === 'enqueued') return { result: 'enqueued', mismatched: reply.mismatched === true };
  return { result: reply.result, reason: capped(reply.reason, reasonCharsMax) };
}

function reconcileReply(result: ReconcileResult): ReconcileReplyMessage {
  return {
    result: result.result,
    transaction_id: result.transactionId ?? '',
    transaction_status: result.transactionStatus ?? '',
    reason: result.reason === null ? '' : capped(result.reason, reasonCharsMax),
  };
}

function reconcileFromReply(reply: ReconcileReplyMessage): ReconcileResult {
  if (!isOneOf(reconcileResults, reply.result)) throw new LinkError(grpc.status.INTERNAL, 'unexpected reconcile result');
  return {
    result: reply.result,
    transactionId: nullIfEmpty(reply.transaction_id),
    transactionStatus: nullIfEmpty(reply.transaction_status),
    reason: reply.reason === '' ? null : capped(reply.reason, reasonCharsMax),
  };
}

function watcherMessage(status: WatcherStatus): NetworkWatcherMessage {
  return {
    network: status.network,
    state: status.state,
    cursor: status.cursor ?? '',
    last_event_at_ms: status.lastEventAtMs ?? 0,
    reconnects: status.reconnects,
    last_error: safeLastError(status.lastError),
  };
}

function watcherFromMessage(message: NetworkWatcherMessage): WatcherStatus | null {
  if (!isOneOf(networks, message.network) || !isOneOf(watcherStates, message.state)) return null;
  return {
    network: message.network,
    state: message.state,
    cursor: nullIfEmpty(message.cursor),
    lastEventAtMs: message.last_event_at_ms === 0 ? null : message.last_event_at_ms,
    reconnects: message.reconnects,
    lastError: nullIfEmpty(message.last_error),
  };
}

// ---- server ----

export interface ChainsLinkCapabilities {
  /** The watcher process's own (in-process) deposit intake. */
  readonly depositVerifier: DepositVerifier;
  readonly reconciler: Reconciler;
  readonly watcherStatus: () => readonly WatcherStatus[];
}

export interface ChainsLinkServerOptions {
  /** Default INTERNAL_HOST. */
  readonly host?: string;
  /** Default CHAINS_GRPC_PORT; 0 picks a free port. */
  readonly port?: number;
}

export interface ChainsLinkServer {
  readonly port: number;
  stop(): Promise<void>;
}

type Handler = (request: object) => Promise<object>;

export async function startChainsLinkServer(
  ctx: Pick<ServiceContext, 'env' | 'log'>,
  capabilities: ChainsLinkCapabilities,
  options: ChainsLinkServerOptions = {},
): Promise<ChainsLinkServer> {
  const log = ctx.log.child({ component: 'chains-link' });
  const linkKey = ctx.env.INTERNAL_LINK_KEY;
  // Read before the server exists: a missing certificate stops start-up naming its variable.
  const tls = internalServerTls(ctx.env);
  const server = new grpc.Server({
    'grpc.max_receive_message_length': linkMessageBytesMax,
    'grpc.max_send_message_length': linkMessageBytesMax,
    'grpc.max_concurrent_streams': linkConcurrentCallsMax,
  });
  const unary =
    (name: string, handler: Handler): grpc.handleUnaryCall<object, object> =>
    (call, callback) => {
      if (!linkKeyAccepted(linkKey, call.metadata)) {
        callback({ code: grpc.status.UNAUTHENTICATED, details: 'a valid internal link key is required' });
        return;
      }
      handler(call.request).then(
        (reply) => callback(null, reply),
        (error: unknown) => {
          if (error instanceof LinkError) {
            callback({ code: error.code, details: error.message });
            return;
          }
          // Provider and internal texts go to our log only.
          log.error({ method: name, error: error instanceof Error ? error.message : String(error) }, 'chains link call failed');
          callback({ code: grpc.status.UNAVAILABLE, details: 'the watcher role could not complete the call' });
        },
      );
    };

  server.addService(chainsDefinition() as unknown as grpc.ServiceDefinition, {
    Notify: unary('Notify', async (request) => {
      const blockchain = stringField(request, 'blockchain');
      const partnerId = stringField(request, 'partner_id');
      if (partnerId === '') throw new LinkError(grpc.status.INVALID_ARGUMENT, 'partner_id is required');
      if (!isOneOf(networks, blockchain)) return notifyReply({ result: 'invalid', reason: 'blockchain must be SOLANA or CELO' });
      const result = await capabilities.depositVerifier.notify({
        partnerId,
        blockchain,
        onChainTx: stringField(request, 'on_chain_tx'),
        transactionId: stringField(request, 'transaction_id'),
      });
      return notifyReply(result);
    }),
    Reconcile: unary('Reconcile', async (request) => {
      const blockchain = stringField(request, 'blockchain');
      const transactionId = nullIfEmpty(stringField(request, 'transaction_id'));
      if (!isOneOf(networks, blockchain)) {
        return reconcileReply({ result: 'invalid', transactionId: null, transactionStatus: null, reason: `blockchain must be one of ${networks.join(', ')}` });
      }
      return reconcileReply(await capabilities.reconciler.reconcile({ blockchain, onChainTx: stringField(request, 'on_chain_tx'), transactionId }));
    }),
    WatcherStatus: unary('WatcherStatus', () => {
      const reply: WatcherStatusReplyMessage = { watchers: capabilities.watcherStatus().map(watcherMessage) };
      return Promise.resolve(reply);
    }),
  });
  const host = options.host ?? ctx.env.INTERNAL_HOST;
  const listening = await listenGrpc(server, host, options.port ?? ctx.env.CHAINS_GRPC_PORT, tls);
  log.info({ host, port: listening.port, tls: tls.kind }, 'chains link listening');
  return listening;
}

// ---- client ----

export interface ChainsLinkClientOptions {
  /** host:port of the watcher role's link (CHAINS_GRPC_URL). */
  readonly address: string;
  /** This process's internal identity and the internal CA (src/grpc/link-security.ts), or plaintext to loopback. */
  readonly transport: ClientTls;
  /** INTERNAL_LINK_KEY, sent with every call when set. Never logged. */
  readonly linkKey?: string;
  /** Deadline of every call; default 5 s. */
  readonly callTimeoutMs?: number;
}

/** The raw link: its methods reject with LinkError on any transport or protocol failure. */
export class ChainsLinkClient {
  private readonly client: grpc.Client;
  private readonly callTimeoutMs: number;

  constructor(private readonly options: ChainsLinkClientOptions) {
    const transport = channelCredentials(options.address, options.transport);
    this.client = new grpc.Client(options.address, transport.credentials, {
      ...transport.options,
      'grpc.max_receive_message_length': linkMessageBytesMax,
      'grpc.max_send_message_length': linkMessageBytesMax,
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': reconnectBackoffMsMax,
    });
    this.callTimeoutMs = options.callTimeoutMs ?? linkCallTimeoutMsDefault;
  }

  get address(): string {
    return this.options.address;
  }

  async notify(request: { readonly partnerId: string; readonly blockchain: string; readonly onChainTx: string; readonly transactionId: string }): Promise<NotifyResult> {
    const reply = await this.call<NotifyRequestMessage, NotifyReplyMessage>('Notify', {
      blockchain: request.blockchain,
      on_chain_tx: request.onChainTx,
      transaction_id: request.transactionId,
      partner_id: request.partnerId,
    });
    return notifyFromReply(reply);
  }

  async reconcile(request: { readonly blockchain: string; readonly onChainTx: string; readonly transactionId: string | null }): Promise<ReconcileResult> {
    const reply = await this.call<ReconcileRequestMessage, ReconcileReplyMessage>('Reconcile', {
      blockchain: request.blockchain,
      on_chain_tx: request.onChainTx,
      transaction_id: request.transactionId ?? '',
    });
    return reconcileFromReply(reply);
  }

  /** The watchers of the watcher process (entries this build does not know are left out). */
  async watcherStatus(): Promise<WatcherStatus[]> {
    const reply = await this.call<Record<string, never>, WatcherStatusReplyMessage>('WatcherStatus', {});
    return (reply.watchers ?? []).map(watcherFromMessage).filter((status): status is WatcherStatus => status !== null);
  }

  close(): void {
    this.client.close();
  }

  private call<Req extends object, Res extends object>(name: string, request: Req): Promise<Res> {
    const definition = method(name);
    const metadata = new grpc.Metadata();
    if (this.options.linkKey !== undefined) metadata.set(linkKeyMetadata, this.options.linkKey);
    return new Promise<Res>((resolve, reject) => {
      this.client.makeUnaryRequest<Req, Res>(
        definition.path,
        (value) => definition.requestSerialize(value),
        (bytes) => definition.responseDeserialize(bytes) as Res,
        request,
        metadata,
        { deadline: Date.now() + this.callTimeoutMs },
        (error, reply) => {
          if (error) reject(new LinkError(error.code, error.details));
          else if (reply === undefined) reject(new LinkError(grpc.status.INTERNAL, 'empty reply'));
          else resolve(reply);
        },
      );
    });
  }
}

type LinkLog = Pick<Logger, 'warn' | 'error'>;

function logLinkFailure(log: LinkLog | undefined, what: string, address: string, error: unknown): void {
  if (log === undefined) return;
  const code = error instanceof LinkError ? error.code : null;
  const fields = { component: 'chains-link', address, code: code === null ? null : grpc.status[code] };
  const text = error instanceof Error ? error.message.slice(0, 300) : String(error);
  // A refused credential or a protocol mismatch is a deployment error, not a passing outage. A TLS
  // handshake the other side refused (a certificate of another CA) arrives as UNAVAILABLE, like an
  // outage: its text (ours, from the TLS library, no secret) says which.
  if (code === grpc.status.UNAUTHENTICATED || code === grpc.status.INVALID_ARGUMENT || code === grpc.status.INTERNAL || code === null) {
    log.error({ ...fields, error: text }, `${what} over the chains link failed`);
  } else {
    log.warn({ ...fields, error: text }, `${what} over the chains link failed`);
  }
}

/** POST /payments/notify over the link: any failure of the link is `unavailable` (the edge's 503). */
export function remoteDepositVerifier(client: ChainsLinkClient, log?: LinkLog): DepositVerifier {
  return {
    async notify(request) {
      try {
        return await client.notify(request);
      } catch (error) {
        logLinkFailure(log, 'deposit verification', client.address, error);
        return { result: 'unavailable', reason: 'Deposit verification is temporarily unavailable; retry shortly' };
      }
    },
  };
}

/** Reconciliation over the link: any failure of the link is `failed` with a generic reason. */
export function remoteReconciler(client: ChainsLinkClient, log?: LinkLog): Reconciler {
  return {
    async reconcile(request) {
      try {
        return await client.reconcile(request);
      } catch (error) {
        logLinkFailure(log, 'reconciliation', client.address, error);
        return { result: 'failed', transactionId: request.transactionId, transactionStatus: null, reason: 'Reconciliation failed unexpectedly; try again later' };
      }
    },
  };
}

// ---- wiring for the composition root ----

export interface ChainsLinkWiringOptions {
  /** Serve the link from startWatcherRole. Default: only when this process runs the `watcher` role alone. */
  readonly serveLink?: boolean;
  /** Default CHAINS_GRPC_PORT (0 picks a free port). */
  readonly linkPort?: number;
  /** Where the link is. Default: CHAINS_GRPC_URL when this process runs neither `all` nor `watcher`. */
  readonly remoteAddress?: string | null;
  readonly callTimeoutMs?: number;
}

export interface LinkedChainServices extends ChainServices {
  /** Where notify and reconcile run: here, or the watcher process at this address. */
  readonly verification: { readonly mode: 'in-process' } | { readonly mode: 'remote'; readonly address: string };
  startWatcherRole(): Promise<WatcherRole & { readonly linkPort: number | null }>;
  /** Closes the link client; call after the edge and admin have stopped. */
  closeLink(): Promise<void>;
}

/**
 * The chain services as this process's roles should see them:
 *  - edge/admin without the watcher, CHAINS_GRPC_URL set: deposit verification and reconciliation
 *    over the link (payment_context, chain availability and the sandbox helpers stay local: they
 *    are configuration and the shared store);
 *  - ROLE=watcher: `startWatcherRole()` also serves the link on CHAINS_GRPC_PORT;
 *  - `all` (or no CHAINS_GRPC_URL): unchanged, in-process.
 */
export function linkChainServices(ctx: ServiceContext, chains: ChainServices, options: ChainsLinkWiringOptions = {}): LinkedChainServices {
  const role = ctx.env.ROLE;
  const remoteAddress = options.remoteAddress !== undefined ? options.remoteAddress : role !== 'all' && role !== 'watcher' ? (ctx.env.CHAINS_GRPC_URL ?? null) : null;
  const serveLink = options.serveLink ?? role === 'watcher';
  const log = ctx.log.child({ component: 'chains-link' });
  let client: ChainsLinkClient | null = null;
  if (remoteAddress !== null) {
    client = new ChainsLinkClient({
      address: remoteAddress,
      transport: internalClientTls(ctx.env),
      ...(ctx.env.INTERNAL_LINK_KEY === undefined ? {} : { linkKey: ctx.env.INTERNAL_LINK_KEY }),
      ...(options.callTimeoutMs !== undefined ? { callTimeoutMs: options.callTimeoutMs } : {}),
    });
  } else if (role === 'edge' || role === 'admin') {
    log.info({ role }, 'CHAINS_GRPC_URL is not set: this process verifies deposits and reconciles hashes itself');
  }
  const linkClient = client;
  return {
    ...chains,
    verification: linkClient === null ? { mode: 'in-process' } : { mode: 'remote', address: linkClient.address },
    depositVerifier: linkClient === null ? chains.depositVerifier : remoteDepositVerifier(linkClient, log),
    reconciler: linkClient === null ? chains.reconciler : remoteReconciler(linkClient, log),
    async startWatcherRole() {
      const watcher = await chains.startWatcherRole();
      if (!serveLink) return { ...watcherView(watcher), linkPort: null, stop: (waitMs) => watcher.stop(waitMs) };
      let server: ChainsLinkServer;
      try {
        server = await startChainsLinkServer(
          ctx,
          { depositVerifier: chains.depositVerifier, reconciler: chains.reconciler, watcherStatus: () => watcher.watchers() },
          options.linkPort !== undefined ? { port: options.linkPort } : {},
        );
      } catch (error) {
        await watcher.stop();
        throw error;
      }
      return {
        ...watcherView(watcher),
        linkPort: server.port,
        async stop(waitMs?: number) {
          // No new calls first, then the watchers and refunds.
          const startedAtMs = Date.now();
          await server.stop();
          await watcher.stop(waitMs === undefined ? undefined : Math.max(0, waitMs - (Date.now() - startedAtMs)));
        },
      };
    },
    closeLink() {
      linkClient?.close();
      return Promise.resolve();
    },
  };
}

function watcherView(watcher: WatcherRole): Pick<WatcherRole, 'watchers' | 'active' | 'refunds' | 'sweeps' | 'health'> {
  return { watchers: () => watcher.watchers(), active: () => watcher.active(), refunds: () => watcher.refunds(), sweeps: () => watcher.sweeps(), health: () => watcher.health() };
}
