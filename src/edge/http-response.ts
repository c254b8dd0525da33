// Responses: the helpers routes build them with, the toolkit's own refusals, and the one function
// that writes a response to uWS (status lines and header names are checked once and remembered; a
// malformed response from our own code is caught before any byte is written).
import { STATUS_CODES } from 'node:http';
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { anonymousShareKey, type Refusal } from './fair-shares.ts';
import { errorResponse } from './errors.ts';
import type { HttpResponse } from './http-types.ts';

export const jsonContentType = 'application/json; charset=utf-8';
/** The headers of every JSON response that adds none of its own (shared: responses are only read). */
const jsonHeaders: Readonly<Record<string, string>> = Object.freeze({ 'content-type': jsonContentType });

export function jsonResponse(status: number, value: unknown, headers?: Readonly<Record<string, string>>): HttpResponse {
  return { status, headers: headers === undefined ? jsonHeaders : { 'content-type': jsonContentType, ...headers }, body: JSON.stringify(value) };
}

/** A JSON response whose body is already JSON text (sent as is). */
export function jsonTextResponse(status: number, jsonText: string): HttpResponse {
  return { status, headers: jsonHeaders, body: jsonText };
}

export function emptyResponse(status: number, headers?: Readonly<Record<string, string>>): HttpResponse {
  return headers === undefined ? { status } : { status, headers };
}

/** 413: the body is over the route's cap. */
export function tooLarge(bodyBytesMax: number): HttpResponse {
  return errorResponse('payload_too_large', `Request body exceeds ${bodyBytesMax} bytes`);
}

/** 429 when the caller is over its own share (a partner: only it is slowed down), else 503. */
export function refusalResponse(refusal: Refusal, shareKey: string): HttpResponse {
  const what = refusal.resource === 'requests' ? 'requests' : refusal.resource === 'uploads' ? 'uploads' : 'request bytes';
  if (refusal.scope === 'share' && shareKey !== anonymousShareKey) {
    return errorResponse('rate_limited', `Too many ${what} in flight for this API key; retry after the Retry-After delay`, { 'retry-after': '1' });
  }
  if (refusal.scope === 'share') return errorResponse('service_unavailable', `Too many unauthenticated ${what} in flight; retry later`);
  return errorResponse('service_unavailable', 'Server busy; retry later');
}

// ---------------------------------------------------------------------------------------------
// Writing responses

const headerNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const headerValueForbidden = /[\r\n\0]/;
/** Framing headers uWS writes itself; a handler's copy would corrupt the response. */
const framingHeaders = new Set(['content-length', 'transfer-encoding', 'connection', 'x-request-id']);

/** `200 OK`, … for each valid status used so far (at most the 400 statuses of 200–599). */
const statusLines = new Map<number, string>();

function statusLine(status: number): string {
  const known = statusLines.get(status);
  if (known !== undefined) return known;
  const statusText = STATUS_CODES[status];
  if (!Number.isInteger(status) || status < 200 || status > 599 || statusText === undefined) {
    throw new Error(`invalid response status ${status}`);
  }
  const line = `${status} ${statusText}`;
  statusLines.set(status, line);
  return line;
}

/** Header names found valid, with their lower-case form. Names come from our code (a few dozen). */
const checkedHeaderNames = new Map<string, string>();
const checkedHeaderNamesMax = 1024;

function lowerCaseHeaderName(name: string): string {
  const known = checkedHeaderNames.get(name);
  if (known !== undefined) return known;
  if (!headerNamePattern.test(name)) throw new Error(`invalid response header ${name}`);
  const lower = name.toLowerCase();
  if (checkedHeaderNames.size < checkedHeaderNamesMax) checkedHeaderNames.set(name, lower);
  return lower;
}

const noHeaderNames: readonly string[] = Object.freeze([]);
/** `jsonHeaders`' names: valid by construction, so responses using them skip the header checks. */
const jsonHeaderNames: readonly string[] = Object.freeze(Object.keys(jsonHeaders));

export function headerNamesOf(response: HttpResponse): readonly string[] {
  const headers = response.headers;
  if (headers === undefined) return noHeaderNames;
  return headers === jsonHeaders ? jsonHeaderNames : Object.keys(headers);
}

/** Throws on an invalid status or header before anything is written (the caller answers 500). */
export function checkResponse(response: HttpResponse, names: readonly string[]): void {
  statusLine(response.status);
  const headers = response.headers;
  if (headers === undefined || headers === jsonHeaders) return;
  for (const name of names) {
    lowerCaseHeaderName(name);
    if (headerValueForbidden.test(headers[name] ?? '')) throw new Error(`invalid response header ${name}`);
  }
}

/** Every error body starts so: `errorBody` / `rejectionResponse` in errors.ts put `code` first. */
const errorBodyStart = '{"code":';

/**
 * An error body with `request_id` added (the same id as the `X-Request-Id` header), so a partner
 * who logs only the body can still quote the id to support. Added here, where the id is written,
 * rather than where error bodies are built: the catalogue's helpers do not know the request, and a
 * body replayed from the idempotency store then carries the id of the request that got it. A body
 * that already names one is left alone.
 */
export function withRequestId(status: number, body: string, requestId: string): string {
  if (status < 400 || !body.startsWith(errorBodyStart) || !body.endsWith('}') || body.includes('"request_id":')) return body;
  return `${body.slice(0, -1)},"request_id":${JSON.stringify(requestId)}}`;
}

export function writeResponse(res: UwsResponse, requestId: string, method: string, response: HttpResponse, names: readonly string[], closeConnection: boolean): void {
  // uWS writes `200 OK` itself when no status was written: one native call less for most answers.
  if (response.status !== 200) res.writeStatus(statusLine(response.status));
  res.writeHeader('x-request-id', requestId);
  let hasCacheControl = false;
  const headers = response.headers;
  if (headers !== undefined) {
    for (const name of names) {
      const lower = lowerCaseHeaderName(name);
      if (framingHeaders.has(lower)) continue;
      if (lower === 'cache-control') hasCacheControl = true;
      res.writeHeader(lower, headers[name] ?? '');
    }
  }
  if (!hasCacheControl) res.writeHeader('cache-control', 'no-store');
  res.writeHeader('x-content-type-options', 'nosniff');
  const body = typeof response.body === 'string' ? withRequestId(response.status, response.body, requestId) : (response.body ?? '');
  // uWS 20.30 quirk: endWithoutBody() must be called with no arguments; with a length or an
  // explicit undefined it leaves the response open (the client hangs, then onAborted fires).
  // So responses without a body cannot ask for the connection to close; uWS keeps parsing and
  // discarding any unread request body instead, which only HEAD/OPTIONS requests can cause here.
  if (response.status === 204 || response.status === 304) {
    res.endWithoutBody();
  } else if (method === 'HEAD') {
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    res.writeHeader('content-length', String(length));
    res.endWithoutBody();
  } else {
    res.end(body, closeConnection);
  }
}

