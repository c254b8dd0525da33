// Portal sessions: a random 256-bit token in an HttpOnly, SameSite=Strict cookie; the store keeps
// the session under the token's SHA-256 (a leaked store or snapshot holds no usable cookie), so
// every edge sees every session and a sign-out on one edge is a sign-out on all.
//
// A session ends at sign-out, after `idleMs` without a request, or `lifetimeMs` after sign-in,
// whichever comes first (`sessionExpired`, pure). Its CSRF token is drawn with it and asked for on
// every state-changing request (src/portal/requests.ts).
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../edge/auth.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';

export const portalSessionsCollection = 'portal_sessions';

export interface SessionTimes {
  /** Ends a session this long after its last request; 30 minutes. */
  readonly idleMs: number;
  /** Ends a session this long after sign-in whatever happens; 12 hours. */
  readonly lifetimeMs: number;
}

export const defaultSessionTimes: SessionTimes = { idleMs: 30 * 60_000, lifetimeMs: 12 * 60 * 60_000 };
/** The last-seen time is written at most this often (not one store write per request). */
const touchEveryMs = 60_000;

export interface PortalSession {
  readonly partnerId: string;
  readonly email: string;
  readonly csrfToken: string;
  readonly createdAtMs: number;
  readonly lastSeenAtMs: number;
}

/** Whether a session is over at `nowMs` (pure). */
export function sessionExpired(session: PortalSession, nowMs: number, times: SessionTimes): boolean {
  return nowMs - session.lastSeenAtMs >= times.idleMs || nowMs - session.createdAtMs >= times.lifetimeMs;
}

/** When the session ends if nothing else happens. */
export function sessionEndsAtMs(session: PortalSession, times: SessionTimes): number {
  return Math.min(session.lastSeenAtMs + times.idleMs, session.createdAtMs + times.lifetimeMs);
}

const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

function fromDoc(doc: JsonObject | null): PortalSession | null {
  if (doc === null) return null;
  const { partnerId, email, csrfToken, createdAtMs, lastSeenAtMs } = doc;
  if (typeof partnerId !== 'string' || typeof email !== 'string' || typeof csrfToken !== 'string') return null;
  if (typeof createdAtMs !== 'number' || typeof lastSeenAtMs !== 'number') return null;
  return { partnerId, email, csrfToken, createdAtMs, lastSeenAtMs };
}

export interface SessionStore {
  /** A new session; returns the cookie token (shown to the browser only) and the session. */
  create(partnerId: string, email: string, nowMs: number): Promise<{ token: string; session: PortalSession }>;
  /** The live session of a cookie token, touched; null when unknown, malformed or expired (then removed). */
  find(token: string, nowMs: number): Promise<PortalSession | null>;
  end(token: string): Promise<void>;
}

export function createSessionStore(store: SnapshotStore, times: SessionTimes = defaultSessionTimes): SessionStore {
  const idOf = (token: string) => sha256Hex(token);
  return {
    async create(partnerId, email, nowMs) {
      const token = randomBytes(32).toString('base64url');
      const session: PortalSession = { partnerId, email, csrfToken: randomBytes(32).toString('base64url'), createdAtMs: nowMs, lastSeenAtMs: nowMs };
      await store.put(portalSessionsCollection, idOf(token), { ...session });
      return { token, session };
    },
    async find(token, nowMs) {
      if (!tokenPattern.test(token)) return null;
      const id = idOf(token);
      const session = fromDoc(await store.get(portalSessionsCollection, id));
      if (session === null) return null;
      if (sessionExpired(session, nowMs, times)) {
        await store.remove(portalSessionsCollection, id);
        return null;
      }
      if (nowMs - session.lastSeenAtMs < touchEveryMs) return session;
      const touched = { ...session, lastSeenAtMs: nowMs };
      await store.put(portalSessionsCollection, id, { ...touched });
      return touched;
    },
    async end(token) {
      if (tokenPattern.test(token)) await store.remove(portalSessionsCollection, idOf(token));
    },
  };
}
