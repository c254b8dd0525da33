// GET /events?after=<sequence>&limit=<n>: the authenticated partner's webhook events in sequence
// order, for catching up after missed deliveries (docs/webhooks.md, "The event feed").
// Response: { events: [{ sequence, id, event, data, createdAtMs }], next_after }.
import { errorResponse } from '../errors.ts';
import { jsonResponse } from '../http-response.ts';
import type { Guard, Route } from '../http-types.ts';
import { eventsPageSizeDefault, eventsPageSizeMax, type EventLogReader } from '../../webhooks/event-log.ts';

export interface EventsRouteDeps {
  /** The partner guard (authentication and rate limit), e.g. `partnerGuard({ keyRing, rateLimiter })`. */
  readonly guard: Guard;
  readonly events: EventLogReader;
}

const integerPattern = /^\d{1,16}$/;

function parseInteger(value: string | undefined, fallback: number, min: number, max: number): number | null {
  if (value === undefined) return fallback;
  if (!integerPattern.test(value)) return null;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) && parsed >= min && parsed <= max ? parsed : null;
}

export function eventsRoutes(deps: EventsRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/events',
      guard: deps.guard,
      bodyBytesMax: 0,
      handler: async (ctx) => {
        const partnerId = ctx.partnerId;
        if (partnerId === null) return errorResponse('authentication_failed');
        const after = parseInteger(ctx.query['after'], 0, 0, Number.MAX_SAFE_INTEGER - 1);
        if (after === null) return errorResponse('invalid_request', '`after` must be a non-negative integer sequence number');
        const limit = parseInteger(ctx.query['limit'], eventsPageSizeDefault, 1, eventsPageSizeMax);
        if (limit === null) return errorResponse('invalid_request', `\`limit\` must be an integer from 1 to ${eventsPageSizeMax}`);
        const page = await deps.events.list(partnerId, after, limit);
        return jsonResponse(200, { events: page.events, next_after: page.nextAfter });
      },
    },
  ];
}
