// Who a PIX payout pays: one beneficiary, whatever the partner sends. Pure: no I/O.
//
// A PIX payout names its recipient by a key (`account_number`), by a BR Code (`qr_code`), or both.
// The rail receives both fields, so two that name different recipients would leave it to the rail
// which one is paid, while every partner-facing record shows `accountNumber`. So:
// - both given, static QR: the QR's key (01) must be the same key as `account_number`, compared in
//   normal form (CPF/CNPJ digits, lower-case e-mail and random key, `+55…` phone); else refused;
// - both given, dynamic QR (a payload URL, 25): its key is known only when the rail fetches the
//   charge, so it cannot be compared: refused, send one of them;
// - QR only, static: the QR's key is recorded as the account number (what the partner sees is what
//   is paid); dynamic: no key is known, the account number stays null.
// A QR that names an amount must name the quoted one. docs/api.md, "POST /transaction".
import { fiatDecimals } from '../domain/assets.ts';
import { compare, parseAmount, toFixedString, type Decimal } from '../domain/money.ts';
import { decodeBrCode } from './brcode.ts';
import { classifyPixKey } from './pix-keys.ts';

export type PixRecipientResult =
  | { readonly ok: true; readonly accountNumber: string | null; readonly qrCode: string | null }
  /** `unverifiable`: a key or QR that is not well formed; `invalid`: well formed, but not this payout's. */
  | { readonly ok: false; readonly kind: 'unverifiable' | 'invalid'; readonly reason: string };

type QrRecipient = { readonly ok: true; readonly key: string | null } | Extract<PixRecipientResult, { ok: false }>;

function refuse(kind: 'unverifiable' | 'invalid', reason: string): Extract<PixRecipientResult, { ok: false }> {
  return { ok: false, kind, reason };
}

/** The QR's key in normal form (null for a dynamic QR), after its CRC, fields and amount are checked. */
function qrRecipient(qrCode: string, quotedAmount: Decimal): QrRecipient {
  const decoded = decodeBrCode(qrCode);
  if (!decoded.ok) return refuse('unverifiable', `qr_code: ${decoded.reason}`);
  const asked = decoded.value.amount;
  if (asked !== undefined) {
    const amount = parseAmount(asked, fiatDecimals.BRL, { label: 'qr_code amount' });
    if (!amount.ok || compare(amount.value, quotedAmount) !== 0) {
      return refuse('invalid', `qr_code asks for ${asked} BRL but the quote pays ${toFixedString(quotedAmount)} BRL`);
    }
  }
  const key = decoded.value.merchantAccount.key;
  if (key === undefined) return { ok: true, key: null };
  // decodeBrCode accepted the key, so it classifies; its normal form is what the rail pays.
  const classified = classifyPixKey(key);
  if (!classified.ok) return refuse('unverifiable', `qr_code: ${classified.reason}`);
  return { ok: true, key: classified.normalized };
}

/**
 * The one beneficiary of a PIX payout from `account_number` and `qr_code` (null = not given; at
 * least one is given). The QR is checked first, then the key, then that they agree. Reasons never
 * echo a key (a CPF is personal data).
 */
export function pixRecipient(accountNumber: string | null, qrCode: string | null, quotedAmount: Decimal): PixRecipientResult {
  let qrKey: string | null = null;
  if (qrCode !== null) {
    const qr = qrRecipient(qrCode, quotedAmount);
    if (!qr.ok) return qr;
    qrKey = qr.key;
  }
  if (accountNumber === null) return { ok: true, accountNumber: qrKey, qrCode };
  const key = classifyPixKey(accountNumber);
  if (!key.ok) return refuse('unverifiable', `account_number: ${key.reason}`);
  if (qrCode === null) return { ok: true, accountNumber: key.normalized, qrCode: null };
  if (qrKey === null) {
    return refuse('invalid', 'a dynamic qr_code (a payload URL) names its recipient only when the charge is fetched, so it cannot be checked against account_number; send one of them');
  }
  if (qrKey !== key.normalized) {
    return refuse('invalid', 'account_number and the PIX key in qr_code name different recipients; send one of them, or the same key in both');
  }
  return { ok: true, accountNumber: key.normalized, qrCode };
}
