// The portal's webhooks and deliveries API: thin handlers over the webhooks service's own
// destinations and delivery log (src/webhooks/), the same objects the admin gRPC service calls, so
// the portal and the operators act on the same records and see each other's changes. Nothing here
// stages, tests, rotates or redelivers by itself.
import type { DeliveryLog, DeliveryView, DestinationResult, DestinationsApi, DestinationView } from '../webhooks/index.ts';
import { webhookHeaders } from '../webhooks/signing.ts';
import { parseJsonBody } from '../edge/body.ts';
import type { HttpResponse, RequestContext, Route } from '../edge/http-types.ts';
import { notFound, portalJson, withSession, type PortalRequestEnv, type SessionHandler } from './requests.ts';
import { deliveriesQuerySchema, parsePortal, redeliverBodySchema, stageDestinationBodySchema } from './schemas.ts';

export interface WebhooksApiEnv extends PortalRequestEnv {
  readonly destinations: DestinationsApi;
  readonly deliveries: DeliveryLog;
}

/** Deliveries shown per page at most. */
export const deliveriesShownMax = 200;

/** How a partner's receiver checks a delivery: shown next to the secret (docs/webhooks.md says the same). */
export const verificationSteps = [
  `Every delivery carries the signing secret in the ${webhookHeaders.secret} header: compare it with the secret you stored, in constant time (crypto.timingSafeEqual, hmac.compare_digest), and answer 401 when it differs.`,
  `It also carries ${webhookHeaders.signature}: v1=<hex HMAC-SHA256(secret, ${webhookHeaders.timestamp} + "." + raw body)>; checking it (and that the timestamp is recent) proves the body was not changed or replayed.`,
  'During a rotation accept both the old and the new secret until the new one is active here.',
  `Use ${webhookHeaders.eventId} to drop a delivery you already processed (deliveries are at least once).`,
];

function refusal(result: Extract<DestinationResult<unknown>, { ok: false }>): HttpResponse {
  const status = result.code === 'invalid_url' ? 400 : result.code === 'unknown_partner' ? 404 : result.code === 'test_busy' ? 503 : 409;
  return portalJson(status, { code: result.code, reason: result.reason, retryable: result.code === 'test_busy' });
}

function destinationBody(destination: DestinationView): unknown {
  return {
    url: destination.url,
    source: destination.source,
    secretConfigured: destination.secretConfigured,
    draft: destination.draft,
    pendingSecret: destination.pendingSecret,
    updatedAtMs: destination.updatedAtMs,
    verification: verificationSteps,
  };
}

type Handler = SessionHandler<WebhooksApiEnv>;

function answer<T extends { destination: DestinationView }>(result: DestinationResult<T>, extra: (value: T) => Record<string, unknown> = () => ({})): HttpResponse {
  if (!result.ok) return refusal(result);
  return portalJson(200, { destination: destinationBody(result.destination), ...extra(result) });
}

const getDestination: Handler = async (env, session) => answer(await env.destinations.get(session.partnerId));

const stageDraft: Handler = async (env, session, request) => {
  const raw = parseJsonBody(request);
  if (!raw.ok) return raw.response;
  const body = parsePortal(stageDestinationBodySchema, raw.value);
  if (!body.ok) return body.response;
  // The draft's test secret, shown once: the receiver at the draft URL checks its test delivery with it.
  return answer(await env.destinations.stageDraft(session.partnerId, body.value.url), (staged) => ({ testSecret: staged.testSecret }));
};

const testDraft: Handler = async (env, session) => answer(await env.destinations.testDraft(session.partnerId), (tested) => ({ test: tested.test }));
const activateDraft: Handler = async (env, session) => answer(await env.destinations.activateDraft(session.partnerId));
const discardDraft: Handler = async (env, session) => answer(await env.destinations.discardDraft(session.partnerId));
// The new secret, shown once; deliveries keep the live secret until it is activated.
const rotateSecret: Handler = async (env, session) => answer(await env.destinations.rotateSecret(session.partnerId), (rotated) => ({ secret: rotated.secret }));
// Every attempt from this moment on is signed with the new secret.
const activateSecret: Handler = async (env, session) =>
  answer(await env.destinations.activateSecret(session.partnerId), (activated) => ({ signingSinceMs: activated.destination.updatedAtMs }));
