// The portal's unmatched deposits (docs/unmatched-deposits.md, docs/portal.md): the partner's own,
// newest first, filtered by state, and the two decisions — refund to the sender, or apply to a
// fresh quote. The decisions are the partner API's own (src/edge/routes/unmatched-deposits.ts,
// `unmatchedDecisions`): the same checks, the same deposit actor commands, the same answers.
// Every POST carries the session's CSRF token (`withSession`).
import { listUnmatchedDeposits } from '../actors/unmatched-documents.ts';
import { readListQuery, unmatchedDepositView, type UnmatchedDecisions } from '../edge/routes/unmatched-deposits.ts';
import type { Route } from '../edge/http-types.ts';
import type { SnapshotStore } from '../store/store.ts';
import { portalJson, withSession, type PortalRequestEnv, type SessionHandler } from './requests.ts';

export interface UnmatchedApiEnv extends PortalRequestEnv {
  readonly store: SnapshotStore;
  readonly decisions: UnmatchedDecisions;
}

type Handler = SessionHandler<UnmatchedApiEnv>;

const listDeposits: Handler = async (env, session, request) => {
  const read = readListQuery(request.query, session.partnerId);
  if (!read.ok) return read.response;
  const { page, pageSize } = read;
  const result = await listUnmatchedDeposits(env.store, read.filter, { offset: (page - 1) * pageSize, limit: pageSize });
  return portalJson(200, { page, pageSize, total: result.total, deposits: result.items.map(unmatchedDepositView) });
};

const refund: Handler = (env, session, request) => env.decisions.refund(session.partnerId, request.params['id'] ?? '');

const apply: Handler = async (env, session, request) => {
  let body: unknown = null;
  try {
    body = JSON.parse(request.body.toString('utf8'));
  } catch {
    return portalJson(400, { code: 'invalid_request', reason: 'The body must be JSON: quote_id, user_id, account_number', retryable: false });
  }
  return env.decisions.apply(session.partnerId, request.params['id'] ?? '', body);
};

export function unmatchedApiRoutes(env: UnmatchedApiEnv): Route[] {
  return [
    { method: 'GET', pattern: '/portal/api/unmatched-deposits', handler: withSession(env, listDeposits) },
    { method: 'POST', pattern: '/portal/api/unmatched-deposits/:id/refund', bodyBytesMax: 1024, handler: withSession(env, refund) },
    { method: 'POST', pattern: '/portal/api/unmatched-deposits/:id/apply', bodyBytesMax: 4096, handler: withSession(env, apply) },
  ];
}
