// Early refusal of an acceptance at a spent method cap (docs/decisions-limits.md): the edge reads
// the decisive steps' counters (the method day, the KYB total) as last committed and, when the
// saga is certain to refuse, answers without asking the transaction actor. The decision is the
// saga's own code (`earlyRefusalStage` in src/domain/acceptance.ts); this module only reads the
// counters.
import { actorId } from '../actors/envelope.ts';
import { actorPartId, actorPartsCollection, partText } from '../actors/actor-parts.ts';
import {
  counterActorType,
  counterDecodeMemo,
  counterPartToRead,
  decodeCounterForTransaction,
  decodeCounterTotals,
  type CounterDecodeMemo,
} from '../actors/counter-actor.ts';
import { answerReply, type AcceptPayload, type AcceptReply } from '../actors/transaction-actor.ts';
import { earlyRefusalStage } from '../domain/acceptance.ts';
import { emptyCounter, type CounterState, type LimitsConfig } from '../domain/limits.ts';
import type { QuoteUse } from '../domain/quote-use.ts';
import type { ActorSnapshot, SnapshotStore } from '../store/store.ts';

/** Counters kept decoded: a few method × day keys, and the KYB counters of recent partners. */
const decodedCountersMax = 256;

/** How long the first pass reuses a counter's totals (see `totalsRead`); 50 ms: 20 reads a second of the hot counter. */
export const totalsReuseMs = 50;

export interface EarlyRefusals {
  /**
   * The saga's refusal, if one of its decisive steps (the quote, the KYB total, the method day)
   * would refuse on the committed counters and the quote's committed use (`quoteUse`, read with the
   * quote); else null.
   */
  check(accept: AcceptPayload, transactionId: string, nowMs: number, quoteUse: QuoteUse | null): Promise<AcceptReply | null>;
}

/** Sets `key` as the newest of `map`, forgetting the oldest beyond `decodedCountersMax` (insertion order is age). */
function setNewest<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= decodedCountersMax) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(key, value);
}

export function createEarlyRefusals(store: Pick<SnapshotStore, 'load' | 'get'>, limits: () => LimitsConfig): EarlyRefusals {
  // Per counter, the buckets parsed last (a bucket is parsed again only when its text changed).
  const memos = new Map<string, CounterDecodeMemo>();

  /**
   * The counter as the check of `transactionId` needs it: the snapshot's totals and that
   * transaction's bucket, whose part is read after the snapshot (so it is at least as new: a
   * reservation of this transaction committed before the snapshot was read is in it).
   */
  async function counterFor(key: string, snapshot: ActorSnapshot, transactionId: string): Promise<CounterState> {
    const memo = memos.get(key) ?? counterDecodeMemo();
    setNewest(memos, key, memo);
    const index = counterPartToRead(snapshot.state, transactionId);
    const partId = index === null ? null : actorPartId(actorId(counterActorType, key), index);
    // A part the snapshot names and the store does not hold is an inconsistency: `partText` throws
    // and the acceptance goes to the actors (an error here never refuses).
    const part = partId === null ? null : partText(await store.get(actorPartsCollection, partId), partId);
    return decodeCounterForTransaction(snapshot.state, transactionId, part, memo);
  }

  // The totals the first pass reads, per counter, reused for `totalsReuseMs`. Safe at any age: the
  // first pass never refuses on its own (a refusal there is checked again on a fresh read), and
  // what it lets through goes to the actors, which decide.
  const totalsRead = new Map<string, { readonly atMs: number; readonly totals: CounterState }>();

  async function freshSnapshots(keys: readonly string[]): Promise<Map<string, ActorSnapshot>> {
    const snapshots = new Map<string, ActorSnapshot>();
    for (const key of keys) {
      const snapshot = await store.load(actorId(counterActorType, key));
      if (snapshot !== null && snapshot.state !== null) snapshots.set(key, snapshot);
    }
    return snapshots;
  }

  function remember(key: string, nowMs: number, snapshot: ActorSnapshot | undefined): CounterState {
    const totals = snapshot === undefined ? emptyCounter() : decodeCounterTotals(snapshot.state);
    setNewest(totalsRead, key, { atMs: nowMs, totals });
    return totals;
  }

  return {
    async check(accept, transactionId, nowMs, quoteUse) {
      const stage = earlyRefusalStage(accept, limits(), nowMs, transactionId);
      if (stage === null) return null;
      // First on the totals alone: a grant there is a grant whatever the entries hold, and that is
      // every acceptance below the caps (nothing parsed). Only a refusal needs the entries (this
      // transaction may be counted already, and then it is granted again), read fresh.
      const stale = stage.counters.filter((key) => {
        const read = totalsRead.get(key);
        return read === undefined || nowMs - read.atMs >= totalsReuseMs || nowMs < read.atMs;
      });
      const read = await freshSnapshots(stale);
      for (const key of stale) remember(key, nowMs, read.get(key));
      const totals = (key: string): CounterState => totalsRead.get(key)?.totals ?? emptyCounter();
      if (stage.refusal(totals, quoteUse) === null) return null;
      const snapshots = stale.length === stage.counters.length ? read : await freshSnapshots(stage.counters);
      const states = new Map<string, CounterState>();
      for (const key of stage.counters) {
        const snapshot = snapshots.get(key);
        remember(key, nowMs, snapshot);
        if (snapshot !== undefined) states.set(key, await counterFor(key, snapshot, transactionId));
      }
      const answer = stage.refusal((key) => states.get(key) ?? emptyCounter(), quoteUse);
      return answer === null ? null : answerReply(answer);
    },
  };
}
