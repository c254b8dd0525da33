// The sandbox rail: an in-process stand-in for the BREB and PIX providers, used by default in
// sandbox mode, by the demo and by the tests. It behaves like a provider where it matters to us:
//   - idempotency by key: a key seen before returns its first outcome and never pays twice. The
//     ledger lives in the store (collection `sandbox_rail`), so a restarted process, or another
//     process on the same store, sees every payout made before;
//   - liquidity per method, decremented once per successful payout, never negative;
//   - outages per method (available() is false, payouts and refunds answer 'retry');
//   - a failure rate drawn from a seeded hash of the idempotency key (deterministic per key,
//     whatever the order or the process), latency, and an optional pending period;
//   - dynamic PIX charges (BR Code) and PIX refunds, both idempotent by key.
// The knobs (latency, failure rate, pending period, outages, liquidity) are stored too, so an
// admin change reaches every process of a sandbox deployment within `settingsCacheMs`.
// Decisions: docs/rails.md.
import { createHash, randomUUID } from 'node:crypto';
import { fiatDecimals, isOneOf, methodCurrency, paymentMethods, type PaymentMethod } from '../domain/assets.ts';
import {
  compare,
  decimal,
  decimalFromExactString,
  isPositive,
  rescale,
  subtract,
  toFixedString,
  toPlainString,
  type Decimal,
} from '../domain/money.ts';
import type { JsonObject, SnapshotStore } from '../store/store.ts';
import { encodeBrCode } from './brcode.ts';
import { rehearsedRefusalReason, takePayoutRefusal } from './sandbox-refusals.ts';
import {
  RailUnavailableError,
  RailUsageError,
  type LiquidityReading,
  type PayoutRequest,
  type PayoutResult,
  type PixCharge,
  type PixChargeRequest,
  type PixRefundRequest,
  type PixRefundResult,
  type Rail,
} from './rails.ts';

export const sandboxRailCollection = 'sandbox_rail';
/** Idempotency keys end up inside store ids (≤ 256 bytes with their prefix). */
export const idempotencyKeyLengthMax = 200;
/** Keys remembered on a liquidity record so a decrement applies once (a crash-safe marker). */
export const liquidityAppliedKeysMax = 1_000;
export const latencyMsMax = 60_000;
export const pendingMsMax = 24 * 60 * 60 * 1_000;

/** Generous defaults so the demo never runs dry; set per method with `setLiquidity`. */
export const defaultSandboxLiquidity: Readonly<Record<PaymentMethod, Decimal>> = {
  BREB: decimalFromExactString('1000000000.00'),
  PIX: decimalFromExactString('1000000.00'),
};

export interface SandboxRailSettings {
  readonly latencyMs: number;
  /** 0..1: the share of new payouts that fail. */
  readonly failureRate: number;
  /** How long a new payout stays 'pending' before it succeeds (0: succeeds at once). */
  readonly pendingMs: number;
  readonly outages: Readonly<Record<PaymentMethod, boolean>>;
}

/** What the admin service turns (sandbox mode only). Each change is stored and survives restarts. */
export interface SandboxRailControls {
  setLatency(latencyMs: number): Promise<void>;
  setFailureRate(rate: number): Promise<void>;
  setPendingMs(pendingMs: number): Promise<void>;
  setLiquidity(method: PaymentMethod, amount: Decimal): Promise<void>;
  setOutage(method: PaymentMethod, down: boolean): Promise<void>;
  settings(): Promise<SandboxRailSettings>;
}

