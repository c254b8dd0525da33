// The OpenAPI document partners, client generators and CI read: generated from the code, valid
// OpenAPI 3.1 for a real validator, the same as the committed docs/openapi.json, covering every
// route the edge serves and every error code with its status, with examples that match their
// own schemas. (That live answers match it is checked over the whole e2e suite:
// test/support/openapi-validation.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildOpenApiDocument, openApiText } from '../../src/edge/openapi/document.ts';
import { clientSchemaText } from '../../scripts/openapi-files.ts';
import { operationRoutes } from '../../clients/typescript/src/client.ts';
import { operations, undocumentedRoutes } from '../../src/edge/openapi/operations.ts';
import { httpStatusOf, partnerErrorCodes } from '../../src/edge/errors.ts';
import { webhookHeaders } from '../../src/webhooks/signing.ts';
import { edgeRoutes } from '../../src/service/edge-role.ts';
import type { EdgeEnv } from '../../src/edge/routes/common.ts';
import { createDocumentChecker } from '../support/openapi-validation.ts';

type Json = Record<string, unknown>;

test('docs/openapi.json and the client types are what the code builds (run `npm run openapi` after changing a route, schema or error code)', async () => {
  const committed = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
  assert.ok(committed === openApiText(), 'docs/openapi.json is stale: run `npm run openapi` and commit it');
  const types = readFileSync(new URL('../../clients/typescript/src/schema.ts', import.meta.url), 'utf8');
  assert.ok(types === (await clientSchemaText()), 'clients/typescript/src/schema.ts is stale: run `npm run openapi` and commit it');
});

test("the client's route table is the document's: every operation, with its method and path", () => {
  const fromDocument = operations.map((operation) => [operation.operationId, [operation.method.toUpperCase(), operation.path]] as const);
  assert.deepEqual(Object.fromEntries(Object.entries(operationRoutes).map(([id, route]) => [id, [...route]])), Object.fromEntries(fromDocument));
});

test('the document is valid OpenAPI 3.1 for a real validator, and the validator refuses a broken one', async () => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(buildOpenApiDocument()) as never);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
  assert.equal(validator.version, '3.1');

  const broken = structuredClone(buildOpenApiDocument()) as Json;
  const quote = (broken['paths'] as Record<string, Record<string, Json>>)['/quote']?.['post'];
  assert.ok(quote !== undefined);
  (quote['responses'] as Json)['200'] = { content: {} }; // a response without its required description
  assert.equal((await new Validator().validate(broken as never)).valid, false);
});

/** The edge's routes, built with a stand-in environment: building them touches only the logger. */
function servedRoutes(): string[] {
  const standIn = (path: string): unknown =>
    new Proxy(() => standIn(`${path}()`), {
      get: (_target, key) => (key === 'then' || typeof key === 'symbol' ? undefined : key === 'log' ? pino({ level: 'silent' }) : standIn(`${path}.${key}`)),
    });
  return edgeRoutes(standIn('env') as EdgeEnv).map((route) => `${route.method} ${route.pattern}`);
}

test('every route the edge serves is an operation of the document, and every operation is a route', () => {
  const served = servedRoutes().filter((route) => !undocumentedRoutes.includes(route)).sort();
  const documented = operations.map((operation) => `${operation.method.toUpperCase()} ${operation.path.replace(/\{([^}]+)\}/g, ':$1')}`).sort();
  assert.deepEqual(documented, served);
});

test('every error code a partner can receive is in the document with its one status', () => {
  const schemas = (buildOpenApiDocument()['components'] as { schemas: Record<string, Json> }).schemas;
  for (const code of partnerErrorCodes) {
    const status = httpStatusOf(code);
    const codes = ((schemas[`Error${status}`]?.['properties'] as Record<string, Json>)['code']?.['enum'] ?? []) as string[];
    assert.ok(codes.includes(code), `${code} is documented under ${status}`);
  }
});

test('every operation has request and response examples, and each example matches its own schema', () => {
  const checker = createDocumentChecker();
  const headers = new Headers({ 'content-type': 'application/json', 'x-request-id': 'example' });
  for (const operation of operations) {
    const path = operation.path.replace('{id}', '0b7d1f5e-8f9a-4d8e-a7a3-0c6f1a9e2b44');
    const text = JSON.stringify(operation.success.example);
    assert.equal(checker.responseMismatch({ method: operation.method.toUpperCase(), path, status: operation.success.status, headers, text }), null);
    if (operation.body?.kind === 'json') assert.notEqual(operation.body.example, undefined, operation.operationId);
  }
  // And the checker does fail: a field of the wrong type, named with its path.
  const mismatch = checker.responseMismatch({ method: 'GET', path: '/kyc/status', status: 200, headers, text: '{"hasApproved":"yes","status":null}' });
  assert.match(mismatch ?? '', /GET \/kyc\/status → 200: .*\/hasApproved must be boolean/);
});

test('the webhooks are documented with their payloads and every signature header', () => {
  const webhooks = buildOpenApiDocument()['webhooks'] as Record<string, { post: { parameters: { name: string }[] } }>;
  const names = (webhooks['transactionEvent']?.post.parameters ?? []).map((parameter) => parameter.name);
  for (const name of Object.values(webhookHeaders)) assert.ok(names.includes(name), name);
  assert.ok(webhooks['webhookTest'] !== undefined);
});
