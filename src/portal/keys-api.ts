// The portal's API keys page: the partner's keys (a short id, the key's first characters and its
// creation date, never the key or its full hash), a new key (shown once), and revocation. Keys live
// where the admin service's RotateApiKey puts them: the partner's `apiKeySha256` in the partner
// directory, persisted as a partner override (src/ports/partner-overrides.ts) that every process
// re-reads every 2 s — so a key created or revoked here works, or stops working, on every edge
// without a restart. What the hash cannot tell (the prefix, when and by whom) is kept beside it in
// `portal_api_keys`; keys from the partners file have no such record and are shown as such.
import { generateApiKey, keysPerPartnerMax, sha256Hex } from '../edge/auth.ts';
import { parseJsonBody } from '../edge/body.ts';
import type { Route } from '../edge/http-types.ts';
import { changePartner } from '../ports/partner-overrides.ts';
import type { PartnerDirectory } from '../ports/partners.ts';
import type { SnapshotStore } from '../store/store.ts';
import { notFound, portalJson, withSession, type PortalRequestEnv, type SessionHandler } from './requests.ts';
import { createKeyBodySchema, parsePortal } from './schemas.ts';

export const apiKeysCollection = 'portal_api_keys';
/** Characters of a new key kept to recognise it by (`key_` and 8 hex digits: 32 of its 192 random bits). */
const prefixChars = 12;
/** A key's id in the portal: the first 16 hex digits of its SHA-256. */
const keyIdChars = 16;

export interface KeysApiEnv extends PortalRequestEnv {
  readonly store: SnapshotStore;
  readonly partners: PartnerDirectory;
}

type Handler = SessionHandler<KeysApiEnv>;

const listKeys: Handler = async (env, session) => {
  const partner = env.partners.get(session.partnerId);
  if (partner === undefined) return notFound('partner');
  const keys = [];
  for (const hash of partner.apiKeySha256) {
    const meta = await env.store.get(apiKeysCollection, hash);
    const mine = meta !== null && meta['partnerId'] === session.partnerId;
    keys.push({
      id: hash.slice(0, keyIdChars),
      prefix: mine && typeof meta['prefix'] === 'string' ? meta['prefix'] : null,
      label: mine && typeof meta['label'] === 'string' ? meta['label'] : null,
      createdAtMs: mine && typeof meta['createdAtMs'] === 'number' ? meta['createdAtMs'] : null,
      source: mine ? 'portal' : 'configured',
    });
  }
  return portalJson(200, { keys, keysMax: keysPerPartnerMax });
};

const createKey: Handler = async (env, session, request) => {
  const raw = request.body.length === 0 ? ({ ok: true, value: {} } as const) : parseJsonBody(request);
  if (!raw.ok) return raw.response;
  const body = parsePortal(createKeyBodySchema, raw.value);
  if (!body.ok) return body.response;
  const partner = env.partners.get(session.partnerId);
  if (partner === undefined) return notFound('partner');
  if (partner.apiKeySha256.length >= keysPerPartnerMax) {
    return portalJson(409, { code: 'too_many_keys', reason: `A partner holds at most ${keysPerPartnerMax} keys; revoke one first`, retryable: false });
  }
  // 192 random bits, like every key the service issues (docs/security.md).
  const apiKey = generateApiKey('key');
  const hash = sha256Hex(apiKey);
  const createdAtMs = env.clock.nowMs();
  await env.store.put(apiKeysCollection, hash, { partnerId: session.partnerId, prefix: apiKey.slice(0, prefixChars), label: body.value.label ?? null, createdAtMs, createdBy: session.email });
  await changePartner(env, session.partnerId, (current) => ({ ...current, apiKeySha256: [...current.apiKeySha256, hash] }));
  return portalJson(201, { key: { id: hash.slice(0, keyIdChars), prefix: apiKey.slice(0, prefixChars), createdAtMs }, apiKey });
};

const revokeKey: Handler = async (env, session, request) => {
  const id = request.params['id'] ?? '';
  const partner = env.partners.get(session.partnerId);
  const hash = partner?.apiKeySha256.find((candidate) => candidate.slice(0, keyIdChars) === id && id.length === keyIdChars);
  if (partner === undefined || hash === undefined) return notFound('API key');
  await changePartner(env, session.partnerId, (current) => ({ ...current, apiKeySha256: current.apiKeySha256.filter((candidate) => candidate !== hash) }));
  await env.store.remove(apiKeysCollection, hash);
  return portalJson(200, { revoked: id });
};

export function keysApiRoutes(env: KeysApiEnv): Route[] {
  return [
    { method: 'GET', pattern: '/portal/api/keys', handler: withSession(env, listKeys) },
    { method: 'POST', pattern: '/portal/api/keys', bodyBytesMax: 1024, handler: withSession(env, createKey) },
    { method: 'POST', pattern: '/portal/api/keys/:id/revoke', bodyBytesMax: 1024, handler: withSession(env, revokeKey) },
  ];
}
