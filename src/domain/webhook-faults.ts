// The sandbox's webhook faults (docs/sandbox.md): what a partner may ask its own deliveries to
// suffer so that its handler is rehearsed against them, the bounds of each setting, and the one
// reading of a request body into settings. Pure: the store, the dispatcher and the HTTP route are
// elsewhere (src/webhooks/sandbox-faults.ts, src/edge/routes/sandbox-rehearsals.ts).

export interface WebhookFaults {
  /** Every delivery is sent twice, with the same event id. */
  readonly duplicate: boolean;
  /** A delivery is held back and sent right after the partner's next one (sequence inverted). */
  readonly outOfOrder: boolean;
  /** Each attempt waits this long before it is sent. */
  readonly delayMs: number;
  /** The next N attempts are signed with a secret that is not the partner's. */
  readonly wrongSignatureNext: number;
  /** The first N attempts of every event are not sent and count as failed (the normal retries follow). */
  readonly dropFirstAttempts: number;
}

/**
 * The bounds, with why:
 * - a delay holds a delivery slot and the row's claim: with the dispatcher's defaults (a 60 s claim,
 *   10 s attempts, a 5 s margin) the worst faulted attempt, 10 s of delay and four sends
 *   (`faultedAttemptMs`), still fits in a fresh claim with its margin;
 * - dropping every attempt of the 5 would give each event up: at most 4 are dropped, so the last
 *   attempt of the run still reaches the receiver;
 * - a held delivery goes out on its own once `outOfOrderHoldMs` passed without a next one.
 */
export const webhookFaultBounds = {
  delayMsMax: 10_000,
  wrongSignatureNextMax: 100,
  dropFirstAttemptsMax: 4,
  outOfOrderHoldMs: 5_000,
} as const;

export const noWebhookFaults: WebhookFaults = { duplicate: false, outOfOrder: false, delayMs: 0, wrongSignatureNext: 0, dropFirstAttempts: 0 };

export function anyWebhookFault(faults: WebhookFaults): boolean {
  return faults.duplicate || faults.outOfOrder || faults.delayMs > 0 || faults.wrongSignatureNext > 0 || faults.dropFirstAttempts > 0;
}

/**
 * The longest one attempt can take under these faults: the delay, then each send bounded by the
 * attempt timeout: the attempt itself, the held delivery sent right after it (under `outOfOrder`,
 * or while one is still held from before), and under `duplicate` a copy of each. With no fault
 * on, the attempt timeout. The dispatcher starts an attempt only on a claim that covers this.
 */
export function faultedAttemptMs(faults: WebhookFaults, heldWaiting: boolean, attemptTimeoutMs: number): number {
  const sends = (faults.duplicate ? 2 : 1) * (faults.outOfOrder || heldWaiting ? 2 : 1);
  return faults.delayMs + sends * attemptTimeoutMs;
}

/** The API's field names (snake case) of each setting. */
export const webhookFaultFields = {
  duplicate: 'duplicate',
  outOfOrder: 'out_of_order',
  delayMs: 'delay_ms',
  wrongSignatureNext: 'wrong_signature_next',
  dropFirstAttempts: 'drop_first_attempts',
} as const satisfies Record<keyof WebhookFaults, string>;

export type WebhookFaultsReading = { readonly ok: true; readonly value: WebhookFaults } | { readonly ok: false; readonly reason: string };

function integerIn(value: unknown, field: string, max: number): { ok: true; value: number } | { ok: false; reason: string } {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) {
    return { ok: false, reason: `${field} must be an integer from 0 to ${max}` };
  }
  return { ok: true, value };
}

/**
 * Reads a PUT body: every field optional (an absent one is off), unknown fields refused (a typo
 * would otherwise silently rehearse nothing).
 */
export function readWebhookFaults(body: Readonly<Record<string, unknown>>): WebhookFaultsReading {
  const known: readonly string[] = Object.values(webhookFaultFields);
  const unknown = Object.keys(body).find((name) => !known.includes(name));
  if (unknown !== undefined) return { ok: false, reason: `unknown field ${unknown.slice(0, 40)}; the fields are ${known.join(', ')}` };
  const flag = (field: string): boolean | string => {
    const value = body[field];
    if (value === undefined) return false;
    return typeof value === 'boolean' ? value : `${field} must be true or false`;
  };
  const duplicate = flag(webhookFaultFields.duplicate);
  if (typeof duplicate === 'string') return { ok: false, reason: duplicate };
  const outOfOrder = flag(webhookFaultFields.outOfOrder);
  if (typeof outOfOrder === 'string') return { ok: false, reason: outOfOrder };
  const delay = integerIn(body[webhookFaultFields.delayMs] ?? 0, webhookFaultFields.delayMs, webhookFaultBounds.delayMsMax);
  if (!delay.ok) return delay;
  const wrong = integerIn(body[webhookFaultFields.wrongSignatureNext] ?? 0, webhookFaultFields.wrongSignatureNext, webhookFaultBounds.wrongSignatureNextMax);
  if (!wrong.ok) return wrong;
  const drop = integerIn(body[webhookFaultFields.dropFirstAttempts] ?? 0, webhookFaultFields.dropFirstAttempts, webhookFaultBounds.dropFirstAttemptsMax);
  if (!drop.ok) return drop;
  return { ok: true, value: { duplicate, outOfOrder, delayMs: delay.value, wrongSignatureNext: wrong.value, dropFirstAttempts: drop.value } };
}

/** The settings as the API shows them. */
export function webhookFaultsView(faults: WebhookFaults): Record<string, boolean | number> {
  return {
    [webhookFaultFields.duplicate]: faults.duplicate,
    [webhookFaultFields.outOfOrder]: faults.outOfOrder,
    [webhookFaultFields.delayMs]: faults.delayMs,
    [webhookFaultFields.wrongSignatureNext]: faults.wrongSignatureNext,
    [webhookFaultFields.dropFirstAttempts]: faults.dropFirstAttempts,
  };
}
