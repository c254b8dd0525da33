// POST /ops/transactions/reconcile-hash (X-OPS-API-KEY). Every reconciler outcome is 200 with the
// spec's body (the outcome is in `result`); a body that does not validate is 400, a missing
// reconciler 503.
import { randomUUID } from 'node:crypto';
import { isOneOf, networks } from '../../domain/assets.ts';
import { parseUuid } from '../../domain/ids.ts';
import { errorResponse, reasonCharsMax } from '../errors.ts';
import { jsonResponse, type HttpResponse, type RequestContext, type Route } from '../http.ts';
import { parseWith, reconcileBodySchema } from '../schemas.ts';
import { checkOnChainTx } from './chain-formats.ts';
import { capabilityUnavailable, idempotentPost, jsonObjectBody, type EdgeEnv } from './common.ts';

/** Idempotency scope of the ops endpoints (partner ids cannot contain a colon-free `:ops`). */
export const opsIdempotencyScope = ':ops';

async function reconcileHash(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const parsed = parseWith(reconcileBodySchema, body.value);
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const blockchain = parsed.value.blockchain;
  if (!isOneOf(networks, blockchain)) return errorResponse('invalid_request', `blockchain must be one of ${networks.join(', ')}`);
  const onChainTx = parsed.value.on_chain_tx.trim();
  const shape = checkOnChainTx(blockchain, onChainTx);
  if (!shape.ok) return errorResponse('invalid_request', shape.reason);
  const rawTransactionId = parsed.value.transaction_id ?? null;
  const transactionId = rawTransactionId === null || rawTransactionId.trim() === '' ? null : parseUuid(rawTransactionId);
  if (rawTransactionId !== null && rawTransactionId.trim() !== '' && transactionId === null) {
    return errorResponse('invalid_request', 'transaction_id must be a transaction UUID');
  }
  const reconciler = env.deps.reconciler;
  if (reconciler === undefined) return capabilityUnavailable('Reconciliation');
  return idempotentPost(env, request, opsIdempotencyScope, { blockchain, onChainTx, transactionId }, () => ({ requestId: randomUUID() }), async () => {
    const outcome = await reconciler.reconcile({ blockchain, onChainTx, transactionId });
    return jsonResponse(200, {
      blockchain,
      on_chain_tx: onChainTx,
      result: outcome.result,
      transaction_id: outcome.transactionId ?? transactionId,
      transaction_status: outcome.transactionStatus,
      reason: outcome.reason === null ? null : outcome.reason.slice(0, reasonCharsMax),
    });
  });
}

export function opsRoutes(env: EdgeEnv): Route[] {
  return [{ method: 'POST', pattern: '/ops/transactions/reconcile-hash', guard: env.opsGuard, handler: (request) => reconcileHash(env, request) }];
}
