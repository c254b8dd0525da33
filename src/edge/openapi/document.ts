// The partner API as an OpenAPI 3.1 document, built from the code: the operations table
// (operations.ts), the request schemas the edge validates with and the response schemas
// (response-schemas.ts), both through zod 4's JSON Schema output (2020-12, the dialect of
// OpenAPI 3.1), and the error catalogue (errors.ts) for every code and its status. Pure and
// deterministic: the same code gives the same text, which is what GET /openapi.json serves and
// `npm run openapi` writes to docs/openapi.json (a test fails when that file is stale).
import { z } from 'zod';
import { errorCatalogue, httpStatusOf, partnerErrorCodes, unavailableRetryAfterSeconds, type PartnerErrorCode } from '../errors.ts';
import { webhookHeaders, timestampToleranceSecondsDefault } from '../../webhooks/signing.ts';
import { operations, requestComponents, webhookExample, type OperationSpec } from './operations.ts';
import { errorBodySchema, responseComponents } from './response-schemas.ts';

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const uri = (id: string): string => `#/components/schemas/${id}`;

/** The component schemas of a registry, without the per-schema `$schema`/`$id` zod adds. */
function componentSchemas(schemas: Readonly<Record<string, z.ZodType>>, io: 'input' | 'output'): Json {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const generated = z.toJSONSchema(registry, { uri, io, unrepresentable: 'any', target: 'draft-2020-12' }).schemas;
  const out: Json = {};
  for (const [id, schema] of Object.entries(generated)) {
    const { $schema: _schema, $id: _id, ...rest } = schema as Json;
    out[id] = rest;
  }
  return out;
}

const statusNames: Readonly<Record<number, string>> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 408: 'RequestTimeout',
  409: 'Conflict', 413: 'PayloadTooLarge', 414: 'UriTooLong', 415: 'UnsupportedMediaType', 422: 'UnprocessableContent',
  429: 'TooManyRequests', 431: 'HeadersTooLarge', 500: 'ServerError', 503: 'ServiceUnavailable',
};