const discardSecret: Handler = async (env, session) => answer(await env.destinations.discardSecret(session.partnerId));

function deliveryBody(delivery: DeliveryView): unknown {
  return {
    eventId: delivery.eventId,
    sequence: delivery.sequence,
    event: delivery.event,
    transactionId: delivery.transactionId,
    state: delivery.status,
    run: delivery.run,
    nextAttemptAtMs: delivery.nextAttemptAtMs,
    lastError: delivery.lastError,
    createdAtMs: delivery.createdAtMs,
    finishedAtMs: delivery.finishedAtMs,
    attempts: delivery.attempts.map((attempt) => ({
      run: attempt.run,
      attempt: attempt.attempt,
      atMs: attempt.atMs,
      durationMs: attempt.durationMs,
      httpStatus: attempt.httpStatus,
      outcome: attempt.outcome,
      errorClass: attempt.error,
    })),
  };
}

const listDeliveries: Handler = async (env, session, request) => {
  const query = parsePortal(deliveriesQuerySchema, request.query, 'query');
  if (!query.ok) return query.response;
  const limit = Math.min(Math.max(Number(query.value.limit ?? 50), 1), deliveriesShownMax);
  const page = await env.deliveries.list(session.partnerId, {
    limit,
    ...(query.value.state === undefined ? {} : { status: query.value.state }),
    ...(query.value.transactionId === undefined ? {} : { transactionId: query.value.transactionId }),
  });
  return portalJson(200, { total: page.total, deliveries: page.deliveries.map(deliveryBody) });
};

const getDelivery: Handler = async (env, session, request) => {
  const delivery = await env.deliveries.get(session.partnerId, request.params['eventId'] ?? '');
  return delivery === null ? notFound('event') : portalJson(200, { delivery: deliveryBody(delivery) });
};

const redeliver: Handler = async (env, session, request) => {
  const raw = request.body.length === 0 ? ({ ok: true, value: {} } as const) : parseJsonBody(request);
  if (!raw.ok) return raw.response;
  const body = parsePortal(redeliverBodySchema, raw.value);
  if (!body.ok) return body.response;
  const eventId = request.params['eventId'] ?? '';
  const result = await env.deliveries.redeliver(session.partnerId, eventId, env.clock.nowMs(), { again: body.value.again === true });
  if (!result.ok) return result.code === 'not_found' ? notFound('event') : portalJson(409, { code: 'not_redeliverable', reason: result.reason, retryable: false });
  const delivery = await env.deliveries.get(session.partnerId, eventId);
  return portalJson(202, { run: result.run, delivery: delivery === null ? null : deliveryBody(delivery) });
};

export function webhooksApiRoutes(env: WebhooksApiEnv): Route[] {
  const post = (pattern: string, handler: Handler): Route => ({ method: 'POST', pattern, bodyBytesMax: 8192, handler: withSession(env, handler) });
  return [
    { method: 'GET', pattern: '/portal/api/webhooks', handler: withSession(env, getDestination) },
    post('/portal/api/webhooks/draft', stageDraft),
    post('/portal/api/webhooks/draft/test', testDraft),
    post('/portal/api/webhooks/draft/activate', activateDraft),
    post('/portal/api/webhooks/draft/discard', discardDraft),
    post('/portal/api/webhooks/secret/rotate', rotateSecret),
    post('/portal/api/webhooks/secret/activate', activateSecret),
    post('/portal/api/webhooks/secret/discard', discardSecret),
    { method: 'GET', pattern: '/portal/api/deliveries', handler: withSession(env, listDeliveries) },
    { method: 'GET', pattern: '/portal/api/deliveries/:eventId', handler: withSession(env, getDelivery) },
    post('/portal/api/deliveries/:eventId/redeliver', redeliver),
  ];
}
