// The payout role's internal gRPC link (proto/payout.proto): Payout.Execute/Status for operations
// and Liquidity.Get for an edge running in another process. In `all` mode nothing is served: the
// in-process objects (`PayoutOps`, the LiquidityView) are used directly.
//
// Who gets in (docs/security.md, "Internal links and the admin service"): the link is served on
// INTERNAL_HOST with mutual TLS, so only a process holding a certificate of the internal CA
// connects at all, plus INTERNAL_LINK_KEY in `x-internal-link-key` when one is configured (the
// only credential on a loopback plaintext link). Payout.Execute/Status are operators' actions:
// they also need the ops key (`x-ops-api-key`, constant time by the key ring) and each writes an
// audit line. The ops key alone opens nothing here.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync, type MethodDefinition, type ServiceDefinition } from '@grpc/proto-loader';
import { isOneOf, methodCurrency, paymentMethods, type PaymentMethod } from '../domain/assets.ts';
import { isCanonicalUuid } from '../domain/ids.ts';
import { decimalFromExactString, toFixedString, type Decimal } from '../domain/money.ts';
import type { LiquiditySource } from '../rails/liquidity.ts';
import { payoutIdempotencyKey, type PayoutWorker } from '../rails/payout-worker.ts';
import type { PayoutResult, Rail } from '../rails/rails.ts';
import { listenGrpc } from './proto.ts';
import { channelCredentials, linkKeyAccepted, linkKeyMetadata, type ClientTls, type ServerTls } from './link-security.ts';
import { auditTarget, certificateSubject, operatorKeyId, type AuditLog, type AuditOutcome } from '../audit/operator-audit.ts';

export const payoutProtoPath = join(import.meta.dirname, '../../proto/payout.proto');
/** Requests here are a few ids; anything bigger is not ours. */
export const linkMessageBytesMax = 64 * 1024;
export const linkCallTimeoutMsDefault = 5_000;
const opsKeyMetadata = 'x-ops-api-key';

// ---- what travels (field names as in the .proto) ----

interface PayoutRefMessage {
  transaction_id: string;
}

interface RailOutcomeMessage {
  status: string;
  rail_reference: string;
  reason: string;
}

interface PayoutStatusMessage {
  transaction_id: string;
  transaction_status: string;
  idempotency_key: string;
  rail: RailOutcomeMessage;
  held_here: boolean;
  attempts: number;
  next_attempt_at_ms: number;
  last_outcome: string;
  result: string;
  detail: string;
}

interface LiquidityRequestMessage {
  method: string;
}

interface LiquidityReplyMessage {
  method: string;
  currency: string;
  amount: string;
  available: boolean;
  read_at_ms: number;
}

// ---- what the two sides work with ----

export interface PayoutStatusView {
  readonly transactionId: string;
  readonly transactionStatus: string | null;
  readonly idempotencyKey: string;
  /** null: the rail never saw the key. */
  readonly rail: PayoutResult | null;
  readonly heldHere: boolean;
  readonly attempts: number;
  readonly nextAttemptAtMs: number | null;
  readonly lastOutcome: string | null;
  readonly result: 'status' | 'reported' | 'not_yet' | 'not_applicable';
  readonly detail: string;
}

/** Operations on payouts, in-process (all mode, admin) or behind the link. */
export interface PayoutOps {
  execute(transactionId: string): Promise<PayoutStatusView>;
  status(transactionId: string): Promise<PayoutStatusView>;
}

