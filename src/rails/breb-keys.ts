// Bre-B key ("llave") classification and validation (Colombia). Pure: no I/O. Banco de la
// República publishes the key kinds but, as far as we found, no public syntax for them; every
// format below is OUR assumption, chosen so that the kinds never overlap, and is listed in
// docs/decisions-keys.md. The provider's directory lookup is the final word on a key.
import { emailSyntaxValid } from './pix-keys.ts';

export type BrebKeyType = 'document' | 'mobile' | 'email' | 'alphanumeric' | 'merchant_code';

export type BrebKeyErrorCode =
  | 'not_a_string'
  | 'empty'
  | 'too_long'
  | 'invalid_document'
  | 'invalid_mobile'
  | 'invalid_email'
  | 'invalid_alphanumeric'
  | 'invalid_merchant_code'
  | 'unrecognised';

export type BrebKeyResult =
  | { readonly ok: true; readonly type: BrebKeyType; readonly normalized: string }
  | { readonly ok: false; readonly code: BrebKeyErrorCode; readonly reason: string };

/** Longest input looked at; anything longer is rejected unread. */
export const brebKeyInputLengthMax = 300;
/** No Bre-B limit is published; RFC 5321's bound on an address. */
export const brebEmailLengthMax = 254;
export const brebDocumentDigitsMin = 6;
export const brebDocumentDigitsMax = 10;
export const brebAlphanumericLengthMin = 3;
export const brebAlphanumericLengthMax = 20;

const alphanumericBody = /^[A-Za-z0-9._-]+$/;
/** Digits, optionally grouped by single spaces, dots or hyphens (`1.020.304.050`, `300 123 4567`). */
const groupedDigits = /^\d+(?:[ .-]\d+)*$/;
const mobileWithCountry = /^\+57[ -]?(\d+(?:[ .-]\d+)*)$/;

function reject(code: BrebKeyErrorCode, reason: string): BrebKeyResult {
  return { ok: false, code, reason };
}

function classifyAlphanumeric(text: string): BrebKeyResult {
  const body = text.slice(1);
  if (
    body.length < brebAlphanumericLengthMin ||
    body.length > brebAlphanumericLengthMax ||
    !alphanumericBody.test(body)
  ) {
    return reject(
      'invalid_alphanumeric',
      `an alphanumeric key is @ followed by ${brebAlphanumericLengthMin}-${brebAlphanumericLengthMax} of A-Z a-z 0-9 . _ -`,
    );
  }
  return { ok: true, type: 'alphanumeric', normalized: text };
}

function classifyEmail(text: string): BrebKeyResult {
  const normalized = text.toLowerCase();
  if (!emailSyntaxValid(normalized, brebEmailLengthMax)) {
    return reject('invalid_email', `not a valid e-mail key (at most ${brebEmailLengthMax} characters)`);
  }
  return { ok: true, type: 'email', normalized };
}

function classifyMobileDigits(digits: string): BrebKeyResult {
  if (digits.length !== 10 || digits[0] !== '3') {
    return reject('invalid_mobile', 'a mobile key is a 10-digit Colombian mobile number starting with 3 (optionally +57)');
  }
  return { ok: true, type: 'mobile', normalized: digits };
}

/** Bare digits: mobile (10, starts 3), merchant code (10, starts 00), else a document number. */
function classifyDigits(digits: string): BrebKeyResult {
  if (digits.length === 10 && digits.startsWith('3')) return classifyMobileDigits(digits);
  if (digits.startsWith('00')) {
    return digits.length === 10
      ? { ok: true, type: 'merchant_code', normalized: digits }
      : reject('invalid_merchant_code', 'a merchant code is 10 digits starting with 00');
  }
  if (digits.startsWith('0')) {
    return reject('invalid_document', 'a document number does not start with 0');
  }
  if (digits.length < brebDocumentDigitsMin || digits.length > brebDocumentDigitsMax) {
    return reject(
      'invalid_document',
      `a document number has ${brebDocumentDigitsMin}-${brebDocumentDigitsMax} digits (a mobile number has 10 and starts with 3)`,
    );
  }
  return { ok: true, type: 'document', normalized: digits };
}

/**
 * Classifies and normalises a Bre-B key. Surrounding whitespace is ignored. Order: leading `@` →
 * alphanumeric; other `@` → e-mail (lower-cased); `+57…` → mobile; grouped digits → by shape (see
 * `classifyDigits`). Normal forms: mobile = 10 national digits, document and merchant code = digits.
 */
export function classifyBrebKey(text: unknown): BrebKeyResult {
  if (typeof text !== 'string') return reject('not_a_string', 'a Bre-B key must be a string');
  if (text.length > brebKeyInputLengthMax) return reject('too_long', 'the Bre-B key is too long');
  const trimmed = text.trim();
  if (trimmed.length === 0) return reject('empty', 'the Bre-B key is empty');
  if (trimmed.startsWith('@')) return classifyAlphanumeric(trimmed);
  if (trimmed.includes('@')) return classifyEmail(trimmed);
  if (trimmed.startsWith('+')) {
    const national = mobileWithCountry.exec(trimmed)?.[1];
    if (national === undefined) {
      return reject('invalid_mobile', 'an international number must be +57 followed by a 10-digit mobile number');
    }
    return classifyMobileDigits(national.replace(/\D/g, ''));
  }
  if (groupedDigits.test(trimmed)) return classifyDigits(trimmed.replace(/\D/g, ''));
  return reject('unrecognised', 'not a document number, mobile number, e-mail, @alphanumeric key or merchant code');
}
