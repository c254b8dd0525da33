// A small bounded pool: at most `inFlightMax` tasks run at once, at most `queuedMax` wait for a
// place (in arrival order), and any more are refused at once. The destination tests use their own
// (destinations.ts), so an administrator's test never waits behind live deliveries and never takes
// one of their slots, and a burst of tests cannot open unbounded connections.

export interface SlotPoolLimits {
  readonly inFlightMax: number;
  readonly queuedMax: number;
}

export type PoolResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: 'busy' };

export class SlotPool {
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(private readonly limits: SlotPoolLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isSafeInteger(value) || value < (name === 'queuedMax' ? 0 : 1)) throw new RangeError(`pool ${name} out of range: ${String(value)}`);
    }
  }

  inFlight(): number {
    return this.running;
  }

  /** Runs `task` when a place is free; `busy` when the pool and its queue are full. */
  async run<T>(task: () => Promise<T>): Promise<PoolResult<T>> {
    if (this.running >= this.limits.inFlightMax) {
      if (this.queue.length >= this.limits.queuedMax) return { ok: false, reason: 'busy' };
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return { ok: true, value: await task() };
    } finally {
      // Hand the place straight to the next in line (the running count stays), or give it up.
      const next = this.queue.shift();
      if (next === undefined) this.running -= 1;
      else next();
    }
  }
}