export interface SandboxRailOptions {
  readonly store: SnapshotStore;
  readonly clock: { nowMs(): number };
  /** Seeds the failure draws; the same seed and key always give the same outcome. */
  readonly seed?: string;
  /** Defaults for knobs never set through the controls (a stored setting wins). */
  readonly latencyMs?: number;
  readonly failureRate?: number;
  readonly pendingMs?: number;
  readonly outages?: readonly PaymentMethod[];
  /** Starting liquidity of a method the store has no record of. */
  readonly liquidity?: Partial<Record<PaymentMethod, Decimal>>;
  /** How long knobs read from the store are trusted before they are read again. Default 1,000. */
  readonly settingsCacheMs?: number;
  readonly merchantName?: string;
  readonly merchantCity?: string;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** A payout the sandbox provider has accepted (the ledger row; no recipient data is kept). */
interface PayoutRecord {
  readonly key: string;
  readonly method: PaymentMethod;
  readonly amount: Decimal;
  /** sha256 of the whole request: the same key with other content is refused. */
  readonly fingerprint: string;
  readonly status: 'pending' | 'succeeded' | 'failed';
  readonly railReference: string;
  readonly reason: string | null;
  readonly createdAtMs: number;
  readonly settleAtMs: number;
  /** Whether this payout's liquidity decrement has been written (see applyLiquidity). */
  readonly liquidityApplied: boolean;
}

interface LiquidityRecord {
  readonly amount: Decimal;
  readonly appliedKeys: readonly string[];
}

interface ChargeRecord {
  readonly chargeId: string;
  readonly brCode: string;
  readonly amount: Decimal;
  readonly expiresAtMs: number;
  readonly fingerprint: string;
}

interface RefundRecord {
  readonly refundId: string;
  readonly fingerprint: string;
}

export interface SimulatedPixPayment {
  readonly providerPaymentId: string;
  readonly chargeId: string;
  readonly amount: Decimal;
}

/**
 * Whether the sandbox rail issued this PIX charge (its lookup by charge id exists). Its BR Code is
 * payable by nobody real, so every payment of such a charge was faked (POST /sandbox/pix-payments).
 * Read from the store, not from a rail instance: it holds for charges of an earlier sandbox run too.
 */
export async function sandboxRailIssuedCharge(store: Pick<SnapshotStore, 'get'>, chargeId: string): Promise<boolean> {
  return (await store.get(sandboxRailCollection, `chargeById:${chargeId}`)) !== null;
}

/** A seeded draw in [0, 1) from the key: deterministic per key, independent of call order. */
export function failureDraw(seed: string, key: string): number {
  const digest = createHash('sha256').update(`${seed}\u0000${key}`, 'utf8').digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

function fingerprint(parts: ReadonlyArray<string | null>): string {
  return createHash('sha256').update(JSON.stringify(parts), 'utf8').digest('hex');
}

function assertKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > idempotencyKeyLengthMax || key.includes('\u0000')) {
    throw new RailUsageError(`idempotency key must be 1-${idempotencyKeyLengthMax} characters without NUL`);
  }
}

/** A positive amount with at most the currency's 2 decimals, re-expressed at scale 2. */
function fiatAmount(amount: Decimal, what: string): Decimal {
  if (!isPositive(amount)) throw new RailUsageError(`${what} must be positive`);
  const atScale = rescale(amount, 2, 'floor');
  if (compare(atScale, amount) !== 0) throw new RailUsageError(`${what} has more than 2 decimals`);
  return atScale;
}

function decimalText(value: Decimal): string {
  return toFixedString(value);
}

function decimalField(doc: JsonObject, field: string): Decimal {
  const value = doc[field];
  if (typeof value !== 'string') throw new Error(`sandbox ledger: ${field} is not a decimal text`);
  return decimalFromExactString(value);
}

function stringField(doc: JsonObject, field: string): string {
  const value = doc[field];
  if (typeof value !== 'string') throw new Error(`sandbox ledger: ${field} is not a string`);
  return value;
}

function numberField(doc: JsonObject, field: string): number {
  const value = doc[field];
  if (typeof value !== 'number') throw new Error(`sandbox ledger: ${field} is not a number`);
  return value;
}

function payoutToDoc(record: PayoutRecord): JsonObject {
  return { ...record, amount: decimalText(record.amount) };
}

function payoutFromDoc(doc: JsonObject): PayoutRecord {
  const method = doc.method;
  const status = doc.status;
  if (!isOneOf(paymentMethods, method)) throw new Error('sandbox ledger: bad method');
  if (status !== 'pending' && status !== 'succeeded' && status !== 'failed') throw new Error('sandbox ledger: bad status');
  return {
    key: stringField(doc, 'key'),
    method,
    amount: decimalField(doc, 'amount'),
    fingerprint: stringField(doc, 'fingerprint'),
    status,
    railReference: stringField(doc, 'railReference'),
    reason: typeof doc.reason === 'string' ? doc.reason : null,
    createdAtMs: numberField(doc, 'createdAtMs'),
    settleAtMs: numberField(doc, 'settleAtMs'),
    liquidityApplied: doc.liquidityApplied === true,
  };
}

