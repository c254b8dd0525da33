// Fair shares at the edge: what one caller may hold at once, so that no partner can starve the
// others with slow or big requests. Every request the router admits belongs to one share: its
// partner's (each partner its own; the ops caller counts as one more), or the one share of all
// unauthenticated requests. A share holds, at most:
//   - `requestsInFlightMax` requests being read or handled;
//   - `bodyBytesInFlightMax` bytes of buffered (JSON) bodies;
//   - `uploadsInFlightMax` streamed bodies (uploads: the KYC document).
// And the whole process at most `bodyBytesInFlightMax` buffered bytes and `uploadsInFlightMax`
// uploads. Uploads and buffered bodies are separate budgets on purpose: uploads are few, long
// and streamed (their memory is bounded per upload, not by their size), JSON bodies are many and
// short, and a partner's uploads must never leave anyone's JSON routes without room.
//
// A refusal says whose limit it was: the caller's own share (the router answers 429 with
// Retry-After for a partner; the caller is over what it alone may hold) or the server's (503:
// everyone's budget is spent). Bookkeeping only: no I/O, no clock.

export interface ShareLimits {
  /** Requests of the share being read or handled at once. */
  readonly requestsInFlightMax: number;
  /** Bytes of buffered request bodies the share's requests hold at once. */
  readonly bodyBytesInFlightMax: number;
  /** Streamed request bodies (uploads) of the share at once. */
  readonly uploadsInFlightMax: number;
}

export interface FairShareLimits {
  /** Each partner's share (and the ops caller's). */
  readonly partner: ShareLimits;
  /** The one share of every unauthenticated request together. */
  readonly anonymous: ShareLimits;
  /** Buffered body bytes of every request together. */
  readonly bodyBytesInFlightMax: number;
  /** Uploads of every share together. */
  readonly uploadsInFlightMax: number;
}

export const fairShareDefaults: FairShareLimits = {
  partner: { requestsInFlightMax: 256, bodyBytesInFlightMax: 8 * 1024 * 1024, uploadsInFlightMax: 4 },
  anonymous: { requestsInFlightMax: 128, bodyBytesInFlightMax: 256 * 1024, uploadsInFlightMax: 0 },
  bodyBytesInFlightMax: 64 * 1024 * 1024,
  uploadsInFlightMax: 32,
};

/** Whose limit refused: the caller's own share, or the whole server's. */
export type RefusalScope = 'share' | 'server';
export type RefusedResource = 'requests' | 'body_bytes' | 'uploads';

export interface Refusal {
  readonly scope: RefusalScope;
  readonly resource: RefusedResource;
}

/** The share of unauthenticated requests. */
export const anonymousShareKey = 'anonymous';

/** One admitted request's hold on its share: body bytes as they are reserved, released at the end. */
export interface Admission {
  /** Reserves more buffered body bytes; a refusal reserves nothing. */
  reserveBodyBytes(bytes: number): Refusal | null;
  /** Gives everything back (the request slot, its upload slot, its body bytes); idempotent. */
  release(): void;
}

export interface FairSharesStats {
  readonly bodyBytesInFlight: number;
  readonly uploadsInFlight: number;
  /** Shares holding something right now. */
  readonly sharesActive: number;
}

export interface FairShares {
  /** Admits a request into its share (`upload`: its body is streamed), or says whose limit refused. */
  admit(shareKey: string, upload: boolean): Admission | Refusal;
  stats(): FairSharesStats;
}

interface ShareUsage {
  readonly limits: ShareLimits;
  requests: number;
  bodyBytes: number;
  uploads: number;
}

