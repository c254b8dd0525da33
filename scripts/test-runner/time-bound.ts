// How long one test file may run before the runner stops it. Most files need well under a minute;
// the bound only has to catch a file that would otherwise never end. A file that legitimately
// runs longer (the chaos run) says so in a comment line of its own:
//   // test runner: up to 600 s for this file
// TEST_FILE_TIMEOUT_MS overrides the default for every file that does not say otherwise.

export const defaultFileTimeoutMs = 300_000;

/** The bound for a file with source `text`, given the default in force. */
export function fileTimeoutMs(text: string, defaultMs: number): number {
  const declared = /^\/\/ test runner: up to (\d+) s for this file$/m.exec(text);
  return declared?.[1] === undefined ? defaultMs : Math.max(defaultMs, Number(declared[1]) * 1_000);
}
