// GET /kyc/status and POST /kyc (multipart, streamed). The document streams to the blob store as
// it arrives (never whole in memory): its first bytes are checked against the declared type (magic
// numbers) before anything is stored, its SHA-256 computed on the way. Only the blob's random key
// reaches the KYC actor. Neither the document, its key nor the personal fields are ever returned
// or logged. A form refused for any reason leaves no blob: the stored document is deleted again.
//
// Under an Idempotency-Key the blob key is one of the request's recorded ids: the first attempt's
// document is the one the actor gets, and a retry's own upload (a replay, a conflict, a request
// still in flight) is deleted once answered, as is the upload of a submission the actor refused.
// Only when the idempotency run threw (the store failed) is an upload kept: the record may name it.
//
// One document per user record: the actor's reply names the document the record holds, so an
// upload it did not take (a resubmission of an approved user, a refusal) is deleted, and so is the
// document a submission replaced. Submissions are counted against the partner's daily quota before
// the body is read, and against the user's once the form names the user (src/edge/kyc-quota.ts):
// 429 `rate_limited` with Retry-After beyond either.
import { createHash, randomUUID } from 'node:crypto';
import type { JsonValue } from '../../actors/envelope.ts';
import { kycActorType, kycCollection, kycKey, type KycReply } from '../../actors/kyc-actor.ts';
import { toJsonValue } from '../../actors/state-codec.ts';
import { validateKycSubmission, type KycCommand, type KycFieldError, type KycSubmissionInput } from '../../domain/kyc.ts';
import type { SnapshotStore } from '../../store/store.ts';
import { errorResponse } from '../errors.ts';
import { knownFields } from '../idempotency.ts';
import { jsonResponse } from '../http-response.ts';
import type { HttpResponse, RequestContext, Route } from '../http-types.ts';
import { checkDocumentType, documentSniffBytes, type DocumentTypeCheck } from '../magic-bytes.ts';
import { kycUploadBodyBytesMax, parseMultipartStream, type StreamedFile } from '../multipart.ts';
import { kycFormSchema, parseWith, userIdQuerySchema } from '../schemas.ts';
import { askOr503, idOf, idempotentPost, partnerOf, userIdFits, userIdTooLong, type EdgeEnv } from './common.ts';

/**
 * One document per stored KYC upload, `{ partnerId, bytes, storedAtMs }`, removed with the blob: whose
 * the bytes are (blob keys name no partner), read by the per-partner storage metric.
 */
export const kycDocumentsCollection = 'kyc_documents';

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

/** What became of the document part: its type check, its SHA-256 and whether it was stored. */
interface DocumentOutcome {
  readonly check: DocumentTypeCheck;
  readonly sha256: string;
  readonly stored: boolean;
}

/** Ends a document stream whose leading bytes are not what was declared (nothing is stored). */
class DocumentRefused extends Error {
  override readonly name = 'DocumentRefused';
  constructor(readonly check: DocumentTypeCheck) {
    super('document refused');
  }
}

/**
 * Streams the file part into the blob store under `ref`, checking its type on the first
 * `documentSniffBytes` before the first byte is written. A refused type stores nothing. A broken
 * form or a store failure propagates (the store has removed what it wrote).
 */
async function storeDocument(store: SnapshotStore, partnerId: string, nowMs: number, ref: string, file: StreamedFile): Promise<DocumentOutcome> {
  const hash = createHash('sha256');
  let check: DocumentTypeCheck | null = null;
  async function* checkedBytes(): AsyncGenerator<Buffer> {
    let head: Buffer[] = [];
    let headBytes = 0;
    for await (const chunk of file.chunks) {
      hash.update(chunk);
      if (check !== null) {
        yield chunk;
        continue;
      }
      head.push(chunk);
      headBytes += chunk.length;
      if (headBytes < documentSniffBytes) continue;
      check = checkDocumentType(file.declaredType, Buffer.concat(head, headBytes));
      if (!check.ok) throw new DocumentRefused(check);
      yield* head;
      head = [];
    }
    if (check === null) {
      check = checkDocumentType(file.declaredType, Buffer.concat(head, headBytes));
      if (!check.ok) throw new DocumentRefused(check);
      yield* head;
    }
  }
  try {
    const bytes = await store.putBlobStream(ref, checkedBytes());
    await store.put(kycDocumentsCollection, ref, { partnerId, bytes, storedAtMs: nowMs });
  } catch (error) {
    if (error instanceof DocumentRefused) return { check: error.check, sha256: '', stored: false };
    throw error;
  }
  if (check === null) throw new Error('document stored without a type check');
  return { check, sha256: hash.digest('hex'), stored: true };
}

/** 429 for a submission beyond a daily quota (nothing of it is kept). */
function quotaExceeded(whose: 'partner' | 'user', retryAfterSeconds: number): HttpResponse {
  return errorResponse('rate_limited', `Too many KYC submissions for this ${whose} today; retry after the Retry-After delay`, {
    'retry-after': String(retryAfterSeconds),
  });
}