function payoutResult(record: PayoutRecord): PayoutResult {
  switch (record.status) {
    case 'succeeded':
      return { status: 'succeeded', railReference: record.railReference };
    case 'pending':
      return { status: 'pending', railReference: record.railReference };
    case 'failed':
      return { status: 'failed', reason: record.reason ?? 'failed', railReference: record.railReference };
  }
}

function assertFraction(rate: number): void {
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) throw new RangeError('failure rate must be in [0, 1]');
}

function assertDuration(what: string, ms: number, max: number): void {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > max) throw new RangeError(`${what} must be an integer in [0, ${max}] ms`);
}

const settingIds = {
  latencyMs: 'setting:latencyMs',
  failureRate: 'setting:failureRate',
  pendingMs: 'setting:pendingMs',
  outage: (method: PaymentMethod) => `setting:outage:${method}`,
} as const;

export class SandboxRail implements Rail, SandboxRailControls {
  private readonly store: SnapshotStore;
  private readonly seed: string;
  private readonly settingsCacheMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private cached: { settings: SandboxRailSettings; readAtMs: number } | null = null;
  /** Serialises liquidity-changing steps of this process (check, record, decrement). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: SandboxRailOptions) {
    this.store = options.store;
    this.seed = options.seed ?? 'sandbox';
    this.settingsCacheMs = options.settingsCacheMs ?? 1_000;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    assertFraction(options.failureRate ?? 0);
    assertDuration('latency', options.latencyMs ?? 0, latencyMsMax);
    assertDuration('pending period', options.pendingMs ?? 0, pendingMsMax);
  }

  // ---- the Rail port ----

  async payout(request: PayoutRequest): Promise<PayoutResult> {
    assertKey(request.idempotencyKey);
    const settings = await this.settings();
    const result = settings.outages[request.method]
      ? ({ status: 'retry', reason: `${request.method} payouts are temporarily unavailable` } as const)
      : await this.serially(() => this.payoutNow(request, settings));
    // The provider has acted; its answer takes `latencyMs` to come back. A crash now leaves a
    // payout made but unreported: the case the idempotency key exists for.
    await this.sleep(settings.latencyMs);
    return result;
  }

  async payoutStatus(idempotencyKey: string): Promise<PayoutResult | null> {
    assertKey(idempotencyKey);
    const settings = await this.settings();
    const doc = await this.store.get(sandboxRailCollection, `payout:${idempotencyKey}`);
    const result = doc === null ? null : payoutResult(await this.serially(() => this.resume(payoutFromDoc(doc))));
    await this.sleep(settings.latencyMs);
    return result;
  }

  async liquidity(method: PaymentMethod): Promise<LiquidityReading> {
    const settings = await this.settings();
    const record = await this.liquidityRecord(method);
    await this.sleep(settings.latencyMs);
    return { method, amount: record.amount };
  }

  async available(method: PaymentMethod): Promise<boolean> {
    const settings = await this.settings();
    return !settings.outages[method];
  }

  async createPixCharge(request: PixChargeRequest): Promise<PixCharge> {
    assertKey(request.idempotencyKey);
    const amount = fiatAmount(request.amount, 'charge amount');
    if (!Number.isSafeInteger(request.expiresAtMs) || request.expiresAtMs <= 0) throw new RailUsageError('expiresAtMs must be epoch ms');
    const settings = await this.settings();
    if (settings.outages.PIX) throw new RailUnavailableError('PIX charges are temporarily unavailable');
    const id = `charge:${request.idempotencyKey}`;
    // The expiry is fixed by the first request: a retry may compute it again, a little later.
    const print = fingerprint([toPlainString(amount)]);
    const chargeId = randomUUID();
    const encoded = encodeBrCode({
      url: `pix.sandbox.invalid/qr/v2/${chargeId.replaceAll('-', '')}`,
      amount: toFixedString(amount),
      merchantName: this.options.merchantName ?? 'Sandbox Payments',
      merchantCity: this.options.merchantCity ?? 'SAO PAULO',
    });
    if (!encoded.ok) throw new Error(`sandbox BR Code could not be encoded: ${encoded.reason}`);
    const fresh: ChargeRecord = { chargeId, brCode: encoded.payload, amount, expiresAtMs: request.expiresAtMs, fingerprint: print };
    const put = await this.store.putIfAbsent(sandboxRailCollection, id, { ...fresh, amount: decimalText(amount) });
    const record = put.status === 'inserted' ? fresh : this.chargeFromDoc(put.doc);
    if (record.fingerprint !== print) throw new RailUsageError('this idempotency key was used for a charge of another amount');
    // The lookup by charge id (for simulated payments); rewriting it on a retry is harmless.
    await this.store.put(sandboxRailCollection, `chargeById:${record.chargeId}`, { key: request.idempotencyKey });
    await this.sleep(settings.latencyMs);
    return { chargeId: record.chargeId, brCode: record.brCode, amount: record.amount, expiresAtMs: record.expiresAtMs };
  }

  async refundPixPayment(request: PixRefundRequest): Promise<PixRefundResult> {
    assertKey(request.idempotencyKey);
    const amount = fiatAmount(request.amount, 'refund amount');
    if (request.providerPaymentId.length === 0 || request.providerPaymentId.length > idempotencyKeyLengthMax) {
      throw new RailUsageError('providerPaymentId must be 1-200 characters');
    }
    const settings = await this.settings();
    let result: PixRefundResult;
    if (settings.outages.PIX) {
      result = { status: 'retry', reason: 'PIX refunds are temporarily unavailable' };
    } else {
      result = await this.refundNow(request, amount);
    }
    await this.sleep(settings.latencyMs);
    return result;
  }

  // ---- sandbox-only helpers ----

  /** The payer pays a charge (POST /sandbox/pix-payments): a new provider payment id each call. */
  async simulatePixPayment(request: { readonly chargeId: string; readonly amount: Decimal | null }): Promise<SimulatedPixPayment | null> {
    const index = await this.store.get(sandboxRailCollection, `chargeById:${request.chargeId}`);
    if (index === null) return null;
    const chargeDoc = await this.store.get(sandboxRailCollection, `charge:${stringField(index, 'key')}`);
    if (chargeDoc === null) return null;
    const charge = this.chargeFromDoc(chargeDoc);
    const amount = request.amount === null ? charge.amount : fiatAmount(request.amount, 'payment amount');
    const providerPaymentId = `sbx-pix-${randomUUID()}`;
    await this.store.put(sandboxRailCollection, `pixPayment:${providerPaymentId}`, {
      chargeId: charge.chargeId,
      amount: decimalText(amount),
      paidAtMs: this.options.clock.nowMs(),
    });
    return { providerPaymentId, chargeId: charge.chargeId, amount };
  }

