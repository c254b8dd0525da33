// No deposit address is handed to a partner before we know we can sweep it. On Celo an address is a
// CREATE2 forwarder of the configured factory: if that factory is not deployed, or deploys another
// forwarder than this build's, whatever a partner sends to the address can never be moved. So a
// network whose port can verify its setup (`verifySetup`) gets its addresses into payment_context
// only once that check has passed:
// - at start the check is awaited (bounded); a definite misconfiguration (DepositSetupError) stops
//   start-up with its message;
// - when the chain cannot answer at start, the network is "not verified yet": acceptances on it
//   answer 503 (no deposit instructions), and each such request may start a new check, at most one
//   every `recheckEveryMs`, until one passes. No timer runs: the checks follow demand.
import type { Logger } from 'pino';
import type { Network } from '../domain/assets.ts';
import { DepositSetupError, type PerTransactionDeposits } from './deposit-addresses.ts';

export interface DepositSetupGateOptions {
  readonly nowMs: () => number;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  /** How long start-up waits for each network's check. */
  readonly startCheckMs?: number;
  /** Least time between two checks of a network that is not verified yet. */
  readonly recheckEveryMs?: number;
}

type GateState = { verified: boolean; checking: boolean; lastCheckAtMs: number };

export class DepositSetupGate {
  private readonly states = new Map<Network, GateState>();
  private readonly startCheckMs: number;
  private readonly recheckEveryMs: number;

  constructor(
    private readonly ports: ReadonlyMap<Network, PerTransactionDeposits>,
    private readonly options: DepositSetupGateOptions,
  ) {
    this.startCheckMs = options.startCheckMs ?? 10_000;
    this.recheckEveryMs = options.recheckEveryMs ?? 10_000;
  }

  /**
   * Checks every port that can verify its setup. Rejects (stopping start-up) on a definite
   * misconfiguration; a chain that does not answer in time leaves its network unverified.
   */
  async start(): Promise<void> {
    await Promise.all(
      [...this.ports].map(async ([network, port]) => {
        if (port.verifySetup === undefined) return;
        const state: GateState = { verified: false, checking: true, lastCheckAtMs: this.options.nowMs() };
        this.states.set(network, state);
        const outcome = await this.check(network, port, state, this.startCheckMs);
        if (outcome instanceof DepositSetupError) throw new Error(`chains file: ${network}: ${outcome.message}`);
      }),
    );
  }

  /** Whether `network`'s addresses may be handed out now (a network without a check always may). */
  ready(network: Network): boolean {
    const state = this.states.get(network);
    if (state === undefined || state.verified) return true;
    const port = this.ports.get(network);
    const nowMs = this.options.nowMs();
    if (port !== undefined && !state.checking && nowMs - state.lastCheckAtMs >= this.recheckEveryMs) {
      state.checking = true;
      state.lastCheckAtMs = nowMs;
      void this.check(network, port, state, Number.POSITIVE_INFINITY);
    }
    return false;
  }

  /** Runs one check; resolves with the DepositSetupError of a misconfiguration, else null. */
  private async check(network: Network, port: PerTransactionDeposits, state: GateState, waitMs: number): Promise<DepositSetupError | null> {
    let timer: NodeJS.Timeout | undefined;
    const verify = port.verifySetup?.() ?? Promise.resolve();
    const timedOut = new Promise<'timeout'>((resolve) => {
      if (Number.isFinite(waitMs)) timer = setTimeout(() => resolve('timeout'), waitMs);
    });
    try {
      const result = await Promise.race([verify.then(() => 'ok' as const), timedOut]);
      if (result === 'ok') {
        if (!state.verified) this.options.log.info({ network }, 'per-transaction deposit setup verified: deposit addresses are handed out');
        state.verified = true;
        return null;
      }
      this.options.log.warn({ network }, 'per-transaction deposit setup not verified yet (the chain did not answer in time): acceptances on this network answer 503 until it is');
      // The slow check goes on; its outcome still counts.
      verify.then(() => (state.verified = true), () => undefined);
      return null;
    } catch (error) {
      if (error instanceof DepositSetupError) {
        this.options.log.warn({ network, reason: error.message }, 'per-transaction deposit setup is wrong: no deposit address of this network is handed out');
        return error;
      }
      this.options.log.warn({ network, error: error instanceof Error ? error.message : String(error) }, 'per-transaction deposit setup not verified yet (the chain could not answer): acceptances on this network answer 503 until it is');
      return null;
    } finally {
      clearTimeout(timer);
      state.checking = false;
    }
  }
}
