// KYC records: one actor per partner × user. A complete valid submission is approved at once
// (no manual review queue); the `kyc` read model answers GET /kyc/status and the acceptance's
// KYC standing. The document itself is stored as a private blob before the command is sent; the
// record keeps only its storage key.
import { decideKyc, evolveKyc, kycStatusView, type KycCommand, type KycState } from '../domain/kyc.ts';
import { z } from 'zod';
import { decoderOf, idText } from './commands.ts';
import type { ActorBehavior, CommandMap, JsonValue } from './envelope.ts';
import { fromJsonValue, toJsonValue } from './state-codec.ts';

export const kycActorType = 'kyc';
export const kycCollection = 'kyc';

/** Actor key and read-model id of a partner's user (user ids are unique within a partner only). */
export function kycKey(partnerId: string, userId: string): string {
  return `${partnerId}:${userId}`;
}

export type KycReply =
  | { readonly ok: true; readonly status: string }
  | { readonly ok: false; readonly code: string; readonly errors?: JsonValue };

/** A KYC record's commands (the kind is also in the payload: the domain command as it is). */
export type KycCommands = { readonly [K in KycCommand['kind']]: Extract<KycCommand, { kind: K }> };

// The submission's fields are checked by the domain (`decideKyc`), which answers each with a
// reason the partner reads: here only that each is text when present.
const submissionField = z.string().exactOptional();

export const kycCommands: CommandMap<KycCommands> = {
  Submit: decoderOf(
    z.object({
      kind: z.literal('Submit'),
      partnerId: idText,
      userId: idText,
      submission: z.object({
        fullName: submissionField,
        documentType: submissionField,
        documentNumber: submissionField,
        dateOfBirth: submissionField,
        nationality: submissionField,
        city: submissionField,
        address: submissionField,
        email: submissionField,
        phone: submissionField,
        documentRef: submissionField,
      }),
    }),
  ),
  Reject: decoderOf(z.object({ kind: z.literal('Reject'), reason: z.string() })),
};

export function kycBehavior(): ActorBehavior<KycState, KycCommands> {
  return {
    type: kycActorType,
    encode: (state) => toJsonValue(state),
    decode: (json) => fromJsonValue<KycState>(json),
    commands: kycCommands,
    handle(state, envelope, ctx) {
      const command = envelope.payload;
      const decision = decideKyc(state, command, { nowMs: ctx.nowMs });
      if (!decision.ok) {
        const { rejection } = decision;
        return {
          reply: {
            ok: false,
            code: rejection.code,
            ...(rejection.code === 'invalid_submission' ? { errors: toJsonValue(rejection.errors) } : {}),
          },
        };
      }
      let next = state;
      for (const event of decision.events) next = evolveKyc(next, event);
      if (next === null) return { reply: { ok: false, code: 'not_found' } };
      const view = kycStatusView(next);
      if (next === state) return { reply: { ok: true, status: view.status ?? 'PENDING' } };
      return {
        state: next,
        reply: { ok: true, status: view.status ?? 'PENDING' },
        readModels: [
          {
            collection: kycCollection,
            id: kycKey(next.partnerId, next.userId),
            doc: { partnerId: next.partnerId, userId: next.userId, status: next.status, hasApproved: view.hasApproved },
          },
        ],
      };
    },
  };
}
