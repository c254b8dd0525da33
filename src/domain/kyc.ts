// The KYC record of one partner × user, pure: decide(state, command, ctx) → events or a typed
// rejection, evolve(state, event) → state. `null` is "never submitted". A complete submission that
// passes every check is APPROVED at once (the spec: no manual review queue). PENDING and
// PENDING_APPROVAL are representable (records carried over from elsewhere) but never produced here.
// Field rules and what happens on resubmission: docs/decisions-states.md.
//
// The record holds personal data: callers must never log it. The document itself is stored by the
// shell under `documentRef`; only that key reaches the domain.

export const kycStatuses = ['PENDING', 'PENDING_APPROVAL', 'APPROVED', 'REJECTED'] as const;
export type KycStatus = (typeof kycStatuses)[number];

export const documentTypes = ['NATIONAL_ID', 'PASSPORT', 'DRIVERS_LICENSE', 'FOREIGN_ID', 'OTHER'] as const;
export type DocumentType = (typeof documentTypes)[number];

/** Maximum lengths in Unicode code points, after trimming. */
export const kycFieldLengthMax = {
  fullName: 200,
  documentNumber: 64,
  nationality: 64,
  city: 100,
  address: 300,
  email: 254,
  phone: 32,
  documentRef: 512,
} as const;

/** Digits in a phone number: E.164 allows at most 15; fewer than 7 is not a reachable number. */
export const phoneDigitsMin = 7;
export const phoneDigitsMax = 15;
/** Earliest accepted date of birth: anything before is a typo, not a person. */
export const dateOfBirthMin = '1900-01-01';

/** A validated, trimmed submission (without the document bytes). */
export interface KycSubmission {
  readonly fullName: string;
  readonly documentType: DocumentType;
  readonly documentNumber: string;
  /** YYYY-MM-DD. */
  readonly dateOfBirth: string;
  readonly nationality: string;
  readonly city: string;
  readonly address: string;
  readonly email: string;
  readonly phone: string;
  /** Storage key of the private document image. */
  readonly documentRef: string;
}

/** The submission as received: any field may be missing. */
export type KycSubmissionInput = { readonly [Field in keyof KycSubmission]?: string | undefined };

/** Field names as the partner sends them; `documentRef` is reported as `document`. */
export type KycField = Exclude<keyof KycSubmission, 'documentRef'> | 'document';

export type KycFieldErrorReason =
  | 'missing'
  | 'too_long'
  | 'invalid_characters'
  | 'invalid_format'
  | 'invalid_value'
  | 'not_in_past';

export interface KycFieldError {
  readonly field: KycField;
  readonly reason: KycFieldErrorReason;
  /** Human-readable, for the 400 body; never echoes the value. */
  readonly message: string;
}

export interface KycState {
  readonly partnerId: string;
  readonly userId: string;
  readonly status: KycStatus;
  readonly submission: KycSubmission;
  readonly submittedAtMs: number;
  readonly decidedAtMs: number | null;
  readonly updatedAtMs: number;
  /** Set when an operator rejects the record. */
  readonly rejectionReason: string | null;
}

export type KycCommand =
  | {
      readonly kind: 'Submit';
      readonly partnerId: string;
      readonly userId: string;
      readonly submission: KycSubmissionInput;
    }
  /** Operations only (admin service): e.g. a document found to be forged. */
  | { readonly kind: 'Reject'; readonly reason: string };

export type KycCommandKind = KycCommand['kind'];

export type KycEvent =
  | {
      readonly type: 'Approved';
      readonly atMs: number;
      readonly partnerId: string;
      readonly userId: string;
      readonly submission: KycSubmission;
    }
  | { readonly type: 'Rejected'; readonly atMs: number; readonly reason: string };

export type KycRejection =
  | { readonly code: 'invalid_submission'; readonly errors: readonly KycFieldError[] }
  /** An operator rejected this user; a new submission does not lift that. */
  | { readonly code: 'previously_rejected' }
  | { readonly code: 'not_found'; readonly command: KycCommandKind };

export type KycDecision =
  | { readonly ok: true; readonly events: readonly KycEvent[] }
  | { readonly ok: false; readonly rejection: KycRejection };

export interface KycDecideContext {
  readonly nowMs: number;
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`kyc invariant violated: ${what}`);
}

/**
 * Submit: REJECTED refuses; otherwise the submission is validated (every field, all errors at
 * once); APPROVED stays APPROVED with no events; null, PENDING and PENDING_APPROVAL are approved.
 * Reject: needs a record; REJECTED again is a no-op.
 */
