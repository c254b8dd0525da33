// GET /transaction/{id}/receipt: the signed settlement receipt of a transaction whose money has
// finished moving; GET /.well-known/jwks.json: the public keys that verify receipts (docs/receipts.md).
// The receipt is the partner's own transaction only (another partner's is a 404, like a missing
// one); before the money finished moving it is 409 `receipt_not_available` with the reason. The
// JWKS needs no credentials (an auditor verifies without an API key) and may be cached.
import { fromJsonValue } from '../../actors/state-codec.ts';
import type { Deposit, RefundState, Settlement, TransactionStatus } from '../../domain/transaction.ts';
import type { Direction } from '../../domain/quote.ts';
import { settlementReceipt, type ReceiptSource } from '../../domain/receipt.ts';
import { transactionReference } from '../../domain/reference.ts';
import type { JsonObject } from '../../store/store.ts';
import type { ReceiptSigner } from '../receipt-signing.ts';
import { errorResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { capabilityUnavailable, partnerOf, partnerTransaction, quoteOfDocument, transactionNotFound, type EdgeEnv } from './common.ts';

/** How long a client or a proxy may keep the JWKS: a rotation publishes the new key well before it signs. */
export const jwksMaxAgeSeconds = 300;

function field<T>(doc: JsonObject, name: string): T | null {
  const value = doc[name];
  return value === undefined || value === null ? null : fromJsonValue<T>(value);
}

/** The receipt's inputs from the transaction's read model (src/actors/transaction-actor.ts `transactionDocument`). */
export function receiptSourceOf(id: string, doc: JsonObject): ReceiptSource {
  return {
    id,
    reference: transactionReference(id),
    userId: typeof doc['userId'] === 'string' ? doc['userId'] : '',
    direction: (doc['direction'] ?? 'payout') as Direction,
    status: doc['status'] as TransactionStatus,
    quote: quoteOfDocument(doc),
    createdAtMs: typeof doc['createdAtMs'] === 'number' ? doc['createdAtMs'] : 0,
    deposit: field<Deposit>(doc, 'deposit'),
    settlement: field<Settlement>(doc, 'settlement'),
    refund: field<RefundState>(doc, 'refund'),
    refundOnChainId: typeof doc['refundOnChainId'] === 'string' ? doc['refundOnChainId'] : null,
    refundTimes: field<{ requestedAtMs: number | null; settledAtMs: number | null }>(doc, 'refundTimes'),
  };
}

/** Whether the transaction has a receipt now (the portal shows its download button by it). */
export function receiptAvailable(id: string, doc: JsonObject): boolean {
  return settlementReceipt(receiptSourceOf(id, doc)).ok;
}

/**
 * `{ receipt, signature }` of the partner's transaction (already found and scoped), or the error:
 * 409 before its money finished moving, 503 without a signing key. The portal answers the same.
 */
export function signedReceiptResponse(signer: ReceiptSigner | null | undefined, id: string, doc: JsonObject, headers?: Readonly<Record<string, string>>): HttpResponse {
  if (signer === undefined || signer === null) return capabilityUnavailable('Settlement receipts (no signing key is configured)');
  const outcome = settlementReceipt(receiptSourceOf(id, doc));
  if (!outcome.ok) return errorResponse('receipt_not_available', outcome.reason);
  return jsonResponse(200, { receipt: outcome.receipt, signature: signer.sign(outcome.receipt) }, headers);
}

async function getReceipt(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const found = await partnerTransaction(env, partnerOf(request), request.params['id'] ?? '');
  if (found === null) return transactionNotFound();
  return signedReceiptResponse(env.receipts, found.id, found.doc);
}

function jwks(env: EdgeEnv): HttpResponse {
  const keys = env.receipts?.jwks().keys ?? [];
  return jsonResponse(200, { keys }, { 'cache-control': `public, max-age=${jwksMaxAgeSeconds}` });
}

export function receiptRoutes(env: EdgeEnv): Route[] {
  const publicGuard = env.publicGuard === undefined ? {} : { guard: env.publicGuard };
  return [
    { method: 'GET', pattern: '/transaction/:id/receipt', guard: env.partnerGuard, handler: (request) => getReceipt(env, request) },
    { method: 'GET', pattern: '/.well-known/jwks.json', ...publicGuard, handler: () => Promise.resolve(jwks(env)) },
  ];
}
