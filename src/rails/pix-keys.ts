// PIX key ("chave PIX") classification and validation. Pure: no I/O. A key that passes here is
// well-formed; whether it is registered in the central directory (DICT) is the rail's question.
// Choices where the rules are open are listed in docs/decisions-keys.md.

export type PixKeyType = 'cpf' | 'cnpj' | 'email' | 'phone' | 'evp';

export type PixKeyErrorCode =
  | 'not_a_string'
  | 'empty'
  | 'too_long'
  | 'invalid_cpf'
  | 'invalid_cnpj'
  | 'invalid_email'
  | 'invalid_phone'
  | 'unrecognised';

export type PixKeyResult =
  | { readonly ok: true; readonly type: PixKeyType; readonly normalized: string }
  | { readonly ok: false; readonly code: PixKeyErrorCode; readonly reason: string };

/** DICT's limit for an e-mail key, and so for any key. */
export const pixEmailLengthMax = 77;
/** Longest input looked at (a formatted key plus surrounding whitespace); anything longer is rejected unread. */
export const pixKeyInputLengthMax = 128;

const cpfFormatted = /^\d{3}\.\d{3}\.\d{3}-\d{2}$/;
const cnpjFormatted = /^\d{2}\.\d{3}\.\d{3}\/\d{4}-\d{2}$/;
const digitsOnly = /^\d+$/;
const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Separators people type inside a phone number; removed before checking. */
const phoneSeparators = /[\s()-]/g;
// Local part: dot-atom characters of RFC 5322 (no quoted strings), no leading/trailing/double dot.
const emailLocal = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const emailDomainLabel = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const emailTopLevel = /^[a-z]{2,63}$/;

function reject(code: PixKeyErrorCode, reason: string): PixKeyResult {
  return { ok: false, code, reason };
}

function digitValues(digits: string): number[] {
  return Array.from(digits, (character) => character.charCodeAt(0) - 48);
}

/** Mod-11 check digit shared by CPF and CNPJ: remainder < 2 gives 0, else 11 − remainder. */
function mod11CheckDigit(values: readonly number[], weights: readonly number[]): number {
  let sum = 0;
  for (let index = 0; index < weights.length; index += 1) {
    sum += (values[index] ?? 0) * (weights[index] ?? 0);
  }
  const remainder = sum % 11;
  return remainder < 2 ? 0 : 11 - remainder;
}

function allSameDigit(digits: string): boolean {
  return digits.split('').every((character) => character === digits[0]);
}

