// What every portal API handler shares: the session cookie (read and written), the CSRF check of
// state-changing requests, and the portal's error answers, in the edge's `{ code, reason,
// retryable }` shape. Scoping: a handler gets the session's partner id and nothing else; a record
// of another partner is answered exactly like a missing one (404).
import { timingSafeEqual } from 'node:crypto';
import { errorResponse } from '../edge/errors.ts';
import { jsonContentType } from '../edge/http-response.ts';
import type { HttpResponse, RequestContext } from '../edge/http-types.ts';
import type { PortalSession, SessionStore, SessionTimes } from './sessions.ts';

export const sessionCookieName = 'portal_session';
/** The portal's paths: the cookie is sent to these only, never to the partner API. */
export const portalPathPrefix = '/portal';
/** Header carrying the session's CSRF token on every POST of the portal API. */
export const csrfHeader = 'x-csrf-token';

export interface PortalClock {
  nowMs(): number;
}

/** Everything the portal's handlers are given. */
export interface PortalRequestEnv {
  readonly sessions: SessionStore;
  readonly sessionTimes: SessionTimes;
  readonly clock: PortalClock;
  /** Adds `Secure` to the cookie: outside sandbox mode the portal is served over TLS (a proxy in front). */
  readonly secureCookie: boolean;
}

/** The value of one cookie in a Cookie header; null when absent or sent twice (never guessed between). */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  let found: string | null = null;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator < 0 || part.slice(0, separator).trim() !== name) continue;
    if (found !== null) return null;
    found = part.slice(separator + 1).trim();
  }
  return found;
}

/** The Set-Cookie value of a session (or of its removal, with `token` null). */
export function sessionCookie(token: string | null, options: { readonly secure: boolean; readonly maxAgeSeconds: number }): string {
  const value = token ?? '';
  const maxAge = token === null ? 0 : options.maxAgeSeconds;
  return `${sessionCookieName}=${value}; Path=${portalPathPrefix}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${options.secure ? '; Secure' : ''}`;
}

export function portalJson(status: number, value: unknown, headers: Readonly<Record<string, string>> = {}): HttpResponse {
  // no-store: partner data and one-time secrets must not sit in a browser or proxy cache.
  return { status, headers: { 'content-type': jsonContentType, 'cache-control': 'no-store', ...headers }, body: JSON.stringify(value) };
}

export function csrfRefused(): HttpResponse {
  return portalJson(403, { code: 'csrf_failed', reason: `Missing or wrong ${csrfHeader} header: reload the portal page and try again`, retryable: false });
}

export function signInRequired(): HttpResponse {
  return errorResponse('authentication_failed', 'Sign in to the portal first (the session is missing or has expired)');
}

export function notFound(what: string): HttpResponse {
  return errorResponse('not_found', `No such ${what}`);
}

function sameToken(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export type SessionCheck = { readonly ok: true; readonly session: PortalSession } | { readonly ok: false; readonly response: HttpResponse };

/**
 * The request's live session; for any method but GET and HEAD also its CSRF token (403 when
 * missing or wrong). 401 without a live session.
 */
export async function requireSession(env: PortalRequestEnv, request: RequestContext): Promise<SessionCheck> {
  const token = cookieValue(request.headers['cookie'], sessionCookieName);
  const session = token === null ? null : await env.sessions.find(token, env.clock.nowMs());
  if (session === null) return { ok: false, response: signInRequired() };
  const safe = request.method === 'GET' || request.method === 'HEAD';
  if (!safe && !sameToken(request.headers[csrfHeader], session.csrfToken)) return { ok: false, response: csrfRefused() };
  return { ok: true, session };
}

export type SessionHandler<E> = (env: E, session: PortalSession, request: RequestContext) => Promise<HttpResponse>;

/** Runs `handler` for the signed-in administrator; 401 without a session, 403 without the CSRF token. */
export function withSession<E extends PortalRequestEnv>(env: E, handler: SessionHandler<E>): (request: RequestContext) => Promise<HttpResponse> {
  return async (request) => {
    const checked = await requireSession(env, request);
    return checked.ok ? handler(env, checked.session, request) : checked.response;
  };
}
