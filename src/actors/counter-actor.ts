// Limit counters: one actor per window key (user × method × day, method × day, partner × user ×
// month of KYC volume, partner KYB total). Being the only writer of its key, a counter makes each
// cap exact under any concurrency: reservations are applied one at a time against durable state.
// Results go back to the asking transaction as a `reservation_result` command (the acceptance
// saga runs in the transaction actor).
//
// The method × day counter is one key for the whole service, so its snapshot is written on every
// command it answers, refusals included: the snapshot format (counter-snapshot.ts: totals in the
// snapshot, each bucket of src/domain/counter.ts a part of its own, src/actors/actor-parts.ts)
// keeps that write to what the command changed.
import { answerReserve, type CounterWindow, type ReservationOutcome, type WindowReservation } from '../domain/acceptance.ts';
import { commit, emptyCounter, release, type CounterState, type LimitsConfig } from '../domain/limits.ts';
import type { Decimal } from '../domain/money.ts';
import { counterPartNames, counterParts, decodeCounter, encodeCounter, noteReserved } from './counter-snapshot.ts';
import { z } from 'zod';
import { amountSchema, decoderOf, idText, paymentMethodSchema } from './commands.ts';
import type { ActorBehavior, CommandMap, CommandToSend, JsonValue } from './envelope.ts';
import { toJsonValue } from './state-codec.ts';

export type { CounterWindow, ReservationOutcome } from '../domain/acceptance.ts';

export const counterActorType = 'counter';

/** `reserve`: the window's reservation as the acceptance saga builds it (`windowReservation`). */
export type CounterCommand =
  | ({ readonly kind: 'reserve' } & WindowReservation)
  | { readonly kind: 'release'; readonly transactionId: string }
  | { readonly kind: 'commit'; readonly transactionId: string; readonly amount: Decimal };

export interface ReservationResultPayload {
  readonly window: CounterWindow;
  readonly outcome: ReservationOutcome;
}

type ReserveCommand = Extract<CounterCommand, { kind: 'reserve' }>;

/** A counter's commands (the kind is also in the payload, as `counterCommand` writes it). */
export type CounterCommands = {
  readonly reserve: ReserveCommand;
  readonly release: Extract<CounterCommand, { kind: 'release' }>;
  readonly commit: Extract<CounterCommand, { kind: 'commit' }>;
};

const counterWindowSchema = z.enum(['userDay', 'methodDay', 'kycMonth', 'kyb']);

export const counterCommands: CommandMap<CounterCommands> = {
  reserve: decoderOf<ReserveCommand>(
    z.object({
      kind: z.literal('reserve'),
      window: counterWindowSchema,
      transactionId: idText,
      amount: amountSchema,
      method: paymentMethodSchema,
      standing: z.object({ kycEnabled: z.boolean(), kycApproved: z.boolean() }).exactOptional(),
      kybApproved: z.boolean().exactOptional(),
    }),
  ),
  release: decoderOf(z.object({ kind: z.literal('release'), transactionId: idText })),
  commit: decoderOf(z.object({ kind: z.literal('commit'), transactionId: idText, amount: amountSchema })),
};

/** The kind of the command a counter sends back to the transaction that asked. */
export const reservationResultKind = 'reservation_result';

export function counterCommand(command: CounterCommand): JsonValue {
  return toJsonValue(command);
}

function resultTo(transactionId: string, payload: ReservationResultPayload): CommandToSend {
  return { actorType: 'transaction', actorKey: transactionId, kind: reservationResultKind, payload: toJsonValue(payload) };
}

export {
  counterDecodeMemo,
  counterPartNames,
  counterPartToRead,
  counterParts,
  decodeCounter,
  decodeCounterForTransaction,
  decodeCounterTotals,
  encodeCounter,
  type CounterDecodeMemo,
} from './counter-snapshot.ts';

export function counterBehavior(deps: { limits(): LimitsConfig }): ActorBehavior<CounterState, CounterCommands> {
  return {
    type: counterActorType,
    encode: encodeCounter,
    // A snapshot of the current format names its buckets as parts: the runtime loads them and
    // decodes through `parts`; `decode` alone reads the earlier formats, which hold their entries.
    decode: (json) => decodeCounter(json),
    parts: { of: counterParts, named: counterPartNames, decode: (json, parts) => decodeCounter(json, parts) },
    commands: counterCommands,
    handle(current, envelope) {
      const state = current ?? emptyCounter();
      const command = envelope.payload;
      switch (command.kind) {
        case 'reserve': {
          const answer = answerReserve(state, deps.limits(), command);
          if (answer.state !== state) noteReserved(state, answer.state, command.transactionId);
          return {
            ...(answer.state !== state ? { state: answer.state } : {}),
            send: [resultTo(command.transactionId, { window: command.window, outcome: answer.outcome })],
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
