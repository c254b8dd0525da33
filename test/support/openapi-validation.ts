// Checks HTTP answers against the OpenAPI document the service publishes (src/edge/openapi/): the
// e2e helper `call` (test/e2e/support.ts) runs every answer of every e2e test through
// `responseMismatch`, so a route whose body, status or headers drift from the document fails the
// test that saw it, with the route and the JSON path of the mismatch. The schemas are compiled
// with Ajv's JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1) straight from the
// document, `$ref`s and all.
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { buildOpenApiDocument } from '../../src/edge/openapi/document.ts';

type Json = Record<string, unknown>;

// ajv-formats is CommonJS with a default export; under tsx it arrives wrapped once more.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

const documentId = 'openapi.json';

interface Operation {
  readonly template: string;
  readonly method: string;
  readonly pattern: RegExp;
  readonly responses: Json;
}

/** `#/a/b` pointer segment escaping (RFC 6901). */
const pointerSegment = (text: string): string => text.replace(/~/g, '~0').replace(/\//g, '~1');

function operationsOf(document: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(document['paths'] as Record<string, Json>)) {
    const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, operation] of Object.entries(item)) {
      operations.push({ template, method: method.toUpperCase(), pattern, responses: (operation as Json)['responses'] as Json });
    }
  }
  return operations;
}

export interface DocumentChecker {
  /** Why an answer does not match the document, or null when it does. */
  responseMismatch(answer: { method: string; path: string; status: number; headers: Headers; text: string }): string | null;
}

export function createDocumentChecker(document: Json = buildOpenApiDocument() as Json): DocumentChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  addFormats(ajv);
  ajv.addFormat('binary', true);
  ajv.addSchema(document, documentId);
  const operations = operationsOf(document);
  const compiled = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string): ValidateFunction => {
    let validate = compiled.get(pointer);
    if (validate === undefined) {
      validate = ajv.compile({ $ref: `${documentId}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };
  const errorBody = validatorAt('/components/schemas/ErrorBody');

  const bodyMismatch = (validate: ValidateFunction, text: string, where: string): string | null => {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return `${where}: the body is not JSON: ${text.slice(0, 120)}`;
    }
    if (validate(body)) return null;
    const first = validate.errors?.[0];
    const at = first === undefined ? '' : `${first.instancePath || '/'} ${first.message ?? ''} ${JSON.stringify(first.params)}`;
    return `${where}: the body does not match the document at ${at}; body: ${text.slice(0, 400)}`;
  };

  return {
    responseMismatch({ method, path, status, headers, text }) {
      const bare = path.split('?')[0] ?? path;
      const lookup = method === 'HEAD' ? 'GET' : method;
      const operation = operations.find((candidate) => candidate.method === lookup && candidate.pattern.test(bare));
      const isJson = (headers.get('content-type') ?? '').startsWith('application/json');
      if (headers.get('x-request-id') === null) return `${method} ${bare} → ${status}: no X-Request-Id header`;
      if (operation === undefined) {
        // A path or method the document does not have: only the toolkit's error answers are allowed
        // (404 unknown path, 405 other method, 204 OPTIONS, the routes kept out of the document).
        if (status >= 400 && isJson && method !== 'HEAD') return bodyMismatch(errorBody, text, `${method} ${bare} (no operation) → ${status}`);
        return null;
      }
      const where = `${operation.method} ${operation.template} → ${status}`;
      const declared = operation.responses[String(status)] as Json | undefined;
      if (declared === undefined) return `${where}: status ${status} is not in the document (documented: ${Object.keys(operation.responses).join(', ')}); body: ${text.slice(0, 300)}`;
      if (method === 'HEAD' || status === 204) return null;
      if (!isJson) return `${where}: content-type ${headers.get('content-type') ?? '(none)'} is not application/json`;
      if ((status === 429 || status === 503) && headers.get('retry-after') === null) return `${where}: no Retry-After header`;
      const base = typeof declared['$ref'] === 'string'
        ? (declared['$ref'] as string).slice(1)
        : `/paths/${pointerSegment(operation.template)}/${operation.method.toLowerCase()}/responses/${status}`;
      return bodyMismatch(validatorAt(`${base}/content/application~1json/schema`), text, where);
    },
  };
}

let shared: DocumentChecker | null = null;

/** One checker per test process (compiling the document once). */
export function documentChecker(): DocumentChecker {
  shared ??= createDocumentChecker();
  return shared;
}

/**
 * `fetch` to the partner edge, with the answer checked against the document (an assertion error
 * names the route and the mismatch); the returned response can still be read. For e2e files that
 * talk to the edge with their own fetch instead of `call` (test/e2e/support.ts).
 */
export const checkedFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const text = await response.clone().text();
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  const mismatch = documentChecker().responseMismatch({ method: method.toUpperCase(), path: url.pathname, status: response.status, headers: response.headers, text });
  if (mismatch !== null) throw new assert.AssertionError({ message: `the answer does not match the OpenAPI document: ${mismatch}`, actual: mismatch, expected: null, operator: 'strictEqual' });
  return response;
};
