// POST /payments/notify (and the per-chain /solana/payments/notify, /celo/payments/notify),
// GET /payments/liquidity, GET /qr-decoder/br. `GET /payments/banks` was removed from the
// contract and has no route (404).
import { randomUUID } from 'node:crypto';
import { isOneOf, methodCurrency, networks, paymentMethods, type Network } from '../../domain/assets.ts';
import { parseUuid } from '../../domain/ids.ts';
import { fiatDecimals } from '../../domain/assets.ts';
import { rescale, toFixedString, toJsonNumber, type Decimal } from '../../domain/money.ts';
import type { NotifyResult } from '../../ports/ports.ts';
import { decodeBrCode, toDecoderResponse } from '../../rails/brcode.ts';
import { errorResponse, reasonCharsMax } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { chainNotifyBodySchema, liquidityQuerySchema, notifyBodySchema, parseWith, qrDecoderQuerySchema } from '../schemas.ts';
import { notifyIsCharged } from '../notify-budget.ts';
import { checkOnChainTx } from './chain-formats.ts';
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

async function notify(env: EdgeEnv, request: RequestContext, fixedNetwork: Network | null): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  let network: Network;
  let onChainTx: string;
  let rawTransactionId: string;
  if (fixedNetwork === null) {
    const parsed = parseWith(notifyBodySchema, body.value);
    if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
    const blockchain = parsed.value.blockchain;
    if (!isOneOf(networks, blockchain)) return errorResponse('invalid_request', `blockchain must be one of SOLANA, CELO`);
    network = blockchain;
    onChainTx = parsed.value.on_chain_tx.trim();
    rawTransactionId = parsed.value.transaction_id;
  } else {
    const parsed = parseWith(chainNotifyBodySchema, body.value);
    if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
    network = fixedNetwork;
    onChainTx = parsed.value.on_chain_tx.trim();
    rawTransactionId = parsed.value.transaction_id;
  }
  if (network === 'STELLAR') {
    return errorResponse('invalid_request', 'Stellar deposits are detected automatically; do not notify them');
  }
  const shape = checkOnChainTx(network, onChainTx);
  if (!shape.ok) return errorResponse('invalid_request', shape.reason);
  const transactionId = parseUuid(rawTransactionId);
  if (transactionId === null) return errorResponse('invalid_request', 'transaction_id must be a transaction UUID');
  const canonical = { network, onChainTx, transactionId };
  const verifier = env.deps.depositVerifier;
  if (verifier === undefined) return capabilityUnavailable('Deposit verification');
  return idempotentPost(env, request, partnerId, canonical, () => ({ requestId: randomUUID() }), async () => {
    const found = await partnerTransaction(env, partnerId, transactionId);
    if (found === null) return transactionNotFound();
    const quoteNetwork = quoteOfDocument(found.doc).network;
    if (quoteNetwork !== network) {
      return errorResponse('invalid_request', `Transaction ${transactionId} is funded on ${quoteNetwork}, not ${network}`);
    }
    // The notify budget (src/edge/notify-budget.ts): taken before any chain work, given back when
    // the outcome is free. Refused: nothing is verified or recorded; the partner retries later.
    const budget = env.notifyBudget.reserve(partnerId);
    if (!budget.allowed) {
      return errorResponse('rate_limited', 'Too many notifications of deposits that cannot fund their transaction; retry after the Retry-After delay', {
        'retry-after': String(budget.retryAfterSeconds),
      });
    }
    let charged = false;
    let result: NotifyResult;
    try {
      result = await verifier.notify({ partnerId, blockchain: network, onChainTx, transactionId });
      charged = notifyIsCharged(String(found.doc.status), result);
    } finally {
      env.notifyBudget.settle(partnerId, charged);
    }
    switch (result.result) {
      case 'enqueued':
        return jsonResponse(202, { enqueued: true });
      case 'invalid':
        return errorResponse('invalid_request', result.reason);
      case 'not_found':
        // Often "not final yet": the same notification may succeed later, so it is retryable.
        return jsonResponse(404, { code: 'not_found', reason: result.reason.slice(0, reasonCharsMax), retryable: true });
      case 'unavailable':
        // The watcher role is unreachable (chains link): 503, never stored under the Idempotency-Key.
        return errorResponse('service_unavailable', result.reason);
    }
  });
}

/** Liquidity as a JSON number at the currency's decimals (never more digits than a double holds). */
function liquidityNumber(amount: Decimal, decimals: number): number {
  const atCurrency = rescale(amount, Math.min(amount.scale, decimals), 'floor');
  try {
    return toJsonNumber(atCurrency);
  } catch {
    // Beyond 15 significant digits: whole units are exact enough for a liquidity figure.
    return Number(toFixedString(rescale(atCurrency, 0, 'floor')));
  }
}

async function liquidity(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  partnerOf(request);
  const parsed = parseWith(liquidityQuerySchema, request.query, 'query');
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const method = parsed.value.paymentMethod;
  if (method === undefined) {
    return errorResponse('invalid_request', 'paymentMethod is required (BREB or PIX): each method has its own currency');
  }
  if (!isOneOf(paymentMethods, method)) return errorResponse('invalid_request', `paymentMethod must be one of ${paymentMethods.join(', ')}`);
  const view = env.deps.liquidity;
  if (view === undefined) return capabilityUnavailable('Liquidity');
  const currency = methodCurrency[method];
  const latest = view.latest(method);
  if (latest === null) {
    return jsonResponse(200, { liquidity: 0, message: `No ${method} liquidity reading is available yet`, success: false });
  }
  const available = view.available(method);
  return jsonResponse(200, {
    liquidity: liquidityNumber(latest.amount, fiatDecimals[currency]),
    message: available
      ? `Latest ${method} liquidity in ${currency}, read at ${new Date(latest.readAtMs).toISOString()}`
      : `Payments via ${method} are temporarily unavailable; last liquidity in ${currency} read at ${new Date(latest.readAtMs).toISOString()}`,
    success: true,
  });
}

async function decodeQr(request: RequestContext): Promise<HttpResponse> {
  partnerOf(request);
  const parsed = parseWith(qrDecoderQuerySchema, request.query, 'query');
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const decoded = decodeBrCode(parsed.value.qrCode);
  if (!decoded.ok) return errorResponse('invalid_request', `qrCode: ${decoded.reason}`);
  return jsonResponse(200, { decoded: toDecoderResponse(decoded.value) });
}

export function paymentRoutes(env: EdgeEnv): Route[] {
  const guard = env.partnerGuard;
  return [
    { method: 'POST', pattern: '/payments/notify', guard, handler: (request) => notify(env, request, null) },
    { method: 'POST', pattern: '/solana/payments/notify', guard, handler: (request) => notify(env, request, 'SOLANA') },
    { method: 'POST', pattern: '/celo/payments/notify', guard, handler: (request) => notify(env, request, 'CELO') },
    { method: 'GET', pattern: '/payments/liquidity', guard, handler: (request) => liquidity(env, request) },
    { method: 'GET', pattern: '/qr-decoder/br', guard, handler: (request) => decodeQr(request) },
  ];
}
