// KYC records: one actor per partner × user. A complete valid submission is approved at once
// (no manual review queue); the `kyc` read model answers GET /kyc/status and the acceptance's
// KYC standing. The document itself is stored as a private blob before the command is sent; the
// record keeps only its storage key.
import { decideKyc, evolveKyc, kycStatusView, type KycCommand, type KycState } from '../domain/kyc.ts';
import type { ActorBehavior, JsonValue } from './envelope.ts';
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

export function kycBehavior(): ActorBehavior<KycState> {
  return {
    type: kycActorType,
    encode: (state) => toJsonValue(state),
    decode: (json) => fromJsonValue<KycState>(json),
    handle(state, envelope, ctx) {
      const command = fromJsonValue<KycCommand>(envelope.payload);
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
