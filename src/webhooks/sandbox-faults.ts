// The sandbox's webhook faults, applied (sandbox mode only; docs/sandbox.md). A partner sets them
// with PUT /sandbox/webhook-faults; they are kept in the shared store as one small actor per
// partner (`sandbox-webhook-faults/<partnerId>`, written with compare-and-set like the event log),
// so every dispatcher process applies the same settings, and a counted fault (the next N wrong
// signatures) is spent once across all of them. The held delivery of "out of order" lives there
// too, so whichever dispatcher sends the partner's next delivery sends the held one after it.
//
// The dispatcher hands each attempt to `wrap(deliver)` instead of sending it itself:
//   drop      — attempts 1..N of an event are not sent; they count as failed (`sandbox_dropped`,
//               retried by the normal policy);
//   delay     — the attempt waits `delayMs` first (signed when it is sent, so still fresh);
//   order     — with no delivery held, this one is held (recorded as delivered: 202) and goes out
//               after the partner's next one, or alone once `outOfOrderHoldMs` passed, signed with
//               the partner's own secret;
//   signature — while the count lasts, an attempt that is sent now (not held) is signed with a
//               throwaway secret; the count is spent only on such an attempt;
//   duplicate — whatever is sent is sent twice; the first answer decides the outcome.
// A held delivery lives in the store until it is sent once: if that send fails it is not retried
// (the partner catches up with GET /events, as after any delivery given up).
import { randomBytes } from 'node:crypto';
import { anyWebhookFault, faultedAttemptMs, noWebhookFaults, webhookFaultBounds, type WebhookFaults } from '../domain/webhook-faults.ts';
import type { JsonValue, SnapshotStore } from '../store/store.ts';
import { casUpdate } from './store-cas.ts';
import type { SendOutcome } from './transport.ts';

/** One attempt as the dispatcher would send it; signed by `deliver` at send time. */
export interface OutgoingDelivery {
  readonly partnerId: string;
  readonly eventId: string;
  readonly sequence: number | null;
  readonly attempt: number;
  readonly url: string;
  readonly secret: string;
  readonly body: string;
}

export type Deliver = (delivery: OutgoingDelivery) => Promise<SendOutcome>;

/** A held delivery: no URL and no secret are stored; both are the partner's current ones when it goes. */
interface HeldDelivery {
  readonly eventId: string;
  readonly sequence: number | null;
  readonly attempt: number;
  readonly body: string;
  readonly heldAtMs: number;
}

interface FaultState {
  readonly faults: WebhookFaults;
  readonly held: HeldDelivery | null;
}

const actorKeyPrefix = 'sandbox-webhook-faults/';

function actorKeyOf(partnerId: string): string {
  return `${actorKeyPrefix}${partnerId}`;
}

function stateOf(json: JsonValue | null): FaultState {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return { faults: noWebhookFaults, held: null };
  const value = json as unknown as Partial<FaultState>;
  return { faults: { ...noWebhookFaults, ...value.faults }, held: value.held ?? null };
}

function toJson(state: FaultState): JsonValue {
  return state as unknown as JsonValue;
}

/** The partner's current settings (none set: every fault off). */
export async function readWebhookFaults(store: SnapshotStore, partnerId: string): Promise<WebhookFaults> {
  const snapshot = await store.load(actorKeyOf(partnerId));
  return stateOf(snapshot?.state ?? null).faults;
}

/** Replaces the partner's settings (a delivery held already stays held until it goes). */
export async function writeWebhookFaults(store: SnapshotStore, partnerId: string, faults: WebhookFaults): Promise<void> {
  await casUpdate(store, actorKeyOf(partnerId), async (json) => ({ change: { state: toJson({ ...stateOf(json), faults }) }, result: undefined }));
}

/**
 * Every fault off, in one call. A delivery held for "out of order" is released to the dispatcher
 * that next looks at it (it goes out on its own at once), so a reset never loses one.
 */
export async function resetWebhookFaults(store: SnapshotStore, partnerId: string): Promise<void> {
  await writeWebhookFaults(store, partnerId, noWebhookFaults);
}

const dropped: SendOutcome = { result: { kind: 'error', error: 'sandbox_dropped' }, durationMs: 0 };
/** What a held delivery's attempt records: accepted, to be sent later. */
const heldOutcome: SendOutcome = { result: { kind: 'response', httpStatus: 202, retryAfter: null }, durationMs: 0 };

export interface SandboxFaultsDeps {
  readonly store: SnapshotStore;
  readonly clock: { nowMs(): number };
  readonly sleep?: (ms: number) => Promise<void>;
}

export class SandboxWebhookFaults {
  private readonly sleep: (ms: number) => Promise<void>;
  /** Partners this process holds a delivery for: it sends them alone once their hold is over. */
  private readonly holding = new Set<string>();
  /** Per partner: its held delivery being sent now (at most one each). */
  private readonly flushing = new Map<string, Promise<void>>();

