// The excerpt of a receiver's answer kept with a destination's TEST delivery (never with live
// deliveries: we don't store partner response bodies for every event). The answer is the
// receiver's, so nothing about it is trusted: the transport reads at most `testExcerptBytesMax`
// bytes of it, and this turns those bytes into a short, single-line, printable text. Shown by the
// portal (as text, never HTML) and the admin CLI (a terminal: escape sequences must not get there).
// Pure: no I/O.

/** Bytes of the answer read for the excerpt; the transport stops reading there. */
export const testExcerptBytesMax = 512;

// C0 controls, DEL and C1 controls (ESC starts terminal escape sequences), and the bidirectional
// overrides and isolates, which can make a text read differently from what it is.
const controlCharacters = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/gu;
// Line breaks and tabs become one space: the excerpt stays on one line, words stay apart.
const lineBreaks = /[\t\n\r]+/gu;

/**
 * The excerpt of the first bytes of an answer: UTF-8 with invalid bytes replaced (U+FFFD), control
 * characters stripped. `cut` = we stopped reading before the answer ended: a character cut by us
 * at the end is then left out rather than shown as a replacement (the cut is ours, not the
 * receiver's); a whole answer ending in a broken character shows the replacement.
 */
export function responseExcerpt(bytes: Uint8Array, cut: boolean, bytesMax: number = testExcerptBytesMax): string {
  const kept = bytes.subarray(0, bytesMax);
  const truncated = cut || bytes.length > bytesMax;
  // stream: true holds back an incomplete sequence at the very end instead of replacing it; the
  // decoder is then dropped, so those held bytes are simply not shown.
  const text = new TextDecoder('utf-8', { fatal: false }).decode(kept, { stream: truncated });
  return text.replace(lineBreaks, ' ').replace(controlCharacters, '');
}