export function assertFairShareLimits(limits: FairShareLimits): void {
  const values: Record<string, number> = {
    'partner.requestsInFlightMax': limits.partner.requestsInFlightMax,
    'partner.bodyBytesInFlightMax': limits.partner.bodyBytesInFlightMax,
    'partner.uploadsInFlightMax': limits.partner.uploadsInFlightMax,
    'anonymous.requestsInFlightMax': limits.anonymous.requestsInFlightMax,
    'anonymous.bodyBytesInFlightMax': limits.anonymous.bodyBytesInFlightMax,
    'anonymous.uploadsInFlightMax': limits.anonymous.uploadsInFlightMax,
    bodyBytesInFlightMax: limits.bodyBytesInFlightMax,
    uploadsInFlightMax: limits.uploadsInFlightMax,
  };
  for (const [name, value] of Object.entries(values)) {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
}

export function createFairShares(limits: FairShareLimits): FairShares {
  assertFairShareLimits(limits);
  return new ShareLedger(limits);
}

/** Every share's usage and the process totals (a class: one admission object per request, no closures). */
class ShareLedger implements FairShares {
  // Only shares that hold something are kept: at most one per request in flight.
  private readonly shares = new Map<string, ShareUsage>();
  bodyBytes = 0;
  uploads = 0;

  constructor(readonly limits: FairShareLimits) {}

  admit(shareKey: string, upload: boolean): Admission | Refusal {
    const usage = this.usageOf(shareKey);
    let refusal: Refusal | null = null;
    if (usage.requests >= usage.limits.requestsInFlightMax) refusal = { scope: 'share', resource: 'requests' };
    else if (upload && usage.uploads >= usage.limits.uploadsInFlightMax) refusal = { scope: 'share', resource: 'uploads' };
    else if (upload && this.uploads >= this.limits.uploadsInFlightMax) refusal = { scope: 'server', resource: 'uploads' };
    if (refusal !== null) {
      this.forgetIfIdle(shareKey, usage);
      return refusal;
    }
    usage.requests += 1;
    if (upload) {
      usage.uploads += 1;
      this.uploads += 1;
    }
    return new ShareAdmission(this, shareKey, usage, upload);
  }

  stats(): FairSharesStats {
    return { bodyBytesInFlight: this.bodyBytes, uploadsInFlight: this.uploads, sharesActive: this.shares.size };
  }

  forgetIfIdle(shareKey: string, usage: ShareUsage): void {
    if (usage.requests === 0 && usage.bodyBytes === 0 && usage.uploads === 0) this.shares.delete(shareKey);
  }

  private usageOf(shareKey: string): ShareUsage {
    let usage = this.shares.get(shareKey);
    if (usage === undefined) {
      const shareLimits = shareKey === anonymousShareKey ? this.limits.anonymous : this.limits.partner;
      usage = { limits: shareLimits, requests: 0, bodyBytes: 0, uploads: 0 };
      this.shares.set(shareKey, usage);
    }
    return usage;
  }
}

class ShareAdmission implements Admission {
  private reservedBytes = 0;
  private released = false;

  constructor(
    private readonly ledger: ShareLedger,
    private readonly shareKey: string,
    private readonly usage: ShareUsage,
    private readonly upload: boolean,
  ) {}

  reserveBodyBytes(bytes: number): Refusal | null {
    if (this.released) return null;
    const usage = this.usage;
    if (usage.bodyBytes + bytes > usage.limits.bodyBytesInFlightMax) return { scope: 'share', resource: 'body_bytes' };
    if (this.ledger.bodyBytes + bytes > this.ledger.limits.bodyBytesInFlightMax) return { scope: 'server', resource: 'body_bytes' };
    usage.bodyBytes += bytes;
    this.ledger.bodyBytes += bytes;
    this.reservedBytes += bytes;
    return null;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    const usage = this.usage;
    usage.requests -= 1;
    usage.bodyBytes -= this.reservedBytes;
    this.ledger.bodyBytes -= this.reservedBytes;
    if (this.upload) {
      usage.uploads -= 1;
      this.ledger.uploads -= 1;
    }
    this.ledger.forgetIfIdle(this.shareKey, usage);
  }
}

export function isRefusal(value: Admission | Refusal): value is Refusal {
  return 'scope' in value;
}
