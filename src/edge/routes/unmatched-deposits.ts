// The partner's unmatched deposits (docs/unmatched-deposits.md): GET /unmatched-deposits/list,
// GET /unmatched-deposit/{id}, POST /unmatched-deposit/{id}/refund and POST …/apply. Paths follow
// the transactions' (`/transaction/{id}`, `/transactions/list`).
//
// Scoping: a deposit attributable to another partner, or to none, is a 404, as an unknown id is.
// Decisions are the deposit actor's (one writer per transfer): the edge reads the read model for a
// cheap answer and a clear reason, and the actor decides again on its own state, so two refund calls
// (or a call racing the hold's timer) start one refund, and a refund racing an apply lets one win.
//
// Apply: the deposit is checked against the quote (a payout quote on the same network and asset, for
// exactly the deposit's amount), then the transaction is accepted exactly as POST /transaction does
// (the same checks, single use of the quote, the same answers), then the deposit actor links the
// transfer to it. If a refund won meanwhile, the new transaction stays unfunded and expires.
import { randomUUID } from 'node:crypto';
import { depositActorType, type DepositReply } from '../../actors/deposit-actor.ts';
import { listUnmatchedDeposits, unmatchedDepositsCollection, type UnmatchedListFilter } from '../../actors/unmatched-documents.ts';
import { isOneOf, networks } from '../../domain/assets.ts';
import { parseUuid } from '../../domain/ids.ts';
import { decimalFromExactString } from '../../domain/money.ts';
import { applyMismatch, unmatchedDepositStates } from '../../domain/unmatched-deposits.ts';
import { listOffsetMax, type JsonObject } from '../../store/store.ts';
import { createEarlyRefusals, type EarlyRefusals } from '../early-refusal.ts';
import { errorResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { parseWith, transactionBodySchema, unmatchedListQuerySchema, type TransactionBody } from '../schemas.ts';
import { askOr503, idOf, idempotentPost, jsonObjectBody, partnerOf, partnerQuote, userIdFits, userIdTooLong, type EdgeEnv } from './common.ts';
import { accept, pageSizeDefault, pageSizeMax, positiveInteger } from './transactions.ts';

/** The partner-facing view of an `unmatched_deposits` document (snake_case, as `GET /transaction/{id}`). */
export function unmatchedDepositView(doc: JsonObject): { [key: string]: unknown } {
  return {
    id: doc['id'],
    state: doc['state'],
    network: doc['network'],
    asset: doc['asset'],
    // An exact decimal string in token units: never rounded through a float.
    amount: doc['amount'],
    hash: doc['hash'],
    sender: doc['sender'],
    reason: doc['reason'],
    partner_id: doc['partnerId'] ?? null,
    transaction_id: doc['transactionId'] ?? null,
    applied_to: doc['appliedTo'] ?? null,
    refund_hash: doc['refundOnChainId'] ?? null,
    refund_floor: doc['refundFloor'] ?? null,
    hold_ends_at: doc['holdEndsAtMs'] ?? null,
    created_at: doc['createdAtMs'],
    updated_at: doc['updatedAtMs'],
  };
}

function depositNotFound(): HttpResponse {
  return errorResponse('not_found', 'Unmatched deposit not found');
}

/** The partner's own unmatched deposit, or null (unknown id, another partner's, or nobody's). */
export async function partnerUnmatchedDeposit(env: Pick<EdgeEnv, 'ctx'>, partnerId: string, rawId: string): Promise<JsonObject | null> {
  const id = parseUuid(rawId);
  if (id === null) return null;
  const doc = await env.ctx.store.get(unmatchedDepositsCollection, id);
  return doc !== null && doc['owner'] === partnerId ? doc : null;
}

/** Epoch ms in plain digits (the bounds of the created range). */
function epochMs(text: string | undefined): number | null | undefined {
  if (text === undefined) return undefined;
  return /^\d{1,15}$/.test(text) ? Number(text) : null;
}

type ListRequest = { ok: true; filter: UnmatchedListFilter; page: number; pageSize: number } | { ok: false; response: HttpResponse };

/** The list's filters and page, each refused with a reason naming it. */
export function readListQuery(query: unknown, owner: string): ListRequest {
  const parsed = parseWith(unmatchedListQuerySchema, query, 'query');
  if (!parsed.ok) return { ok: false, response: errorResponse('invalid_request', parsed.reason) };
  const { state, network, created_from: fromText, created_to: toText } = parsed.value;
  const invalid = (reason: string): ListRequest => ({ ok: false, response: errorResponse('invalid_request', reason) });
  if (state !== undefined && !isOneOf(unmatchedDepositStates, state)) return invalid(`state must be one of ${unmatchedDepositStates.join(', ')}`);
  if (network !== undefined && !isOneOf(networks, network)) return invalid(`network must be one of ${networks.join(', ')}`);
  const createdFromMs = epochMs(fromText);
  const createdToMs = epochMs(toText);
  if (createdFromMs === null || createdToMs === null) return invalid('created_from and created_to are epoch milliseconds in plain digits');
  const page = positiveInteger(parsed.value.page, 1);
  if (page === null) return invalid('page must be a positive integer');
  const pageSize = positiveInteger(parsed.value.pageSize, pageSizeDefault);
  if (pageSize === null || pageSize > pageSizeMax) return invalid(`pageSize must be an integer from 1 to ${pageSizeMax}`);
  if ((page - 1) * pageSize > listOffsetMax) return invalid(`page is too large: at most ${listOffsetMax} items can be skipped`);
  const filter: UnmatchedListFilter = {
    owner,
    ...(state === undefined ? {} : { state }),
    ...(network === undefined ? {} : { network }),
    ...(createdFromMs === undefined ? {} : { createdFromMs }),
    ...(createdToMs === undefined ? {} : { createdToMs }),
  };
  return { ok: true, filter, page, pageSize };
}

async function listDeposits(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const read = readListQuery(request.query, partnerOf(request));
  if (!read.ok) return read.response;
  const { page, pageSize } = read;
  const result = await listUnmatchedDeposits(env.ctx.store, read.filter, { offset: (page - 1) * pageSize, limit: pageSize });
  return jsonResponse(200, { page, pageSize, total: result.total, unmatched_deposits: result.items.map(unmatchedDepositView) });
}

async function getDeposit(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const doc = await partnerUnmatchedDeposit(env, partnerOf(request), request.params['id'] ?? '');
  return doc === null ? depositNotFound() : jsonResponse(200, unmatchedDepositView(doc));
}

/** The HTTP answer to the deposit actor's reply to a partner decision. */
function decisionResponse(reply: DepositReply): HttpResponse {
  if (reply.result === 'decided') return jsonResponse(200, unmatchedDepositView(reply.deposit as JsonObject));
  if (reply.result === 'rejected' && (reply.code === 'refund_withheld' || reply.code === 'unmatched_deposit_not_open')) return errorResponse(reply.code);
  return depositNotFound();
}

/** Asks the deposit actor of `doc` for a partner decision. */
async function decide(env: EdgeEnv, doc: JsonObject, kind: 'refund' | 'apply', payload: { [key: string]: string }, commandId: string): Promise<HttpResponse> {
  const asked = await askOr503(() => env.actors.ask<DepositReply>(depositActorType, String(doc['depositKey']), kind, payload, commandId));
  return asked.ok ? decisionResponse(asked.value) : asked.response;
}

async function refundDeposit(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const doc = await partnerUnmatchedDeposit(env, partnerId, request.params['id'] ?? '');
  if (doc === null) return depositNotFound();
  // The body is not read: the path says everything (an Idempotency-Key still replays the answer).
  return idempotentPost(env, request, partnerId, { refund: doc['id'] }, () => ({ commandId: randomUUID() }), (ids) =>
    decide(env, doc, 'refund', { partnerId }, idOf(ids, 'commandId')));
}

/** The transaction id of a 200 acceptance, or null (a refusal, or `kycRequired`: nothing created). */
function acceptedTransactionId(response: HttpResponse): string | null {
  if (response.status !== 200 || typeof response.body !== 'string') return null;
  const body: unknown = JSON.parse(response.body);
  return body !== null && typeof body === 'object' && 'id' in body && typeof body.id === 'string' ? body.id : null;
}

async function applyToQuote(env: EdgeEnv, refusals: EarlyRefusals, partnerId: string, doc: JsonObject, body: TransactionBody, ids: Readonly<Record<string, string>>): Promise<HttpResponse> {
  const transactionId = idOf(ids, 'transactionId');
  // A retry after the apply step itself failed: the transaction exists, so only link it again.
  if (doc['state'] !== 'open' && doc['appliedTo'] !== transactionId) return errorResponse('unmatched_deposit_not_open');
  if (doc['state'] === 'open') {
    const found = await partnerQuote(env, partnerId, body.quote_id);
    if (!found.ok) return found.response;
    const record = found.record;
    if (record === null) return errorResponse('quote_not_found');
    const deposit = { network: doc['network'], asset: doc['asset'], amount: decimalFromExactString(String(doc['amount'])) } as Parameters<typeof applyMismatch>[0];
    const mismatch = applyMismatch(deposit, record.quote);
    if (mismatch !== null) return errorResponse('deposit_quote_mismatch', mismatch);
    const accepted = await accept(env, refusals, partnerId, body, ids);
    // A refusal creates nothing: the deposit stays open and the answer is the acceptance's. So does
    // `kycRequired` (a 200 of POST /transaction), answered here as a refusal: nothing was applied.
    if (accepted.status === 200 && acceptedTransactionId(accepted) === null) {
      return errorResponse('invalid_request', 'KYC is required for this user before a transaction can be accepted (POST /kyc); the deposit stays open');
    }
    if (acceptedTransactionId(accepted) !== transactionId) return accepted;
  }
  return decide(env, doc, 'apply', { partnerId, transactionId }, idOf(ids, 'applyCommandId'));
}

async function applyDeposit(env: EdgeEnv, refusals: EarlyRefusals, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const doc = await partnerUnmatchedDeposit(env, partnerId, request.params['id'] ?? '');
  if (doc === null) return depositNotFound();
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const parsed = parseWith(transactionBodySchema, body.value);
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const input = parsed.value;
  if (!userIdFits(partnerId, input.user_id)) return userIdTooLong('user_id');
  if (input.account_number === null && input.qr_code === null) return errorResponse('invalid_request', 'Either account_number or qr_code must be given');
  const newIds = (): Record<string, string> => ({ transactionId: randomUUID(), commandId: randomUUID(), applyCommandId: randomUUID() });
  return idempotentPost(env, request, partnerId, { apply: doc['id'], ...input }, newIds, async (ids) => {
    // Read again under the key: a retry finds the deposit as the first attempt left it.
    const current = (await partnerUnmatchedDeposit(env, partnerId, String(doc['id']))) ?? doc;
    return applyToQuote(env, refusals, partnerId, current, input, ids);
  });
}

/**
 * The partner decisions the portal offers (src/portal/unmatched-api.ts): the same checks and the
 * same deposit actor commands as the routes above, for a signed-in administrator of `partnerId`.
 */
export interface UnmatchedDecisions {
  refund(partnerId: string, id: string): Promise<HttpResponse>;
  apply(partnerId: string, id: string, body: unknown): Promise<HttpResponse>;
}

export function unmatchedDecisions(env: EdgeEnv): UnmatchedDecisions {
  const refusals = createEarlyRefusals(env.ctx.store, () => env.ctx.config.limits());
  return {
    async refund(partnerId, id) {
      const doc = await partnerUnmatchedDeposit(env, partnerId, id);
      return doc === null ? depositNotFound() : decide(env, doc, 'refund', { partnerId }, randomUUID());
    },
    async apply(partnerId, id, body) {
      const doc = await partnerUnmatchedDeposit(env, partnerId, id);
      if (doc === null) return depositNotFound();
      const parsed = parseWith(transactionBodySchema, body);
      if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
      if (parsed.value.account_number === null && parsed.value.qr_code === null) return errorResponse('invalid_request', 'Either account_number or qr_code must be given');
      return applyToQuote(env, refusals, partnerId, doc, parsed.value, { transactionId: randomUUID(), commandId: randomUUID(), applyCommandId: randomUUID() });
    },
  };
}

export function unmatchedDepositRoutes(env: EdgeEnv): Route[] {
  const guard = env.partnerGuard;
  const refusals = createEarlyRefusals(env.ctx.store, () => env.ctx.config.limits());
  return [
    { method: 'GET', pattern: '/unmatched-deposits/list', guard, handler: (request) => listDeposits(env, request) },
    { method: 'GET', pattern: '/unmatched-deposit/:id', guard, handler: (request) => getDeposit(env, request) },
    { method: 'POST', pattern: '/unmatched-deposit/:id/refund', guard, handler: (request) => refundDeposit(env, request) },
    { method: 'POST', pattern: '/unmatched-deposit/:id/apply', guard, handler: (request) => applyDeposit(env, refusals, request) },
  ];
}
