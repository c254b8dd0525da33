// BR Code: the EMV merchant-presented QR payload that carries a PIX charge ("copia e cola").
// Pure: no I/O, no clock. Rejections are values; a thrown Error here is a bug.
//
// Layout: a list of TLV fields `ID(2 digits) LEN(2 digits) VALUE(LEN characters)`. Templates
// (26–51 merchant account information, 62 additional data, 64 language template, 80–99 unreserved)
// hold a nested TLV list. `00` = `01` comes first, `63` (CRC-16/CCITT-FALSE over the UTF-8 bytes of
// everything before the CRC value, the `6304` included) comes last. Lengths count characters
// (Unicode code points), as generators in the wild do; see docs/decisions-keys.md for this and
// for every other choice made here.
import { classifyPixKey } from './pix-keys.ts';
import type { PixKeyType } from './pix-keys.ts';

/** EMV's bound on a merchant-presented payload, in characters. */
export const brCodeLengthMax = 512;
export const merchantNameLengthMax = 25;
export const merchantCityLengthMax = 15;
export const postalCodeLengthMax = 10;
export const txidLengthMax = 25;
export const amountLengthMax = 13;
/** DICT's longest key (an e-mail) and BCB's bound on the payload URL. */
export const pixKeyLengthMax = 77;
export const pixUrlLengthMax = 77;
export const pixGui = 'br.gov.bcb.pix';
/** `62`/`05` when the charge has no txid. */
export const txidNone = '***';

export interface TlvField {
  readonly id: string;
  /** The value as it appears in the payload (for a template, its nested TLV text). */
  readonly value: string;
  /** Present for template fields: the parsed nested list. */
  readonly children?: readonly TlvField[];
}

export interface PixMerchantAccount {
  /** `00`, as written in the payload; matches `br.gov.bcb.pix` ignoring case. */
  readonly gui: string;
  /** `01`: the PIX key of a static code, as written in the payload. */
  readonly key?: string;
  readonly keyType?: PixKeyType;
  /** `25`: the location of a dynamic charge's payload, as written (normally without `https://`). */
  readonly url?: string;
  /** `02`: free text shown to the payer. */
  readonly description?: string;
}

export interface BrCode {
  readonly payloadFormat: '01';
  /** `static` when the account carries a key, `dynamic` when it carries a URL. */
  readonly kind: 'static' | 'dynamic';
  /** `01`: `11` reusable, `12` single use; absent when the payload omits it. */
  readonly pointOfInitiation?: 'reusable' | 'single_use';
  readonly merchantAccount: PixMerchantAccount;
  readonly merchantCategoryCode: string;
  readonly currency: '986';
  /** `54`, exactly as in the payload (decimal, ≤ 2 places). */
  readonly amount?: string;
  readonly countryCode: 'BR';
  readonly merchantName: string;
  readonly merchantCity: string;
  readonly postalCode?: string;
  /** `62`/`05`, absent when the payload has no `62`/`05` or carries `***`. */
  readonly txid?: string;
  /** `63`, upper-cased. */
  readonly crc: string;
  /** Every top-level field in payload order, templates with their children. */
  readonly fields: readonly TlvField[];
}

export type BrCodeErrorCode =
  | 'not_a_string'
  | 'too_long'
  | 'empty'
  | 'invalid_character'
  | 'malformed_tlv'
  | 'truncated'
  | 'duplicate_field'
  | 'payload_format'
  | 'crc_field'
  | 'crc_mismatch'
  | 'missing_field'
  | 'invalid_field'
  | 'no_pix_account';

export type BrCodeRejection = { readonly ok: false; readonly code: BrCodeErrorCode; readonly reason: string };
export type BrCodeDecodeResult = { readonly ok: true; readonly value: BrCode } | BrCodeRejection;

function reject(code: BrCodeErrorCode, reason: string): BrCodeRejection {
  return { ok: false, code, reason };
}

function assert(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`brcode invariant violated: ${what}`);
}

// ---------------------------------------------------------------------------------------------
// CRC

const utf8 = new TextEncoder();

/** CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor) of the UTF-8 bytes. */
export function crc16CcittFalse(text: string): string {
  let crc = 0xffff;
  for (const byte of utf8.encode(text)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

// ---------------------------------------------------------------------------------------------
// TLV

const twoDigits = /^\d\d$/;

function isTemplateId(id: number): boolean {
  return (id >= 26 && id <= 51) || id === 62 || id === 64 || (id >= 80 && id <= 99);
}

/**
 * Parses `characters` (one code point per element) as a TLV list. `where` names the list in
 * reasons. Rejects non-numeric ID/LEN, zero length, a value running past the end, duplicate IDs.
 */
function parseTlvList(
  characters: readonly string[],
  where: string,
): { readonly ok: true; readonly fields: TlvField[] } | BrCodeRejection {
  const fields: TlvField[] = [];
  const seen = new Set<string>();
  let position = 0;
  // Each iteration consumes ≥ 5 characters, so the loop is bounded by the input length.
  while (position < characters.length) {
    if (characters.length - position < 4) {
      return reject('truncated', `${where}: field header truncated at character ${position}`);
    }
    const id = characters.slice(position, position + 2).join('');
    const lengthText = characters.slice(position + 2, position + 4).join('');
    if (!twoDigits.test(id)) return reject('malformed_tlv', `${where}: field ID at character ${position} is not two digits`);
    if (!twoDigits.test(lengthText)) return reject('malformed_tlv', `${where}: length of field ${id} is not two digits`);
    const length = Number(lengthText);
    if (length === 0) return reject('malformed_tlv', `${where}: field ${id} has length 00`);
    const valueStart = position + 4;
    if (valueStart + length > characters.length) {
      return reject('truncated', `${where}: field ${id} declares ${length} characters but fewer remain`);
    }
    if (seen.has(id)) return reject('duplicate_field', `${where}: field ${id} appears twice`);
    seen.add(id);
    fields.push({ id, value: characters.slice(valueStart, valueStart + length).join('') });
    position = valueStart + length;
  }
  return { ok: true, fields };
}

/** Parses the nested list of every template field (one level; templates do not nest further). */
function parseTemplates(fields: readonly TlvField[]): { readonly ok: true; readonly fields: TlvField[] } | BrCodeRejection {
  const parsed: TlvField[] = [];
  for (const field of fields) {
    if (!isTemplateId(Number(field.id))) {
      parsed.push(field);
      continue;
    }
    const children = parseTlvList(Array.from(field.value), `template ${field.id}`);
    if (!children.ok) return children;
    parsed.push({ id: field.id, value: field.value, children: children.fields });
  }
  return { ok: true, fields: parsed };
}

/** C0/C1 controls, DEL and lone surrogates have no place in a payload (and could not be printed). */
function firstBadCharacter(characters: readonly string[]): number {
  return characters.findIndex((character) => {
    const codePoint = character.codePointAt(0) ?? 0;
    return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f) || (codePoint >= 0xd800 && codePoint <= 0xdfff);
  });
}

// ---------------------------------------------------------------------------------------------
// Decoding

/** Positive decimal with at most two places: `12`, `12.3`, `12.34`; total ≤ 13 characters. */
const amountText = /^\d+(?:\.\d{1,2})?$/;
const txidText = /^[A-Za-z0-9]{1,25}$/;

function amountValid(amount: string): boolean {
  return amount.length <= amountLengthMax && amountText.test(amount) && /[1-9]/.test(amount);
}

function lengthInCharacters(text: string): number {
  return Array.from(text).length;
}

function child(field: TlvField, id: string): string | undefined {
  return field.children?.find((candidate) => candidate.id === id)?.value;
}

type AccountResult = { readonly ok: true; readonly account: PixMerchantAccount } | BrCodeRejection;

/** Finds the single merchant account template (26–51) whose GUI is PIX's and checks its content. */
function pixAccount(fields: readonly TlvField[]): AccountResult {
  const accounts = fields.filter((field) => {
    const id = Number(field.id);
    return id >= 26 && id <= 51 && child(field, '00')?.toLowerCase() === pixGui;
  });
  const [account, ...others] = accounts;
  if (account === undefined) return reject('no_pix_account', `no merchant account (26-51) with GUI ${pixGui}`);
  if (others.length > 0) return reject('invalid_field', 'more than one PIX merchant account');
  const gui = child(account, '00') ?? '';
  const key = child(account, '01');
  const url = child(account, '25');
  const description = child(account, '02');
  if (key !== undefined && url !== undefined) {
    return reject('invalid_field', `PIX account ${account.id} carries both a key (01) and a URL (25)`);
  }
  if (url !== undefined) {
    if (lengthInCharacters(url) > pixUrlLengthMax || /\s/.test(url)) {
      return reject('invalid_field', `PIX payload URL (25) must be at most ${pixUrlLengthMax} characters without spaces`);
    }
    return { ok: true, account: { gui, url, ...(description === undefined ? {} : { description }) } };
  }
  if (key === undefined) return reject('invalid_field', `PIX account ${account.id} carries neither a key (01) nor a URL (25)`);
  const classified = classifyPixKey(key);
  if (!classified.ok || lengthInCharacters(key) > pixKeyLengthMax) {
    return reject('invalid_field', 'the PIX key (01) is not a valid CPF, CNPJ, e-mail, phone or random key');
  }
  return {
    ok: true,
    account: { gui, key, keyType: classified.type, ...(description === undefined ? {} : { description }) },
  };
}

type FieldCheck = { readonly ok: true } | BrCodeRejection;
const fieldOk: FieldCheck = { ok: true };

function checkTopLevelValues(byId: ReadonlyMap<string, string>): FieldCheck {
  for (const id of ['52', '53', '58', '59', '60']) {
    if (!byId.has(id)) return reject('missing_field', `mandatory field ${id} is missing`);
  }
  const pointOfInitiation = byId.get('01');
  if (pointOfInitiation !== undefined && pointOfInitiation !== '11' && pointOfInitiation !== '12') {
    return reject('invalid_field', 'point of initiation (01) must be 11 or 12');
  }
  if (!/^\d{4}$/.test(byId.get('52') ?? '')) return reject('invalid_field', 'merchant category code (52) must be 4 digits');
  if (byId.get('53') !== '986') return reject('invalid_field', 'currency (53) must be 986 (BRL)');
  const amount = byId.get('54');
  if (amount !== undefined && !amountValid(amount)) {
    return reject('invalid_field', `amount (54) must be a positive decimal with at most 2 places and ${amountLengthMax} characters`);
  }
  if (byId.get('58') !== 'BR') return reject('invalid_field', 'country code (58) must be BR');
  if (lengthInCharacters(byId.get('59') ?? '') > merchantNameLengthMax) {
    return reject('invalid_field', `merchant name (59) has more than ${merchantNameLengthMax} characters`);
  }
  if (lengthInCharacters(byId.get('60') ?? '') > merchantCityLengthMax) {
    return reject('invalid_field', `merchant city (60) has more than ${merchantCityLengthMax} characters`);
  }
  const postalCode = byId.get('61');
  if (postalCode !== undefined && lengthInCharacters(postalCode) > postalCodeLengthMax) {
    return reject('invalid_field', `postal code (61) has more than ${postalCodeLengthMax} characters`);
  }
  return fieldOk;
}

/** Structure first: 00 = 01 first, 63 last with 4 hex digits, CRC. Returns the upper-cased CRC. */
function checkFrame(
  payload: string,
  fields: readonly TlvField[],
): { readonly ok: true; readonly crc: string } | BrCodeRejection {
  const first = fields[0];
  if (first?.id !== '00' || first.value !== '01') {
    return reject('payload_format', 'the payload must start with field 00 = 01');
  }
  const last = fields[fields.length - 1];
  const crcIndex = fields.findIndex((field) => field.id === '63');
  if (crcIndex === -1) return reject('crc_field', 'the CRC field 63 is missing');
  if (last?.id !== '63') return reject('crc_field', 'the CRC field 63 must be the last field');
  if (!/^[0-9A-Fa-f]{4}$/.test(last.value)) return reject('crc_field', 'the CRC field 63 must be 4 hex digits');
  const crc = last.value.toUpperCase();
  // 63 is last and its 4-character value is ASCII, so it is the last 4 UTF-16 units of the payload.
  if (crc16CcittFalse(payload.slice(0, -4)) !== crc) return reject('crc_mismatch', 'CRC mismatch');
  return { ok: true, crc };
}

function txidOf(fields: readonly TlvField[]): { readonly ok: true; readonly txid: string | undefined } | BrCodeRejection {
  const additional = fields.find((field) => field.id === '62');
  const txid = additional === undefined ? undefined : child(additional, '05');
  if (txid === undefined || txid === txidNone) return { ok: true, txid: undefined };
  if (!txidText.test(txid)) {
    return reject('invalid_field', `txid (62/05) must be ${txidNone} or 1-${txidLengthMax} letters and digits`);
  }
  return { ok: true, txid };
}

function assemble(fields: readonly TlvField[], account: PixMerchantAccount, crc: string, txid: string | undefined): BrCode {
  const byId = new Map(fields.map((field) => [field.id, field.value]));
  const required = (id: string): string => {
    const value = byId.get(id);
    assert(value !== undefined, `field ${id} checked present`);
    return value;
  };
  const amount = byId.get('54');
  const postalCode = byId.get('61');
  const pointOfInitiation = byId.get('01');
  return {
    payloadFormat: '01',
    kind: account.url === undefined ? 'static' : 'dynamic',
    ...(pointOfInitiation === undefined ? {} : { pointOfInitiation: pointOfInitiation === '12' ? 'single_use' : 'reusable' }),
    merchantAccount: account,
    merchantCategoryCode: required('52'),
    currency: '986',
    ...(amount === undefined ? {} : { amount }),
    countryCode: 'BR',
    merchantName: required('59'),
    merchantCity: required('60'),
    ...(postalCode === undefined ? {} : { postalCode }),
    ...(txid === undefined ? {} : { txid }),
    crc,
    fields,
  };
}

/**
 * Decodes and validates a BR Code. Leading and trailing whitespace (a copy-paste artefact outside
 * the payload) is ignored. Checks run in this order, the first failure is the result: input is a
 * string → ≤ 512 characters → non-empty → printable characters → top-level TLV → 00 first → 63
 * last → CRC → template TLV → mandatory fields and their values → the PIX account → txid.
 */
export function decodeBrCode(payload: unknown): BrCodeDecodeResult {
  if (typeof payload !== 'string') return reject('not_a_string', 'the BR Code must be a string');
  // A code point takes at most 2 UTF-16 units: a cheap bound before splitting into characters.
  if (payload.length > 2 * brCodeLengthMax + 64) return reject('too_long', `the BR Code exceeds ${brCodeLengthMax} characters`);
  const text = payload.trim();
  const characters = Array.from(text);
  if (characters.length > brCodeLengthMax) return reject('too_long', `the BR Code exceeds ${brCodeLengthMax} characters`);
  if (characters.length === 0) return reject('empty', 'the BR Code is empty');
  const bad = firstBadCharacter(characters);
  if (bad !== -1) return reject('invalid_character', `control or invalid character at position ${bad}`);

  const topLevel = parseTlvList(characters, 'payload');
  if (!topLevel.ok) return topLevel;
  const frame = checkFrame(text, topLevel.fields);
  if (!frame.ok) return frame;
  const withTemplates = parseTemplates(topLevel.fields);
  if (!withTemplates.ok) return withTemplates;
  const fields = withTemplates.fields;

  const values = checkTopLevelValues(new Map(fields.map((field) => [field.id, field.value])));
  if (!values.ok) return values;
  const account = pixAccount(fields);
  if (!account.ok) return account;
  const txid = txidOf(fields);
  if (!txid.ok) return txid;
  return { ok: true, value: assemble(fields, account.account, frame.crc, txid.txid) };
}

// ---------------------------------------------------------------------------------------------
// GET /qr-decoder/br

/** ISO 4217 numeric → alphabetic, for the currencies this service handles. */
const currencyAlphaByNumeric: Readonly<Record<string, string>> = { '986': 'BRL', '170': 'COP' };

/** The `decoded` object of GET /qr-decoder/br. A field the QR does not carry is omitted. */
export interface QrDecoderFields {
  readonly account?: string;
  readonly amount?: string;
  readonly currency?: string;
  readonly name?: string;
  readonly taxId?: string;
}

/**
 * account = the PIX key (static) or the payload URL (dynamic); amount = `54` verbatim; currency =
 * ISO 4217 alpha of `53`; name = `59`; taxId = the key when it is a CPF or CNPJ (digits).
 */
export function toDecoderResponse(decoded: BrCode): QrDecoderFields {
  const account = decoded.merchantAccount.key ?? decoded.merchantAccount.url;
  const currency = currencyAlphaByNumeric[decoded.currency];
  const keyType = decoded.merchantAccount.keyType;
  const key = decoded.merchantAccount.key;
  const taxId = key !== undefined && (keyType === 'cpf' || keyType === 'cnpj') ? classifyPixKey(key) : undefined;
  return {
    ...(account === undefined ? {} : { account }),
    ...(decoded.amount === undefined ? {} : { amount: decoded.amount }),
    ...(currency === undefined ? {} : { currency }),
    name: decoded.merchantName,
    ...(taxId?.ok === true ? { taxId: taxId.normalized } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Encoding

interface BrCodeEncodeCommon {
  /** Positive decimal text with at most 2 places (`10`, `10.5`, `10.50`), emitted verbatim. */
  readonly amount?: string;
  readonly merchantName: string;
  readonly merchantCity: string;
  /** Static codes only: 1–25 letters and digits; `***` is written when absent. */
  readonly txid?: string;
  /** `26`/`02`, static codes only. */
  readonly description?: string;
  readonly postalCode?: string;
  /** Defaults to `0000` (not informed), as BCB prescribes for PIX. */
  readonly merchantCategoryCode?: string;
  /** Writes `01` = `12`. Defaults to true for a dynamic code, false for a static one. */
  readonly singleUse?: boolean;
}

export type BrCodeEncodeInput =
  | (BrCodeEncodeCommon & { readonly key: string; readonly url?: undefined })
  | (BrCodeEncodeCommon & { readonly url: string; readonly key?: undefined });

export type BrCodeEncodeErrorCode =
  | 'invalid_account'
  | 'invalid_amount'
  | 'invalid_name'
  | 'invalid_city'
  | 'invalid_txid'
  | 'invalid_description'
  | 'invalid_postal_code'
  | 'invalid_category';

export type BrCodeEncodeResult =
  | { readonly ok: true; readonly payload: string }
  | { readonly ok: false; readonly code: BrCodeEncodeErrorCode; readonly reason: string };

type EncodeRejection = Extract<BrCodeEncodeResult, { ok: false }>;

function encodeReject(code: BrCodeEncodeErrorCode, reason: string): EncodeRejection {
  return { ok: false, code, reason };
}

function tlv(id: string, value: string): string {
  const length = lengthInCharacters(value);
  assert(twoDigits.test(id) && length >= 1 && length <= 99, `field ${id} length ${length}`);
  return `${id}${String(length).padStart(2, '0')}${value}`;
}

/** NFC, trimmed, printable, 1..max characters; undefined when it does not fit. */
function cleanText(text: unknown, lengthMax: number): string | undefined {
  if (typeof text !== 'string') return undefined;
  const cleaned = text.normalize('NFC').trim();
  const characters = Array.from(cleaned);
  if (characters.length === 0 || characters.length > lengthMax || firstBadCharacter(characters) !== -1) return undefined;
  return cleaned;
}

type AccountField = { readonly ok: true; readonly field: string; readonly dynamic: boolean } | EncodeRejection;

function encodeAccount(input: BrCodeEncodeInput): AccountField {
  const hasKey = input.key !== undefined;
  const hasUrl = input.url !== undefined;
  if (hasKey === hasUrl) return encodeReject('invalid_account', 'give exactly one of key (static) or url (dynamic)');
  let description = '';
  if (input.description !== undefined) {
    if (hasUrl) return encodeReject('invalid_description', 'a dynamic code carries its description in the fetched payload');
    const cleaned = cleanText(input.description, 99);
    if (cleaned === undefined) return encodeReject('invalid_description', 'the description must be printable text');
    description = tlv('02', cleaned);
  }
  let accountValue: string;
  if (input.url !== undefined) {
    const url = input.url.trim();
    if (url.length === 0 || url.length > pixUrlLengthMax || !/^[\x21-\x7e]+$/.test(url) || url.includes('://')) {
      return encodeReject('invalid_account', `url must be 1-${pixUrlLengthMax} printable ASCII characters without a scheme`);
    }
    accountValue = tlv('00', pixGui) + tlv('25', url);
  } else {
    const classified = classifyPixKey(input.key);
    if (!classified.ok) return encodeReject('invalid_account', classified.reason);
    accountValue = tlv('00', pixGui) + tlv('01', classified.normalized) + description;
  }
  if (lengthInCharacters(accountValue) > 99) {
    return encodeReject('invalid_description', 'key and description together exceed the 99 characters of field 26');
  }
  return { ok: true, field: tlv('26', accountValue), dynamic: hasUrl };
}

type Fields = { readonly ok: true; readonly text: string } | EncodeRejection;

function encodeMerchantFields(input: BrCodeEncodeInput): Fields {
  const category = input.merchantCategoryCode ?? '0000';
  if (!/^\d{4}$/.test(category)) return encodeReject('invalid_category', 'merchant category code must be 4 digits');
  if (input.amount !== undefined && !amountValid(input.amount)) {
    return encodeReject('invalid_amount', `amount must be a positive decimal with at most 2 places and ${amountLengthMax} characters`);
  }
  const name = cleanText(input.merchantName, merchantNameLengthMax);
  if (name === undefined) return encodeReject('invalid_name', `merchant name must be 1-${merchantNameLengthMax} printable characters`);
  const city = cleanText(input.merchantCity, merchantCityLengthMax);
  if (city === undefined) return encodeReject('invalid_city', `merchant city must be 1-${merchantCityLengthMax} printable characters`);
  let postalCode = '';
  if (input.postalCode !== undefined) {
    const cleaned = cleanText(input.postalCode, postalCodeLengthMax);
    if (cleaned === undefined) return encodeReject('invalid_postal_code', `postal code must be 1-${postalCodeLengthMax} printable characters`);
    postalCode = tlv('61', cleaned);
  }
  const text =
    tlv('52', category) +
    tlv('53', '986') +
    (input.amount === undefined ? '' : tlv('54', input.amount)) +
    tlv('58', 'BR') +
    tlv('59', name) +
    tlv('60', city) +
    postalCode;
  return { ok: true, text };
}

/**
 * Builds a BR Code with its CRC. Field order: 00, 01 (single use), 26, 52, 53, 54, 58, 59, 60, 61,
 * 62, 63. Text fields are NFC-normalised and trimmed; lengths count characters. The key is written
 * in its normal form (CPF/CNPJ digits, lower-case e-mail and EVP, `+55…` phone).
 */
export function encodeBrCode(input: BrCodeEncodeInput): BrCodeEncodeResult {
  const account = encodeAccount(input);
  if (!account.ok) return account;
  const merchant = encodeMerchantFields(input);
  if (!merchant.ok) return merchant;
  if (input.txid !== undefined && (account.dynamic || !txidText.test(input.txid))) {
    return encodeReject('invalid_txid', `txid is for static codes only and is 1-${txidLengthMax} letters and digits`);
  }
  const singleUse = input.singleUse ?? account.dynamic;
  const body =
    tlv('00', '01') +
    (singleUse ? tlv('01', '12') : '') +
    account.field +
    merchant.text +
    tlv('62', tlv('05', input.txid ?? txidNone)) +
    '6304';
  const payload = body + crc16CcittFalse(body);
  // Every field is bounded, so the whole is far below the limit; and what we write, we must read.
  assert(lengthInCharacters(payload) <= brCodeLengthMax, 'encoded length');
  assert(decodeBrCode(payload).ok, 'encoded payload decodes');
  return { ok: true, payload };
}
