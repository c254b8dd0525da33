// Signing in and out of the portal. One answer for a wrong password and for an unknown e-mail (401,
// same reason, same work: an unknown account still runs scrypt over a decoy hash), so the portal
// does not tell which administrators exist.
//
// Guessing is bounded twice, with the API's 429 + Retry-After:
// - per client address, by the process's failed-authentication throttle (AUTH_FAILURES_PER_MINUTE,
//   AUTH_FAILURES_BURST: the same buckets the API keys and the ops key count against, so an address
//   cannot spread its guesses over several doors);
// - per account (e-mail), by a bucket of its own (`accountFailures`): many addresses guessing one
//   administrator's password are slowed down too.
// A throttled address or account is refused before the password is even checked, the right one
// included: unlike a 192-bit API key, a password can be guessed.
//
// Cross-site requests: the sign-in must carry `X-Portal-Request: 1`, a header no other site can make
// a browser send here (it would need a CORS preflight, which the edge never grants), and an Origin,
// when the browser sends one, naming this host. Sign-out and everything else need the session's
// CSRF token (requests.ts).
import type { AuthThrottle } from '../ports/access.ts';
import type { PartnerDirectory } from '../ports/partners.ts';
import { errorResponse } from '../edge/errors.ts';
import { createRateLimiter, type RateLimiter, type TokenBucketConfig } from '../edge/rate-limit.ts';
import type { HttpResponse, RequestContext, RequestHead, Route } from '../edge/http-types.ts';
import { parseJsonBody } from '../edge/body.ts';
import type { PasswordVerifier } from './passwords.ts';
import { cookieValue, csrfRefused, portalJson, requireSession, sessionCookie, sessionCookieName, type PortalRequestEnv } from './requests.ts';
import { sessionEndsAtMs } from './sessions.ts';
import { loginBodySchema, parsePortal } from './schemas.ts';

/** Failed sign-ins per account: 10 at once, then one every 12 s. */
export const defaultAccountFailures: TokenBucketConfig = { ratePerSecond: 5 / 60, burst: 10 };
const accountsMax = 100_000;

export interface LoginEnv extends PortalRequestEnv {
  readonly partners: PartnerDirectory;
  readonly authThrottle: AuthThrottle;
  readonly passwords: PasswordVerifier;
  readonly clientAddress: (head: RequestHead) => string;
  readonly accountFailures: RateLimiter;
}

export function createAccountFailures(config: TokenBucketConfig = defaultAccountFailures): RateLimiter {
  return createRateLimiter({ config, keysMax: accountsMax });
}

/** The administrator of that e-mail and their partner; null when none (e-mails are unique per partner, first match wins). */
function findAdmin(partners: PartnerDirectory, email: string): { partnerId: string; passwordScrypt: string } | null {
  for (const partner of partners.all()) {
    const admin = partner.portalAdmins?.find((candidate) => candidate.email === email);
    if (admin !== undefined) return { partnerId: partner.id, passwordScrypt: admin.passwordScrypt };
  }
  return null;
}

function rateLimited(retryAfterSeconds: number): HttpResponse {
  return errorResponse('rate_limited', 'Too many failed sign-ins; retry after the Retry-After delay', { 'retry-after': String(Math.max(1, retryAfterSeconds)) });
}

/** Whether the request may be a cross-site one (see the header comment). */
function crossSite(request: RequestContext): boolean {
  if (request.headers['x-portal-request'] !== '1') return true;
  const origin = request.headers['origin'];
  if (origin === undefined) return false;
  const host = request.headers['host'];
  return host === undefined || (origin !== `http://${host}` && origin !== `https://${host}`);
}

const invalidCredentials = 'Wrong e-mail or password';

async function signIn(env: LoginEnv, request: RequestContext): Promise<HttpResponse> {
  if (crossSite(request)) return csrfRefused();
  const parsedBody = parseJsonBody(request);
  if (!parsedBody.ok) return parsedBody.response;
  const body = parsePortal(loginBodySchema, parsedBody.value);
  if (!body.ok) return body.response;
  const email = body.value.email.trim().toLowerCase();
  const address = env.clientAddress(request);
  const addressBlocked = env.authThrottle.blocked(address);
  if (addressBlocked.throttled) return rateLimited(addressBlocked.retryAfterSeconds);
  const accountBlocked = env.accountFailures.peek(email);
  if (!accountBlocked.allowed) return rateLimited(accountBlocked.retryAfterSeconds);
  const admin = findAdmin(env.partners, email);
  const verdict = await env.passwords.verify(admin?.passwordScrypt ?? null, body.value.password);
  if (verdict === 'busy') return errorResponse('service_unavailable', 'Too many sign-ins at once; retry in a moment');
  if (verdict === 'mismatch' || admin === null) {
    const byAddress = env.authThrottle.failed('portal', address, { method: request.method, route: request.routePattern, requestId: request.requestId });
    const byAccount = env.accountFailures.take(email);
    if (byAddress.throttled) return rateLimited(byAddress.retryAfterSeconds);
    if (!byAccount.allowed) return rateLimited(byAccount.retryAfterSeconds);
    return errorResponse('authentication_failed', invalidCredentials);
  }
  const { token, session } = await env.sessions.create(admin.partnerId, email, env.clock.nowMs());
  const maxAgeSeconds = Math.floor(env.sessionTimes.lifetimeMs / 1000);
  return portalJson(200, sessionBody(env, session), { 'set-cookie': sessionCookie(token, { secure: env.secureCookie, maxAgeSeconds }) });
}

function sessionBody(env: LoginEnv, session: { partnerId: string; email: string; csrfToken: string; createdAtMs: number; lastSeenAtMs: number }): unknown {
  const partner = env.partners.get(session.partnerId);
  return {
    partnerId: session.partnerId,
    partnerName: partner?.name ?? session.partnerId,
    email: session.email,
    csrfToken: session.csrfToken,
    expiresAtMs: sessionEndsAtMs(session, env.sessionTimes),
  };
}

async function signOut(env: LoginEnv, request: RequestContext): Promise<HttpResponse> {
  const checked = await requireSession(env, request);
  if (!checked.ok) return checked.response;
  const token = cookieValue(request.headers['cookie'], sessionCookieName);
  if (token !== null) await env.sessions.end(token);
  return portalJson(200, { signedOut: true }, { 'set-cookie': sessionCookie(null, { secure: env.secureCookie, maxAgeSeconds: 0 }) });
}

async function currentSession(env: LoginEnv, request: RequestContext): Promise<HttpResponse> {
  const checked = await requireSession(env, request);
  return checked.ok ? portalJson(200, sessionBody(env, checked.session)) : checked.response;
}

export function loginRoutes(env: LoginEnv): Route[] {
  return [
    { method: 'POST', pattern: '/portal/api/login', bodyBytesMax: 4096, handler: (request) => signIn(env, request) },
    { method: 'POST', pattern: '/portal/api/logout', bodyBytesMax: 1024, handler: (request) => signOut(env, request) },
    { method: 'GET', pattern: '/portal/api/session', handler: (request) => currentSession(env, request) },
  ];
}
