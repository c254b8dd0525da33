// Unauthenticated routes: GET /public/corridors (the authoritative route list), GET
// /public/corridors/health (rail state, settlement times, liquidity level: docs/corridor-health.md), GET /healthz
// (the process answers) and GET /readyz: the edge can serve requests — the store and the bus
// answer, each within a bound, and every shard has a live worker (src/service/shard-watch.ts).
// Each is limited per client address when the edge gives a `publicGuard` (docs/security.md).
import type { CoverageSummary } from '../../bus/shard-coverage.ts';
import { corridorToJson, listCorridors } from '../../domain/corridors.ts';
import { errorBody, errorResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, Route } from '../http-types.ts';
import { capabilityUnavailable, type EdgeEnv } from './common.ts';

/** How long a readiness probe waits for the store or the bus. */
export const readinessProbeTimeoutMs = 2_000;

function corridors(env: EdgeEnv): HttpResponse {
  const availability = env.deps.chainAvailability;
  const routes = listCorridors(env.ctx.config.corridors()).filter(
    (route) => availability === undefined || availability.active(route.network, route.cryptoCurrency),
  );
  return jsonResponse(200, { corridors: routes.map(corridorToJson) });
}

/** GET /public/corridors/health: one cached snapshot for every caller (src/edge/corridor-health.ts). */
async function corridorHealth(env: EdgeEnv): Promise<HttpResponse> {
  const health = env.corridorHealth;
  if (health === undefined) return capabilityUnavailable('Corridor health');
  try {
    const snapshot = await health.snapshot();
    return jsonResponse(200, snapshot, { 'cache-control': `public, max-age=${Math.max(1, Math.floor(env.ctx.env.CORRIDOR_HEALTH_CACHE_MS / 1000))}` });
  } catch (error) {
    env.ctx.log.warn({ error: String(error) }, 'corridor health could not be computed');
    return capabilityUnavailable('Corridor health (the store did not answer)');
  }
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

/** Why the shard workers cannot serve, for a human (null when they can). */
function shardsReason(summary: CoverageSummary): string | null {
  switch (summary.verdict) {
    case 'served':
      return null;
    case 'no_owner':
      return summary.unservedShards.length === summary.shardCount
        ? 'no shard worker is serving requests right now'
        : `no shard worker is serving ${summary.unservedShards.length} of ${summary.shardCount} shards`;
    case 'bus_unreachable':
      return 'the shard leases cannot be read (Redis is not answering)';
  }
}

/**
 * 200 `{status: "ready", store, bus, shards}` when all three are `ok`; else 503 with the error
 * body, a reason naming what is missing, and the same three fields (`down` / `unserved` /
 * `unknown` for what is not ok).
 */
async function readiness(env: EdgeEnv): Promise<HttpResponse> {
  if (env.draining?.() === true) return errorResponse('service_unavailable', 'Not ready: shutting down');
  const [store, bus] = await Promise.all([
    probe(() => env.ctx.store.get('health', 'readyz')),
    probe(() => env.ctx.bus.length(`${env.ctx.keyPrefix}readyz`)),
  ]);
  const summary = env.shards?.summary();
  const shardsWhy = summary === undefined ? null : shardsReason(summary);
  const shards = shardsWhy === null ? 'ok' : summary?.verdict === 'bus_unreachable' ? 'unknown' : 'unserved';
  const fields = { store: store ? 'ok' : 'down', bus: bus ? 'ok' : 'down', shards };
  if (store && bus && shardsWhy === null) return jsonResponse(200, { status: 'ready', ...fields });
  const down = [store ? null : 'the store', bus ? null : 'the bus'].filter((name) => name !== null).join(' and ');
  const reasons = [down === '' ? null : `${down} did not answer`, shardsWhy].filter((text) => text !== null);
  const reason = `Not ready: ${reasons.join('; ')}`;
  // The catalogue's 503 (headers included), its body with the three fields added.
  return { ...errorResponse('service_unavailable', reason), body: JSON.stringify({ ...errorBody('service_unavailable', reason), ...fields }) };
}

export function publicRoutes(env: EdgeEnv): Route[] {
  // No credentials, so the only thing to limit them by is the client's address (env.publicGuard).
  const guard = env.publicGuard === undefined ? {} : { guard: env.publicGuard };
  return [
    { method: 'GET', pattern: '/public/corridors', ...guard, handler: () => Promise.resolve(corridors(env)) },
    { method: 'GET', pattern: '/public/corridors/health', ...guard, handler: () => corridorHealth(env) },
    { method: 'GET', pattern: '/healthz', ...guard, handler: () => Promise.resolve(jsonResponse(200, { status: 'ok' })) },
    { method: 'GET', pattern: '/readyz', ...guard, handler: () => readiness(env) },
  ];
}
