// The portal JSON API's request schemas (zod, in the style of src/edge/schemas.ts, so they can join
// the API description later). Every parse failure is a 400 `invalid_request` naming the field.
import { z } from 'zod';
import { transactionStatuses } from '../domain/transaction.ts';
import { errorResponse } from '../edge/errors.ts';
import { parseWith } from '../edge/schemas.ts';
import type { HttpResponse } from '../edge/http-types.ts';

export const loginBodySchema = z.strictObject({
  email: z.string().min(3).max(254),
  password: z.string().min(1).max(1024),
});

export const stageDestinationBodySchema = z.strictObject({ url: z.string().min(1).max(2048) });

export const redeliverBodySchema = z.strictObject({
  /** Redeliver an event that was delivered (a deliberate action); a failed one needs nothing. */
  again: z.boolean().optional(),
});

export const deliveryStates = ['failed', 'pending', 'delivered'] as const;

export const deliveriesQuerySchema = z.strictObject({
  state: z.enum(deliveryStates).optional(),
  transactionId: z.uuid().optional(),
  limit: z.string().regex(/^\d{1,3}$/, 'must be an integer from 1 to 200').optional(),
});

const dayPattern = /^\d{4}-\d{2}-\d{2}$/;

export const transactionsQuerySchema = z.strictObject({
  status: z.enum(transactionStatuses).optional(),
  userId: z.string().min(1).max(200).optional(),
  /** First day shown, UTC, `YYYY-MM-DD`. */
  from: z.string().regex(dayPattern, 'must be a date YYYY-MM-DD').optional(),
  /** Last day shown, UTC, `YYYY-MM-DD` (inclusive). */
  to: z.string().regex(dayPattern, 'must be a date YYYY-MM-DD').optional(),
  page: z.string().regex(/^\d{1,5}$/, 'must be a positive integer').optional(),
});

export const createKeyBodySchema = z.strictObject({ label: z.string().max(80).optional() });

export type PortalParse<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly response: HttpResponse };

export function parsePortal<T>(schema: z.ZodType<T>, input: unknown, noun = 'request body'): PortalParse<T> {
  const parsed = parseWith(schema, input, noun);
  return parsed.ok ? parsed : { ok: false, response: errorResponse('invalid_request', parsed.reason) };
}
