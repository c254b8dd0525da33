// Sandbox test helpers (registered only in sandbox mode; elsewhere these paths are 404):
// POST /sandbox/deposits and POST /sandbox/pix-payments `{ transaction_id, amount? }`, partner
// authenticated and scoped like every other transaction route. `amount` (a JSON number) defaults
// to the quoted amount; it is read exactly at the deposit's scale (token decimals for a chain
// deposit, 2 for BRL).
import { randomUUID } from 'node:crypto';
import { fiatDecimals } from '../../domain/assets.ts';
import { parseAmount, type Decimal } from '../../domain/money.ts';
import type { SandboxResult } from '../../ports/ports.ts';
import { errorResponse, reasonCharsMax } from '../errors.ts';
import { knownFields } from '../idempotency.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { parseWith, sandboxBodySchema } from '../schemas.ts';
import {
  capabilityUnavailable,
  idempotentPost,
  jsonObjectBody,
  partnerOf,
  partnerTransaction,
  quoteOfDocument,
  transactionNotFound,
  type EdgeEnv,
} from './common.ts';

type Helper = 'deposit' | 'pixPayment';

function resultResponse(result: SandboxResult): HttpResponse {
  if (result.ok) return jsonResponse(200, result.body);
  return jsonResponse(result.status, { code: result.code, reason: result.reason.slice(0, reasonCharsMax), retryable: false });
}

async function runHelper(env: EdgeEnv, request: RequestContext, helper: Helper): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const parsed = parseWith(sandboxBodySchema, body.value);
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const rawAmount = parsed.value.amount ?? null;
  if (rawAmount !== null && typeof rawAmount !== 'number') return errorResponse('invalid_request', 'amount must be a number');
  const sandbox = env.deps.sandbox;
  if (sandbox === undefined) return capabilityUnavailable('The sandbox driver');
  const canonical = knownFields(body.value, ['transaction_id', 'amount']);
  return idempotentPost(env, request, partnerId, canonical, () => ({ requestId: randomUUID() }), async () => {
    const found = await partnerTransaction(env, partnerId, parsed.value.transaction_id);
    if (found === null) return transactionNotFound();
    let amount: Decimal | null = null;
    if (rawAmount !== null) {
      const scale = helper === 'deposit' ? quoteOfDocument(found.doc).tokenDecimals : fiatDecimals.BRL;
      const read = parseAmount(rawAmount, scale, { label: 'amount' });
      if (!read.ok) return errorResponse('invalid_request', read.error.reason);
      amount = read.value;
    }
    const request = { partnerId, transactionId: found.id, amount };
    return resultResponse(helper === 'deposit' ? await sandbox.deposit(request) : await sandbox.pixPayment(request));
  });
}

export function sandboxRoutes(env: EdgeEnv): Route[] {
  if (!env.ctx.env.sandbox) return [];
  const guard = env.partnerGuard;
  return [
    { method: 'POST', pattern: '/sandbox/deposits', guard, handler: (request) => runHelper(env, request, 'deposit') },
    { method: 'POST', pattern: '/sandbox/pix-payments', guard, handler: (request) => runHelper(env, request, 'pixPayment') },
  ];
}
