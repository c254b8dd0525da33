// POST /transaction (acceptance), GET /transaction/{id}, GET /transactions/list.
//
// Acceptance: the edge checks what it can read cheaply, in the acceptance catalogue's order of
// precedence (user_disabled → quote_not_found → quote_expired → quote_used / quote_in_use →
// transaction_cap → rail_unavailable → account_unverifiable; docs/decisions-limits.md) with the
// saga's own read checks (`preChecks` in src/domain/acceptance.ts), then asks the transaction
// actor, which runs the same read checks again (authoritative), liquidity, the
// quote's claim (single use) and the counter reservations (KYC gate, daily caps, KYB). One
// deviation from the catalogue's order: `kyb_cap` is a counter reservation, so it answers after
// `rail_unavailable`/`account_unverifiable` (docs/api.md). The quote's use is read with the quote
// and refused here as the quote actor would refuse it at that moment; the actor's claim decides
// (two acceptances racing both pass this read). Before asking, the edge answers a refusal the saga
// is certain to give from the counters' committed state (a spent method cap: `early-refusal.ts`),
// writing nothing.
import { randomUUID } from 'node:crypto';
import type { JsonValue } from '../../actors/envelope.ts';
import { kycCollection, kycKey } from '../../actors/kyc-actor.ts';
import { toJsonValue } from '../../actors/state-codec.ts';
import { transactionActorType, transactionsCollection, type AcceptPayload, type AcceptReply } from '../../actors/transaction-actor.ts';
import { preChecks } from '../../domain/acceptance.ts';
import { toJsonNumber } from '../../domain/money.ts';
import type { Quote } from '../../domain/quote.ts';
import type { QuoteUse } from '../../domain/quote-use.ts';
import { transactionReference } from '../../domain/reference.ts';
import { classifyBrebKey } from '../../rails/breb-keys.ts';
import { pixRecipient } from '../../rails/pix-recipient.ts';
import { listOffsetMax, type JsonObject } from '../../store/store.ts';
import { createEarlyRefusals, type EarlyRefusals } from '../early-refusal.ts';
import { errorResponse, isPartnerErrorCode, rejectionResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { listQuerySchema, parseWith, transactionBodySchema, type TransactionBody } from '../schemas.ts';
import { checkWallet } from './chain-formats.ts';
import {
  acceptanceRejection,
  askOr503,
  capabilityUnavailable,
  idOf,
  idempotentPost,
  jsonObjectBody,
  partnerOf,
  partnerQuote,
  partnerTransaction,
  quoteOfDocument,
  transactionNotFound,
  userIdFits,
  userIdTooLong,
  type EdgeEnv,
} from './common.ts';

export const pageSizeDefault = 20;
export const pageSizeMax = 100;

type Recipient = { ok: true; accountNumber: string | null; qrCode: string | null } | { ok: false; response: HttpResponse };

function invalid(reason: string): Recipient {
  return { ok: false, response: errorResponse('invalid_request', reason) };
}

function unverifiable(detail: string): Recipient {
  return { ok: false, response: acceptanceRejection({ code: 'account_unverifiable' }, detail) };
}

/**
 * The recipient, checked against the quote. Payout: a Bre-B key in `account_number` (BREB), or for
 * PIX a key and/or a BR Code in `qr_code` naming one beneficiary (`pixRecipient`); the account
 * number is stored in its normal form and is the key that is paid. Onramp: `account_number` is the
 * wallet that receives the crypto on the quoted network; `qr_code` does not apply.
 */
function checkRecipient(quote: Quote, body: TransactionBody): Recipient {
  if (quote.direction === 'onramp') {
    if (body.qr_code !== null) return invalid('qr_code does not apply to onramp quotes; send the destination wallet in account_number');
    if (body.account_number === null) return invalid('account_number (the wallet that receives the crypto) is required for onramp quotes');
    const wallet = checkWallet(quote.network, body.account_number);
    return wallet.ok ? { ok: true, accountNumber: wallet.address, qrCode: null } : unverifiable(wallet.reason);
  }
  if (quote.paymentMethod === 'PIX') {
    const recipient = pixRecipient(body.account_number, body.qr_code, quote.targetAmount);
    if (recipient.ok) return recipient;
    return recipient.kind === 'unverifiable' ? unverifiable(recipient.reason) : invalid(recipient.reason);
  }
  if (body.qr_code !== null) return invalid('qr_code is accepted for PIX payouts only');
  if (body.account_number === null) return invalid('account_number (a Bre-B key) is required for BREB payouts');
  const key = classifyBrebKey(body.account_number);
  return key.ok ? { ok: true, accountNumber: key.normalized, qrCode: null } : unverifiable(`account_number: ${key.reason}`);
}

/** payment_context from the chains role; 503 when it is not wired or cannot give one now. */
function depositInstructions(env: EdgeEnv, quote: Quote, transactionId: string): { ok: true; value: JsonValue } | { ok: false; response: HttpResponse } {
  const paymentContexts = env.deps.paymentContexts;
  if (paymentContexts === undefined) return { ok: false, response: capabilityUnavailable('Deposit instructions (payment_context)') };
  try {
    return { ok: true, value: paymentContexts.forPayout(quote, transactionId) };
  } catch (error) {
    env.ctx.log.warn({ error: String(error), network: quote.network }, 'deposit instructions unavailable');
    return { ok: false, response: capabilityUnavailable(`Deposit instructions for ${quote.network}`) };
  }
}

/** Onramp: the destination wallet (account_unverifiable), the crypto inventory (liquidity_insufficient), then the PIX charge (src/onramp). */
async function onrampInstructions(
  env: EdgeEnv,
  partnerId: string,
  quote: Quote,
  transactionId: string,
  destination: string | null,
): Promise<{ ok: true; value: JsonValue } | { ok: false; response: HttpResponse }> {
  const onramp = env.deps.onramp;
  if (onramp === undefined || destination === null) return { ok: false, response: capabilityUnavailable('Onramp PIX charges') };
  const prepared = await onramp.prepare({ partnerId, transactionId, quote, destination });
  if (prepared.ok) return { ok: true, value: prepared.paymentContext };
  return { ok: false, response: 'rejection' in prepared ? acceptanceRejection(prepared.rejection, prepared.detail) : capabilityUnavailable(prepared.unavailable) };
}

/**
 * The HTTP answer to the transaction actor's reply. A refusal's status is its code's
 * (`httpStatusOf`); a reply stored by an older version may carry the status it had then, used only
 * for a code this edge no longer knows (a 4xx; anything else is 400).
 */
export function acceptReplyResponse(reply: AcceptReply): HttpResponse {
  if (!reply.ok) {
    if (isPartnerErrorCode(reply.code)) return rejectionResponse(reply.code, reply.reason, reply.retryable);
    const stored = reply.httpStatus;
    const status = stored !== undefined && Number.isInteger(stored) && stored >= 400 && stored < 500 ? stored : 400;
    return jsonResponse(status, { code: reply.code, reason: reply.reason, retryable: reply.retryable });
  }
  if (reply.kycRequired) return jsonResponse(200, { id: null, kycRequired: true, transaction_reference: null, payment_context: null });
  return jsonResponse(200, {
    id: reply.id,
    kycRequired: false,
    transaction_reference: reply.transactionReference,
    payment_context: reply.paymentContext,
  });
}

/**
 * The saga's refusal worked out at the edge (a spent method cap), or null. A counter that cannot be
 * read or decoded here is left to the actor, which reads it itself: this is a shortcut, never a gate.
 */
async function earlyRefusal(
  env: EdgeEnv,
  refusals: EarlyRefusals,
  payload: AcceptPayload,
  transactionId: string,
  nowMs: number,
  quoteUse: QuoteUse | null,
): Promise<AcceptReply | null> {
  try {
    return await refusals.check(payload, transactionId, nowMs, quoteUse);
  } catch (error) {
    env.ctx.log.warn({ error: String(error) }, 'early refusal check failed; asking the transaction actor');
    return null;
  }
}

/** The acceptance of POST /transaction, also run by POST /unmatched-deposit/{id}/apply (src/edge/routes/unmatched-deposits.ts). */
export async function accept(
  env: EdgeEnv,
  refusals: EarlyRefusals,
  partnerId: string,
  body: TransactionBody,
  ids: Readonly<Record<string, string>>,
): Promise<HttpResponse> {
  // First in the catalogue's order, and independent of the quote: a disabled user never gets further.
  if (env.ctx.partners.isUserDisabled(partnerId, body.user_id)) return acceptanceRejection({ code: 'user_disabled' });
  const found = await partnerQuote(env, partnerId, body.quote_id);
  if (!found.ok) return found.response;
  const record = found.record;
  // Another partner's quote is indistinguishable from a missing one.
  if (record === null) return errorResponse('quote_not_found');
  const { quote } = record;
  const partner = env.ctx.partners.get(partnerId);
  if (partner === undefined) return errorResponse('authentication_failed', 'Unknown partner');
  const transactionId = idOf(ids, 'transactionId');
  // The saga's read checks ranked before the recipient's (expiry, the quote's use, the transaction
  // cap, the rail). The quote's use: used by (or being accepted for) another transaction. This
  // request's own transaction (a retry with the same Idempotency-Key after a failure) passes, and
  // its actor answers as before. Liquidity ranks after the recipient: the actor checks it.
  const read = { quote, railAvailable: env.deps.liquidity?.available(quote.paymentMethod) ?? true, liquidity: null, quoteUse: { use: record.use, transactionId } };
  const rejected = preChecks(read, env.ctx.config.limits(), env.ctx.clock.nowMs(), 'account_unverifiable');
  if (rejected !== null) return acceptanceRejection(rejected);
  const recipient = checkRecipient(quote, body);
  if (!recipient.ok) return recipient.response;
  const instructions =
    quote.direction === 'onramp'
      ? await onrampInstructions(env, partnerId, quote, transactionId, recipient.accountNumber)
      : depositInstructions(env, quote, transactionId);
  if (!instructions.ok) return instructions.response;
  const kyc = await env.ctx.store.get(kycCollection, kycKey(partnerId, body.user_id));
  const payload: AcceptPayload = {
    partnerId,
    userId: body.user_id,
    quote,
    accountNumber: recipient.accountNumber,
    qrCode: recipient.qrCode,
    taxId: body.tax_id,
    externalId: null,
    kycEnabled: partner.kycEnabled,
    kycApproved: kyc?.['status'] === 'APPROVED',
    kybApproved: partner.kybApproved,
    liquidity: env.deps.liquidity?.latest(quote.paymentMethod)?.amount ?? null,
    railAvailable: env.deps.liquidity?.available(quote.paymentMethod) ?? true,
    paymentContext: instructions.value,
  };
  const early = await earlyRefusal(env, refusals, payload, transactionId, env.ctx.clock.nowMs(), record.use);
  if (early !== null) return acceptReplyResponse(early);
  const asked = await askOr503(() =>
    env.actors.ask<AcceptReply>(transactionActorType, transactionId, 'accept', toJsonValue(payload), idOf(ids, 'commandId')),
  );
  return asked.ok ? acceptReplyResponse(asked.value) : asked.response;
}

async function acceptTransaction(env: EdgeEnv, refusals: EarlyRefusals, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const parsed = parseWith(transactionBodySchema, body.value);
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const input = parsed.value;
  if (!userIdFits(partnerId, input.user_id)) return userIdTooLong('user_id');
  if (input.account_number === null && input.qr_code === null) {
    return errorResponse('invalid_request', 'Either account_number or qr_code must be given');
  }
  return idempotentPost(
    env,
    request,
    partnerId,
    input,
    () => ({ transactionId: randomUUID(), commandId: randomUUID() }),
    (ids) => accept(env, refusals, partnerId, input, ids),
  );
}

async function getTransaction(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const found = await partnerTransaction(env, partnerOf(request), request.params['id'] ?? '');
  if (found === null) return transactionNotFound();
  const { id, doc } = found;
  return jsonResponse(200, {
    id,
    status: doc['status'] ?? null,
    transaction_reference: transactionReference(id),
    on_chain_tx_hash: typeof doc['onChainId'] === 'string' ? doc['onChainId'] : null,
    kycRequired: false,
    user_id: doc['userId'] ?? null,
  });
}

/** A page or page size as the list routes read it: plain digits, at least 1; `fallback` when absent. */
export function positiveInteger(text: string | undefined, fallback: number): number | null {
  if (text === undefined) return fallback;
  if (!/^\d{1,7}$/.test(text)) return null;
  const value = Number(text);
  return value >= 1 ? value : null;
}

/** One transaction as `GET /transactions/list` shows it (the portal shows the same). */
export function listItem(id: string, doc: JsonObject): JsonValue {
  const quote = quoteOfDocument(doc);
  return {
    id,
    status: doc['status'] ?? null,
    accountNumber: typeof doc['accountNumber'] === 'string' ? doc['accountNumber'] : null,
    onChainId: typeof doc['onChainId'] === 'string' ? doc['onChainId'] : null,
    quote: {
      id: quote.id,
      cryptoCurrency: quote.cryptoCurrency,
      network: quote.network,
      paymentMethod: quote.paymentMethod,
      sourceAmount: toJsonNumber(quote.sourceAmount),
      targetAmount: toJsonNumber(quote.targetAmount),
      targetCurrency: quote.targetCurrency,
    },
  };
}

async function listTransactions(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const parsed = parseWith(listQuerySchema, request.query, 'query');
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const { externalUserId } = parsed.value;
  if (!userIdFits(partnerId, externalUserId)) return userIdTooLong('externalUserId');
  const page = positiveInteger(parsed.value.page, 1);
  if (page === null) return errorResponse('invalid_request', 'page must be a positive integer');
  const pageSize = positiveInteger(parsed.value.pageSize, pageSizeDefault);
  if (pageSize === null || pageSize > pageSizeMax) {
    return errorResponse('invalid_request', `pageSize must be an integer from 1 to ${pageSizeMax}`);
  }
  const offset = (page - 1) * pageSize;
  if (offset > listOffsetMax) return errorResponse('invalid_request', `page is too large: at most ${listOffsetMax} items can be skipped`);
  const result = await env.ctx.store.list(transactionsCollection, {
    where: { partnerId, userId: externalUserId },
    orderBy: 'createdAtMs',
    direction: 'desc',
    offset,
    limit: pageSize,
  });
  return jsonResponse(200, { page, pageSize, total: result.total, transactions: result.items.map((item) => listItem(item.id, item.doc)) });
}

export function transactionRoutes(env: EdgeEnv): Route[] {
  const guard = env.partnerGuard;
  const refusals = createEarlyRefusals(env.ctx.store, () => env.ctx.config.limits());
  return [
    { method: 'POST', pattern: '/transaction', guard, handler: (request) => acceptTransaction(env, refusals, request) },
    { method: 'GET', pattern: '/transaction/:id', guard, handler: (request) => getTransaction(env, request) },
    { method: 'GET', pattern: '/transactions/list', guard, handler: (request) => listTransactions(env, request) },
  ];
}
