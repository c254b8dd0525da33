// Shared helpers of the e2e tests: one HTTP call helper, a wait for a transaction's status, and
// request bodies partners send. The tests run against the whole service (test/support/
// service-harness.ts); there are no stand-ins for its capabilities here.
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.ts';
import { documentChecker } from '../support/openapi-validation.ts';

export interface CallOptions {
  readonly key?: string;
  readonly bearer?: string;
  readonly ops?: string;
  readonly body?: unknown;
  readonly rawBody?: string | Uint8Array | FormData;
  readonly headers?: Record<string, string>;
  readonly idempotencyKey?: string;
  /**
   * The server is not the partner edge (a role's health listener): its answers are not the API's,
   * so they are not checked against the OpenAPI document.
   */
  readonly notTheEdge?: true;
}

export interface CallResult {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed JSON body (undefined when the body is not JSON). */
  readonly json: Record<string, unknown>;
}

/** Longest wait for one HTTP answer. */
export const callTimeoutMs = 45_000;

export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  if (options.bearer !== undefined) headers['authorization'] = `Bearer ${options.bearer}`;
  if (options.ops !== undefined) headers['x-ops-api-key'] = options.ops;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let body: string | Uint8Array | FormData | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
    // Bounded: the edge's own handler timeout is 30 s.
    signal: AbortSignal.timeout(callTimeoutMs),
  });
  const text = await response.text();
  // Every answer of the e2e suite is checked against the published OpenAPI document: a route that
  // drifts from it fails here, naming the route and the path of the mismatch.
  if (options.notTheEdge !== true) {
    const mismatch = documentChecker().responseMismatch({ method, path, status: response.status, headers: response.headers, text });
    assert.equal(mismatch, null, `the answer does not match the OpenAPI document: ${mismatch ?? ''}`);
  }
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON (metrics, HEAD)
  }
  return { status: response.status, headers: response.headers, text, json };
}

const base58Alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58Encode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = value * 256n + BigInt(byte);
  let text = '';
  while (value > 0n) {
    text = (base58Alphabet[Number(value % 58n)] ?? '') + text;
    value /= 58n;
  }
  for (const byte of bytes) {
    if (byte !== 0) break;
    text = `1${text}`;
  }
  return text;
}

export const pngBytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...new Array<number>(64).fill(7)]);

export function kycForm(userId: string, overrides: Record<string, string | null> = {}, document: { bytes: Uint8Array; type: string } | null = { bytes: pngBytes, type: 'image/png' }): FormData {
  const fields: Record<string, string | null> = {
    userId,
    fullName: 'Maria da Silva',
    documentType: 'PASSPORT',
    documentNumber: 'AB123456',
    dateOfBirth: '1990-05-17',
    nationality: 'BR',
    city: 'São Paulo',
    address: 'Rua Augusta 100',
    email: 'maria@example.com',
    phone: '+55 11 99999-0000',
    ...overrides,
  };
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) if (value !== null) form.append(name, value);
  if (document !== null) form.append('document', new Blob([document.bytes], { type: document.type }), 'passport.png');
  return form;
}

export const payoutQuoteBody = {
  amount: 50_000,
  crypto_currency: 'USDC',
  network: 'STELLAR',
  payment_method: 'BREB',
  target_currency: 'COP',
} as const;

/** Polls GET /transaction/{id} (bounded) until it shows `status`; returns that response's body. */
export async function untilStatus(baseUrl: string, key: string, id: string, status: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  return eventually(async () => {
    const response = await call(baseUrl, 'GET', `/transaction/${id}`, { key });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.json['status'], status, `transaction ${id}`);
    return response.json;
  }, timeoutMs);
}
