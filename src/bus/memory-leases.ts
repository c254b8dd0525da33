// In-process Leases for the embedded single-process mode and tests: same rules as the Redis
// adapter (see leases.ts), with expiry on an injectable clock.
import { systemClock, type Clock } from './bus.ts';
import {
  assertLeaseName,
  assertLeaseOwner,
  assertLeaseToken,
  assertLeaseTtl,
  leasesListMax,
  type LeaseGrant,
  type LeaseHolder,
  type Leases,
} from './leases.ts';

interface Held {
  readonly owner: string;
  readonly token: number;
  expiresAtMs: number;
}

export interface MemoryLeasesOptions {
  readonly clock?: Clock;
}

export class MemoryLeases implements Leases {
  private readonly clock: Clock;
  private readonly held = new Map<string, Held>();
  /** Last token issued per name; kept after expiry and release so tokens are never reused. */
  private readonly lastTokens = new Map<string, number>();
  private changeCount = 0;

  constructor(options: MemoryLeasesOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  acquire(name: string, owner: string, ttlMs: number): Promise<LeaseGrant | null> {
    return settle(() => {
      assertLeaseName(name);
      assertLeaseOwner(owner);
      assertLeaseTtl(ttlMs);
      const current = this.current(name);
      if (current !== null && current.owner !== owner) return null;
      const token = (this.lastTokens.get(name) ?? 0) + 1;
      this.lastTokens.set(name, token);
      this.held.set(name, { owner, token, expiresAtMs: this.clock.nowMs() + ttlMs });
      this.changeCount += 1;
      return { name, owner, token, ttlMs };
    });
  }

  renew(name: string, owner: string, token: number, ttlMs: number): Promise<boolean> {
    return settle(() => {
      assertLeaseTtl(ttlMs);
      const current = this.matching(name, owner, token);
      if (current === null) return false;
      current.expiresAtMs = this.clock.nowMs() + ttlMs;
      return true;
    });
  }

  release(name: string, owner: string, token: number): Promise<boolean> {
    return settle(() => {
      if (this.matching(name, owner, token) === null) return false;
      this.held.delete(name);
      this.changeCount += 1;
      return true;
    });
  }

  owner(name: string): Promise<LeaseHolder | null> {
    return settle(() => {
      assertLeaseName(name);
      return this.holder(name);
    });
  }

  listAll(prefix: string): Promise<LeaseHolder[]> {
    return settle(() => {
      const names = [...this.held.keys()].filter((name) => name.startsWith(prefix)).sort();
      const holders: LeaseHolder[] = [];
      for (const name of names) {
        if (holders.length >= leasesListMax) break;
        const holder = this.holder(name);
        if (holder !== null) holders.push(holder);
      }
      return holders;
    });
  }

  changes(): Promise<number> {
    return Promise.resolve(this.changeCount);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private holder(name: string): LeaseHolder | null {
    const current = this.current(name);
    if (current === null) return null;
    return { name, owner: current.owner, token: current.token, remainingMs: current.expiresAtMs - this.clock.nowMs() };
  }

  /** The live lease under `name`; a lapsed one is dropped here (as Redis expires the key). */
  private current(name: string): Held | null {
    const current = this.held.get(name);
    if (current === undefined) return null;
    if (this.clock.nowMs() >= current.expiresAtMs) {
      this.held.delete(name);
      return null;
    }
    return current;
  }

  private matching(name: string, owner: string, token: number): Held | null {
    assertLeaseName(name);
    assertLeaseOwner(owner);
    assertLeaseToken(token);
    const current = this.current(name);
    return current !== null && current.owner === owner && current.token === token ? current : null;
  }
}

function settle<T>(operation: () => T): Promise<T> {
  try {
    return Promise.resolve(operation());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