  /** How many payouts the ledger holds for a key (0 or 1) and their status: for tests and ops. */
  async ledgerEntry(idempotencyKey: string): Promise<{ status: string; railReference: string; amount: Decimal } | null> {
    const doc = await this.store.get(sandboxRailCollection, `payout:${idempotencyKey}`);
    if (doc === null) return null;
    const record = payoutFromDoc(doc);
    return { status: record.status, railReference: record.railReference, amount: record.amount };
  }

  // ---- controls ----

  async settings(): Promise<SandboxRailSettings> {
    const nowMs = this.options.clock.nowMs();
    if (this.cached !== null && nowMs - this.cached.readAtMs < this.settingsCacheMs) return this.cached.settings;
    const read = async (id: string): Promise<unknown> => (await this.store.get(sandboxRailCollection, id))?.value;
    const [latency, rate, pending, ...outages] = await Promise.all([
      read(settingIds.latencyMs),
      read(settingIds.failureRate),
      read(settingIds.pendingMs),
      ...paymentMethods.map((method) => read(settingIds.outage(method))),
    ]);
    const defaults = new Set(this.options.outages ?? []);
    const settings: SandboxRailSettings = {
      latencyMs: typeof latency === 'number' ? latency : (this.options.latencyMs ?? 0),
      failureRate: typeof rate === 'number' ? rate : (this.options.failureRate ?? 0),
      pendingMs: typeof pending === 'number' ? pending : (this.options.pendingMs ?? 0),
      outages: Object.fromEntries(
        paymentMethods.map((method, index) => {
          const stored = outages[index];
          return [method, typeof stored === 'boolean' ? stored : defaults.has(method)];
        }),
      ) as Record<PaymentMethod, boolean>,
    };
    this.cached = { settings, readAtMs: nowMs };
    return settings;
  }

