// The actors a runtime holds in memory, with the estimated bytes they take (src/actors/actor-memory.ts),
// and the choice of which to passivate when the count or the bytes pass their cap.
import type { ActiveActor } from './actor-step.ts';

export interface ResidentCaps {
  readonly actorsMax: number;
  readonly bytesMax: number;
}

/** Passivation brings the count and the bytes down to this share of their caps, so it runs seldom. */
const passivateDownTo = 0.9;

export class ResidentActors {
  private readonly actors = new Map<string, ActiveActor>();
  private totalBytes = 0;

  get size(): number {
    return this.actors.size;
  }

  /** Estimated bytes of every actor held. */
  get bytes(): number {
    return this.totalBytes;
  }

  get(id: string): ActiveActor | undefined {
    return this.actors.get(id);
  }

  ids(): IterableIterator<string> {
    return this.actors.keys();
  }

  values(): IterableIterator<ActiveActor> {
    return this.actors.values();
  }

  set(actor: ActiveActor): void {
    this.delete(actor.id);
    this.actors.set(actor.id, actor);
    this.totalBytes += actor.approxBytes;
  }

  delete(id: string): void {
    const actor = this.actors.get(id);
    if (actor === undefined) return;
    this.actors.delete(id);
    this.totalBytes -= actor.approxBytes;
  }

  /** The actor's size changed (a write): the total follows. */
  resize(actor: ActiveActor, approxBytes: number): void {
    if (this.actors.get(actor.id) === actor) this.totalBytes += approxBytes - actor.approxBytes;
    actor.approxBytes = approxBytes;
  }

  overfull(caps: ResidentCaps): boolean {
    return this.actors.size > caps.actorsMax || this.totalBytes > caps.bytesMax;
  }

  /**
   * Least recently used first, actors for which `busy` is true skipped (dropping one with work in
   * flight would only cost a reload once it settles), until both the count and the bytes are at
   * 90 % of their caps or nothing else can go. Answers how many left memory.
   */
  passivateLeastRecent(caps: ResidentCaps, busy: (id: string) => boolean): number {
    if (!this.overfull(caps)) return 0;
    const actorsTarget = Math.floor(caps.actorsMax * passivateDownTo);
    const bytesTarget = Math.floor(caps.bytesMax * passivateDownTo);
    const byAge = [...this.actors.values()].filter((actor) => !busy(actor.id)).sort((a, b) => a.lastUsedMs - b.lastUsedMs);
    let dropped = 0;
    for (const actor of byAge) {
      if (this.actors.size <= actorsTarget && this.totalBytes <= bytesTarget) break;
      this.delete(actor.id);
      dropped += 1;
    }
    return dropped;
  }

  /** Actors last used before `cutoffMs` leave memory (those for which `busy` is true stay). */
  passivateIdle(cutoffMs: number, busy: (id: string) => boolean): number {
    let dropped = 0;
    for (const actor of [...this.actors.values()]) {
      if (actor.lastUsedMs < cutoffMs && !busy(actor.id)) {
        this.delete(actor.id);
        dropped += 1;
      }
    }
    return dropped;
  }
}
