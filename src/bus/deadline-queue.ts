// Timeouts without a timer per request. Every item of one queue gets the same duration, so
// deadlines expire in insertion order: a FIFO list is the queue, and one Node timer, armed for the
// oldest item's deadline, serves all of them. The list is intrusive (each item carries its own
// links, `DeadlineLink`), so adding and removing an item is O(1) and allocates nothing; the timer
// wakes at most once per expiry, or once per `durationMs` while items keep finishing in time (to
// re-arm for the new oldest item).
//
// Why not setTimeout per request: at thousands of requests per second the edge armed three timers
// per request (body read, handler, actor reply) and cleared them all a few milliseconds later.

/** Monotonic milliseconds (fractions allowed). */
export type MonotonicClock = () => number;

const monotonicNow: MonotonicClock = () => performance.now();

/** What an item needs to wait in a DeadlineQueue (extend it). Only the queue touches these fields. */
export class DeadlineLink {
  deadlineAtMs = 0;
  olderLink: DeadlineLink | null = null;
  newerLink: DeadlineLink | null = null;
  /** The queue the item waits in, if any (an item waits in one queue at a time). */
  waitingIn: object | null = null;
}

export class DeadlineQueue<Item extends DeadlineLink> {
  private oldest: DeadlineLink | null = null;
  private newest: DeadlineLink | null = null;
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  /** True while expired items are being handed out (re-arming waits until the end). */
  private firing = false;

  constructor(
    readonly durationMs: number,
    private readonly onExpired: (item: Item) => void,
    private readonly nowMs: MonotonicClock = monotonicNow,
  ) {
    if (!Number.isFinite(durationMs) || durationMs < 0) throw new RangeError(`durationMs must be a non-negative number, got ${durationMs}`);
  }

  get size(): number {
    return this.count;
  }

  /** Starts the item's countdown (again, from now, if it was already waiting here). */
  add(item: Item): void {
    if (item.waitingIn === this) this.unlink(item);
    else if (item.waitingIn !== null) throw new Error('the item already waits in another deadline queue');
    item.deadlineAtMs = this.nowMs() + this.durationMs;
    item.waitingIn = this;
    item.olderLink = this.newest;
    item.newerLink = null;
    if (this.newest === null) this.oldest = item;
    else this.newest.newerLink = item;
    this.newest = item;
    this.count += 1;
    // Same duration for all, so a timer already armed is armed for an earlier deadline.
    if (this.timer === null && !this.firing) this.arm(item.deadlineAtMs);
  }

  /** Stops the item's countdown; false when it was not waiting here (finished or already expired). */
  delete(item: Item): boolean {
    if (item.waitingIn !== this) return false;
    // The armed timer stays while items wait: when it fires it finds the new oldest item and
    // re-arms. Once none waits it is disarmed, so an idle queue never holds the process open.
    this.unlink(item);
    if (this.count === 0 && this.timer !== null && !this.firing) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    return true;
  }

  /** Forgets every item without expiring any, and disarms the timer. */
  clear(): void {
    while (this.oldest !== null) this.unlink(this.oldest);
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private unlink(item: DeadlineLink): void {
    const { olderLink, newerLink } = item;
    if (olderLink === null) this.oldest = newerLink;
    else olderLink.newerLink = newerLink;
    if (newerLink === null) this.newest = olderLink;
    else newerLink.olderLink = olderLink;
    item.olderLink = null;
    item.newerLink = null;
    item.waitingIn = null;
    this.count -= 1;
  }

  private arm(deadlineMs: number): void {
    // At least 1 ms: Node's timers run on the loop's millisecond clock, which may lag ours.
    this.timer = setTimeout(() => this.fire(), Math.max(1, Math.ceil(deadlineMs - this.nowMs())));
  }

  private fire(): void {
    this.timer = null;
    this.firing = true;
    try {
      const nowMs = this.nowMs();
      // Items added by onExpired go to the newest end with a later deadline: the loop stops there.
      while (this.oldest !== null && this.oldest.deadlineAtMs <= nowMs) {
        const item = this.oldest;
        this.unlink(item);
        this.onExpired(item as Item);
      }
    } finally {
      this.firing = false;
      if (this.oldest !== null && this.timer === null) this.arm(this.oldest.deadlineAtMs);
    }
  }
}
