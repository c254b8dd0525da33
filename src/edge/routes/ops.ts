// POST /ops/transactions/reconcile-hash (X-OPS-API-KEY). Every reconciler outcome is 200 with the
// spec's body (the outcome is in `result`). A JSON object whose fields do not validate is 400 with
// the spec's body too, `result: "invalid"` ("payload or chain data did not validate"), plus the
// error fields (`code`, `retryable`) every other 400 has. A body that is not a JSON object is the
// edge's plain 400/413/415; a missing reconciler 503.
import { randomUUID } from 'node:crypto';
import { isOneOf, networks } from '../../domain/assets.ts';
import { parseUuid } from '../../domain/ids.ts';
import { errorBody, errorStatus, reasonCharsMax } from '../errors.ts';
import { jsonResponse, type HttpResponse, type RequestContext, type Route } from '../http.ts';
import { parseWith, reconcileBodySchema } from '../schemas.ts';
import { checkOnChainTx } from './chain-formats.ts';
import { capabilityUnavailable, idempotentPost, jsonObjectBody, type EdgeEnv } from './common.ts';

/** Idempotency scope of the ops endpoints (partner ids cannot contain a colon-free `:ops`). */
export const opsIdempotencyScope = ':ops';

/** The spec's reconcile body with `result: "invalid"`, as a 400 with the usual error fields. */
function invalidPayload(body: Readonly<Record<string, unknown>>, reason: string): HttpResponse {
  const text = (value: unknown): string | null => (typeof value === 'string' ? value.slice(0, reasonCharsMax) : null);
  return jsonResponse(errorStatus('invalid_request'), {
    ...errorBody('invalid_request', reason),
    blockchain: text(body['blockchain']),
    on_chain_tx: text(body['on_chain_tx']),
    result: 'invalid',
    transaction_id: text(body['transaction_id']),
    transaction_status: null,
  });
}

async function reconcileHash(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const parsed = parseWith(reconcileBodySchema, body.value);
  if (!parsed.ok) return invalidPayload(body.value, parsed.reason);
  const blockchain = parsed.value.blockchain;
  if (!isOneOf(networks, blockchain)) return invalidPayload(body.value, `blockchain must be one of ${networks.join(', ')}`);
  const onChainTx = parsed.value.on_chain_tx.trim();
  const shape = checkOnChainTx(blockchain, onChainTx);
  if (!shape.ok) return invalidPayload(body.value, shape.reason);
  const rawTransactionId = parsed.value.transaction_id ?? null;
  const transactionId = rawTransactionId === null || rawTransactionId.trim() === '' ? null : parseUuid(rawTransactionId);
  if (rawTransactionId !== null && rawTransactionId.trim() !== '' && transactionId === null) {
    return invalidPayload(body.value, 'transaction_id must be a transaction UUID');
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
