// The edge's view of rail liquidity: read in the background every `refreshIntervalMs`, answered
// from memory on the request path (acceptance must not wait for a provider). Bounded staleness:
// a failed read never replaces a good value (and never with zero); a reading older than
// `staleAfterMs` is no longer trusted, and then the method counts as unavailable, so acceptance
// refuses with `rail_unavailable` rather than take money it may not be able to pay out.
// Decisions: docs/rails.md.
import type { LogLevel } from '../actors/envelope.ts';
import { paymentMethods, type PaymentMethod } from '../domain/assets.ts';
import type { Decimal } from '../domain/money.ts';
import type { LiquidityView } from '../ports/ports.ts';
import type { Rail } from './rails.ts';

/** One read of a method's liquidity and availability (from the rail, or over the payout link). */
export interface LiquiditySource {
  read(method: PaymentMethod): Promise<{ readonly amount: Decimal; readonly available: boolean }>;
}

export function railLiquiditySource(rail: Rail): LiquiditySource {
  return {
    async read(method) {
      const [reading, available] = await Promise.all([rail.liquidity(method), rail.available(method)]);
      return { amount: reading.amount, available };
    },
  };
}

export interface CachedLiquidityOptions {
  readonly source: LiquiditySource;
  readonly clock: { nowMs(): number };
  readonly methods?: readonly PaymentMethod[];
  /** Default 5,000. */
  readonly refreshIntervalMs?: number;
  /** A reading older than this is unknown. Default 60,000. */
  readonly staleAfterMs?: number;
  /** One read's bound; a slower read counts as failed. Default 5,000. */
  readonly readTimeoutMs?: number;
  readonly log?: (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;
}

export interface LiquidityHealth {
  readonly method: PaymentMethod;
  readonly state: 'fresh' | 'stale' | 'unknown';
  readonly readAtMs: number | null;
  readonly consecutiveFailures: number;
  readonly lastError: string | null;
}

interface Reading {
  readonly amount: Decimal;
  readonly available: boolean;
  readonly readAtMs: number;
}

export class CachedLiquidityView implements LiquidityView {
  private readonly readings = new Map<PaymentMethod, Reading>();
  private readonly failures = new Map<PaymentMethod, { count: number; lastError: string }>();
  private readonly methods: readonly PaymentMethod[];
  private readonly refreshIntervalMs: number;
  private readonly staleAfterMs: number;
  private readonly readTimeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: CachedLiquidityOptions) {
    this.methods = options.methods ?? paymentMethods;
    this.refreshIntervalMs = options.refreshIntervalMs ?? 5_000;
    this.staleAfterMs = options.staleAfterMs ?? 60_000;
    this.readTimeoutMs = options.readTimeoutMs ?? 5_000;
    if (this.staleAfterMs < this.refreshIntervalMs) throw new RangeError('staleAfterMs must be at least refreshIntervalMs');
  }

  /** Reads once (bounded by readTimeoutMs), then keeps refreshing in the background. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.refresh();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One round over every method; concurrent calls share the round in progress. */
  refresh(): Promise<void> {
    this.running ??= Promise.all(this.methods.map((method) => this.refreshOne(method))).then(
      () => {
        this.running = null;
      },
      () => {
        this.running = null;
      },
    );
    return this.running;
  }

  latest(method: PaymentMethod): { readonly amount: Decimal; readonly readAtMs: number } | null {
    const reading = this.fresh(method);
    return reading === null ? null : { amount: reading.amount, readAtMs: reading.readAtMs };
  }

  available(method: PaymentMethod): boolean {
    return this.fresh(method)?.available ?? false;
  }

  health(method: PaymentMethod): LiquidityHealth {
    const reading = this.readings.get(method);
    const failure = this.failures.get(method);
    return {
      method,
      state: reading === undefined ? 'unknown' : this.fresh(method) === null ? 'stale' : 'fresh',
      readAtMs: reading?.readAtMs ?? null,
      consecutiveFailures: failure?.count ?? 0,
      lastError: failure?.lastError ?? null,
    };
  }

  private fresh(method: PaymentMethod): Reading | null {
    const reading = this.readings.get(method);
    if (reading === undefined) return null;
    return this.options.clock.nowMs() - reading.readAtMs <= this.staleAfterMs ? reading : null;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.refresh().then(
        () => this.schedule(),
        () => this.schedule(),
      );
    }, this.refreshIntervalMs);
    this.timer.unref();
  }

  private async refreshOne(method: PaymentMethod): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`liquidity read timed out after ${this.readTimeoutMs} ms`)), this.readTimeoutMs);
    });
    try {
      const read = await Promise.race([this.options.source.read(method), timeout]);
      this.readings.set(method, { amount: read.amount, available: read.available, readAtMs: this.options.clock.nowMs() });
      this.failures.delete(method);
    } catch (error) {
      const previous = this.failures.get(method);
      const count = (previous?.count ?? 0) + 1;
      const lastError = error instanceof Error ? error.message : String(error);
      this.failures.set(method, { count, lastError });
      // The last good reading stays until it is stale; a failed read is never a zero.
      this.options.log?.(count >= 3 ? 'error' : 'warn', 'liquidity read failed; keeping the last good reading', {
        method,
        consecutiveFailures: count,
        error: lastError,
      });
    } finally {
      clearTimeout(timer);
    }
  }
}
