// The webhook dispatcher: turns `webhooks` outbox rows into HTTP deliveries (docs/webhooks.md).
//
// One round (every `pollIntervalMs`, or sooner when woken):
//   1. record  — read new outbox rows in commit order and give each event its per-partner sequence
//                in the event log (event-log.ts), BEFORE any delivery;
//   2. claim   — claim up to `claimPagesPerRoundMax` pages of `claimBatchMax` rows (store claims:
//                while a claim is live no other dispatcher gets the row; if this process dies the
//                claim expires and another dispatcher takes the row: at-least-once). A partner
//                holds at most `heldPerPartnerMax` rows; its rows beyond that are parked (below);
//   3. heads   — read the pending rows (claimed by anyone) in commit order up to the last row we
//                hold, to learn each partition's oldest unfinished row;
//   4. start   — an attempt starts only for a row that is the oldest unfinished row of its partition
//                (so event N+1 of a transaction never starts before N is delivered or given up),
//                whose next attempt is due, whose event is recorded, and whose claim still covers a
//                whole attempt (claim left ≥ attemptTimeoutMs + claimMarginMs, more for a sandbox
//                partner's faulted attempt: `claimNeededMs`); and only as far as
//                its partner's lane lets it (partner-lanes.ts: at most `inFlightPerPartnerMax` in
//                flight, nothing while the partner's breaker is open, one probe when half-open).
//                The free slots of `inFlightMax` go out fairly across partners (fair-share.ts).
// Waiting rows (backoff, behind an earlier event of their partition, or behind their partner's
// open breaker) stay claimed but idle: they cost no slot of `inFlightMax`, so others go on, and an
// event spends an attempt only when it is actually sent. A row whose claim no longer covers an
// attempt is released and re-claimed later with a fresh claim; the due time lives in the store.
// After a delivered or given-up attempt the delivery record is written, then the row is marked done.
//
// Parked rows (parked-rows.ts): claimed rows beyond a partner's (or a partition's) held share are
// kept claimed but not held (only their id, partner and claim expiry), so the next claims move past
// one partner's backlog to the other partners' rows instead of claiming the same rows again. They
// are released as soon as their partner has room again (the next claim takes them first: they are
// the oldest), or when their claim runs out, and on stop.
//
// Every bound of a dispatcher, with its default and its check, is in dispatcher-limits.ts.
import type { OutboxRow, SnapshotStore } from '../store/store.ts';
import { recordPartnerRows, type RowToRecord } from './event-log.ts';
import { classify, nextStep, type AttemptResult, type DeliveryPolicy } from './policy.ts';
import { breakerSignal, type BreakerPolicy, type BreakerSignal } from './breaker.ts';
import { shareSlots, type PartnerDemand } from './fair-share.ts';
import { PartnerLanes, type StartedAttempt } from './partner-lanes.ts';
import { ParkedRows } from './parked-rows.ts';
import {
  attemptLogMax,
  deliveriesCollection,
  deliveryBody,
  deliveryFromDoc,
  deliveryToDoc,
  eventFromDoc,
  eventsCollection,
  parseRowPayload,
  webhooksTopic,
  type AttemptLogEntry,
  type DeliveryRecord,
  type WebhookRowPayload,
} from './records.ts';
import type { ResolvedDestination } from './destinations.ts';
import { deliveryHeaders, eventIdOf } from './signing.ts';
import { sendWebhook, type SendOutcome, type SendRequest, type TransportLimits } from './transport.ts';
import type { UrlPolicyMode } from './url-policy.ts';
import { checkDispatcherLimits, type DispatcherLimits } from './dispatcher-limits.ts';
import type { Deliver, SandboxWebhookFaults } from './sandbox-faults.ts';
import { settlesWithin } from '../lifecycle/shutdown.ts';
import { LoopHealth, loopCheck, type HealthCheck } from '../lifecycle/health.ts';
import { countersBy, gauge, type MetricFamily } from '../lifecycle/metrics.ts';

