// The partner portal (docs/portal.md): pages and a partner-scoped JSON API under /portal, served
// by the edge, for partners' administrators — sign-in, webhook destination and secret, deliveries
// and redelivery, transactions, API keys. Every action goes through the service's existing code
// (the webhooks service's destinations and delivery log, the partner directory and key ring, the
// transactions read model), the same the admin gRPC service uses.
//
//   const routes = portalRoutes({ ctx, webhooks, clientAddress, passwords: await createPasswordVerifier() });
import type { RequestHead, Route } from '../edge/http-types.ts';
import type { ReceiptSigner } from '../edge/receipt-signing.ts';
import type { ServiceContext } from '../ports/context.ts';
import type { DeliveryLog, DestinationsApi, EventLogReader } from '../webhooks/index.ts';
import { keysApiRoutes } from './keys-api.ts';
import { createAccountFailures, loginRoutes } from './login.ts';
import { pageRoutes } from './pages.ts';
import type { PasswordVerifier } from './passwords.ts';
import type { PortalRequestEnv } from './requests.ts';
import { createSessionStore, defaultSessionTimes, type SessionTimes } from './sessions.ts';
import { transactionsApiRoutes } from './transactions-api.ts';
import { unmatchedApiRoutes } from './unmatched-api.ts';
import type { UnmatchedDecisions } from '../edge/routes/unmatched-deposits.ts';
import { webhooksApiRoutes } from './webhooks-api.ts';

export { createPasswordVerifier, hashPassword, hashPasswordSync } from './passwords.ts';

/** The sandbox demo partner's portal administrator (docs/portal.md). */
export const demoPortalAdminEmail = 'admin@demo.example';
export { portalReadModelIndexes } from './transactions-api.ts';

export interface PortalWebhooks {
  readonly destinations: DestinationsApi;
  readonly deliveries: DeliveryLog;
  readonly events: EventLogReader;
}

export interface PortalDeps {
  readonly ctx: Pick<ServiceContext, 'store' | 'partners' | 'authThrottle' | 'clock' | 'env'>;
  readonly webhooks: PortalWebhooks;
  readonly clientAddress: (head: RequestHead) => string;
  readonly passwords: PasswordVerifier;
  readonly sessionTimes?: SessionTimes;
  /** Signs settlement receipts for the transaction page's download (src/edge/receipt-signing.ts). */
  readonly receipts?: ReceiptSigner | null;
  /** Refund and apply of unmatched deposits (the partner API's own); the page lists without them. */
  readonly unmatched?: UnmatchedDecisions;
}

export function portalRoutes(deps: PortalDeps): Route[] {
  const { ctx, webhooks } = deps;
  const sessionTimes = deps.sessionTimes ?? defaultSessionTimes;
  const base: PortalRequestEnv = {
    sessions: createSessionStore(ctx.store, sessionTimes),
    sessionTimes,
    clock: ctx.clock,
    // Outside sandbox mode the portal is served over TLS (a proxy in front of the edge).
    secureCookie: !ctx.env.sandbox,
  };
  return [
    ...pageRoutes(),
    ...loginRoutes({
      ...base,
      partners: ctx.partners,
      authThrottle: ctx.authThrottle,
      passwords: deps.passwords,
      clientAddress: deps.clientAddress,
      accountFailures: createAccountFailures(),
    }),
    ...webhooksApiRoutes({ ...base, destinations: webhooks.destinations, deliveries: webhooks.deliveries }),
    ...transactionsApiRoutes({ ...base, store: ctx.store, deliveries: webhooks.deliveries, events: webhooks.events, receipts: deps.receipts ?? null }),
    ...keysApiRoutes({ ...base, store: ctx.store, partners: ctx.partners }),
    ...(deps.unmatched === undefined ? [] : unmatchedApiRoutes({ ...base, store: ctx.store, decisions: deps.unmatched })),
  ];
}
