// Changes made through the admin service (API keys, disabled users) are stored and win over the
// partners file. Every process loads them at start and re-reads them every few seconds, so an edge
// in another process sees a disabled user or a rotated key without a restart.
import { toFixedString } from '../domain/money.ts';
import type { JsonObject } from '../store/store.ts';
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

export async function persistPartner(ctx: Pick<ServiceContext, 'store' | 'clock'>, partner: Partner): Promise<void> {
  await ctx.store.put(partnerOverridesCollection, partner.id, toDocument(partner, ctx.clock.nowMs()));
}

/**
 * Applies every stored override to the directory; returns how many partners changed. Outside
 * sandbox mode an override never brings the demo partner back (an admin change made to it during
 * a sandbox run on the same store), unless the partners file declares a partner of that id.
 */
export async function applyPartnerOverrides(ctx: Pick<ServiceContext, 'store' | 'partners' | 'env'>): Promise<number> {
  let changed = 0;
  for (let offset = 0; offset < 100_000; offset += 1_000) {
    const page = await ctx.store.list(partnerOverridesCollection, { limit: 1_000, offset });
    for (const item of page.items) {
      const current = ctx.partners.get(item.id);
      if (current === undefined && item.id === demoPartnerId && !ctx.env.sandbox) continue;
      const next = fromDocument(item.doc, current);
      if (current === undefined || JSON.stringify(toDocument(current, 0)) !== JSON.stringify(toDocument(next, 0))) {
        ctx.partners.set(next);
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
