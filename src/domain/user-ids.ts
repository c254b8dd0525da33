// The partner's end-user id (`user_id`, `externalUserId`, `userId`, `disabledUsers`), pure.
//
// A user id keys compliance state: the disabled-user list, the daily caps, the monthly KYC volume,
// the KYC record and the list of a user's transactions. Compared as sent, one person could be many
// users: `baduser\u200b` or `bad\u00adbuser` look like `baduser` but passed a block on it, and the
// NFC and NFD spellings of `josé` had two KYC counters. So an id is read once, at the boundary:
// - refused when it holds a character nobody can see or type on purpose: control characters (Cc),
//   format characters (Cf: zero-width space, soft hyphen, word joiner, bidi controls, BOM, …),
//   line/paragraph separators (Zl, Zp), lone surrogates (Cs), unassigned code points (Cn, whose
//   normalisation a later Unicode version may change) and the other default-ignorable code points
//   (variation selectors, Hangul fillers, combining grapheme joiner);
// - otherwise NFKC-normalised and trimmed: every Unicode spelling of the same text (composed or
//   decomposed accents, full-width letters, ligatures, non-breaking spaces) is one id.
// No case folding: partners' ids may be case-sensitive (base64, opaque tokens). NFKC is idempotent,
// and NFKC of ASCII is ASCII unchanged. docs/api.md, "User ids".

/** Characters an id may not hold (checked before and after normalisation). */
const refusedCharacter = /[\p{Cc}\p{Cf}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

export type UserIdResult = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly reason: string };

function codePointLabel(character: string): string {
  return `U+${(character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

function refusal(text: string): string | null {
  const found = refusedCharacter.exec(text);
  if (found === null) return null;
  return `must not contain invisible, formatting or control characters (${codePointLabel(found[0])} at position ${found.index})`;
}

/**
 * Reads a user id as sent: its normal form (NFKC, trimmed), or why it is refused (a reason to
 * follow the field name: `user_id must not …`). The reason names the code point, never the id.
 */
export function readUserId(text: string, charsMax: number): UserIdResult {
  const refused = refusal(text);
  if (refused !== null) return { ok: false, reason: refused };
  const value = text.normalize('NFKC').trim();
  if (value.length === 0) return { ok: false, reason: 'must not be empty' };
  // Compatibility mappings can expand a character (U+FDFA becomes 18), so the bound is rechecked.
  if (value.length > charsMax) return { ok: false, reason: `must be at most ${charsMax} characters` };
  // NFKC maps no visible character to a refused one today; checked so it stays true.
  const afterNormalising = refusal(value);
  if (afterNormalising !== null) return { ok: false, reason: afterNormalising };
  return { ok: true, value };
}

/**
 * The form an id is compared in when it was stored before ids were read with `readUserId` (an
 * override's disabled users): NFKC and trimmed. An id with a refused character keeps it and so
 * matches no request (requests with one are refused).
 */
export function userIdMatchForm(text: string): string {
  return text.normalize('NFKC').trim();
}
