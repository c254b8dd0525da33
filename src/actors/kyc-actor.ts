// KYC records: one actor per partner × user. A complete valid submission is approved at once
// (no manual review queue); the `kyc` read model answers GET /kyc/status and the acceptance's
// KYC standing. The document itself is stored as a private blob before the command is sent; the
// record keeps only its storage key, one document per record: a reply names the document the record
// holds (`documentRef`) and the one a submission replaced (`supersededRef`), so the shell deletes
// every upload the record does not hold (a refusal, a resubmission of an approved user) and the
// superseded document.
import { decideKyc, evolveKyc, kycStatusView, type KycCommand, type KycState, type KycSubmission } from '../domain/kyc.ts';
import { isSealedValue, openText, sealText, type DataKeyring } from '../store/data-encryption.ts';
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
  | {
      readonly ok: true;
      readonly status: string;
      /** The document the record holds after the command (absent in replies recorded before it was named). */
      readonly documentRef?: string;
      /** The document this command replaced: nothing refers to it any more. */
      readonly supersededRef?: string;
    }
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

/** What the personal fields are sealed for: a sealed submission copied to another record does not open. */
function sealContext(state: { readonly partnerId: string; readonly userId: string }): string {
  return `kyc-submission\0${state.partnerId}\0${state.userId}`;
}

/**
 * The snapshot: the personal fields (the whole submission, the document's key included) are sealed
 * under the data key (src/store/data-encryption.ts); status and ids stay readable. A snapshot
 * written before encryption at rest (a plain submission) is read as it is and sealed on its next write.
 */
export function encodeKycState(keys: DataKeyring, state: KycState): JsonValue {
  const submission = sealText(keys, sealContext(state), JSON.stringify(toJsonValue(state.submission)));
  return toJsonValue({ ...state, submission });
}

export function decodeKycState(keys: DataKeyring, json: JsonValue): KycState {
  const raw = fromJsonValue<Omit<KycState, 'submission'> & { submission: unknown }>(json);
  if (!isSealedValue(raw.submission)) return raw as KycState;
  const submission = fromJsonValue<KycSubmission>(JSON.parse(openText(keys, sealContext(raw), raw.submission)) as JsonValue);
  return { ...raw, submission };
}

export function kycBehavior(keys: DataKeyring): ActorBehavior<KycState, KycCommands> {
  return {
    type: kycActorType,
    encode: (state) => encodeKycState(keys, state),
    decode: (json) => decodeKycState(keys, json),
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
      const held = next.submission.documentRef;
      if (next === state) return { reply: { ok: true, status: view.status ?? 'PENDING', documentRef: held } };
      const previous = state?.submission.documentRef;
      const superseded = previous !== undefined && previous !== held ? { supersededRef: previous } : {};
      return {
        state: next,
        reply: { ok: true, status: view.status ?? 'PENDING', documentRef: held, ...superseded },
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
