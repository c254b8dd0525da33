// Unauthenticated routes: GET /public/corridors (the authoritative route list), GET /healthz
// (the process answers) and GET /readyz (the store and the bus answer, each within a bound).
import { corridorToJson, listCorridors } from '../../domain/corridors.ts';
import { errorResponse } from '../errors.ts';
import { jsonResponse, type HttpResponse, type Route } from '../http.ts';
import type { EdgeEnv } from './common.ts';

/** How long a readiness probe waits for the store or the bus. */
export const readinessProbeTimeoutMs = 2_000;

function corridors(env: EdgeEnv): HttpResponse {
  const availability = env.deps.chainAvailability;
  const routes = listCorridors(env.ctx.config.corridors()).filter(
    (route) => availability === undefined || availability.active(route.network, route.cryptoCurrency),
  );
  return jsonResponse(200, { corridors: routes.map(corridorToJson) });
}

async function probe(run: () => Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), readinessProbeTimeoutMs);
  });
  try {
    return await Promise.race([run().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

async function readiness(env: EdgeEnv): Promise<HttpResponse> {
  if (env.draining?.() === true) return errorResponse('service_unavailable', 'Not ready: shutting down');
  const [store, bus] = await Promise.all([
    probe(() => env.ctx.store.get('health', 'readyz')),
    probe(() => env.ctx.bus.length(`${env.ctx.keyPrefix}readyz`)),
  ]);
  if (store && bus) return jsonResponse(200, { status: 'ready', store: 'ok', bus: 'ok' });
  const down = [store ? null : 'store', bus ? null : 'bus'].filter((name) => name !== null).join(' and ');
  return errorResponse('service_unavailable', `Not ready: the ${down} did not answer`);
}

export function publicRoutes(env: EdgeEnv): Route[] {
  return [
    { method: 'GET', pattern: '/public/corridors', handler: () => Promise.resolve(corridors(env)) },
    { method: 'GET', pattern: '/healthz', handler: () => Promise.resolve(jsonResponse(200, { status: 'ok' })) },
    { method: 'GET', pattern: '/readyz', handler: () => readiness(env) },
  ];
}
