// What the context hands every door of a process for deciding who is calling (the edge's guards,
// the health listener's /metrics, the admin gRPC service): the key ring of partner and ops keys and
// the per-address throttle of failed authentications. The contracts live here, below every role;
// the implementations are the edge's (src/edge/auth.ts, src/edge/auth-throttle.ts).

/** Partner and ops keys by their SHA-256: a presented key is hashed and looked up, never stored. */
export interface KeyRing {
  /** Replaces every key of a partner atomically (an empty list removes the partner's access). */
  setPartnerKeys(partnerId: string, apiKeySha256: readonly string[]): void;
  removePartner(partnerId: string): void;
  /** Replaces the set of ops keys (`X-OPS-API-KEY`). */
  setOpsKeys(opsKeySha256: readonly string[]): void;
  /** The partner owning this presented key, or null. */
  findPartner(apiKey: string): string | null;
  isOpsKey(apiKey: string): boolean;
  partnerIds(): string[];
}

export const credentialKinds = ['partner', 'ops', 'admin', 'portal'] as const;
/** Which credential failed: a partner key, the ops key over HTTP, the ops key on the admin gRPC service, a portal password. */
export type CredentialKind = (typeof credentialKinds)[number];

export interface AuthFailureOutcome {
  /** True: answer 429 / RESOURCE_EXHAUSTED with `retryAfterSeconds`; false: the usual 401. */
  readonly throttled: boolean;
  readonly retryAfterSeconds: number;
}

export interface AuthThrottleStats {
  readonly failures: Readonly<Record<CredentialKind, number>>;
  readonly throttled: Readonly<Record<CredentialKind, number>>;
  readonly addresses: number;
}

export interface AuthThrottle {
  /**
   * One failed authentication of `kind` from `address`: counted, charged to the address's bucket
   * and logged by sample (`fields`: route, method, request id — never the credential).
   */
  failed(kind: CredentialKind, address: string, fields: Readonly<Record<string, unknown>>): AuthFailureOutcome;
  /**
   * Whether `address` is throttled now, charging nothing. The portal's sign-in asks before checking
   * a password: unlike a 192-bit key, a password can be guessed, so a throttled address is refused
   * even with the right one.
   */
  blocked(address: string): AuthFailureOutcome;
  stats(): AuthThrottleStats;
}
