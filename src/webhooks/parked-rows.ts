// Parked rows of a dispatcher (docs/webhooks.md, "Fairness"): outbox rows it has claimed beyond a
// partner's (or a transaction's) held share. They stay claimed so the store's next claims — which
// always start from the oldest unclaimed row — move past one partner's backlog to the rows of the
// other partners behind it. Only the id, partner, commit position and claim expiry are kept (a
// held row keeps its whole payload). No I/O here: the dispatcher hands back what this answers.

export interface ParkedRow {
  readonly partnerId: string;
  readonly seq: number;
  readonly claimExpiresAtMs: number;
}

export class ParkedRows {
  private readonly rows = new Map<string, ParkedRow>();

  constructor(private readonly rowsMax: number) {}

  get size(): number {
    return this.rows.size;
  }

  /** Parks the row; false when parking is full (the caller hands the row back). */
  park(id: string, row: ParkedRow): boolean {
    if (this.rows.size >= this.rowsMax && !this.rows.has(id)) return false;
    this.rows.set(id, row);
    return true;
  }

  /** The row is ours again under a new claim (or gone): it is no longer parked. */
  forget(id: string): void {
    this.rows.delete(id);
  }

  /** Takes every row out (stop). */
  drain(): string[] {
    const ids = [...this.rows.keys()];
    this.rows.clear();
    return ids;
  }

  /**
   * Takes out the rows to hand back now: those whose claim runs out within `marginMs` (the store's
   * claim, not this map, then says who has them), and per partner as many of its oldest rows as
   * `roomOf(partner)` says it can hold again (handed back, they are the oldest unclaimed rows of
   * that partner, so the next claim takes them first).
   */
  takeReleasable(nowMs: number, marginMs: number, roomOf: (partnerId: string) => number): string[] {
    const release: string[] = [];
    const byPartner = new Map<string, Array<[string, ParkedRow]>>();
    for (const [id, row] of this.rows) {
      if (row.claimExpiresAtMs - nowMs < marginMs) {
        release.push(id);
        continue;
      }
      const list = byPartner.get(row.partnerId) ?? [];
      list.push([id, row]);
      byPartner.set(row.partnerId, list);
    }
    for (const [partnerId, list] of byPartner) {
      const room = roomOf(partnerId);
      if (room <= 0) continue;
      list.sort((a, b) => a[1].seq - b[1].seq);
      for (const [id] of list.slice(0, room)) release.push(id);
    }
    for (const id of release) this.rows.delete(id);
    return release;
  }
}