/** Every code a partner can receive, grouped by its one status (the catalogue decides it). */
export function codesByStatus(): Map<number, PartnerErrorCode[]> {
  const byStatus = new Map<number, PartnerErrorCode[]>();
  for (const code of partnerErrorCodes) {
    const status = httpStatusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return byStatus;
}

/** `Error400`, … : the error body with `code` narrowed to that status's codes. */
function errorComponents(): Record<string, z.ZodType> {
  const out: Record<string, z.ZodType> = {};
  for (const [status, codes] of codesByStatus()) {
    const [first, ...rest] = codes;
    if (first === undefined) continue;
    out[`Error${status}`] = errorBodySchema.extend({ code: z.enum([first, ...rest]) }).meta({ description: `Codes answered with ${status}: ${codes.join(', ')}.` });
  }
  return out;
}

const header = (description: string, schema: Json = { type: 'string' }): Json => ({ description, schema });
const requestIdHeader = header('The request id (the X-Request-Id sent, when valid, else a new one); also `request_id` in error bodies.');
const retryAfterHeader = header('Whole seconds to wait before retrying.', { type: 'integer', minimum: 0 });
const replayedHeader = header('`true` when this is the stored answer to an earlier request with the same Idempotency-Key.', { type: 'string', enum: ['true'] });

function errorResponseComponent(status: number): Json {
  const codes = codesByStatus().get(status) ?? [];
  const first = codes[0];
  const example = first === undefined || !(first in errorCatalogue)
    ? { code: first, reason: 'See the code', retryable: false, request_id: '4b0c7a2e-5d1f-4c3b-9a8e-2f6d1e0c9b7a' }
    : { code: first, reason: errorCatalogue[first as keyof typeof errorCatalogue].defaultReason, retryable: errorCatalogue[first as keyof typeof errorCatalogue].retryable, request_id: '4b0c7a2e-5d1f-4c3b-9a8e-2f6d1e0c9b7a' };
  const headers: Json = { 'X-Request-Id': requestIdHeader };
  if (status === 429 || status === 503) headers['Retry-After'] = retryAfterHeader;
  if (status === 405) headers['Allow'] = header('The methods the path accepts.');
  return {
    description: `${statusNames[status] ?? status}: ${codes.map((code) => `\`${code}\``).join(', ')}`,
    headers,
    content: { 'application/json': { schema: ref(`Error${status}`), example } },
  };
}

/** Statuses every operation can answer (the HTTP toolkit's own refusals), by its security. */
function sharedStatuses(operation: OperationSpec): number[] {
  const shared = [400, 414, 429, 431, 500, 503];
  return operation.security === 'none' ? shared : [...shared, 401];
}

function parameters(operation: OperationSpec): Json[] {
  const list: Json[] = [
    { name: 'X-Request-Id', in: 'header', required: false, description: 'Your id for this request (1–128 of A–Z a–z 0–9 . _ : -), echoed back.', schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } },
  ];
  if (operation.method === 'post') {
    list.push({
      name: 'Idempotency-Key', in: 'header', required: false,
      description: 'Retry-safe key (1–255 visible ASCII characters), kept 72 hours: the same key with the same request replays the first answer (Idempotent-Replayed: true); with another request it is 422.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  for (const name of operation.pathParams ?? []) list.push({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
  if (operation.query !== undefined) {
    const schema = z.toJSONSchema(operation.query, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      list.push({ name, in: 'query', required: schema.required?.includes(name) === true, schema: property });
    }
  }
  return list;
}

function requestBody(operation: OperationSpec): Json | undefined {
  const body = operation.body;
  if (body === undefined) return undefined;
  if (body.kind === 'multipart') {
    return { required: true, content: { 'multipart/form-data': { schema: ref('KycForm'), encoding: { document: { contentType: 'image/jpeg, image/png, image/webp, image/heic, application/pdf' } } } } };
  }
  return { required: true, content: { 'application/json': { schema: ref(body.component), example: body.example } } };
}

function responses(operation: OperationSpec): Json {
  const successHeaders: Json = { 'X-Request-Id': requestIdHeader };
  if (operation.method === 'post') successHeaders['Idempotent-Replayed'] = replayedHeader;
  const out: Json = {
    [String(operation.success.status)]: {
      description: operation.success.description,
      headers: successHeaders,
      content: { 'application/json': { schema: ref(operation.success.component), example: operation.success.example } },
    },
  };
  const statuses = [...new Set([...sharedStatuses(operation), ...(operation.extraStatuses ?? [])])].sort((a, b) => a - b);
  for (const status of statuses) {
    const special = operation.specialErrors?.[status];
    if (special === undefined) {
      out[String(status)] = { $ref: `#/components/responses/${statusNames[status]}` };
      continue;
    }
    const plain = errorResponseComponent(status);
    out[String(status)] = {
      ...plain,
      content: { 'application/json': { schema: { anyOf: [ref(`Error${status}`), ref(special)] } } },
    };
  }
  return out;
}

const securityOf = {
  partner: [{ ApiKey: [] }, { Bearer: [] }],
  ops: [{ OpsApiKey: [] }],
  none: [],
} as const;

function operationObject(operation: OperationSpec): Json {
  const description = [operation.description, operation.sandboxOnly === true ? 'Sandbox mode only (404 otherwise); never acts on a live chain.' : undefined]
    .filter((text) => text !== undefined).join(' ');
  const body = requestBody(operation);
  return {
    operationId: operation.operationId,
    tags: [operation.tag],
    summary: operation.summary,
    ...(description === '' ? {} : { description }),
    security: securityOf[operation.security],
    parameters: parameters(operation),
    ...(body === undefined ? {} : { requestBody: body }),
    responses: responses(operation),
  };
}