export interface DispatcherLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export interface DispatcherDeps {
  readonly store: SnapshotStore;
  readonly clock: { nowMs(): number };
  readonly log: DispatcherLogger;
  readonly owner: string;
  readonly mode: UrlPolicyMode;
  readonly policy: DeliveryPolicy;
  readonly transport: TransportLimits;
  readonly limits: DispatcherLimits;
  readonly breaker: BreakerPolicy;
  /** A draw in [0, 1) for the backoff jitter. */
  readonly random: () => number;
  readonly resolveDestination: (partnerId: string) => Promise<ResolvedDestination>;
  /** The HTTP attempt; replaceable only to observe it (tests use a real receiver). */
  readonly send?: (request: SendRequest, mode: UrlPolicyMode, limits: TransportLimits) => Promise<SendOutcome>;
  /** Sandbox mode only: the partners' rehearsal faults, applied to every attempt (sandbox-faults.ts). */
  readonly faults?: SandboxWebhookFaults;
}

interface Held {
  readonly row: OutboxRow;
  readonly payload: WebhookRowPayload;
  readonly eventId: string;
  readonly partition: string;
  readonly partnerId: string;
  readonly claimExpiresAtMs: number;
  /** Loaded lazily; null until the event is recorded. */
  delivery: DeliveryRecord | null;
  running: boolean;
}

const idsPerCallMax = 1_000;