export function decideKyc(state: KycState | null, command: KycCommand, ctx: KycDecideContext): KycDecision {
  assert(Number.isSafeInteger(ctx.nowMs) && ctx.nowMs >= 0, 'nowMs is a non-negative integer');
  const nowMs = Math.max(ctx.nowMs, state?.updatedAtMs ?? 0);
  switch (command.kind) {
    case 'Submit': {
      if (state !== null) {
        assert(state.partnerId === command.partnerId && state.userId === command.userId, 'record key');
      }
      if (state?.status === 'REJECTED') return { ok: false, rejection: { code: 'previously_rejected' } };
      const validation = validateKycSubmission(command.submission, nowMs);
      if (!validation.ok) return { ok: false, rejection: { code: 'invalid_submission', errors: validation.errors } };
      if (state?.status === 'APPROVED') return { ok: true, events: [] };
      const { partnerId, userId } = command;
      return { ok: true, events: [{ type: 'Approved', atMs: nowMs, partnerId, userId, submission: validation.value }] };
    }
    case 'Reject': {
      if (state === null) return { ok: false, rejection: { code: 'not_found', command: 'Reject' } };
      if (state.status === 'REJECTED') return { ok: true, events: [] };
      assert(command.reason.trim() !== '', 'an operator rejection names its reason');
      return { ok: true, events: [{ type: 'Rejected', atMs: nowMs, reason: command.reason.trim() }] };
    }
  }
}

export function evolveKyc(state: KycState | null, event: KycEvent): KycState {
  let next: KycState;
  switch (event.type) {
    case 'Approved':
      assert(state === null || (state.status !== 'APPROVED' && state.status !== 'REJECTED'), 'approve from new/pending');
      next = {
        partnerId: event.partnerId,
        userId: event.userId,
        status: 'APPROVED',
        submission: event.submission,
        submittedAtMs: event.atMs,
        decidedAtMs: event.atMs,
        updatedAtMs: Math.max(event.atMs, state?.updatedAtMs ?? 0),
        rejectionReason: null,
      };
      break;
    case 'Rejected':
      assert(state !== null && state.status !== 'REJECTED', 'reject an existing, not yet rejected record');
      next = {
        ...state,
        status: 'REJECTED',
        decidedAtMs: event.atMs,
        updatedAtMs: Math.max(event.atMs, state.updatedAtMs),
        rejectionReason: event.reason,
      };
      break;
  }
  assertKycInvariants(next);
  return next;
}

export function assertKycInvariants(state: KycState): void {
  assert(kycStatuses.includes(state.status), `status ${String(state.status)}`);
  assert(state.submittedAtMs <= state.updatedAtMs, 'updated after submitted');
  const decided = state.status === 'APPROVED' || state.status === 'REJECTED';
  assert(decided === (state.decidedAtMs !== null), 'decision time iff decided');
  assert((state.status === 'REJECTED') === (state.rejectionReason !== null), 'rejection reason iff rejected');
}

export interface KycStatusView {
  readonly hasApproved: boolean;
  readonly status: KycStatus | null;
}

/** `GET /kyc/status`. hasApproved is the current status being APPROVED (a later rejection revokes it). */
export function kycStatusView(state: KycState | null): KycStatusView {
  return { hasApproved: state?.status === 'APPROVED', status: state?.status ?? null };
}

// ---------------------------------------------------------------------------------------------
// Validation

export type KycValidation =
  | { readonly ok: true; readonly value: KycSubmission }
  | { readonly ok: false; readonly errors: readonly KycFieldError[] };

type TextField = keyof typeof kycFieldLengthMax;

/** Every field is checked and every error reported, in the order of the spec's form table. */
export function validateKycSubmission(input: KycSubmissionInput, nowMs: number): KycValidation {
  const errors: KycFieldError[] = [];
  const fail = (field: KycField, reason: KycFieldErrorReason, message: string): null => {
    errors.push({ field, reason, message });
    return null;
  };
  const text = (field: TextField, reportAs: KycField = field as KycField): string | null => {
    const value = input[field]?.trim() ?? '';
    if (value === '') return fail(reportAs, 'missing', `${reportAs} is required`);
    if ([...value].length > kycFieldLengthMax[field]) {
      return fail(reportAs, 'too_long', `${reportAs} must be at most ${kycFieldLengthMax[field]} characters`);
    }
    if (hasControlCharacters(value)) return fail(reportAs, 'invalid_characters', `${reportAs} has control characters`);
    return value;
  };

  const document = text('documentRef', 'document');
  const fullName = text('fullName');
  const documentType = checkDocumentType(input.documentType, fail);
  const documentNumber = text('documentNumber');
  const dateOfBirth = checkDateOfBirth(input.dateOfBirth, nowMs, fail);
  const nationality = text('nationality');
  const city = text('city');
  const address = text('address');
  let email = text('email');
  if (email !== null && !isEmail(email)) email = fail('email', 'invalid_format', 'email is not a valid e-mail address');
  let phone = text('phone');
  if (phone !== null && !isPhone(phone)) {
    phone = fail('phone', 'invalid_format', `phone must have ${phoneDigitsMin}–${phoneDigitsMax} digits`);
  }
  if (
    document === null || fullName === null || documentType === null || documentNumber === null ||
    dateOfBirth === null || nationality === null || city === null || address === null ||
    email === null || phone === null
  ) {
    assert(errors.length > 0, 'a missing value has its error');
    return { ok: false, errors };
  }
  const value: KycSubmission = {
    fullName, documentType, documentNumber, dateOfBirth, nationality, city, address, email, phone,
    documentRef: document,
  };
  return { ok: true, value };
}

