// The partner directory: who the partners are (from the partners file, plus the demo partner in
// sandbox mode), their KYC/KYB standing, disabled users, webhook destination and fees. The key
// ring used by the edge is kept in step with it. Admin changes go through `update`.
import { feeFromText } from '../config/corridors.ts';
import type { PartnerConfig } from '../config/partners.ts';
import type { FeeConfig } from '../domain/corridors.ts';
import { userIdMatchForm } from '../domain/user-ids.ts';
import type { KeyRing } from './access.ts';

/** The partner that exists in sandbox mode only (src/service/context.ts adds it there). */
export const demoPartnerId = 'demo';

export interface Partner {
  readonly id: string;
  readonly name: string;
  readonly apiKeySha256: readonly string[];
  readonly kycEnabled: boolean;
  readonly kybApproved: boolean;
  readonly disabledUsers: ReadonlySet<string>;
  readonly webhook: { readonly url: string; readonly secret: string } | null;
  readonly fees: FeeConfig | undefined;
  /** Who may sign in to the partner portal (docs/portal.md); none when absent. */
  readonly portalAdmins?: readonly PortalAdmin[];
}

/** A portal administrator: lower-case e-mail and the scrypt hash of the password (src/portal/passwords.ts). */
export interface PortalAdmin {
  readonly email: string;
  readonly passwordScrypt: string;
}

export function partnerFromConfig(config: PartnerConfig): Partner {
  return {
    id: config.id,
    name: config.name,
    apiKeySha256: [...config.apiKeySha256],
    kycEnabled: config.kycEnabled,
    kybApproved: config.kybApproved,
    disabledUsers: disabledUserSet(config.disabledUsers),
    webhook: config.webhook ? { url: config.webhook.url, secret: config.webhook.secret } : null,
    fees: config.fees ? feeFromText(config.fees) : undefined,
    ...(config.portalAdmins === undefined ? {} : { portalAdmins: config.portalAdmins.map((admin) => ({ ...admin })) }),
  };
}

/** Disabled user ids as they are compared: NFKC and trimmed (an entry stored before ids were normalised too). */
export function disabledUserSet(users: Iterable<string>): ReadonlySet<string> {
  return new Set(Array.from(users, userIdMatchForm));
}

export class PartnerDirectory {
  private readonly partners = new Map<string, Partner>();
  /**
   * The `updatedAtMs` of the stored override each partner was last set from (or written with): a
   * refresh that read the overrides before a newer change was made must not set the older one back
   * (src/ports/partner-overrides.ts).
   */
  private readonly versions = new Map<string, number>();

  constructor(private readonly keyRing: KeyRing) {}

  /** Keeps the partner with its disabled users in the form user ids are compared in (NFKC). */
  set(partner: Partner, version?: number): void {
    this.partners.set(partner.id, { ...partner, disabledUsers: disabledUserSet(partner.disabledUsers) });
    this.keyRing.setPartnerKeys(partner.id, [...partner.apiKeySha256]);
    if (version !== undefined) this.versions.set(partner.id, version);
  }

  get(partnerId: string): Partner | undefined {
    return this.partners.get(partnerId);
  }

  /** The version of the stored override the partner was last set from; 0 when none. */
  versionOf(partnerId: string): number {
    return this.versions.get(partnerId) ?? 0;
  }

  all(): Partner[] {
    return [...this.partners.values()];
  }

  /** Whether the user is disabled, in any Unicode form of its id (the edge passes ids already normalised). */
  isUserDisabled(partnerId: string, userId: string): boolean {
    return this.partners.get(partnerId)?.disabledUsers.has(userIdMatchForm(userId)) ?? false;
  }
}
