// The `edge` role: the partner-facing HTTP server (uWebSockets.js) on PORT.
import { createHttpApp, jsonResponse, type Route } from '../edge/http.ts';
import { listCorridors, corridorToJson } from '../domain/corridors.ts';
import type { ServiceContext } from './context.ts';

export interface EdgeRole {
  readonly port: number;
  stop(): Promise<void>;
}

export function healthRoutes(ctx: ServiceContext): Route[] {
  return [
    { method: 'GET', pattern: '/healthz', handler: async () => jsonResponse(200, { status: 'ok' }) },
    {
      method: 'GET',
      pattern: '/public/corridors',
      handler: async () => jsonResponse(200, { corridors: listCorridors(ctx.config.corridors()).map(corridorToJson) }),
    },
  ];
}

export async function startEdgeRole(ctx: ServiceContext): Promise<EdgeRole> {
  const app = createHttpApp({ routes: [...healthRoutes(ctx)], logger: ctx.log });
  const listening = await app.listen(ctx.env.HOST, ctx.env.PORT);
  return { port: listening.port, stop: async () => listening.close() };
}