  async setLatency(latencyMs: number): Promise<void> {
    assertDuration('latency', latencyMs, latencyMsMax);
    await this.setSetting(settingIds.latencyMs, latencyMs, (s) => ({ ...s, latencyMs }));
  }

  async setFailureRate(rate: number): Promise<void> {
    assertFraction(rate);
    await this.setSetting(settingIds.failureRate, rate, (s) => ({ ...s, failureRate: rate }));
  }

  async setPendingMs(pendingMs: number): Promise<void> {
    assertDuration('pending period', pendingMs, pendingMsMax);
    await this.setSetting(settingIds.pendingMs, pendingMs, (s) => ({ ...s, pendingMs }));
  }

  async setOutage(method: PaymentMethod, down: boolean): Promise<void> {
    await this.setSetting(settingIds.outage(method), down, (s) => ({ ...s, outages: { ...s.outages, [method]: down } }));
  }

  async setLiquidity(method: PaymentMethod, amount: Decimal): Promise<void> {
    if (amount.units < 0n) throw new RangeError('liquidity must not be negative');
    const atScale = rescale(amount, fiatDecimals[methodCurrency[method]], 'floor');
    if (compare(atScale, amount) !== 0) throw new RangeError('liquidity has more decimals than the currency');
    await this.serially(async () => {
      const current = await this.liquidityRecord(method);
      await this.writeLiquidity(method, { amount: atScale, appliedKeys: current.appliedKeys });
    });
  }

  // ---- internals ----

  private async setSetting(id: string, value: number | boolean, apply: (settings: SandboxRailSettings) => SandboxRailSettings): Promise<void> {
    await this.store.put(sandboxRailCollection, id, { value });
    const current = await this.settings();
    this.cached = { settings: apply(current), readAtMs: this.options.clock.nowMs() };
  }

