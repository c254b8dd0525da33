// Changes made through the admin service or the portal (API keys, disabled users) are stored and
// win over the partners file. Every process loads them at start and re-reads them every few
// seconds, so an edge in another process sees a disabled user or a rotated key without a restart.
//
// Each stored override carries a version (`updatedAtMs`, strictly increasing per partner), and the
// directory remembers the version it holds: a refresh that read the overrides before a change was
// made in this process (its read still in flight while a key was rotated) never sets the older
// document back. Without that, the rotated-out key worked again, and the new one got 401, until
// the next refresh.
import { toFixedString } from '../domain/money.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import { decimalFromExactString } from '../domain/money.ts';
import type { ServiceContext } from './context.ts';
import { demoPartnerId, disabledUserSet, type Partner } from './partners.ts';

export const partnerOverridesCollection = 'partner_overrides';
const refreshEveryMsDefault = 2_000;

function toDocument(partner: Partner, updatedAtMs: number): JsonObject {
  return {
    id: partner.id,
    name: partner.name,
    apiKeySha256: [...partner.apiKeySha256],
    kycEnabled: partner.kycEnabled,
    kybApproved: partner.kybApproved,
    disabledUsers: [...partner.disabledUsers],
    fees: partner.fees ? { percentage: toFixedString(partner.fees.percentage), fixed: toFixedString(partner.fees.fixed) } : null,
    updatedAtMs,
  };
}

function fromDocument(doc: JsonObject, base: Partner | undefined): Partner {
  const fees = doc.fees as { percentage: string; fixed: string } | null;
  return {
    id: String(doc.id),
    name: String(doc.name),
    apiKeySha256: (doc.apiKeySha256 as string[]).slice(),
    kycEnabled: Boolean(doc.kycEnabled),
    kybApproved: Boolean(doc.kybApproved),
    // Normalised like the directory keeps them, so a refresh does not see a change where there is none.
    disabledUsers: disabledUserSet(doc.disabledUsers as string[]),
    // The webhook destination is managed by the webhooks service's own records.
    webhook: base?.webhook ?? null,
    // Portal administrators come from the partners file (and the demo start), never from the store.
    ...(base?.portalAdmins === undefined ? {} : { portalAdmins: base.portalAdmins }),
    fees: fees ? { percentage: decimalFromExactString(fees.percentage), fixed: decimalFromExactString(fees.fixed) } : undefined,
  };
}

/**
 * Changes a partner: the change is made to the stored override (the newest any process wrote) or,
 * when there is none, to the directory's copy; the result is stored first, with a version above
 * both, and only then set in the directory. Answers the changed partner; undefined for an unknown one.
 */
export async function changePartner(
  ctx: Pick<ServiceContext, 'store' | 'clock' | 'partners'>,
  partnerId: string,
  change: (partner: Partner) => Partner,
): Promise<Partner | undefined> {
  const known = ctx.partners.get(partnerId);
  if (known === undefined) return undefined;
  const stored = await ctx.store.get(partnerOverridesCollection, partnerId);
  const current = stored === null ? known : fromDocument(stored, known);
  const version = Math.max(ctx.clock.nowMs(), Number(stored?.updatedAtMs ?? 0) + 1, ctx.partners.versionOf(partnerId) + 1);
  const next = change(current);
  await ctx.store.put(partnerOverridesCollection, partnerId, toDocument(next, version));
  ctx.partners.set(next, version);
  return next;
}

/**
 * Applies every stored override to the directory; returns how many partners changed. Outside
 * sandbox mode an override never brings the demo partner back (an admin change made to it during
 * a sandbox run on the same store), unless the partners file declares a partner of that id.
 */
export async function applyPartnerOverrides(ctx: Pick<ServiceContext, 'partners' | 'env'> & { readonly store: Pick<SnapshotStore, 'list'> }): Promise<number> {
  let changed = 0;
  for (let offset = 0; offset < 100_000; offset += 1_000) {
    const page = await ctx.store.list(partnerOverridesCollection, { limit: 1_000, offset });
    for (const item of page.items) {
      const current = ctx.partners.get(item.id);
      if (current === undefined && item.id === demoPartnerId && !ctx.env.sandbox) continue;
      // Read before a change this process has made since: the directory is already newer.
      const version = Number(item.doc['updatedAtMs'] ?? 0);
      if (version < ctx.partners.versionOf(item.id)) continue;
      const next = fromDocument(item.doc, current);
      if (current === undefined || JSON.stringify(toDocument(current, 0)) !== JSON.stringify(toDocument(next, 0))) {
        ctx.partners.set(next, version);
        changed += 1;
      }
    }
    if (page.items.length < 1_000) break;
  }
  return changed;
}

/** Keeps the directory in step with stored overrides until stopped. */
export function startPartnerRefresh(ctx: Pick<ServiceContext, 'store' | 'partners' | 'log' | 'env'>, everyMs = refreshEveryMsDefault): { stop(): void } {
  const timer = setInterval(() => {
    applyPartnerOverrides(ctx).catch((error: unknown) => ctx.log.warn({ error: String(error) }, 'partner overrides refresh failed'));
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
