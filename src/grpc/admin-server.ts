// The admin service (proto/admin.proto) for ops: shards and leases, end users, partner keys,
// reconciliation, webhook deliveries and destinations, outbox rows waiting for a retry (list,
// retry now, resolve by hand), sandbox knobs. Served over TLS (ADMIN_TLS_CERT_FILE/_KEY_FILE) on
// ADMIN_HOST:GRPC_PORT, loopback unless the operator says otherwise; plaintext only with
// ADMIN_TLS=off on a loopback bind. Every call carries the ops key in metadata `x-ops-api-key`,
// checked in constant time; a missing or wrong key is UNAUTHENTICATED, and once the caller's
// address has failed too often (the process's AuthThrottle, shared with the edge)
// RESOURCE_EXHAUSTED with the delay in metadata (`retry-after` seconds, `grpc-retry-pushback-ms`);
// a correct key is never refused for it. Every call, refused ones too, writes one audit line
// (src/audit/operator-audit.ts). Capabilities that this process does not have answer UNAVAILABLE
// with a reason.
import { randomBytes } from 'node:crypto';
import {
  Metadata,
  Server,
  status as grpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { isUnavailableFailure } from '../bus/request-reply.ts';
import { commandGroup, commandStreamKey, shardLeaseName, shardLeasePrefix } from '../bus/shards.ts';
import { workerStatsCollection } from '../actors/store-adapter.ts';
import { listQuarantined, quarantineDetail, requestReplay, type QuarantineRecord } from '../actors/quarantine.ts';
import { isOneOf, fiatCurrencies, networks, paymentMethods } from '../domain/assets.ts';
import { parseAmount, decimalFromExactString } from '../domain/money.ts';
import { readUserId } from '../domain/user-ids.ts';
import { disabledUserIdCharsMax } from '../config/partners.ts';
import { generateApiKey, sha256Hex } from '../edge/auth.ts';
import type { ServiceContext } from '../ports/context.ts';
import type { Reconciler } from '../ports/ports.ts';
import { changePartner } from '../ports/partner-overrides.ts';
import { serviceOutboxTopics } from '../actors/cluster-stats.ts';
import type { OutboxRowAction } from '../store/store.ts';
import { bulkRedeliverMax, redeliverFailed } from './admin-redeliver.ts';
import { listParked, parkedListDefault, parkedListMax, parkedRowReply, resolveNoteCharsMax } from './admin-parked.ts';
import { listUnmatched, unmatchedFilterOf } from './admin-unmatched.ts';
import { outboxTopicPayouts, outboxTopicRefundsPix } from '../actors/transaction-actor.ts';
import { listenGrpc, loadProto, lookup } from './proto.ts';
import { adminServerTls } from './link-security.ts';
import { auditTarget, createAuditLog, operatorKeyId, type AuditLog, type AuditOutcome } from '../audit/operator-audit.ts';

/** Outbox topics whose rows only the rail settles (see ResolveParked). */
const fiatOutcomeTopics: ReadonlySet<string> = new Set([outboxTopicPayouts, outboxTopicRefundsPix]);

// The admin service's view of the webhooks service and the sandbox rail: only what it calls, so
// this module depends on their shapes, not on their modules.
type DestinationResult<T> = ({ readonly ok: true } & T) | { readonly ok: false; readonly reason: string };
interface DestinationView {
  readonly source: string;
  readonly url: string | null;
  readonly secretConfigured: boolean;
  readonly draft: { readonly url: string; readonly test: { readonly ok: boolean; readonly httpStatus: number | null; readonly responseExcerpt?: string | null } | null } | null;
  readonly pendingSecret: unknown;
}
interface DeliveryRow {
  readonly eventId: string;
  readonly sequence: number;
  readonly event: string;
  readonly status: string;
  readonly lastError: string | null;
  readonly createdAtMs: number;
  readonly finishedAtMs: number | null;
  readonly attempts: ReadonlyArray<{ readonly atMs: number; readonly httpStatus: number | null }>;
}
export interface DeliveryLog {
  list(partnerId: string, query: { readonly status?: 'pending' | 'delivered' | 'failed'; readonly limit: number; readonly offset?: number }): Promise<{ deliveries: DeliveryRow[] }>;
  redeliver(partnerId: string, eventId: string, nowMs: number): Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: string }>;
}
export interface DestinationsApi {
  get(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  /** Returns the draft's test secret once: its test deliveries carry it, never a live secret. */
  stageDraft(partnerId: string, url: string): Promise<DestinationResult<{ destination: DestinationView; testSecret: string }>>;
  testDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  activateDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  discardDraft(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
  rotateSecret(partnerId: string): Promise<DestinationResult<{ secret: string }>>;
  activateSecret(partnerId: string): Promise<DestinationResult<{ destination: DestinationView }>>;
}
export interface SandboxRailControls {
  setLatency(latencyMs: number): Promise<void>;
  setFailureRate(rate: number): Promise<void>;
  setLiquidity(method: 'BREB' | 'PIX', amount: import('../domain/money.ts').Decimal): Promise<void>;
  setOutage(method: 'BREB' | 'PIX', down: boolean): Promise<void>;
}

export interface AdminCapabilities {
  readonly reconciler?: Reconciler;
  readonly webhooks?: { readonly deliveries: DeliveryLog; readonly destinations: DestinationsApi };
  readonly sandboxRail?: SandboxRailControls;
}

function quarantinedActorReply(
  record: QuarantineRecord,
  letters: ReadonlyArray<{ readonly order: string; readonly commandId: string; readonly kind: string; readonly atMs: number }>,
): Record<string, unknown> {
  return {
    actor_id: record.actorId,
    shard: record.shard,
    error: record.error,
    since_ms: String(record.sinceMs),
    last_error_at_ms: String(record.lastErrorAtMs),
    dead_letters: letters.map((letter) => ({ order: letter.order, command_id: letter.commandId, kind: letter.kind, at_ms: String(letter.atMs) })),
  };
}

/** A failure to report to the caller with a gRPC status (never a stack trace). */
class AdminError extends Error {
  constructor(
    readonly code: grpcStatus,
    message: string,
  ) {
    super(message);
  }
}

type Handler = (request: Record<string, unknown>) => Promise<Record<string, unknown>>;

function field(request: Record<string, unknown>, name: string): string {
  const value = request[name];
  return typeof value === 'string' ? value.trim() : '';
}

function required(request: Record<string, unknown>, name: string): string {
  const value = field(request, name);
  if (value === '') throw new AdminError(grpcStatus.INVALID_ARGUMENT, `${name} is required`);
  return value;
}

function unavailable(what: string): never {
  throw new AdminError(grpcStatus.UNAVAILABLE, `${what} is not available in this process`);
}

function outboxTopic(request: Record<string, unknown>): string {
  const topic = required(request, 'topic');
  if (!serviceOutboxTopics.includes(topic)) throw new AdminError(grpcStatus.INVALID_ARGUMENT, `topic must be one of ${serviceOutboxTopics.join(', ')}`);
  return topic;
}

/** The row an operator acted on, or why not: gone (or never waiting) and being tried are refusals. */
function actedOn(action: OutboxRowAction, topic: string, id: string): Extract<OutboxRowAction, { result: 'ok' }>['row'] {
  if (action.result === 'not_found') throw new AdminError(grpcStatus.NOT_FOUND, `no row ${id} waits for a retry in ${topic}`);
  if (action.result === 'claimed') throw new AdminError(grpcStatus.FAILED_PRECONDITION, `a worker is trying row ${id} right now; look again once its attempt is over`);
  return action.row;
}

/**
 * The admin service's handlers by gRPC method. Long because it is the method table: one short
 * entry per RPC of proto/admin.proto, sharing the few lookups above them (the partner asked about, the
 * webhooks capability); the table read top to bottom is the admin surface.
 */
export function adminHandlers(ctx: ServiceContext, capabilities: AdminCapabilities): Record<string, Handler> {
  const partnerOf = (request: Record<string, unknown>) => {
    const partnerId = required(request, 'partner_id');
    const partner = ctx.partners.get(partnerId);
    if (partner === undefined) throw new AdminError(grpcStatus.NOT_FOUND, `no partner ${partnerId}`);
    return partner;
  };
  const destinationReply = (result: DestinationResult<{ destination: DestinationView }>) =>
    result.ok
      ? { ok: true, message: 'ok', live_url: result.destination.url ?? '', draft_url: result.destination.draft?.url ?? '' }
      : { ok: false, message: result.reason, live_url: '', draft_url: '' };
  const webhooks = () => capabilities.webhooks ?? unavailable('the webhooks service');
  const setUserDisabled = async (request: Record<string, unknown>, disabled: boolean) => {
    const partner = partnerOf(request);
    // Read like a request's user id: the entry covers every Unicode form of the id.
    const read = readUserId(required(request, 'user_id'), disabledUserIdCharsMax);
    if (!read.ok) throw new AdminError(grpcStatus.INVALID_ARGUMENT, `user_id ${read.reason}`);
    const userId = read.value;
    await changePartner(ctx, partner.id, (current) => {
      const users = new Set(current.disabledUsers);
      if (disabled) users.add(userId);
      else users.delete(userId);
      return { ...current, disabledUsers: users };
    });
    return { ok: true, message: `user ${disabled ? 'disabled' : 'enabled'}` };
  };

  return {
    async ListShards() {
      const holders = await ctx.leases.listAll(shardLeasePrefix);
      const byName = new Map(holders.map((holder) => [holder.name, holder]));
      const shards = [];
      for (let shard = 0; shard < ctx.shardCount; shard += 1) {
        const holder = byName.get(shardLeaseName(shard));
        const summary = await ctx.bus.summary(commandStreamKey(ctx.keyPrefix, shard));
        const group = summary.groups.find((candidate) => candidate.group === commandGroup);
        shards.push({
          shard,
          owner: holder?.owner ?? '',
          token: String(holder?.token ?? 0),
          lease_remaining_ms: String(holder?.remainingMs ?? 0),
          stream_length: String(summary.length),
          pending: String(group?.pending ?? 0),
          lag: String(group?.lag ?? -1),
        });
      }
      const workers = (await ctx.leases.listAll('member:')).map((holder) => holder.owner);
      return { shards, workers };
    },
    async ListWorkers() {
      const live = new Set((await ctx.leases.listAll('member:')).map((holder) => holder.owner));
      const page = await ctx.store.list(workerStatsCollection, { limit: 1_000 });
      return {
        workers: page.items.map(({ doc }) => ({
          worker_id: String(doc.workerId),
          owned_shards: Array.isArray(doc.ownedShards) ? doc.ownedShards.length : 0,
          actors_in_memory: String(doc.actorsInMemory ?? 0),
          rss_bytes: String(doc.rssBytes ?? 0),
          heap_used_bytes: String(doc.heapUsedBytes ?? 0),
          reported_at_ms: String(doc.reportedAtMs ?? 0),
          live: live.has(String(doc.workerId)),
        })),
      };
    },
    DisableUser: (request) => setUserDisabled(request, true),
    EnableUser: (request) => setUserDisabled(request, false),
    async RotateApiKey(request) {
      const partner = partnerOf(request);
      // 192 random bits (≥ the 128 every configured key needs: docs/security.md).
      const apiKey = generateApiKey('key');
      // The old keys stop working at once: rotation is for a leaked key.
      await changePartner(ctx, partner.id, (current) => ({ ...current, apiKeySha256: [sha256Hex(apiKey)] }));
      return { partner_id: partner.id, api_key: apiKey };
    },
    async Reconcile(request) {
      const reconciler = capabilities.reconciler ?? unavailable('reconciliation');
      const blockchain = required(request, 'blockchain');
      if (!isOneOf(networks, blockchain)) throw new AdminError(grpcStatus.INVALID_ARGUMENT, 'blockchain must be STELLAR, SOLANA or CELO');
      const onChainTx = required(request, 'on_chain_tx');
      const transactionId = field(request, 'transaction_id');
      const result = await reconciler.reconcile({ blockchain, onChainTx, transactionId: transactionId === '' ? null : transactionId });
      return {
        blockchain,
        on_chain_tx: onChainTx,
        result: result.result,
        transaction_id: result.transactionId ?? '',
        transaction_status: result.transactionStatus ?? '',
        reason: result.reason ?? '',
      };
    },
    async ListDeliveries(request) {
      const partner = partnerOf(request);
      const state = field(request, 'state');
      const limit = Math.min(Math.max(Number(request.limit ?? 50) || 50, 1), 500);
      if (state !== '' && state !== 'pending' && state !== 'delivered' && state !== 'failed') throw new AdminError(grpcStatus.INVALID_ARGUMENT, 'state must be pending, delivered or failed');
      const page = await webhooks().deliveries.list(partner.id, { limit, ...(state !== '' ? { status: state } : {}) });
      return {
        deliveries: page.deliveries.map((delivery) => {
          const last = delivery.attempts[delivery.attempts.length - 1];
          return {
            event_id: delivery.eventId,
            partner_id: partner.id,
            sequence: String(delivery.sequence),
            event: delivery.event,
            state: delivery.status,
            attempts: delivery.attempts.length,
            last_status: last?.httpStatus ?? 0,
            last_error: delivery.lastError ?? '',
            updated_at_ms: String(delivery.finishedAtMs ?? last?.atMs ?? delivery.createdAtMs),
          };
        }),
      };
    },
    async Redeliver(request) {
      const partner = partnerOf(request);
      const result = await webhooks().deliveries.redeliver(partner.id, required(request, 'event_id'), ctx.clock.nowMs());
      return { ok: result.ok, message: result.ok ? 'redelivery scheduled' : result.reason };
    },
    async RedeliverFailed(request) {
      const partner = partnerOf(request);
      const nowMs = ctx.clock.nowMs();
      const fromMs = Number(request.from_ms ?? 0);
      const toMs = Number(request.to_ms ?? 0) || nowMs + 1;
      if (!Number.isSafeInteger(fromMs) || !Number.isSafeInteger(toMs) || fromMs < 0 || toMs <= fromMs) {
        throw new AdminError(grpcStatus.INVALID_ARGUMENT, 'from_ms must be a time before to_ms (ms since the epoch)');
      }
      const asked = Number(request.limit ?? 0);
      const limit = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, bulkRedeliverMax) : bulkRedeliverMax;
      const result = await redeliverFailed(webhooks().deliveries, partner.id, { fromMs, toMs, limit, nowMs });
      ctx.log.info({ partnerId: partner.id, fromMs, toMs, redelivered: result.eventIds.length, refused: result.refused }, 'failed webhook deliveries redelivered by an operator');
      return { event_ids: result.eventIds, refused: result.refused, truncated: result.truncated };
    },
    async GetDestination(request) {
      const result = await webhooks().destinations.get(partnerOf(request).id);
      if (!result.ok) return destinationReply(result);
      const { destination } = result;
      const test = destination.draft?.test ?? null;
      return {
        ...destinationReply(result),
        source: destination.source,
        secret_configured: destination.secretConfigured,
        secret_staged: destination.pendingSecret !== null,
        draft_test: test === null ? '' : `${test.httpStatus ?? 'no answer'} ${test.ok ? 'ok' : 'failed'}`,
        draft_test_excerpt: test?.responseExcerpt ?? '',
      };
    },
    async StageDestination(request) {
      const staged = await webhooks().destinations.stageDraft(partnerOf(request).id, required(request, 'url'));
      // The draft's test secret, shown once (the partner's receiver at the draft URL checks its test with it).
      return { ...destinationReply(staged), test_secret: staged.ok ? staged.testSecret : '' };
    },
    TestDestination: async (request) => destinationReply(await webhooks().destinations.testDraft(partnerOf(request).id)),
    ActivateDestination: async (request) => destinationReply(await webhooks().destinations.activateDraft(partnerOf(request).id)),
    DiscardDestination: async (request) => destinationReply(await webhooks().destinations.discardDraft(partnerOf(request).id)),
    ActivateWebhookSecret: async (request) => destinationReply(await webhooks().destinations.activateSecret(partnerOf(request).id)),
    async RotateWebhookSecret(request) {
      const partner = partnerOf(request);
      const result = await webhooks().destinations.rotateSecret(partner.id);
      if (!result.ok) throw new AdminError(grpcStatus.FAILED_PRECONDITION, result.reason);
      return { partner_id: partner.id, secret: result.secret };
    },
    async ListQuarantined(request) {
      const limit = Math.min(Math.max(Number(request.limit ?? 100) || 100, 1), 1_000);
      const actors = await listQuarantined(ctx.store, limit);
      return { actors: actors.map((record) => quarantinedActorReply(record, [])) };
    },
    async InspectQuarantined(request) {
      const actorId = required(request, 'actor_id');
      const detail = await quarantineDetail(ctx.store, actorId, 1_000);
      if (detail === null) throw new AdminError(grpcStatus.NOT_FOUND, `${actorId} is not quarantined`);
      return quarantinedActorReply(detail, detail.deadLetters);
    },
    async ReplayQuarantined(request) {
      const actorId = required(request, 'actor_id');
      if ((await quarantineDetail(ctx.store, actorId, 1)) === null) throw new AdminError(grpcStatus.NOT_FOUND, `${actorId} is not quarantined`);
      await requestReplay({ bus: ctx.bus, keyPrefix: ctx.keyPrefix, shardCount: ctx.shardCount, nowMs: ctx.clock.nowMs() }, actorId);
      ctx.log.warn({ actorId }, 'operator asked to replay a quarantined actor');
      return { ok: true, message: `replay of ${actorId} requested; check it with quarantine ${actorId}` };
    },
    async ListParked(request) {
      const topic = field(request, 'topic');
      const topics = topic === '' ? serviceOutboxTopics : [outboxTopic(request)];
      const asked = Number(request.limit ?? 0);
      const limit = Number.isSafeInteger(asked) && asked > 0 ? Math.min(asked, parkedListMax) : parkedListDefault;
      const listing = await listParked(ctx.store, topics, { includeRetrying: request.include_retrying === true, limit, nowMs: ctx.clock.nowMs() });
      return { rows: listing.rows, truncated: listing.truncated };
    },
    async ListUnmatched(request) {
      const asked = unmatchedFilterOf(request);
      if (!asked.ok) throw new AdminError(grpcStatus.INVALID_ARGUMENT, asked.reason);
      return listUnmatched(ctx.store, asked.filter, asked.limit);
    },
    async RetryParked(request) {
      const topic = outboxTopic(request);
      const id = required(request, 'id');
      const nowMs = ctx.clock.nowMs();
      const row = actedOn(await ctx.store.outboxRetryNow(topic, id, nowMs), topic, id);
      ctx.log.info({ outboxRow: parkedRowReply(row, nowMs) }, 'outbox row retried now by an operator');
      return { ok: true, message: `row ${id} is due now: a worker tries it at its next round` };
    },
    async ResolveParked(request) {
      const topic = outboxTopic(request);
      const id = required(request, 'id');
      const note = required(request, 'note');
      if (note.length > resolveNoteCharsMax) throw new AdminError(grpcStatus.INVALID_ARGUMENT, `note must be at most ${resolveNoteCharsMax} characters`);
      // A fiat row's outcome belongs to the rail: marking a payout (or a PIX refund) done by hand
      // would leave its transaction without the report while the provider may still settle it.
      // Such a row is retried (the rail's idempotency key makes that safe) or fixed at the provider.
      if (fiatOutcomeTopics.has(topic)) throw new AdminError(grpcStatus.FAILED_PRECONDITION, `rows of ${topic} are not resolved by hand: their outcome comes from the rail; retry the row, or settle it at the provider and let the worker report it`);
      const nowMs = ctx.clock.nowMs();
      const row = actedOn(await ctx.store.outboxResolve(topic, id, nowMs), topic, id);
      // The audit trail: the row is gone, its work was never done by the service.
      ctx.log.warn({ outboxRow: parkedRowReply(row, nowMs), note }, 'outbox row resolved by an operator: marked done without the service doing its work');
      return { ok: true, message: `row ${id} resolved: marked done` };
    },
    async SetRate(request) {
      if (!ctx.env.sandbox) throw new AdminError(grpcStatus.FAILED_PRECONDITION, 'rates are set by the rates feed outside sandbox mode');
      const currency = required(request, 'currency');
      if (!isOneOf(fiatCurrencies, currency)) throw new AdminError(grpcStatus.INVALID_ARGUMENT, 'currency must be COP or BRL');
      const text = required(request, 'rate');
      const parsed = parseAmount(text, 8, { label: 'rate' });
      if (!parsed.ok) throw new AdminError(grpcStatus.INVALID_ARGUMENT, parsed.error.reason);
      ctx.config.setRate(currency, decimalFromExactString(text));
      return { ok: true, message: `rate ${currency} = ${text}` };
    },
    async SetSandboxRail(request) {
      if (!ctx.env.sandbox) throw new AdminError(grpcStatus.FAILED_PRECONDITION, 'sandbox mode only');
      const rail = capabilities.sandboxRail ?? unavailable('the sandbox rail');
      const method = required(request, 'method');
      if (!isOneOf(paymentMethods, method)) throw new AdminError(grpcStatus.INVALID_ARGUMENT, 'method must be BREB or PIX');
      const liquidity = field(request, 'liquidity');
      if (liquidity !== '') {
        const parsed = parseAmount(liquidity, 2, { label: 'liquidity', allowZero: true });
        if (!parsed.ok) throw new AdminError(grpcStatus.INVALID_ARGUMENT, parsed.error.reason);
        await rail.setLiquidity(method, parsed.value);
      }
      const latencyMs = Number(request.latency_ms ?? -1);
      if (latencyMs >= 0) await rail.setLatency(latencyMs);
      const failureRate = Number(request.failure_rate ?? -1);
      if (failureRate >= 0) {
        if (failureRate > 1) throw new AdminError(grpcStatus.INVALID_ARGUMENT, 'failure_rate must be within 0..1');
        await rail.setFailureRate(failureRate);
      }
      const outage = field(request, 'outage');
      if (outage === 'on' || outage === 'off') await rail.setOutage(method, outage === 'on');
      return { ok: true, message: 'sandbox rail updated' };
    },
  };
}

/** The address of a gRPC peer as grpc-js writes it (`127.0.0.1:5000`, `::1:5000`, `unknown`), without the port. */
export function grpcPeerAddress(peer: string): string {
  const colon = peer.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(peer.slice(colon + 1)) ? peer.slice(0, colon) : peer;
}

/** The refusal of a call without a valid ops key: UNAUTHENTICATED, or RESOURCE_EXHAUSTED for an address that failed too often. */
function refuseCredential(ctx: ServiceContext, name: string, call: ServerUnaryCall<Record<string, unknown>, Record<string, unknown>>, callback: sendUnaryData<Record<string, unknown>>): void {
  const outcome = ctx.authThrottle.failed('admin', grpcPeerAddress(call.getPeer()), { method: name });
  if (!outcome.throttled) {
    callback({ code: grpcStatus.UNAUTHENTICATED, details: 'a valid x-ops-api-key is required' });
    return;
  }
  const metadata = new Metadata();
  metadata.set('retry-after', String(outcome.retryAfterSeconds));
  // gRFC A6: a client with a retry policy waits this long before its next attempt.
  metadata.set('grpc-retry-pushback-ms', String(outcome.retryAfterSeconds * 1000));
  callback({
    code: grpcStatus.RESOURCE_EXHAUSTED,
    details: `too many failed authentication attempts from this address; retry after ${outcome.retryAfterSeconds} s`,
    metadata,
  });
}

/** The identifiers a call names, for its audit line (never URLs, notes, keys or amounts). */
const auditedFields = ['partner_id', 'user_id', 'blockchain', 'on_chain_tx', 'transaction_id', 'event_id', 'actor_id', 'topic', 'id', 'currency', 'method', 'state'] as const;

/** How a failed call ends for the caller, and for its audit line. */
function failure(ctx: ServiceContext, name: string, error: unknown): { readonly code: grpcStatus; readonly details: string; readonly outcome: AuditOutcome } {
  if (error instanceof AdminError) return { code: error.code, details: error.message, outcome: error.code === grpcStatus.UNAVAILABLE ? 'unavailable' : 'refused' };
  if (isUnavailableFailure(error)) {
    // Redis or the shard workers are away: retry later, not a bug (the cause has its own log lines).
    ctx.log.warn({ method: name, error: String(error) }, 'admin call failed: a dependency is unavailable');
    return { code: grpcStatus.UNAVAILABLE, details: 'Redis or the shard workers are not reachable right now; retry later', outcome: 'unavailable' };
  }
  ctx.log.error({ method: name, error: String(error) }, 'admin call failed');
  return { code: grpcStatus.INTERNAL, details: 'internal error', outcome: 'failed' };
}

function wrap(ctx: ServiceContext, audit: AuditLog, name: string, handler: Handler) {
  return (call: ServerUnaryCall<Record<string, unknown>, Record<string, unknown>>, callback: sendUnaryData<Record<string, unknown>>): void => {
    const presented = call.metadata.get('x-ops-api-key')[0];
    const known = typeof presented === 'string' && ctx.keyRing.isOpsKey(presented);
    const entry = { channel: 'admin-grpc', action: name, target: auditTarget(call.request, auditedFields), operator: known ? operatorKeyId(presented) : null, peer: call.getPeer() } as const;
    if (!known) {
      audit.record({ ...entry, outcome: 'unauthenticated', detail: 'UNAUTHENTICATED' });
      refuseCredential(ctx, name, call, callback);
      return;
    }
    handler(call.request).then(
      (reply) => {
        // Destination calls answer ok: false with a reason instead of an error status.
        audit.record({ ...entry, outcome: reply.ok === false ? 'refused' : 'ok', detail: 'OK' });
        callback(null, reply);
      },
      (error: unknown) => {
        const failed = failure(ctx, name, error);
        audit.record({ ...entry, outcome: failed.outcome, detail: grpcStatus[failed.code] });
        callback({ code: failed.code, details: failed.details });
      },
    );
  };
}

export interface RunningAdmin {
  readonly port: number;
  stop(): Promise<void>;
}

export async function startAdminServer(ctx: ServiceContext, capabilities: AdminCapabilities, port = ctx.env.GRPC_PORT): Promise<RunningAdmin> {
  const service = (lookup(loadProto('admin.proto'), 'payments.admin.v1.Admin') as { service: ServiceDefinition }).service;
  const handlers = adminHandlers(ctx, capabilities);
  const audit = createAuditLog(ctx.log, ctx.clock);
  const implementation: UntypedServiceImplementation = {};
  for (const name of Object.keys(service)) {
    const handler = handlers[name];
    if (handler === undefined) throw new Error(`admin method ${name} has no handler`);
    implementation[name] = wrap(ctx, audit, name, handler);
  }
  // Read before the server exists: a missing certificate stops start-up naming its variable.
  const tls = adminServerTls(ctx.env);
  const server = new Server({ 'grpc.max_receive_message_length': 64 * 1024 });
  server.addService(service, implementation);
  return listenGrpc(server, ctx.env.ADMIN_HOST, port, tls);
}
