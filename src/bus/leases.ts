// The Leases port: named, time-limited ownership with fencing tokens (one owner per shard).
//
// - `acquire` succeeds when the lease is free, expired, or already held by the same owner, and
//   always issues a fresh fencing token: a strictly increasing integer per lease name that is never
//   reused, not even after expiry or release. A same-owner re-acquire (a restarted worker with a
//   stable id) therefore fences off its own previous incarnation.
// - `renew` and `release` only act when both owner and token match the current holder: once a lease
//   expired and was taken over, the old holder's renew fails and it must stop working on the shard.
// - Writes made on behalf of a lease should carry its token, so the store can refuse a write from
//   an owner whose token is lower than one it has already seen (fencing).
// - `changes` moves on every acquire and release, so waiting owners can react without polling
//   every lease.
// - A lease store that cannot be reached fails a call with BusError `unavailable` (bus.ts).
// Redis adapter: redis-leases.ts (expiry by the Redis server's clock); in-process: memory-leases.ts.

export interface LeaseGrant {
  readonly name: string;
  readonly owner: string;
  readonly token: number;
  readonly ttlMs: number;
}

export interface LeaseHolder {
  readonly name: string;
  readonly owner: string;
  readonly token: number;
  /** Time left before the lease lapses, as seen by the lease store when asked. */
  readonly remainingMs: number;
}

export interface Leases {
  acquire(name: string, owner: string, ttlMs: number): Promise<LeaseGrant | null>;
  /** Extends the lease to `ttlMs` from now; false if it lapsed, was released or was taken over. */
  renew(name: string, owner: string, token: number, ttlMs: number): Promise<boolean>;
  /** Ends the lease at once so another owner can take it; false if this owner no longer held it. */
  release(name: string, owner: string, token: number): Promise<boolean>;
  /** The current holder, or null when the lease is free. */
  owner(name: string): Promise<LeaseHolder | null>;
  /** Current holders of leases whose names start with `prefix`, sorted by name (at most `leasesListMax`). */
  listAll(prefix: string): Promise<LeaseHolder[]>;
  /**
   * A number that moves whenever a lease is acquired or released (not on renew, not on expiry):
   * one cheap read lets shard workers notice a join, a graceful leave or a shard given back at
   * once, instead of at their next lease round (docs/operations.md, "Hand-over").
   */
  changes(): Promise<number>;
  close(): Promise<void>;
}

export const leasesListMax = 10_000;
export const leaseTtlMsMax = 24 * 60 * 60 * 1000;

/** Names are free text without braces (the Redis adapter uses the name as a Cluster hash tag). */
export function assertLeaseName(name: string): void {
  if (name === '' || /[{}]/.test(name)) throw new RangeError(`invalid lease name: ${JSON.stringify(name)}`);
}

export function assertLeaseOwner(owner: string): void {
  if (owner === '') throw new RangeError('lease owner must not be empty');
}

export function assertLeaseTtl(ttlMs: number): void {
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0 || ttlMs > leaseTtlMsMax) {
    throw new RangeError(`lease ttlMs must be an integer in 1..${leaseTtlMsMax}, got ${ttlMs}`);
  }
}

export function assertLeaseToken(token: number): void {
  if (!Number.isSafeInteger(token) || token <= 0) throw new RangeError(`invalid lease token: ${token}`);
}