function webhookOperation(summary: string, schema: string, example: unknown): Json {
  const deliveryHeader = (name: string, description: string, required = true): Json => ({ name, in: 'header', required, description, schema: { type: 'string' } });
  return {
    post: {
      summary,
      description:
        `Verify every delivery before trusting it: \`${webhookHeaders.signature}\` is \`v1=\` + hex HMAC-SHA256(secret, \`<${webhookHeaders.timestamp}>.<raw body>\`); compare in constant time and refuse a timestamp more than ${timestampToleranceSecondsDefault} s from your clock. ` +
        'During a secret rotation accept both secrets until the new one is activated. Deliveries are at least once: deduplicate by the event id. `verifyWebhook` in the TypeScript client does all of this.',
      parameters: [
        deliveryHeader(webhookHeaders.secret, 'The shared secret, as the spec requires (prefer the signature).'),
        deliveryHeader(webhookHeaders.eventId, 'Stable id of the event (the same on every attempt).'),
        deliveryHeader(webhookHeaders.sequence, 'Per-partner sequence (GET /events); absent on test deliveries.', false),
        deliveryHeader(webhookHeaders.timestamp, 'Unix seconds when this attempt was signed.'),
        deliveryHeader(webhookHeaders.signature, '`v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>`.'),
        deliveryHeader(webhookHeaders.attempt, 'Attempt number, from 1.'),
      ],
      requestBody: { required: true, content: { 'application/json': { schema: ref(schema), example } } },
      responses: { '200': { description: 'Any 2xx acknowledges the delivery; anything else is retried (5 attempts, backoff about 2, 4, 8, 16 s, capped at 60 s).' } },
    },
  };
}

export interface OpenApiDocument {
  readonly openapi: '3.1.1';
  readonly [field: string]: unknown;
}

export function buildOpenApiDocument(): OpenApiDocument {
  const paths: Record<string, Json> = {};
  for (const operation of operations) paths[operation.path] = { ...paths[operation.path], [operation.method]: operationObject(operation) };
  const errorStatuses = [...codesByStatus().keys()].sort((a, b) => a - b);
  const responsesComponents: Json = {};
  for (const status of errorStatuses) responsesComponents[statusNames[status] ?? `Status${status}`] = errorResponseComponent(status);
  return {
    openapi: '3.1.1',
    info: {
      title: 'Payouts and onramp API',
      version: '1',
      summary: 'Move value between stablecoins (USDC on Stellar, Solana, Celo) and local fiat (COP over Bre-B, BRL over PIX).',
      description:
        'Generated from the service code. Amounts are JSON numbers read exactly. Paths carry no version: changes are additive only. ' +
        `Every error is \`{ code, reason, retryable, request_id }\`; 429 and 503 carry Retry-After (503: ${unavailableRetryAfterSeconds} s). ` +
        'Another partner\'s resource is answered like a missing one.',
    },
    servers: [{ url: '/', description: 'This service' }],
    tags: ['Quotes', 'Transactions', 'Payments', 'KYC', 'Discovery', 'Webhooks', 'Sandbox', 'Operations', 'Probes'].map((name) => ({ name })),
    paths,
    webhooks: {
      transactionEvent: webhookOperation('transaction.created / transaction.updated', 'WebhookEvent', webhookExample),
      webhookTest: webhookOperation('webhook.test: a test delivery to a staged destination (signed with its test secret)', 'WebhookTestEvent', { event: 'webhook.test', data: { id: 'test_0f3c…', createdAtMs: 1764100000000 } }),
    },
    components: {
      schemas: { ...componentSchemas({ ...responseComponents, ...errorComponents() }, 'output'), ...componentSchemas(requestComponents, 'input') },
      responses: responsesComponents,
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        Bearer: { type: 'http', scheme: 'bearer', description: 'The same API key as a bearer token.' },
        OpsApiKey: { type: 'apiKey', in: 'header', name: 'X-OPS-API-KEY' },
      },
    },
  };
}

/** The document as served and written: stable key order (as built), two-space indent, final newline. */
export function openApiText(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}