/** Removes an upload nothing refers to. */
async function discardUpload(store: SnapshotStore, ref: string): Promise<void> {
  try {
    await store.deleteBlob(ref);
    await store.remove(kycDocumentsCollection, ref);
  } catch {
    // The answer stands; an unreferenced private blob is left (no key to it was ever handed out).
  }
}

async function submitKyc(env: EdgeEnv, request: RequestContext): Promise<HttpResponse> {
  const partnerId = partnerOf(request);
  const store = env.ctx.store;
  if (request.bodyStream === null) throw new Error('POST /kyc must be a streamed route');
  const partnerQuota = await env.kycQuota.takePartner(partnerId);
  if (!partnerQuota.allowed) return quotaExceeded('partner', partnerQuota.retryAfterSeconds);
  const uploadRef = `kyc-document:${randomUUID()}`;
  // Whether the upload must stay: an attempt sent it to the actor, or a record may name it.
  let keep = false;
  try {
    const form = await parseMultipartStream(request.headers['content-type'], request.bodyStream, { fileFieldName: 'document' }, (file) =>
      storeDocument(store, partnerId, env.ctx.clock.nowMs(), uploadRef, file),
    );
    if (!form.ok) return form.response;
    const { fields, file } = form.value;
    const user = parseWith(kycFormSchema, fields, 'form');
    if (!user.ok) return errorResponse('invalid_request', user.reason);
    const { userId } = user.value;
    if (!userIdFits(partnerId, userId)) return userIdTooLong('userId');
    const userQuota = await env.kycQuota.takeUser(partnerId, userId);
    if (!userQuota.allowed) return quotaExceeded('user', userQuota.retryAfterSeconds);
    const document = file.stored;
    if (!document.check.ok) return errorResponse('invalid_request', `document: ${document.check.reason}`);
    // Every field error at once (the actor validates again).
    const validation = validateKycSubmission(submissionOf(fields, 'pending'), env.ctx.clock.nowMs());
    if (!validation.ok) return errorResponse('invalid_request', fieldErrorsReason(validation.errors));
    // The fields the form is read for (another field is ignored, so it does not make a retry another
    // request), with userId in its normal form.
    const canonical = { fields: { ...knownFields(fields, submissionFields), userId }, document: { type: document.check.type, sha256: document.sha256 } };
    keep = true; // until the idempotency run has answered, a record may name this upload
    let sentOurs = false;
    // What the actor's answer left unreferenced: the document sent when the record did not take it
    // (ours, or a first attempt's named by the idempotency record), and the one it replaced.
    const unreferenced: string[] = [];
    const response = await idempotentPost(
      env,
      request,
      partnerId,
      canonical,
      () => ({ documentRef: uploadRef, commandId: randomUUID() }),
      async (ids) => {
        const documentRef = idOf(ids, 'documentRef');
        if (documentRef === uploadRef) sentOurs = true;
        const command: KycCommand = { kind: 'Submit', partnerId, userId, submission: submissionOf(fields, documentRef) };
        const asked = await askOr503(() =>
          env.actors.ask<KycReply>(kycActorType, kycKey(partnerId, userId), 'Submit', toJsonValue(command) as JsonValue, idOf(ids, 'commandId')),
        );
        if (!asked.ok) return asked.response;
        const reply = asked.value;
        // A reply recorded before replies named the document (no documentRef) keeps what was sent.
        const held = reply.ok ? (reply.documentRef ?? documentRef) : null;
        if (held !== documentRef) unreferenced.push(documentRef);
        if (reply.ok && reply.supersededRef !== undefined && reply.supersededRef !== held) unreferenced.push(reply.supersededRef);
        if (reply.ok) return jsonResponse(201, { status: reply.status });
        if (reply.code === 'previously_rejected') return errorResponse('kyc_rejected');
        if (reply.code === 'invalid_submission') return errorResponse('invalid_request', 'Invalid KYC submission');
        return errorResponse('invalid_request', 'The KYC submission could not be accepted');
      },
    );
    // The actor may still apply a submission whose answer did not come (5xx: the retry reuses this
    // upload); an answer says what the record holds.
    keep = sentOurs && !unreferenced.includes(uploadRef) && (response.status < 400 || response.status >= 500);
    for (const ref of unreferenced) if (ref !== uploadRef) await discardUpload(store, ref);
    return response;
  } finally {
    if (!keep) await discardUpload(store, uploadRef);
  }
}

export function kycRoutes(env: EdgeEnv): Route[] {
  const guard = env.partnerGuard;
  return [
    { method: 'GET', pattern: '/kyc/status', guard, handler: (request) => kycStatus(env, request) },
    {
      method: 'POST',
      pattern: '/kyc',
      guard,
      bodyMode: 'streamed',
      bodyBytesMax: kycUploadBodyBytesMax,
      handler: (request) => submitKyc(env, request),
    },
  ];
}
