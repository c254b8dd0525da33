// The sandbox's failure rehearsals (registered only in sandbox mode; elsewhere these paths are
// 404), partner authenticated and scoped to the calling partner (docs/sandbox.md):
//   PUT / GET / DELETE /sandbox/webhook-faults — the partner's webhook faults (duplicate, out of
//     order, delay, wrong signature, drop the first attempts), kept in the shared store so every
//     dispatcher applies them (src/webhooks/sandbox-faults.ts); DELETE turns them all off;
//   POST /sandbox/transactions/{id}/expire | fail-next-payout | short-next-deposit — test clocks
//     of one transaction of the partner (another partner's is 404): its payment window ends now;
//     its payout is refused by the rail; its next simulated deposit arrives short. Each then runs
//     down the real path (events, webhooks, refunds). A transaction past the point where the
//     rehearsal means anything, or a short deposit on a network the sandbox chain does not run, is
//     409 `rehearsal_not_applicable`.
import { randomUUID } from 'node:crypto';
import { transactionActorType, type DomainReply } from '../../actors/transaction-actor.ts';
import { armShortDeposit } from '../../chains/sandbox-short-deposits.ts';
import { readWebhookFaults as readFaultsBody, webhookFaultsView } from '../../domain/webhook-faults.ts';
import { payoutIdempotencyKey } from '../../rails/payout-worker.ts';
import { armPayoutRefusal } from '../../rails/sandbox-refusals.ts';
import { readWebhookFaults, resetWebhookFaults, writeWebhookFaults } from '../../webhooks/sandbox-faults.ts';
import { errorResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { askOr503, idempotentPost, idOf, jsonObjectBody, partnerOf, partnerTransaction, quoteOfDocument, transactionNotFound, type EdgeEnv } from './common.ts';

type Rehearsal = 'expire' | 'fail-next-payout' | 'short-next-deposit';

async function putFaults(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const body = jsonObjectBody(request);
  if (!body.ok) return body.response;
  const read = readFaultsBody(body.value);
  if (!read.ok) return errorResponse('invalid_request', read.reason);
  await writeWebhookFaults(env.ctx.store, partnerOf(request), read.value);
  return jsonResponse(200, webhookFaultsView(read.value));
}

async function getFaults(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  return jsonResponse(200, webhookFaultsView(await readWebhookFaults(env.ctx.store, partnerOf(request))));
}

async function deleteFaults(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  await resetWebhookFaults(env.ctx.store, partnerId);
  return jsonResponse(200, webhookFaultsView(await readWebhookFaults(env.ctx.store, partnerId)));
}

function notApplicable(reason: string): HttpResponse {
  return errorResponse('rehearsal_not_applicable', reason);
}

/** What each rehearsal needs of the transaction before it is armed; null when it applies. */
function refusalOf(rehearsal: Rehearsal, direction: unknown, status: unknown): HttpResponse | null {
  if (rehearsal !== 'expire' && direction !== 'payout') return notApplicable(`${rehearsal} applies to payout transactions only`);
  if (status !== 'AWAITING_PAYMENT') return notApplicable(`${rehearsal} applies to a transaction awaiting payment; this one is ${String(status)}`);
  return null;
}

async function rehearse(env: EdgeEnv, request: RequestContext, rehearsal: Rehearsal): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const rawId = request.params['id'] ?? '';
  const newIds = (): Record<string, string> => ({ requestId: randomUUID(), commandId: randomUUID() });
  return idempotentPost(env, request, partnerId, { transaction_id: rawId, rehearsal }, newIds, async (ids) => {
    const found = await partnerTransaction(env, partnerId, rawId);
    if (found === null) return transactionNotFound();
    const refused = refusalOf(rehearsal, found.doc['direction'], found.doc['status']);
    if (refused !== null) return refused;
    if (rehearsal === 'short-next-deposit') {
      // Only a deposit of POST /sandbox/deposits spends the mark, and it pays sandbox-run networks
      // only: on a live one (a mixed set-up) the mark would never be spent.
      const network = quoteOfDocument(found.doc).network;
      if (env.deps.sandbox?.runsNetwork(network) !== true) return notApplicable(`short-next-deposit applies to a sandbox network; ${network} is live here, fund it on chain`);
    }
    const nowMs = env.ctx.clock.nowMs();
    if (rehearsal === 'fail-next-payout') await armPayoutRefusal(env.ctx.store, payoutIdempotencyKey(found.id), nowMs);
    if (rehearsal === 'short-next-deposit') await armShortDeposit(env.ctx.store, found.id, nowMs);
    if (rehearsal !== 'expire') return jsonResponse(200, { transaction_id: found.id, rehearsal, status: String(found.doc['status']) });
    const asked = await askOr503(() => env.actors.ask<DomainReply>(transactionActorType, found.id, 'sandbox_expire', null, idOf(ids, 'commandId')));
    if (!asked.ok) return asked.response;
    if (!asked.value.ok) return notApplicable(`expire applies to a transaction awaiting payment (${asked.value.code})`);
    return jsonResponse(200, { transaction_id: found.id, rehearsal, status: asked.value.status });
  });
}

export function sandboxRehearsalRoutes(env: EdgeEnv): Route[] {
  if (!env.ctx.env.sandbox) return [];
  const guard = env.partnerGuard;
  const clock = (rehearsal: Rehearsal): Route => ({
    method: 'POST',
    pattern: `/sandbox/transactions/:id/${rehearsal}`,
    guard,
    handler: (request) => rehearse(env, request, rehearsal),
  });
  return [
    { method: 'PUT', pattern: '/sandbox/webhook-faults', guard, handler: (request) => putFaults(env, request) },
    { method: 'GET', pattern: '/sandbox/webhook-faults', guard, handler: (request) => getFaults(env, request) },
    { method: 'DELETE', pattern: '/sandbox/webhook-faults', guard, handler: (request) => deleteFaults(env, request) },
    clock('expire'),
    clock('fail-next-payout'),
    clock('short-next-deposit'),
  ];
}
