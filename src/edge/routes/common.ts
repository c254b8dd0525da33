// What every route module of the partner edge shares: the edge's environment (context, optional
// capabilities, actor client, idempotency, guards), JSON-object bodies, idempotent POST handling,
// partner-scoped transaction lookups and the mapping of infrastructure failures to 503.
import type { CoverageSummary } from '../../bus/shard-coverage.ts';
import type { ActorClient } from '../../actors/client.ts';
import type { JsonValue } from '../../actors/envelope.ts';
import { fromJsonValue } from '../../actors/state-codec.ts';
import { kycKey, kycActorType } from '../../actors/kyc-actor.ts';
import { loadQuoteRecord, type QuoteRecord } from '../../actors/quote-actor.ts';
import { transactionsCollection } from '../../actors/transaction-actor.ts';
import { counterActorType } from '../../actors/counter-actor.ts';
import { parseUuid } from '../../domain/ids.ts';
import { describeAcceptanceRejection, kycMonthCounterKey, userDayCounterKey, type AcceptanceRejection } from '../../domain/limits.ts';
import type { Quote } from '../../domain/quote.ts';
import type { ServiceContext } from '../../ports/context.ts';
import type { ChainAvailability, DepositVerifier, LiquidityView, OnrampAcceptance, PaymentContexts, Reconciler, SandboxDriver } from '../../ports/ports.ts';
import { identifierBytesMax, type JsonObject } from '../../store/store.ts';
import { parseJsonBody } from '../body.ts';
import { errorResponse, rejectionResponse, unavailableResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { Guard, HttpResponse, RequestContext } from '../http-types.ts';
import { canonicalJson, fingerprint, readIdempotencyKey, type Idempotency, type Ids } from '../idempotency.ts';
import type { KycQuota } from '../kyc-quota.ts';
import type { NotifyBudget } from '../notify-budget.ts';
import type { ReceiptSigner } from '../receipt-signing.ts';
import type { CorridorHealth } from '../corridor-health.ts';

/** Default time the edge waits for an actor's reply before answering 503 (EDGE_ASK_TIMEOUT_MS; the command may still apply). */
export const actorReplyTimeoutMs = 10_000;

export interface EdgeActorsOptions {
  /** EDGE_ASK_TIMEOUT_MS; `actorReplyTimeoutMs` by default. */
  readonly timeoutMs?: number;
  /** Told of every failed ask (the edge logs timeouts from it, rate-limited). */
  readonly onFailure?: (error: unknown) => void;
}

/** The actor client as the edge uses it: counts requests waiting for a reply (a metric). */
export interface EdgeActors {
  ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, commandId: string): Promise<Reply>;
  pending(): number;
}

export function edgeActors(client: ActorClient, options: EdgeActorsOptions = {}): EdgeActors {
  const timeoutMs = options.timeoutMs ?? actorReplyTimeoutMs;
  const onFailure = options.onFailure ?? (() => undefined);
  let pending = 0;
  return {
    async ask<Reply>(actorType: string, actorKey: string, kind: string, payload: JsonValue, commandId: string): Promise<Reply> {
      pending += 1;
      try {
        return await client.ask<Reply>(actorType, actorKey, kind, payload, { commandId, timeoutMs });
      } catch (error) {
        onFailure(error);
        throw error;
      } finally {
        pending -= 1;
      }
    },
    pending: () => pending,
  };
}

/**
 * What the edge needs from other roles; each is optional until that role is wired (the composition
 * root, src/service/edge-role.ts, hands them over).
 */
export interface EdgeDeps {
  readonly liquidity?: LiquidityView;
  readonly depositVerifier?: DepositVerifier;
  readonly reconciler?: Reconciler;
  readonly paymentContexts?: PaymentContexts;
  readonly chainAvailability?: ChainAvailability;
  readonly sandbox?: SandboxDriver;
  /** Onramp acceptance: inventory check and PIX charge (src/onramp). */
  readonly onramp?: OnrampAcceptance;
}

export interface EdgeEnv {
  readonly ctx: ServiceContext;
  readonly deps: EdgeDeps;
  readonly actors: EdgeActors;
  readonly idempotency: Idempotency;
  readonly partnerGuard: Guard;
  readonly opsGuard: Guard;
  /** The routes without credentials: a request budget per client address (none when absent). */
  readonly publicGuard?: Guard;
  /** Per-partner budget of notifies that cannot fund their transaction (src/edge/notify-budget.ts). */
  readonly notifyBudget: NotifyBudget;
  /** POST /kyc submissions a day per partner and per user (src/edge/kyc-quota.ts). */
  readonly kycQuota: KycQuota;
  /** True once the edge drains for shutdown: /readyz answers 503 so load balancers stop routing here. */
  readonly draining?: () => boolean;
  /** Whether every shard has a live worker (src/service/shard-watch.ts), for /readyz. */
  readonly shards?: { summary(): CoverageSummary };
  /** Signs settlement receipts and publishes their keys (src/edge/receipt-signing.ts); absent or null: none configured. */
  readonly receipts?: ReceiptSigner | null;
  /** GET /public/corridors/health's cached figures (src/edge/corridor-health.ts); absent: 503. */
  readonly corridorHealth?: CorridorHealth;
}

/** The partner id a guarded route runs for (the guard set it). */
export function partnerOf(request: RequestContext): string {
  if (request.partnerId === null) throw new Error(`route ${request.routePattern} ran without a partner guard`);
  return request.partnerId;
}

export type ObjectBody = { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly response: HttpResponse };

/** The body as a JSON object: 415 / 400 from the toolkit, 400 when it is not an object. */
export function jsonObjectBody(request: RequestContext): ObjectBody {
  const parsed = parseJsonBody(request);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, response: errorResponse('invalid_request', 'Request body must be a JSON object') };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** 503 for a capability whose role is not running (or not wired) in this deployment. */
