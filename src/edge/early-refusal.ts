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

  async function snapshotsOf(keys: readonly string[]): Promise<Map<string, ActorSnapshot>> {
    const snapshots = new Map<string, ActorSnapshot>();
    for (const key of keys) {
      const snapshot = await store.load(actorId(counterActorType, key));
      if (snapshot !== null && snapshot.state !== null) snapshots.set(key, snapshot);
    }
    return snapshots;
  }

  return {
    async check(accept, transactionId, nowMs, quoteUse) {
      const stage = earlyRefusalStage(accept, limits(), nowMs, transactionId);
      if (stage === null) return null;
      // Each counter's snapshot is its head (totals and per-bucket counts: a few hundred bytes,
      // whatever the day holds), read fresh for every check. First on the totals alone: a grant
      // there is a grant whatever the entries hold, and that is every acceptance below the caps
      // (no bucket read). Only a refusal needs this transaction's bucket (it may be counted
      // already, and then it is granted again).
      const snapshots = await snapshotsOf(stage.counters);
      const totals = (key: string): CounterState => {
        const snapshot = snapshots.get(key);
        return snapshot === undefined ? emptyCounter() : decodeCounterTotals(snapshot.state);
      };
      if (stage.refusal(totals, quoteUse) === null) return null;
      const states = new Map<string, CounterState>();
      for (const key of stage.counters) {
        const snapshot = snapshots.get(key);
        if (snapshot !== undefined) states.set(key, await counterFor(key, snapshot, transactionId));
      }
      const answer = stage.refusal((key) => states.get(key) ?? emptyCounter(), quoteUse);
      return answer === null ? null : answerReply(answer);
    },
  };
}