export class LinkError extends Error {
  override readonly name = 'LinkError';
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

export function createPayoutOps(worker: PayoutWorker, rail: Rail): PayoutOps {
  const view = async (transactionId: string, result: PayoutStatusView['result'], detail: string, known?: PayoutResult | null): Promise<PayoutStatusView> => {
    if (!isCanonicalUuid(transactionId)) throw new LinkError(grpc.status.INVALID_ARGUMENT, 'transaction_id must be a lowercase UUID');
    const tx = await worker.loadTransaction(transactionId);
    const key = payoutIdempotencyKey(transactionId);
    const job = worker.jobOf(transactionId);
    return {
      transactionId,
      transactionStatus: tx?.status ?? null,
      idempotencyKey: key,
      rail: known !== undefined ? known : await rail.payoutStatus(key),
      heldHere: job?.heldHere ?? false,
      attempts: job?.attempts ?? 0,
      nextAttemptAtMs: job?.nextAttemptAtMs ?? null,
      lastOutcome: job?.lastOutcome ?? null,
      result,
      detail,
    };
  };
  return {
    status: (transactionId) => view(transactionId, 'status', ''),
    async execute(transactionId) {
      if (!isCanonicalUuid(transactionId)) throw new LinkError(grpc.status.INVALID_ARGUMENT, 'transaction_id must be a lowercase UUID');
      const executed = await worker.executeNow(transactionId);
      return view(transactionId, executed.result, executed.detail, executed.rail ?? undefined);
    },
  };
}

// ---- the service definitions, loaded once ----

interface LinkDefinitions {
  readonly payout: ServiceDefinition;
  readonly liquidity: ServiceDefinition;
}

let definitions: LinkDefinitions | null = null;

function linkDefinitions(): LinkDefinitions {
  if (definitions !== null) return definitions;
  const loaded = loadSync(payoutProtoPath, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const payout = loaded['payments.payout.v1.Payout'];
  const liquidity = loaded['payments.payout.v1.Liquidity'];
  if (payout === undefined || liquidity === undefined || 'format' in payout || 'format' in liquidity) {
    throw new Error(`${payoutProtoPath} does not define the Payout and Liquidity services`);
  }
  definitions = { payout: payout as ServiceDefinition, liquidity: liquidity as ServiceDefinition };
  return definitions;
}

function method(service: ServiceDefinition, name: string): MethodDefinition<object, object> {
  const found = service[name];
  if (found === undefined) throw new Error(`proto method ${name} is missing`);
  return found;
}

// ---- conversions ----

function railMessage(result: PayoutResult | null): RailOutcomeMessage {
  if (result === null) return { status: 'unknown', rail_reference: '', reason: '' };
  switch (result.status) {
    case 'succeeded':
    case 'pending':
      return { status: result.status, rail_reference: result.railReference, reason: '' };
    case 'failed':
      return { status: 'failed', rail_reference: result.railReference ?? '', reason: result.reason };
    case 'retry':
      return { status: 'retry', rail_reference: '', reason: result.reason };
  }
}

function railFromMessage(message: RailOutcomeMessage | null | undefined): PayoutResult | null {
  if (message === null || message === undefined) return null;
  switch (message.status) {
    case 'succeeded':
    case 'pending':
      return { status: message.status, railReference: message.rail_reference };
    case 'failed':
      return { status: 'failed', reason: message.reason, railReference: message.rail_reference === '' ? null : message.rail_reference };
    case 'retry':
      return { status: 'retry', reason: message.reason };
    default:
      return null;
  }
}

function statusMessage(view: PayoutStatusView): PayoutStatusMessage {
  return {
    transaction_id: view.transactionId,
    transaction_status: view.transactionStatus ?? '',
    idempotency_key: view.idempotencyKey,
    rail: railMessage(view.rail),
    held_here: view.heldHere,
    attempts: view.attempts,
    next_attempt_at_ms: view.nextAttemptAtMs ?? 0,
    last_outcome: view.lastOutcome ?? '',
    result: view.result,
    detail: view.detail,
  };
}

const viewResults = ['status', 'reported', 'not_yet', 'not_applicable'] as const;

function statusFromMessage(message: PayoutStatusMessage): PayoutStatusView {
  return {
    transactionId: message.transaction_id,
    transactionStatus: message.transaction_status === '' ? null : message.transaction_status,
    idempotencyKey: message.idempotency_key,
    rail: railFromMessage(message.rail),
    heldHere: message.held_here,
    attempts: message.attempts,
    nextAttemptAtMs: message.next_attempt_at_ms === 0 ? null : message.next_attempt_at_ms,
    lastOutcome: message.last_outcome === '' ? null : message.last_outcome,
    result: isOneOf(viewResults, message.result) ? message.result : 'status',
    detail: message.detail,
  };
}

function requireMethod(value: unknown): PaymentMethod {
  if (!isOneOf(paymentMethods, value)) throw new LinkError(grpc.status.INVALID_ARGUMENT, 'method must be BREB or PIX');
  return value;
}

function requireTransactionId(request: object): string {
  const id = (request as Partial<PayoutRefMessage>).transaction_id;
  if (!isCanonicalUuid(id)) throw new LinkError(grpc.status.INVALID_ARGUMENT, 'transaction_id must be a lowercase UUID');
  return id;
}

// ---- server ----

export interface PayoutLinkServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Mutual TLS from the internal CA (src/grpc/link-security.ts), or plaintext on loopback. */
  readonly tls: ServerTls;
  /** INTERNAL_LINK_KEY: when set, every call must present it. */
  readonly linkKey?: string;
  readonly ops: PayoutOps;
  readonly liquidity: LiquiditySource;
  readonly clock: { nowMs(): number };
  /** True when the presented ops key is valid (constant-time; the key ring's isOpsKey). */
  readonly isOpsKey: (presented: string) => boolean;
  /** Where Execute and Status are recorded (src/audit/operator-audit.ts). */
  readonly audit: AuditLog;
  readonly log?: (level: 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export interface PayoutLinkServer {
  readonly port: number;
  stop(): Promise<void>;
}

type LinkCall = grpc.ServerUnaryCall<object, object>;
type Handler = (call: LinkCall) => Promise<object>;

const linkKeyRefused = (): LinkError => new LinkError(grpc.status.UNAUTHENTICATED, 'a valid internal link key is required');

function unary(handler: Handler, log: PayoutLinkServerOptions['log']): grpc.handleUnaryCall<object, object> {
  return (call, callback) => {
    handler(call).then(
      (reply) => callback(null, reply),
      (error: unknown) => {
        if (error instanceof LinkError) {
          callback({ code: error.code, details: error.message });
          return;
        }
        // Never pass provider or internal error text to the caller; it goes to our log.
        log?.('error', 'payout link call failed', { error: String(error) });
        callback({ code: grpc.status.UNAVAILABLE, details: 'the payout role could not complete the call' });
      },
    );
  };
}

function auditOutcome(error: unknown): AuditOutcome {
  if (!(error instanceof LinkError)) return 'failed';
  if (error.code === grpc.status.UNAUTHENTICATED) return 'unauthenticated';
  return error.code === grpc.status.UNAVAILABLE ? 'unavailable' : 'refused';
}

/** Payout.Execute/Status: an operator's action (the ops key) from a member of the deployment (the link), audited either way. */
function operatorAction(options: PayoutLinkServerOptions, name: string, act: (transactionId: string) => Promise<PayoutStatusView>): Handler {
  return async (call) => {
    const presented = call.metadata.get(opsKeyMetadata)[0];
    const known = typeof presented === 'string' && options.isOpsKey(presented);
    const peerCertificate = certificateSubject(call.getAuthContext().sslPeerCertificate?.subject);
    const entry = {
      channel: 'payout-link',
      action: name,
      target: auditTarget(call.request as Record<string, unknown>, ['transaction_id']),
      operator: known ? operatorKeyId(presented) : null,
      peer: call.getPeer(),
      ...(peerCertificate === undefined ? {} : { peerCertificate }),
    } as const;
    try {
      if (!linkKeyAccepted(options.linkKey, call.metadata)) throw linkKeyRefused();
      if (!known) throw new LinkError(grpc.status.UNAUTHENTICATED, 'a valid ops key is required');
      const reply = statusMessage(await act(requireTransactionId(call.request)));
      options.audit.record({ ...entry, outcome: 'ok', detail: reply.result });
      return reply;
    } catch (error) {
      options.audit.record({ ...entry, outcome: auditOutcome(error), detail: error instanceof LinkError ? grpc.status[error.code] : 'UNAVAILABLE' });
      throw error;
    }
  };
}

export async function startPayoutLinkServer(options: PayoutLinkServerOptions): Promise<PayoutLinkServer> {
  const defs = linkDefinitions();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': linkMessageBytesMax,
    'grpc.max_send_message_length': linkMessageBytesMax,
  });
  server.addService(defs.payout as unknown as grpc.ServiceDefinition, {
    Execute: unary(operatorAction(options, 'Execute', (id) => options.ops.execute(id)), options.log),
    Status: unary(operatorAction(options, 'Status', (id) => options.ops.status(id)), options.log),
  });
  server.addService(defs.liquidity as unknown as grpc.ServiceDefinition, {
    // Any member of the deployment (it is the figure partners read anyway).
    Get: unary(async (call) => {
      if (!linkKeyAccepted(options.linkKey, call.metadata)) throw linkKeyRefused();
      const paymentMethod = requireMethod((call.request as Partial<LiquidityRequestMessage>).method);
      const reading = await options.liquidity.read(paymentMethod);
      const reply: LiquidityReplyMessage = {
        method: paymentMethod,
        currency: methodCurrency[paymentMethod],
        amount: toFixedString(reading.amount),
        available: reading.available,
        read_at_ms: options.clock.nowMs(),
      };
      return reply;
    }, options.log),
  });
  return listenGrpc(server, options.host, options.port, options.tls);
}

// ---- client ----

export interface PayoutLinkClientOptions {
  /** host:port of the payout role's link. */
  readonly address: string;
  /** This process's internal identity and the internal CA (src/grpc/link-security.ts), or plaintext to loopback. */
  readonly transport: ClientTls;
  /** INTERNAL_LINK_KEY, sent with every call when set. Never logged. */
  readonly linkKey?: string;
  /** Needed for Payout.Execute/Status (an operator's action). Never logged. */
  readonly opsKey?: string;
  readonly callTimeoutMs?: number;
}

export class PayoutLinkClient {
  private readonly client: grpc.Client;
  private readonly callTimeoutMs: number;

