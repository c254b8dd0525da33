// POST /ops/transactions/reconcile-hash (X-OPS-API-KEY). Every request, a refused key too, writes
// one audit line (src/audit/operator-audit.ts): the ops key's id, the hash, the outcome.
// Every reconciler outcome is 200 with the
// spec's body (the outcome is in `result`). A JSON object whose fields do not validate is 400 with
// the spec's body too, `result: "invalid"` ("payload or chain data did not validate"), plus the
// error fields (`code`, `retryable`) every other 400 has. A body that is not a JSON object is the
// edge's plain 400/413/415; a missing reconciler 503.
import { randomUUID } from 'node:crypto';
import { isOneOf, networks } from '../../domain/assets.ts';
import { parseUuid } from '../../domain/ids.ts';
import { errorBody, errorStatus, reasonCharsMax } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { Guard, HttpResponse, RequestContext, Route } from '../http-types.ts';
import { auditTarget, createAuditLog, operatorKeyId, type AuditLog, type AuditOutcome } from '../../audit/operator-audit.ts';
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

function auditOutcome(status: number): AuditOutcome {
  if (status < 300) return 'ok';
  if (status === 401 || status === 403) return 'unauthenticated';
  if (status === 503) return 'unavailable';
  return status < 500 ? 'refused' : 'failed';
}

/** The route's guard, plus an audit line for a request it refuses (the handler audits the others). */
function auditedGuard(guard: Guard, audit: AuditLog, action: string): Guard {
  return (head) => {
    const verdict = guard(head);
    if (!verdict.allow) {
      audit.record({ channel: 'ops-http', action, target: '', outcome: auditOutcome(verdict.response.status), detail: String(verdict.response.status), operator: null, peer: head.remoteAddress });
    }
    return verdict;
  };
}

/** The handler, with its audit line: who (the ops key's id), what (the identifiers in the body), how it ended. */
function audited(audit: AuditLog, action: string, handler: (request: RequestContext) => Promise<HttpResponse>): (request: RequestContext) => Promise<HttpResponse> {
  return async (request) => {
    const presented = request.headers['x-ops-api-key']?.trim() ?? '';
    const body = jsonObjectBody(request);
    const entry = {
      channel: 'ops-http',
      action,
      target: body.ok ? auditTarget(body.value, ['blockchain', 'on_chain_tx', 'transaction_id']) : '',
      // The guard let the request in: the key is valid.
      operator: operatorKeyId(presented),
      // Read now: the peer is gone from the connection once the response is sent.
      peer: request.remoteAddress,
    } as const;
    try {
      const response = await handler(request);
      audit.record({ ...entry, outcome: auditOutcome(response.status), detail: String(response.status) });
      return response;
    } catch (error) {
      audit.record({ ...entry, outcome: 'failed', detail: '500' });
      throw error;
    }
  };
}

export function opsRoutes(env: EdgeEnv): Route[] {
  const audit = createAuditLog(env.ctx.log, env.ctx.clock);
  const pattern = '/ops/transactions/reconcile-hash';
  const action = `POST ${pattern}`;
  return [{ method: 'POST', pattern, guard: auditedGuard(env.opsGuard, audit, action), handler: audited(audit, action, (request) => reconcileHash(env, request)) }];
}