  constructor(private readonly deps: SandboxFaultsDeps) {
    this.sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** How long the partner's next attempt can take at most under its faults (`faultedAttemptMs`). */
  async attemptMsMax(partnerId: string, attemptTimeoutMs: number): Promise<number> {
    const state = stateOf((await this.deps.store.load(actorKeyOf(partnerId)))?.state ?? null);
    return faultedAttemptMs(state.faults, state.held !== null, attemptTimeoutMs);
  }

  /** `deliver` with the partner's faults applied (see the header). */
  wrap(deliver: Deliver): Deliver {
    return async (delivery) => {
      const state = stateOf((await this.deps.store.load(actorKeyOf(delivery.partnerId)))?.state ?? null);
      const { faults } = state;
      if (!anyWebhookFault(faults)) return this.withHeld(delivery, deliver, faults, state.held !== null);
      if (delivery.attempt <= faults.dropFirstAttempts) return dropped;
      if (faults.delayMs > 0) await this.sleep(faults.delayMs);
      // Held first: a held delivery is sent later with the partner's real secret, so a wrong
      // signature spent on it would reach nobody.
      if (faults.outOfOrder && (await this.hold(delivery))) return heldOutcome;
      const signed = faults.wrongSignatureNext > 0 && (await this.spendWrongSignature(delivery.partnerId)) ? { ...delivery, secret: throwawaySecret() } : delivery;
      return this.withHeld(signed, deliver, faults, true, delivery.secret);
    };
  }

  /**
   * Starts sending the deliveries this process held whose hold is over (or whose partner turned
   * the fault off), each alone; `resolve` gives the partner's destination now. Each partner's send
   * runs in the background, one at a time per partner: a receiver that answers slowly (or a store
   * that refuses a write) holds up neither the dispatcher's round nor another partner's deliveries.
   * A flush that fails leaves the partner in `holding`, to be tried again next round.
   */
  flushHeld(resolve: (partnerId: string) => Promise<{ ok: true; url: string; secret: string } | { ok: false }>, deliver: Deliver): void {
    for (const partnerId of [...this.holding]) {
      if (this.flushing.has(partnerId)) continue;
      const flush = this.flushOne(partnerId, resolve, deliver)
        .catch(() => undefined)
        .finally(() => this.flushing.delete(partnerId));
      this.flushing.set(partnerId, flush);
    }
  }

  /** Resolves once no held delivery is being sent (the dispatcher's stop waits for it). */
  async idle(): Promise<void> {
    while (this.flushing.size > 0) await Promise.all([...this.flushing.values()]);
  }

  private async flushOne(partnerId: string, resolve: (partnerId: string) => Promise<{ ok: true; url: string; secret: string } | { ok: false }>, deliver: Deliver): Promise<void> {
    const held = await this.take(partnerId, (state, nowMs) => !state.faults.outOfOrder || nowMs - (state.held?.heldAtMs ?? nowMs) >= webhookFaultBounds.outOfOrderHoldMs);
    if (held === null) return;
    this.holding.delete(partnerId);
    if (held === 'none') return;
    const destination = await resolve(partnerId);
    if (destination.ok) await deliver({ ...held, partnerId, url: destination.url, secret: destination.secret });
  }

  /**
   * Sends `delivery`, then the partner's held one if there is one (the swap), each twice under
   * `duplicate`. The held one is signed with `secret`, the partner's own: a wrong signature on
   * `delivery` was spent on it alone.
   */
  private async withHeld(delivery: OutgoingDelivery, deliver: Deliver, faults: WebhookFaults, mayHold: boolean, secret = delivery.secret): Promise<SendOutcome> {
    const outcome = await this.send(delivery, deliver, faults);
    if (!mayHold) return outcome;
    const held = await this.take(delivery.partnerId, (state) => state.held?.eventId !== delivery.eventId);
    if (held !== null && held !== 'none') await this.send({ ...held, partnerId: delivery.partnerId, url: delivery.url, secret }, deliver, faults);
    return outcome;
  }

  private async send(delivery: OutgoingDelivery, deliver: Deliver, faults: WebhookFaults): Promise<SendOutcome> {
    const outcome = await deliver(delivery);
    if (faults.duplicate) await deliver(delivery);
    return outcome;
  }

  /** Holds `delivery` when nothing is held for its partner; false when one is (this one goes now). */
  private async hold(delivery: OutgoingDelivery): Promise<boolean> {
    const nowMs = this.deps.clock.nowMs();
    const { eventId, sequence, attempt, body } = delivery;
    const held = await casUpdate(this.deps.store, actorKeyOf(delivery.partnerId), async (json) => {
      const state = stateOf(json);
      if (state.held !== null) return { change: null, result: false };
      return { change: { state: toJson({ ...state, held: { eventId, sequence, attempt, body, heldAtMs: nowMs } }) }, result: true };
    });
    if (held) this.holding.add(delivery.partnerId);
    return held;
  }

  /** Takes the held delivery when `when` says so: the delivery, null (not now), or 'none' (nothing held). */
  private async take(partnerId: string, when: (state: FaultState, nowMs: number) => boolean): Promise<HeldDelivery | null | 'none'> {
    const nowMs = this.deps.clock.nowMs();
    return casUpdate<HeldDelivery | null | 'none'>(this.deps.store, actorKeyOf(partnerId), async (json) => {
      const state = stateOf(json);
      if (state.held === null) return { change: null, result: 'none' };
      if (!when(state, nowMs)) return { change: null, result: null };
      return { change: { state: toJson({ ...state, held: null }) }, result: state.held };
    });
  }

  /** Spends one of the partner's wrong signatures; false when another dispatcher spent the last. */
  private async spendWrongSignature(partnerId: string): Promise<boolean> {
    return casUpdate(this.deps.store, actorKeyOf(partnerId), async (json) => {
      const state = stateOf(json);
      if (state.faults.wrongSignatureNext <= 0) return { change: null, result: false };
      return { change: { state: toJson({ ...state, faults: { ...state.faults, wrongSignatureNext: state.faults.wrongSignatureNext - 1 } }) }, result: true };
    });
  }
}

/** A secret nobody has: a delivery signed with it fails verification with the partner's. */
function throwawaySecret(): string {
  return `whsec_sandbox_wrong_${randomBytes(24).toString('base64url')}`;
}
