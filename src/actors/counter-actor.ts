// Limit counters: one actor per window key (user × method × day, method × day, partner × user ×
// month of KYC volume, partner KYB total). Being the only writer of its key, a counter makes each
// cap exact under any concurrency: reservations are applied one at a time against durable state.
// Results go back to the asking transaction as a `reservation_result` command (the acceptance
// saga runs in the transaction actor).
import type { PaymentMethod } from '../domain/assets.ts';
import {
  checkKybCap,
  commit,
  emptyCounter,
  release,
  reserveKycMonth,
  reserveMethodDay,
  reserveUserDay,
  type AcceptanceRejection,
  type CounterState,
  type KycStanding,
  type LimitsConfig,
} from '../domain/limits.ts';
import type { Decimal } from '../domain/money.ts';
import type { ActorBehavior, CommandToSend, JsonValue } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export const counterActorType = 'counter';

export type CounterWindow = 'userDay' | 'methodDay' | 'kycMonth' | 'kyb';

export type CounterCommand =
  | {
      readonly kind: 'reserve';
      readonly window: CounterWindow;
      readonly transactionId: string;
      readonly amount: Decimal;
      readonly method: PaymentMethod;
      readonly standing?: KycStanding;
      readonly kybApproved?: boolean;
    }
  | { readonly kind: 'release'; readonly transactionId: string }
  | { readonly kind: 'commit'; readonly transactionId: string; readonly amount: Decimal };

export type ReservationOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly rejection: AcceptanceRejection }
  | { readonly ok: false; readonly kycRequired: true };

export interface ReservationResultPayload {
  readonly window: CounterWindow;
  readonly outcome: ReservationOutcome;
}

/** The kind of the command a counter sends back to the transaction that asked. */
export const reservationResultKind = 'reservation_result';

export function counterCommand(command: CounterCommand): JsonValue {
  return toJsonValue(command);
}

function resultTo(transactionId: string, payload: ReservationResultPayload): CommandToSend {
  return { actorType: 'transaction', actorKey: transactionId, kind: reservationResultKind, payload: toJsonValue(payload) };
}

function reserveIn(state: CounterState, limits: LimitsConfig, command: Extract<CounterCommand, { kind: 'reserve' }>) {
  const counted = { transactionId: command.transactionId, amount: command.amount };
  switch (command.window) {
    case 'userDay':
      return reserveUserDay(state, limits, command.method, counted);
    case 'methodDay':
      return reserveMethodDay(state, limits, command.method, counted);
    case 'kycMonth': {
      const standing = command.standing ?? { kycEnabled: false, kycApproved: false };
      const result = reserveKycMonth(state, limits, standing, counted);
      return result.ok ? result : { ok: false as const, kycRequired: true as const };
    }
    case 'kyb': {
      // The KYB total counts completed transactions only (spec): this is a check, not a reservation.
      const check = checkKybCap(limits, { kybApproved: command.kybApproved ?? false, completedTotal: completedTotal(state) }, command.amount);
      return check.ok ? { ok: true as const, state } : check;
    }
  }
}

function completedTotal(state: CounterState): Decimal {
  return state.reservedAmount;
}

export function counterBehavior(deps: { limits(): LimitsConfig }): ActorBehavior<CounterState> {
  return {
    type: counterActorType,
    encode: (state) => toJsonValue(state),
    decode: (json) => fromJsonValue<CounterState>(json),
    handle(current, envelope) {
      const state = current ?? emptyCounter();
      const command = fromJsonValue<CounterCommand>(envelope.payload);
      switch (command.kind) {
        case 'reserve': {
          const result = reserveIn(state, deps.limits(), command);
          const outcome: ReservationOutcome = result.ok
            ? { ok: true }
            : 'kycRequired' in result
              ? { ok: false, kycRequired: true }
              : { ok: false, rejection: result.rejection };
          return {
            ...(result.ok && result.state !== state ? { state: result.state } : {}),
            send: [resultTo(command.transactionId, { window: command.window, outcome })],
          };
        }
        case 'release': {
          const next = release(state, command.transactionId);
          return next === state ? {} : { state: next };
        }
        case 'commit': {
          const next = commit(state, { transactionId: command.transactionId, amount: command.amount });
          return next === state ? {} : { state: next };
        }
      }
    },
  };
}
