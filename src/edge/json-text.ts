// Reading JSON text produced by JSON.stringify without decoding it, where the edge forwards part of
// an actor's reply to the partner as it is (a decode and re-encode would give the same bytes).

/**
 * Index of the `}` closing the JSON object that opens at `start`, or -1 when `text[start]` is not
 * `{` or the object does not close. Strings are skipped (with their escapes), so braces inside
 * them do not count. `text` must be valid JSON from `start` on: the scan checks nesting, not syntax.
 */
export function jsonObjectEnd(text: string, start: number): number {
  // Characters are read by index, not `charCodeAt`: once a module subclasses String (ioredis
  // does), V8 stops inlining String.prototype method lookups, and a lookup per character costs
  // several times the scan itself.
  if (text[start] !== '{') return -1;
  const length = text.length;
  let depth = 0;
  for (let index = start; index < length; index += 1) {
    const char = text[index];
    if (char === '"') {
      index += 1;
      while (index < length && text[index] !== '"') index += text[index] === '\\' ? 2 : 1;
    } else if (char === '{' || char === '[') {
      depth += 1;
    } else if (char === '}' || char === ']') {
      depth -= 1;
      if (depth === 0) return char === '}' ? index : -1;
    }
  }
  return -1;
}

/**
 * The text of member `name` of a JSON object written as `<prefix><object>}`, where `prefix` is the
 * object's opening up to and including `"<name>":` (e.g. `{"ok":true,"quote":`), provided that
 * member is an object and the last one; otherwise null. For text from JSON.stringify the result is
 * exactly `JSON.stringify(JSON.parse(text)[name])`.
 */
export function lastObjectMemberText(text: string, prefix: string): string | null {
  if (!text.startsWith(prefix) || text[text.length - 1] !== '}') return null;
  const end = jsonObjectEnd(text, prefix.length);
  return end === text.length - 2 ? text.slice(prefix.length, end + 1) : null;
}