/** True when `digits` is 11 digits with both CPF check digits right and not one repeated digit. */
export function cpfDigitsValid(digits: string): boolean {
  if (digits.length !== 11 || !digitsOnly.test(digits) || allSameDigit(digits)) return false;
  const values = digitValues(digits);
  const first = mod11CheckDigit(values, [10, 9, 8, 7, 6, 5, 4, 3, 2]);
  const second = mod11CheckDigit(values, [11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
  return values[9] === first && values[10] === second;
}

/** True when `digits` is 14 digits with both CNPJ check digits right and not one repeated digit. */
export function cnpjDigitsValid(digits: string): boolean {
  if (digits.length !== 14 || !digitsOnly.test(digits) || allSameDigit(digits)) return false;
  const values = digitValues(digits);
  const first = mod11CheckDigit(values, [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]);
  const second = mod11CheckDigit(values, [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]);
  return values[12] === first && values[13] === second;
}

/**
 * Syntax of an e-mail address, already lower-cased: dot-atom local part (≤ 64), a domain of at
 * least two labels with an alphabetic top-level label, total ≤ `lengthMax`. Deliberately narrower
 * than RFC 5322 (no quoted local parts, no IP literals): those are not accepted as keys anywhere.
 */
export function emailSyntaxValid(lowerCased: string, lengthMax: number): boolean {
  if (lowerCased.length > lengthMax) return false;
  const at = lowerCased.lastIndexOf('@');
  if (at <= 0 || lowerCased.indexOf('@') !== at) return false;
  const local = lowerCased.slice(0, at);
  const domain = lowerCased.slice(at + 1);
  if (local.length > 64 || !emailLocal.test(local)) return false;
  const labels = domain.split('.');
  const topLevel = labels[labels.length - 1] ?? '';
  return labels.length >= 2 && labels.every((label) => emailDomainLabel.test(label)) && emailTopLevel.test(topLevel);
}

function classifyEmail(text: string): PixKeyResult {
  const normalized = text.toLowerCase();
  if (!emailSyntaxValid(normalized, pixEmailLengthMax)) {
    return reject('invalid_email', `not a valid e-mail key (at most ${pixEmailLengthMax} characters)`);
  }
  return { ok: true, type: 'email', normalized };
}

/**
 * `+55`, a two-digit area code (DDD, neither digit 0) and a 10- or 11-digit national number in all;
 * an 11-digit number is a mobile and so starts with 9 after the DDD. Spaces, hyphens and brackets
 * are allowed as separators and dropped; the normal form is `+55` followed by the digits (DICT's).
 */
function classifyPhone(text: string): PixKeyResult {
  const compact = text.replace(phoneSeparators, '');
  const match = /^\+55(\d{10,11})$/.exec(compact);
  const national = match?.[1];
  if (national === undefined) {
    return reject('invalid_phone', 'a phone key is +55 followed by 10 or 11 digits (area code and number)');
  }
  if (national[0] === '0' || national[1] === '0') {
    return reject('invalid_phone', 'the area code (DDD) of a phone key has no digit 0');
  }
  if (national.length === 11 && national[2] !== '9') {
    return reject('invalid_phone', 'an 11-digit Brazilian number is a mobile and starts with 9 after the area code');
  }
  return { ok: true, type: 'phone', normalized: `+55${national}` };
}

function classifyDigits(digits: string): PixKeyResult {
  if (digits.length === 11) {
    return cpfDigitsValid(digits)
      ? { ok: true, type: 'cpf', normalized: digits }
      : reject('invalid_cpf', 'CPF check digits do not match (a phone key needs the +55 prefix)');
  }
  if (digits.length === 14) {
    return cnpjDigitsValid(digits)
      ? { ok: true, type: 'cnpj', normalized: digits }
      : reject('invalid_cnpj', 'CNPJ check digits do not match');
  }
  return reject('unrecognised', 'a numeric key must be a CPF (11 digits) or a CNPJ (14 digits)');
}

/**
 * Classifies and normalises a PIX key. Surrounding whitespace is ignored. The shape decides the
 * type, checked in this order: `+` → phone; contains `@` → e-mail; UUID → random key (EVP,
 * lower-cased); 11 or 14 digits (bare, or formatted `123.456.789-09` / `12.345.678/0001-95`) →
 * CPF / CNPJ with check digits. Anything else is `unrecognised`.
 */
export function classifyPixKey(text: unknown): PixKeyResult {
  if (typeof text !== 'string') return reject('not_a_string', 'a PIX key must be a string');
  if (text.length > pixKeyInputLengthMax) return reject('too_long', `a PIX key has at most ${pixEmailLengthMax} characters`);
  const trimmed = text.trim();
  if (trimmed.length === 0) return reject('empty', 'the PIX key is empty');
  if (trimmed.startsWith('+')) return classifyPhone(trimmed);
  if (trimmed.includes('@')) return classifyEmail(trimmed);
  if (uuidText.test(trimmed)) return { ok: true, type: 'evp', normalized: trimmed.toLowerCase() };
  if (digitsOnly.test(trimmed)) return classifyDigits(trimmed);
  if (cpfFormatted.test(trimmed) || cnpjFormatted.test(trimmed)) return classifyDigits(trimmed.replace(/\D/g, ''));
  return reject('unrecognised', 'not a CPF, CNPJ, e-mail, phone (+55…) or random (UUID) PIX key');
}