export class WebhookDispatcher {
  private readonly held = new Map<string, Held>();
  private readonly parked: ParkedRows;
  private readonly attempts = new Set<Promise<void>>();
  private readonly lanes: PartnerLanes;
  private recordCursor = 0;
  private roundRunning: Promise<void> | null = null;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** The polling loop's rounds (the health listener's check). */
  private readonly rounds: LoopHealth;
  /** Attempts by outcome, and deliveries that ended (delivered, or given up), since start. */
  private readonly counts = { delivered: 0, retryable: 0, rejected: 0, finishedDelivered: 0, finishedFailed: 0 };
  /** Signs and sends one attempt (signed when it goes, so a delayed one is still fresh). */
  private readonly sendSigned: Deliver;
  /** `sendSigned`, or with the sandbox faults applied. */
  private readonly deliver: Deliver;

  constructor(private readonly deps: DispatcherDeps) {
    const { limits, transport } = deps;
    checkDispatcherLimits(limits, transport.attemptTimeoutMs);
    this.rounds = new LoopHealth(limits.pollIntervalMs);
    this.lanes = new PartnerLanes(deps.breaker, limits.inFlightPerPartnerMax);
    this.parked = new ParkedRows(limits.parkedRowsMax);
    this.sendSigned = async (delivery) => {
      const { secret, eventId, sequence, attempt, body } = delivery;
      const headers = deliveryHeaders({ secret, eventId, sequence, attempt, nowMs: deps.clock.nowMs(), body });
      return (deps.send ?? sendWebhook)({ url: delivery.url, headers, body }, deps.mode, deps.transport);
    };
    this.deliver = deps.faults === undefined ? this.sendSigned : deps.faults.wrap(this.sendSigned);
  }

  /** The health listener's /metrics: attempts by outcome, finished deliveries, rows held and parked, per-partner lanes. */
  metrics(): MetricFamily[] {
    const { counts } = this;
    return [
      countersBy(
        'webhook_attempts_total',
        'Webhook delivery attempts by this process since it started, by outcome (retryable: tried again later; rejected: the receiver refused it).',
        'outcome',
        { delivered: counts.delivered, retryable: counts.retryable, rejected: counts.rejected },
      ),
      countersBy(
        'webhook_deliveries_finished_total',
        'Webhook deliveries this process finished, by result (failed: given up after the retry policy).',
        'result',
        { delivered: counts.finishedDelivered, failed: counts.finishedFailed },
      ),
      gauge('webhook_rows_held', 'Outbox rows of webhook events this dispatcher holds (claimed, waiting or in flight).', this.held.size),
      gauge('webhook_rows_parked', "Outbox rows this dispatcher keeps claimed beyond a partner's held share, so its claims reach other partners' rows.", this.parked.size),
      ...this.lanes.metrics(this.deps.clock.nowMs()),
    ];
  }

  /** The health listener's check: polling rounds, with the deliveries held. */
  health(): HealthCheck {
    return loopCheck('webhook-rounds', this.rounds, () => ({ rowsHeld: this.held.size, rowsParked: this.parked.size }));
  }

  /** Starts the polling loop. */
  start(): void {
    if (this.loop !== null) return;
    this.stopped = false;
    this.loop = this.runLoop();
  }

  /** A hint that new rows may be waiting (e.g. right after a commit in the same process). */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /**
   * Stops polling, lets attempts in flight finish for at most `waitMs` (each is bounded by its own
   * timeout anyway), then hands back every held row so another dispatcher takes it at once. A row
   * whose attempt was still running then is delivered again by the next holder: at-least-once, as
   * the contract says (the receiver deduplicates by event id).
   */
  async stop(waitMs: number = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    this.wake();
    const finished = await settlesWithin(this.quiesce(), waitMs);
    if (!finished) {
      this.deps.log.warn({ inFlight: this.attempts.size, waitMs }, 'webhook dispatcher stopping with attempts in flight; their rows are handed back');
    }
    this.loop = null;
    const ids = [...this.held.keys(), ...this.parked.drain()];
    this.held.clear();
    for (let index = 0; index < ids.length; index += idsPerCallMax) {
      await this.deps.store.outboxRelease(ids.slice(index, index + idsPerCallMax), this.deps.owner);
    }
  }

  /** Resolves once the loop, its current round and every attempt in flight have ended. */
  private async quiesce(): Promise<void> {
    await this.loop;
    await this.roundRunning;
    await this.idle();
    await this.deps.faults?.idle();
  }

  /** Resolves when no attempt is in flight. */
  async idle(): Promise<void> {
    while (this.attempts.size > 0) await Promise.all([...this.attempts]);
  }

  heldCount(): number {
    return this.held.size;
  }

  inFlightCount(): number {
    return this.attempts.size;
  }

  /** One round (exposed so tests can drive the dispatcher step by step with a fake clock). */
  async runRound(): Promise<void> {
    if (this.roundRunning !== null) return this.roundRunning;
    this.roundRunning = this.round().finally(() => {
      this.roundRunning = null;
    });
    return this.roundRunning;
  }

  private async runLoop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.runRound();
        this.rounds.succeeded();
      } catch (error) {
        this.rounds.failed();
        this.deps.log.error({ error: String(error) }, 'webhook dispatcher round failed');
      }
      if (this.stopped) break;
      await this.sleep(this.deps.limits.pollIntervalMs);
    }
  }

  private async sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
    this.wakeUp = null;
    this.woken = false;
  }

  private async round(): Promise<void> {
    await this.record();
    if (this.stopped) return;
    await this.releaseParked();
    await this.claim();
    await this.releaseShortClaims();
    await this.startDue();
    // Sandbox only: held deliveries go out in the background (a slow receiver holds up no round).
    this.deps.faults?.flushHeld((partnerId) => this.deps.resolveDestination(partnerId), this.sendSigned);
    this.lanes.prune(new Set([...this.held.values()].map((held) => held.partnerId)), this.deps.clock.nowMs());
  }

  // ---- 1. record ----

  private async record(): Promise<void> {
    const { limits } = this.deps;
    for (let page = 0; page < limits.recordPagesPerRoundMax; page += 1) {
      const rows = await this.deps.store.outboxPending(webhooksTopic, limits.recordPageRowsMax, this.recordCursor);
      const last = rows[rows.length - 1];
      if (last === undefined) return;
      const byPartner = new Map<string, RowToRecord[]>();
      for (const row of rows) {
        const payload = parseRowPayload(row.payload);
        if (payload === null || payload.kind !== 'event') continue; // malformed rows are dropped at claim
        const list = byPartner.get(payload.partnerId) ?? [];
        list.push({ row, webhook: payload });
        byPartner.set(payload.partnerId, list);
      }
      const nowMs = this.deps.clock.nowMs();
      for (const [partnerId, list] of byPartner) await recordPartnerRows(this.deps.store, partnerId, list, nowMs);
      this.recordCursor = last.seq;
      if (rows.length < limits.recordPageRowsMax) return;
    }
  }

  // ---- 2. claim ----

  private async claim(): Promise<void> {
    const { limits, store, owner } = this.deps;
    const perPartition = new Map<string, number>();
    const perPartner = new Map<string, number>();
    for (const held of this.held.values()) {
      bump(perPartition, held.partition);
      bump(perPartner, held.partnerId);
    }
    for (let page = 0; page < limits.claimPagesPerRoundMax; page += 1) {
      // Claim only while something can be held; rows beyond a partner's share are parked on the way.
      if (this.held.size >= limits.heldRowsMax) return;
      const room = Math.min(limits.claimBatchMax, limits.heldRowsMax - this.held.size + limits.parkedRowsMax - this.parked.size);
      if (room <= 0) return;
      const nowMs = this.deps.clock.nowMs();
      const rows = await store.outboxClaim(webhooksTopic, owner, room, limits.leaseMs, nowMs);
      if (this.stopped) {
        // stop() ran while we were claiming and may already have handed back what it held.
        if (rows.length > 0) await store.outboxRelease(rows.map((row) => row.id), owner);
        return;
      }
      const overflow = await this.takeClaimed(rows, perPartition, perPartner);
      // Parking is full: another page would only claim and hand back the same rows again.
      if (rows.length < room || overflow > 0) return;
    }
  }

  /** Holds, parks or hands back freshly claimed rows (see the header); answers how many were handed back. */
  private async takeClaimed(rows: readonly OutboxRow[], perPartition: Map<string, number>, perPartner: Map<string, number>): Promise<number> {
    const { limits, store, owner } = this.deps;
    const malformed: string[] = [];
    const overflow: string[] = [];
    for (const row of rows) {
      this.parked.forget(row.id); // our own parked row whose claim lapsed and that we claimed again
      const payload = parseRowPayload(row.payload);
      if (payload === null) {
        malformed.push(row.id);
        continue;
      }
      const eventId = payload.kind === 'redelivery' ? payload.eventId : eventIdOf(row.id);
      const partition = row.partitionKey ?? eventId;
      const partnerId = payload.partnerId;
      const fits =
        this.held.size < limits.heldRowsMax && (perPartition.get(partition) ?? 0) < limits.heldPerPartitionMax && (perPartner.get(partnerId) ?? 0) < limits.heldPerPartnerMax;
      if (fits) {
        bump(perPartition, partition);
        bump(perPartner, partnerId);
        this.held.set(row.id, { row, payload, eventId, partition, partnerId, claimExpiresAtMs: row.claimExpiresAtMs, delivery: null, running: false });
      } else if (!this.parked.park(row.id, { partnerId, seq: row.seq, claimExpiresAtMs: row.claimExpiresAtMs })) {
        overflow.push(row.id);
      }
    }
    if (malformed.length > 0) {
      // A row we cannot read would block its partition forever; it is a bug upstream, so say so loudly.
      this.deps.log.error({ count: malformed.length, rowIds: malformed.slice(0, 10) }, 'dropping malformed webhook outbox rows');
      await store.outboxMarkDone(malformed);
    }
    if (overflow.length > 0) await store.outboxRelease(overflow, owner);
    return overflow.length;
  }

  /** Hands back the parked rows whose partner has room again, or whose claim runs out (parked-rows.ts). */
  private async releaseParked(): Promise<void> {
    if (this.parked.size === 0) return;
    const { limits } = this.deps;
    const perPartner = new Map<string, number>();
    for (const held of this.held.values()) bump(perPartner, held.partnerId);
    const release = this.parked.takeReleasable(this.deps.clock.nowMs(), limits.claimMarginMs, (partnerId) => limits.heldPerPartnerMax - (perPartner.get(partnerId) ?? 0));
    for (let index = 0; index < release.length; index += idsPerCallMax) {
      await this.deps.store.outboxRelease(release.slice(index, index + idsPerCallMax), this.deps.owner);
    }
  }

  private async releaseShortClaims(): Promise<void> {
    const nowMs = this.deps.clock.nowMs();
    const needed = new Map<string, number>();
    const release: string[] = [];
    for (const [id, held] of this.held) {
      if (held.running) continue;
      if (!needed.has(held.partnerId)) needed.set(held.partnerId, await this.claimNeededMs(held.partnerId));
      if (held.claimExpiresAtMs - nowMs < (needed.get(held.partnerId) ?? 0)) release.push(id);
    }
    for (const id of release) this.held.delete(id);
    for (let index = 0; index < release.length; index += idsPerCallMax) {
      await this.deps.store.outboxRelease(release.slice(index, index + idsPerCallMax), this.deps.owner);
    }
  }

  // ---- 3. heads ----

  /** partition → seq of its oldest unfinished row, for rows up to the last one we hold. */
  private async partitionHeads(): Promise<Map<string, number>> {
    const heads = new Map<string, number>();
    let maxSeq = 0;
    for (const held of this.held.values()) if (!held.running) maxSeq = Math.max(maxSeq, held.row.seq);
    if (maxSeq === 0) return heads;
    const pageSize = 1_000;
    let after = 0;
    for (let scanned = 0; scanned < this.deps.limits.headScanRowsMax; ) {
      const rows = await this.deps.store.outboxPending(webhooksTopic, pageSize, after);
      for (const row of rows) {
        const payload = parseRowPayload(row.payload);
        const partition = row.partitionKey ?? (payload?.kind === 'redelivery' ? payload.eventId : eventIdOf(row.id));
        if (!heads.has(partition)) heads.set(partition, row.seq);
      }
      scanned += rows.length;
      const last = rows[rows.length - 1];
      if (last === undefined || rows.length < pageSize || last.seq >= maxSeq) break;
      after = last.seq;
    }
    return heads;
  }

  // ---- 4. start ----

  private async startDue(): Promise<void> {
    const { limits } = this.deps;
    const free = limits.inFlightMax - this.attempts.size;
    if (free <= 0) return;
    // Skip the head scan when every held row is known to be waiting: for a later retry, or for its
    // partner's open breaker.
    const nowMs = this.deps.clock.nowMs();
    await this.recheckWaitingDestinations(nowMs);
    const anyDue = [...this.held.values()].some(
      (held) => !held.running && (held.delivery === null || held.delivery.nextAttemptAtMs <= nowMs) && !this.lanes.waiting(held.partnerId, nowMs),
    );
    if (!anyDue) return;
    const heads = await this.partitionHeads();
    const byPartner = new Map<string, Held[]>();
    for (const held of this.held.values()) {
      if (held.running || heads.get(held.partition) !== held.row.seq) continue;
      const list = byPartner.get(held.partnerId) ?? [];
      list.push(held);
      byPartner.set(held.partnerId, list);
    }
    // Per partner, its oldest events that can go now, as many as its lane admits; then the free
    // slots are shared out across partners.
    const ready = new Map<string, Held[]>();
    const demands: PartnerDemand[] = [];
    for (const [partnerId, candidates] of byPartner) {
      if (this.stopped) return;
      const room = Math.min(this.lanes.room(partnerId, nowMs), free);
      if (room <= 0) continue;
      candidates.sort((a, b) => a.row.seq - b.row.seq);
      const picked: Held[] = [];
      for (const held of candidates) {
        if (picked.length >= room) break;
        if (await this.readyToStart(held)) picked.push(held);
      }
      if (picked.length === 0) continue;
      ready.set(partnerId, picked);
      demands.push({ partnerId, inFlight: this.lanes.inFlight(partnerId), ready: picked.length, lastServed: this.lanes.lastServed(partnerId) });
    }
    for (const partnerId of shareSlots(demands, free)) {
      if (this.stopped || this.attempts.size >= limits.inFlightMax) return;
      const held = ready.get(partnerId)?.shift();
      if (held === undefined || held.running || !this.held.has(held.row.id)) continue;
      // The lane is asked again: an attempt that ended meanwhile may have opened the breaker.
      const started = this.lanes.start(partnerId, this.deps.clock.nowMs());
      if (started === null) continue;
      this.launch(held, started);
    }
  }

  /**
   * Reads again the destination of every partner whose breaker keeps its held rows waiting: a URL
   * an administrator changed is a new destination, with a closed breaker, so a fix takes effect
   * at once instead of after the opening. One read per such partner and round.
   */
  private async recheckWaitingDestinations(nowMs: number): Promise<void> {
    const waiting = new Set<string>();
    for (const held of this.held.values()) if (this.lanes.waiting(held.partnerId, nowMs)) waiting.add(held.partnerId);
    for (const partnerId of waiting) {
      const destination = await this.deps.resolveDestination(partnerId);
      this.lanes.destination(partnerId, destination.ok ? destination.url : null);
    }
  }

  private launch(held: Held, started: StartedAttempt): void {
    held.running = true;
    // What the attempt's result says about the endpoint; neutral if it never got to send.
    const signal: { value: BreakerSignal } = { value: 'neutral' };
    const attempt = this.attempt(held, signal)
      .catch((error: unknown) => {
        held.delivery = null; // reload from the store next time
        this.deps.log.error({ error: String(error), eventId: held.eventId }, 'webhook attempt failed to record');
      })
      .finally(() => {
        this.lanes.ended(started, signal.value, this.deps.clock.nowMs());
        held.running = false;
        this.attempts.delete(attempt);
        this.wake();
      });
    this.attempts.add(attempt);
  }

  /** Loads the delivery record and decides whether `held` may start an attempt now. */
  private async readyToStart(held: Held): Promise<boolean> {
    const { store } = this.deps;
    if (held.delivery === null) {
      held.delivery = deliveryFromDoc(await store.get(deliveriesCollection, held.eventId));
      if (held.delivery === null) return false; // not recorded yet (the recorder will get to it)
    }
    const delivery = held.delivery;
    const expectedRun = held.payload.kind === 'redelivery' ? held.payload.run : 1;
    if (delivery.status !== 'pending' || delivery.run !== expectedRun) {
      // Finished already (a previous holder died between recording the result and marking the
      // row done), or superseded by a redelivery: nothing to send for this row.
      await this.finish(held);
      return false;
    }
    const nowMs = this.deps.clock.nowMs();
    if (delivery.nextAttemptAtMs > nowMs) return false;
    return held.claimExpiresAtMs - nowMs >= (await this.claimNeededMs(held.partnerId));
  }

  /**
   * The claim a row needs left to start an attempt: the attempt's longest time and the margin.
   * Claims are not renewed, so a sandbox partner's faults (a delay, duplicates, a held delivery
   * sent after it) count in full; capped at a fresh claim less the margin, so that under limits
   * too short for the worst case (tests) a row still starts on a fresh claim rather than never.
   */
  private async claimNeededMs(partnerId: string): Promise<number> {
    const { transport, limits, faults } = this.deps;
    const plain = transport.attemptTimeoutMs + limits.claimMarginMs;
    if (faults === undefined) return plain;
    const faulted = (await faults.attemptMsMax(partnerId, transport.attemptTimeoutMs)) + limits.claimMarginMs;
    return Math.max(plain, Math.min(faulted, limits.leaseMs - limits.claimMarginMs));
  }

  private async finish(held: Held): Promise<void> {
    await this.deps.store.outboxMarkDone([held.row.id]);
    this.held.delete(held.row.id);
  }

  private async attempt(held: Held, signal: { value: BreakerSignal }): Promise<void> {
    const { store, clock, policy } = this.deps;
    const delivery = held.delivery;
    if (delivery === null) throw new Error('attempt without a delivery record');
    const event = eventFromDoc(await store.get(eventsCollection, held.eventId));
    if (event === null) throw new Error(`event ${held.eventId} is not recorded`);
    const attemptNumber = delivery.attemptsInRun + 1;
    const destination = await this.deps.resolveDestination(event.partnerId);
    this.lanes.destination(held.partnerId, destination.ok ? destination.url : null);
    const startedAtMs = clock.nowMs();
    let result: AttemptResult;
    let durationMs = 0;
    if (!destination.ok) {
      result = { kind: 'error', error: destination.error };
    } else {
      const body = deliveryBody(event.event, event.data);
      const { url, secret } = destination;
      const sent = await this.deliver({ partnerId: event.partnerId, eventId: event.id, sequence: event.seq, attempt: attemptNumber, url, secret, body });
      result = sent.result;
      durationMs = sent.durationMs;
    }
    signal.value = breakerSignal(result);
    const finishedAtMs = clock.nowMs();
    const step = nextStep(policy, attemptNumber, result, finishedAtMs, this.deps.random());
    const classification = classify(result);
    const entry: AttemptLogEntry = {
      run: delivery.run,
      attempt: attemptNumber,
      atMs: startedAtMs,
      durationMs,
      httpStatus: result.kind === 'response' ? result.httpStatus : null,
      outcome: classification.outcome,
      error: classification.outcome === 'delivered' ? null : classification.error,
    };
    const next: DeliveryRecord = {
      ...delivery,
      status: step.kind === 'delivered' ? 'delivered' : step.kind === 'give_up' ? 'failed' : 'pending',
      attemptsInRun: attemptNumber,
      nextAttemptAtMs: step.kind === 'retry' ? step.atMs : 0,
      attempts: [...delivery.attempts, entry].slice(-attemptLogMax),
      lastError: entry.error,
      finishedAtMs: step.kind === 'retry' ? null : finishedAtMs,
      updatedAtMs: finishedAtMs,
    };
    await store.put(deliveriesCollection, held.eventId, deliveryToDoc(next));
    held.delivery = next;
    this.counts[classification.outcome] += 1;
    if (step.kind === 'delivered') this.counts.finishedDelivered += 1;
    else if (step.kind === 'give_up') this.counts.finishedFailed += 1;
    this.deps.log.info(
      {
        partnerId: event.partnerId,
        eventId: event.id,
        sequence: event.seq,
        run: delivery.run,
        attempt: attemptNumber,
        httpStatus: entry.httpStatus,
        error: entry.error,
        durationMs,
        next: step.kind,
      },
      'webhook attempt',
    );
    if (step.kind !== 'retry') await this.finish(held);
  }
}

function bump(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}