  private serially<T>(step: () => Promise<T>): Promise<T> {
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async payoutNow(request: PayoutRequest, settings: SandboxRailSettings): Promise<PayoutResult> {
    const id = `payout:${request.idempotencyKey}`;
    const print = this.payoutFingerprint(request);
    const existing = await this.store.get(sandboxRailCollection, id);
    if (existing !== null) return payoutResult(await this.resume(payoutFromDoc(existing), print));

    if (request.currency !== methodCurrency[request.method]) throw new RailUsageError(`${request.method} pays ${methodCurrency[request.method]}`);
    const amount = fiatAmount(request.amount, 'payout amount');
    if (!request.accountNumber && !request.qrCode) throw new RailUsageError('a payout names an account or a QR code');

    const nowMs = this.options.clock.nowMs();
    const liquidity = await this.liquidityRecord(request.method);
    let status: PayoutRecord['status'] = settings.pendingMs > 0 ? 'pending' : 'succeeded';
    let reason: string | null = null;
    // A partner's rehearsal (sandbox-refusals.ts) first: it asked for exactly this payout to fail.
    if (await takePayoutRefusal(this.store, request.idempotencyKey)) {
      status = 'failed';
      reason = rehearsedRefusalReason;
    } else if (failureDraw(this.seed, request.idempotencyKey) < settings.failureRate) {
      status = 'failed';
      reason = 'sandbox_simulated_failure';
    } else if (compare(liquidity.amount, amount) < 0) {
      status = 'failed';
      reason = 'insufficient_liquidity';
    }
    const record: PayoutRecord = {
      key: request.idempotencyKey,
      method: request.method,
      amount,
      fingerprint: print,
      status,
      railReference: `sbx-po-${randomUUID()}`,
      reason,
      createdAtMs: nowMs,
      settleAtMs: nowMs + settings.pendingMs,
      liquidityApplied: false,
    };
    // putIfAbsent: of two processes racing on one key, exactly one records (and pays).
    const put = await this.store.putIfAbsent(sandboxRailCollection, id, payoutToDoc(record));
    if (put.status === 'exists') return payoutResult(await this.resume(payoutFromDoc(put.doc), print));
    return payoutResult(await this.resume(record, print));
  }

  /** Finishes what a recorded payout still owes: its liquidity decrement and, when due, settling. */
  private async resume(recorded: PayoutRecord, print?: string): Promise<PayoutRecord> {
    if (print !== undefined && recorded.fingerprint !== print) {
      throw new RailUsageError('this idempotency key was used for another payout request');
    }
    let record = recorded;
    const id = `payout:${record.key}`;
    if (record.status !== 'failed' && !record.liquidityApplied) {
      await this.applyLiquidity(record);
      record = { ...record, liquidityApplied: true };
      await this.store.put(sandboxRailCollection, id, payoutToDoc(record));
    }
    if (record.status === 'pending' && this.options.clock.nowMs() >= record.settleAtMs) {
      record = { ...record, status: 'succeeded' };
      await this.store.put(sandboxRailCollection, id, payoutToDoc(record));
    }
    return record;
  }

  /**
   * Decrements the method's liquidity once per payout. The decrement and the key that caused it
   * are one write (the record remembers the last keys), so a crash between it and the payout's
   * `liquidityApplied` flag never decrements twice.
   */
  private async applyLiquidity(record: PayoutRecord): Promise<void> {
    const current = await this.liquidityRecord(record.method);
    if (current.appliedKeys.includes(record.key)) return;
    const remaining = subtract(current.amount, record.amount);
    // Never negative: the payout was checked against this liquidity under the same queue.
    const amount = remaining.units < 0n ? decimal(0n, remaining.scale) : remaining;
    const appliedKeys = [...current.appliedKeys, record.key].slice(-liquidityAppliedKeysMax);
    await this.writeLiquidity(record.method, { amount, appliedKeys });
  }

  private async liquidityRecord(method: PaymentMethod): Promise<LiquidityRecord> {
    const id = `liquidity:${method}`;
    let doc = await this.store.get(sandboxRailCollection, id);
    if (doc === null) {
      const initial = this.options.liquidity?.[method] ?? defaultSandboxLiquidity[method];
      const put = await this.store.putIfAbsent(sandboxRailCollection, id, { amount: decimalText(initial), appliedKeys: [] });
      doc = put.status === 'inserted' ? { amount: decimalText(initial), appliedKeys: [] } : put.doc;
    }
    const keys = doc.appliedKeys;
    return {
      amount: decimalField(doc, 'amount'),
      appliedKeys: Array.isArray(keys) ? keys.filter((key): key is string => typeof key === 'string') : [],
    };
  }

  private async writeLiquidity(method: PaymentMethod, record: LiquidityRecord): Promise<void> {
    await this.store.put(sandboxRailCollection, `liquidity:${method}`, { amount: decimalText(record.amount), appliedKeys: [...record.appliedKeys] });
  }

  private payoutFingerprint(request: PayoutRequest): string {
    return fingerprint([
      request.method,
      request.currency,
      toPlainString(request.amount),
      request.accountNumber,
      request.qrCode,
      request.taxId,
    ]);
  }

  private async refundNow(request: PixRefundRequest, amount: Decimal): Promise<PixRefundResult> {
    const id = `refund:${request.idempotencyKey}`;
    const print = fingerprint([request.providerPaymentId, toPlainString(amount)]);
    const payment = await this.store.get(sandboxRailCollection, `pixPayment:${request.providerPaymentId}`);
    // A payment the sandbox saw cannot be refunded above what was paid. Unknown payment ids are
    // accepted: the sandbox chain/driver may report PIX payments this rail never took.
    if (payment !== null && compare(amount, decimalField(payment, 'amount')) > 0) {
      throw new RailUsageError('a refund cannot exceed the payment');
    }
    const fresh: RefundRecord = { refundId: `sbx-rf-${randomUUID()}`, fingerprint: print };
    const put = await this.store.putIfAbsent(sandboxRailCollection, id, {
      ...fresh,
      providerPaymentId: request.providerPaymentId,
      amount: decimalText(amount),
      createdAtMs: this.options.clock.nowMs(),
    });
    const record: RefundRecord =
      put.status === 'inserted' ? fresh : { refundId: stringField(put.doc, 'refundId'), fingerprint: stringField(put.doc, 'fingerprint') };
    if (record.fingerprint !== print) throw new RailUsageError('this idempotency key was used for another refund');
    return { status: 'succeeded', refundId: record.refundId };
  }

  private chargeFromDoc(doc: JsonObject): ChargeRecord {
    return {
      chargeId: stringField(doc, 'chargeId'),
      brCode: stringField(doc, 'brCode'),
      amount: decimalField(doc, 'amount'),
      expiresAtMs: numberField(doc, 'expiresAtMs'),
      fingerprint: stringField(doc, 'fingerprint'),
    };
  }
}
