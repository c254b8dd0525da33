// GET /kyc/status and POST /kyc (multipart). The document is checked by its bytes (magic numbers
// must match the declared type), stored as a private blob under a random key, and only that key
// reaches the KYC actor. Neither the document, its key nor the personal fields are ever returned
// or logged. The form is validated before anything is stored, so a refused form leaves no blob.
import { createHash, randomUUID } from 'node:crypto';
import type { JsonValue } from '../../actors/envelope.ts';
import { kycActorType, kycCollection, kycKey, type KycReply } from '../../actors/kyc-actor.ts';
import { toJsonValue } from '../../actors/state-codec.ts';
import { validateKycSubmission, type KycCommand, type KycFieldError, type KycSubmissionInput } from '../../domain/kyc.ts';
import { errorResponse } from '../errors.ts';
import { knownFields } from '../idempotency.ts';
import { jsonResponse, type HttpResponse, type RequestContext, type Route } from '../http.ts';
import { checkDocumentType } from '../magic-bytes.ts';
import { kycUploadBodyBytesMax, parseMultipart } from '../multipart.ts';
import { kycFormSchema, parseWith, userIdQuerySchema } from '../schemas.ts';
import { askOr503, idOf, idempotentPost, partnerOf, userIdFits, userIdTooLong, type EdgeEnv } from './common.ts';

/** Text fields of the form besides `userId` (the spec's table), in its order. */
const submissionFields = ['fullName', 'documentType', 'documentNumber', 'dateOfBirth', 'nationality', 'city', 'address', 'email', 'phone'] as const;

function submissionOf(fields: Readonly<Record<string, string>>, documentRef: string): KycSubmissionInput {
  const submission: Record<string, string | undefined> = { documentRef };
  for (const name of submissionFields) submission[name] = fields[name];
  return submission as KycSubmissionInput;
}

function fieldErrorsReason(errors: readonly KycFieldError[]): string {
  return `Invalid KYC submission: ${errors.map((error) => error.message).join('; ')}`;
}

async function kycStatus(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const parsed = parseWith(userIdQuerySchema, request.query, 'query');
  if (!parsed.ok) return errorResponse('invalid_request', parsed.reason);
  const { userId } = parsed.value;
  if (!userIdFits(partnerId, userId)) return userIdTooLong('userId');
  const doc = await env.ctx.store.get(kycCollection, kycKey(partnerId, userId));
  const status = typeof doc?.['status'] === 'string' ? doc['status'] : null;
  return jsonResponse(200, { hasApproved: status === 'APPROVED', status });
}

async function submitKyc(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const form = await parseMultipart(request.headers['content-type'], request.body, { fileFieldName: 'document' });
  if (!form.ok) return form.response;
  const { fields, file } = form.value;
  const user = parseWith(kycFormSchema, fields, 'form');
  if (!user.ok) return errorResponse('invalid_request', user.reason);
  const { userId } = user.value;
  if (!userIdFits(partnerId, userId)) return userIdTooLong('userId');
  const documentCheck = checkDocumentType(file.declaredType, file.bytes);
  if (!documentCheck.ok) return errorResponse('invalid_request', `document: ${documentCheck.reason}`);
  // Every field error at once, before the document is stored (the actor validates again).
  const validation = validateKycSubmission(submissionOf(fields, 'pending'), env.ctx.clock.nowMs());
  if (!validation.ok) return errorResponse('invalid_request', fieldErrorsReason(validation.errors));
  const documentDigest = createHash('sha256').update(file.bytes).digest('hex');
  // The fields the form is read for (another field is ignored, so it does not make a retry another
  // request), with userId in its normal form.
  const canonical = { fields: { ...knownFields(fields, submissionFields), userId }, document: { type: documentCheck.type, sha256: documentDigest } };
  return idempotentPost(
    env,
    request,
    partnerId,
    canonical,
    () => ({ documentRef: `kyc-document:${randomUUID()}`, commandId: randomUUID() }),
    async (ids) => {
      const documentRef = idOf(ids, 'documentRef');
      await env.ctx.store.putBlob(documentRef, file.bytes);
      const command: KycCommand = { kind: 'Submit', partnerId, userId, submission: submissionOf(fields, documentRef) };
      const asked = await askOr503(() =>
        env.actors.ask<KycReply>(kycActorType, kycKey(partnerId, userId), 'Submit', toJsonValue(command) as JsonValue, idOf(ids, 'commandId')),
      );
      if (!asked.ok) return asked.response;
      const reply = asked.value;
      if (reply.ok) return jsonResponse(201, { status: reply.status });
      if (reply.code === 'previously_rejected') return errorResponse('kyc_rejected');
      if (reply.code === 'invalid_submission') return errorResponse('invalid_request', 'Invalid KYC submission');
      return errorResponse('invalid_request', 'The KYC submission could not be accepted');
    },
  );
}

export function kycRoutes(env: EdgeEnv): Route[] {
  const guard = env.partnerGuard;
  return [
    { method: 'GET', pattern: '/kyc/status', guard, handler: (request) => kycStatus(env, request) },
    { method: 'POST', pattern: '/kyc', guard, bodyBytesMax: kycUploadBodyBytesMax, handler: (request) => submitKyc(env, request) },
  ];
}