  constructor(private readonly options: PayoutLinkClientOptions) {
    const transport = channelCredentials(options.address, options.transport);
    this.client = new grpc.Client(options.address, transport.credentials, {
      ...transport.options,
      'grpc.max_receive_message_length': linkMessageBytesMax,
      'grpc.max_send_message_length': linkMessageBytesMax,
    });
    this.callTimeoutMs = options.callTimeoutMs ?? linkCallTimeoutMsDefault;
  }

  async liquidity(paymentMethod: PaymentMethod): Promise<{ amount: Decimal; available: boolean; readAtMs: number }> {
    const reply = await this.call<LiquidityRequestMessage, LiquidityReplyMessage>(linkDefinitions().liquidity, 'Get', { method: paymentMethod }, false);
    return { amount: decimalFromExactString(reply.amount), available: reply.available, readAtMs: reply.read_at_ms };
  }

  async execute(transactionId: string): Promise<PayoutStatusView> {
    return statusFromMessage(await this.call<PayoutRefMessage, PayoutStatusMessage>(linkDefinitions().payout, 'Execute', { transaction_id: transactionId }, true));
  }

  async status(transactionId: string): Promise<PayoutStatusView> {
    return statusFromMessage(await this.call<PayoutRefMessage, PayoutStatusMessage>(linkDefinitions().payout, 'Status', { transaction_id: transactionId }, true));
  }

  close(): void {
    this.client.close();
  }

  private call<Req extends object, Res extends object>(service: ServiceDefinition, name: string, request: Req, withOpsKey: boolean): Promise<Res> {
    const definition = method(service, name);
    const metadata = new grpc.Metadata();
    if (this.options.linkKey !== undefined) metadata.set(linkKeyMetadata, this.options.linkKey);
    if (withOpsKey && this.options.opsKey !== undefined) metadata.set(opsKeyMetadata, this.options.opsKey);
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

/** The edge's liquidity source when the payout role runs in another process. */
export function remoteLiquiditySource(client: PayoutLinkClient): LiquiditySource {
  return {
    async read(paymentMethod) {
      const reading = await client.liquidity(paymentMethod);
      return { amount: reading.amount, available: reading.available };
    },
  };
}