type Fail = (field: KycField, reason: KycFieldErrorReason, message: string) => null;

function checkDocumentType(input: string | undefined, fail: Fail): DocumentType | null {
  const value = input?.trim() ?? '';
  if (value === '') return fail('documentType', 'missing', 'documentType is required');
  const found = documentTypes.find((candidate) => candidate === value);
  return found ?? fail('documentType', 'invalid_value', `documentType must be one of ${documentTypes.join(', ')}`);
}

/**
 * An ISO 8601 date-time (`1990-02-28T00:00:00Z`, `…T13:45+02:00`) names a day too: the spec asks
 * for a date "parseable as a date", so it is read as its calendar date, as written (a date of birth
 * has no time zone). Other formats stay refused: `28/02/1990` and `02/28/1990` cannot be told apart.
 */
const isoDateTimeSuffix = /^T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function checkDateOfBirth(input: string | undefined, nowMs: number, fail: Fail): string | null {
  const raw = input?.trim() ?? '';
  if (raw === '') return fail('dateOfBirth', 'missing', 'dateOfBirth is required');
  const value = raw.length > 10 && isoDateTimeSuffix.test(raw.slice(10)) ? raw.slice(0, 10) : raw;
  const day = parseIsoDate(value);
  if (day === null) return fail('dateOfBirth', 'invalid_format', 'dateOfBirth must be a date as YYYY-MM-DD (or an ISO 8601 date-time)');
  const earliest = parseIsoDate(dateOfBirthMin);
  assert(earliest !== null, 'dateOfBirthMin parses');
  if (day < earliest) return fail('dateOfBirth', 'invalid_value', `dateOfBirth must not be before ${dateOfBirthMin}`);
  if (day >= utcDayOf(nowMs)) return fail('dateOfBirth', 'not_in_past', 'dateOfBirth must be in the past');
  return value;
}

const msPerDay = 86_400_000;

/** Days since 1970-01-01 of the UTC calendar day containing `epochMs`. */
export function utcDayOf(epochMs: number): number {
  return Math.floor(epochMs / msPerDay);
}

/**
 * Days since 1970-01-01 of a strict YYYY-MM-DD date (proleptic Gregorian), or null when the text
 * is not one or names no real day (2023-02-29, 2024-13-01). No Date object is involved.
 */
export function parseIsoDate(text: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (match === null) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return daysFromCivil(year, month, day);
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Howard Hinnant's days_from_civil: days since 1970-01-01. */
function daysFromCivil(year: number, month: number, day: number): number {
  const shiftedYear = month <= 2 ? year - 1 : year;
  const era = Math.floor(shiftedYear / 400);
  const yearOfEra = shiftedYear - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

function hasControlCharacters(text: string): boolean {
  for (const character of text) {
    const code = character.codePointAt(0) ?? 0;
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029) return true;
  }
  return false;
}

const emailLocalPart = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const domainLabel = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * A pragmatic address check (the dot-atom form of RFC 5322 with an RFC 1035 host name): one '@',
 * a local part of at most 64 characters without leading, trailing or doubled dots, and a domain
 * of at least two labels whose last is not all digits. Quoted local parts, IP-literal domains and
 * non-ASCII addresses are refused (IDN domains work in their xn-- form).
 */
export function isEmail(text: string): boolean {
  if (text.length > kycFieldLengthMax.email) return false;
  const at = text.lastIndexOf('@');
  if (at <= 0 || at !== text.indexOf('@')) return false;
  const local = text.slice(0, at);
  const labels = text.slice(at + 1).split('.');
  if (local.length > 64 || !emailLocalPart.test(local)) return false;
  if (labels.length < 2 || !labels.every((label) => domainLabel.test(label))) return false;
  return !/^\d+$/.test(labels[labels.length - 1] ?? '');
}

/** Digits with an optional leading '+' and the usual separators (space, '-', '.', parentheses). */
export function isPhone(text: string): boolean {
  if (!/^\+?[0-9 ().-]+$/.test(text)) return false;
  const digits = text.replace(/\D/g, '').length;
  return digits >= phoneDigitsMin && digits <= phoneDigitsMax;
}

/** The same functions under the generic decide/evolve names, for `import * as kyc`. */
export { decideKyc as decide, evolveKyc as evolve };