export function capabilityUnavailable(what: string): HttpResponse {
  return errorResponse('service_unavailable', `${what} is not available right now; retry later`);
}

/**
 * Infrastructure failures while asking an actor (Redis unreachable, no shard worker, no reply in
 * time, requester overloaded or closed: `unavailableReason` in errors.ts) are 503: the request may
 * be retried (with its Idempotency-Key, safely). Anything else is a bug and propagates to the
 * toolkit's 500.
 */
export function askOr503<T>(run: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; response: HttpResponse }> {
  let asked: Promise<T>;
  try {
    asked = run();
  } catch (error) {
    asked = Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
  return asked.then((value) => ({ ok: true as const, value }), unavailableOnRequestError);
}

function unavailableOnRequestError(error: unknown): { ok: false; response: HttpResponse } {
  const response = unavailableResponse(error);
  if (response !== null) return { ok: false, response };
  throw error;
}

/**
 * Runs a POST handler under the request's Idempotency-Key (when it has one). `canonicalBody` is
 * what identifies "the same request" (the parsed body in canonical form, never raw bytes, so
 * whitespace and key order do not matter).
 */
export function idempotentPost(
  env: EdgeEnv,
  request: RequestContext,
  scope: string,
  canonicalBody: unknown,
  newIds: () => Ids,
  execute: (ids: Ids) => Promise<HttpResponse>,
): Promise<HttpResponse> {
  try {
    const key = readIdempotencyKey(request.headers);
    if (!key.ok) return Promise.resolve(key.response);
    // Without a key there is nothing to record or replay: what `run` does too, minus its frames.
    if (key.key === undefined) return execute(newIds());
    return runIdempotently(env, request, scope, key.key, canonicalBody, newIds, execute);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

function runIdempotently(
  env: EdgeEnv,
  request: RequestContext,
  scope: string,
  key: string,
  canonicalBody: unknown,
  newIds: () => Ids,
  execute: (ids: Ids) => Promise<HttpResponse>,
): Promise<HttpResponse> {
  return env.idempotency.run(
    {
      scope,
      key,
      fingerprint: fingerprint(request.routePattern, typeof canonicalBody === 'string' ? canonicalBody : canonicalJson(canonicalBody)),
      nowMs: env.ctx.clock.nowMs(),
      newIds,
    },
    execute,
  );
}

export function idOf(ids: Ids, name: string): string {
  const value = ids[name];
  if (value === undefined) throw new Error(`idempotency ids lack ${name}`);
  return value;
}

/**
 * Whether every storage key derived from this user id fits the store's identifier bound: the KYC
 * actor and read model (`kyc/<partner>:<user>`) and the limit counters, whose keys URI-encode the
 * id (a non-ASCII byte takes three characters there). (A counter's parts have ids that always fit:
 * src/actors/actor-parts.ts.)
 */
export function userIdFits(partnerId: string, userId: string): boolean {
  const keys = [
    `${kycActorType}/${kycKey(partnerId, userId)}`,
    `${counterActorType}/${userDayCounterKey(partnerId, userId, 'BREB', '2000-01-01')}`,
    `${counterActorType}/${kycMonthCounterKey(partnerId, userId, '2000-01')}`,
  ];
  return keys.every((key) => Buffer.byteLength(key, 'utf8') <= identifierBytesMax);
}

export function userIdTooLong(field: string): HttpResponse {
  return errorResponse('invalid_request', `${field} is too long`);
}

/** The transaction's read-model document when it exists and belongs to the partner; else null. */
export async function partnerTransaction(env: EdgeEnv, partnerId: string, rawId: string): Promise<{ id: string; doc: JsonObject } | null> {
  const id = parseUuid(rawId);
  if (id === null) return null;
  const doc = await env.ctx.store.get(transactionsCollection, id);
  if (doc === null || doc['partnerId'] !== partnerId) return null;
  return { id, doc };
}

export function transactionNotFound(): HttpResponse {
  return errorResponse('not_found', 'Transaction not found');
}

/**
 * The partner's quote as an acceptance finds it: the quote actor's snapshot (a quote some
 * transaction claimed, or one written by a release before quotes were offers) or else its offer
 * (src/ports/quote-offers.ts; an offer is never claimed). Null for a malformed id, a quote that does
 * not exist, is past its offer's grace, or is another partner's: all `quote_not_found`. A store or
 * Redis that does not answer is the 503 of every endpoint.
 */
export async function partnerQuote(
  env: EdgeEnv,
  partnerId: string,
  quoteIdText: string,
): Promise<{ ok: true; record: QuoteRecord | null } | { ok: false; response: HttpResponse }> {
  const quoteId = parseUuid(quoteIdText);
  if (quoteId === null) return { ok: true, record: null };
  const found = await askOr503(async (): Promise<QuoteRecord | null> => {
    const record = await loadQuoteRecord(env.ctx.store, quoteId);
    if (record !== null) return record.quote.partnerId === partnerId ? record : null;
    const offer = await env.ctx.quoteOffers.find(partnerId, quoteId);
    return offer === null ? null : { quote: offer, use: null };
  });
  return found.ok ? { ok: true, record: found.value } : found;
}

export function quoteOfDocument(doc: JsonObject): Quote {
  return fromJsonValue<Quote>(doc['quote'] ?? null);
}

/** An acceptance rejection from the limits catalogue, as `{ code, reason, retryable }`. */
export function acceptanceRejection(rejection: AcceptanceRejection, detail?: string): HttpResponse {
  const described = describeAcceptanceRejection(rejection);
  const reason = detail === undefined ? described.reason : `${described.reason} (${detail})`;
  return rejectionResponse(described.code, reason, described.retryable);
}
