// One error catalogue at the edge (Fastify's pattern): every code a partner can receive has one HTTP
// status, decided in src/edge/errors.ts and nowhere else; the domain gives code, retryable and
// reason only. docs/api.md's error table lists every code with that status, and names no other.
// The statuses themselves are pinned below: a partner must never see one change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  acceptReplyResponse,
} from '../../src/edge/routes/transactions.ts';
import { errorCatalogue, errorResponse, httpStatusOf, partnerErrorCodes, rejectionResponse } from '../../src/edge/errors.ts';
import { withRequestId } from '../../src/edge/http-response.ts';
import { quoteErrorCatalogue, quoteErrorCodes } from '../../src/domain/quote-errors.ts';
import { acceptanceRejectionCatalogue, describeAcceptanceRejection } from '../../src/domain/limits.ts';

/** The status of every code as partners saw it before the catalogues were joined. */
const statusesPartnersSee: Readonly<Record<string, number>> = {
  invalid_request: 400,
  deposit_quote_mismatch: 400,
  unmatched_deposit_not_open: 409,
  refund_withheld: 409,
  quote_not_found: 400,
  quote_expired: 400,
  quote_used: 400,
  quote_in_use: 400,
  kyc_rejected: 400,
  transaction_cap: 400,
  kyb_cap: 400,
  rail_unavailable: 400,
  account_unverifiable: 400,
  liquidity_insufficient: 400,
  user_daily_count_cap: 400,
  user_daily_amount_cap: 400,
  method_daily_cap: 400,
  corridor_unavailable: 400,
  minimum: 400,
  maximum: 400,
  quote_unavailable: 400,
  authentication_failed: 401,
  user_disabled: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_in_progress: 409,
  rehearsal_not_applicable: 409,
  receipt_not_available: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  idempotency_conflict: 422,
  rate_limited: 429,
  headers_too_large: 431,
  server_error: 500,
  service_unavailable: 503,
};

/** `| \`code\` | status | when |` rows of docs/api.md's error table. */
function documentedCodes(): Map<string, number> {
  const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const start = doc.indexOf('| code | status | when |');
  assert.ok(start >= 0, 'docs/api.md has the error table');
  const rows = new Map<string, number>();
  for (const line of doc.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const match = /^\| `([a-z_]+)` \| (\d{3}) \|/.exec(line);
    assert.ok(match?.[1] !== undefined && match[2] !== undefined, `a row names one code and its status: ${line.slice(0, 80)}`);
    assert.ok(!rows.has(match[1]), `${match[1]} has one row`);
    rows.set(match[1], Number(match[2]));
  }
  return rows;
}

test('every code a partner can receive has one status, the one partners have always seen', () => {
  const codes = [...Object.keys(errorCatalogue), ...quoteErrorCodes, ...Object.keys(acceptanceRejectionCatalogue)];
  assert.deepEqual([...new Set(codes)].sort(), [...partnerErrorCodes].sort());
  assert.deepEqual([...partnerErrorCodes].sort(), Object.keys(statusesPartnersSee).sort());
  for (const code of partnerErrorCodes) assert.equal(httpStatusOf(code), statusesPartnersSee[code], code);
});

test('docs/api.md lists every code with its status, and no code the edge does not know', () => {
  const documented = documentedCodes();
  const known = new Set<string>(partnerErrorCodes);
  for (const code of documented.keys()) assert.ok(known.has(code), `docs/api.md names an unknown code: ${code}`);
  for (const code of partnerErrorCodes) assert.equal(documented.get(code), httpStatusOf(code), `docs/api.md: ${code}`);
});

test('the domain keeps code, retryable and reason; no HTTP status', () => {
  for (const entry of Object.values(quoteErrorCatalogue)) assert.ok(!('httpStatus' in entry));
  for (const entry of Object.values(acceptanceRejectionCatalogue)) assert.ok(!('httpStatus' in entry));
  assert.deepEqual(describeAcceptanceRejection({ code: 'user_disabled' }), {
    code: 'user_disabled',
    retryable: false,
    reason: 'The user is disabled; no transaction can be accepted for this user',
  });
});

test('an acceptance reply persisted with an HTTP status (an old snapshot or replay) is answered as a new one', () => {
  const reason = 'The user is disabled; no transaction can be accepted for this user';
  const fresh = acceptReplyResponse({ ok: false, code: 'user_disabled', reason, retryable: false });
  const old = acceptReplyResponse(JSON.parse(JSON.stringify({ ok: false, code: 'user_disabled', httpStatus: 403, reason, retryable: false })));
  assert.deepEqual(old, fresh);
  assert.equal(fresh.status, 403);
  assert.deepEqual(JSON.parse(String(fresh.body)), { code: 'user_disabled', reason, retryable: false });
  // A code this edge no longer knows keeps the status it was stored with (a 4xx), else 400.
  const retired = { ok: false as const, code: 'retired_code', reason: 'r', retryable: false };
  assert.equal(acceptReplyResponse({ ...retired, httpStatus: 403 }).status, 403);
  assert.equal(acceptReplyResponse({ ...retired, httpStatus: 500 }).status, 400);
  assert.equal(acceptReplyResponse(retired).status, 400);
});

test('every error body carries request_id, the X-Request-Id of the request that got it', () => {
  const body = errorResponse('not_found').body as string;
  assert.deepEqual(JSON.parse(withRequestId(404, body, 'req-1')), { code: 'not_found', reason: 'Not found', retryable: false, request_id: 'req-1' });
  const rejection = rejectionResponse('minimum', 'Amount below 10,000 COP', false).body as string;
  assert.equal(JSON.parse(withRequestId(400, rejection, 'req-2'))['request_id'], 'req-2');
  // Success bodies and bodies that are not error bodies are sent as built.
  assert.equal(withRequestId(200, '{"code":"x"}', 'req-3'), '{"code":"x"}');
  assert.equal(withRequestId(503, 'plain text', 'req-4'), 'plain text');
  // A replayed body that already names a request keeps it (no duplicate key).
  const named = withRequestId(400, rejection, 'req-5');
  assert.equal(withRequestId(400, named, 'req-6'), named);
});
