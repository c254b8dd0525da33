// Which files the runner runs: every *.test.ts under test/ (or under the folders named on the
// command line), in a stable order so two runs schedule the same way.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function findTests(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findTests(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

/**
 * `roots` are folders or files under test/ (`unit`, `e2e/events.test.ts`), or the same paths with
 * their `test/` prefix (as a shell completes them); none means all of test/.
 */
export function findTestFiles(roots: readonly string[]): string[] {
  return (roots.length > 0 ? roots : ['']).flatMap((root) => {
    const path = join('test', root.replace(/^(\.\/)?test\//, ''));
    return statSync(path).isDirectory() ? findTests(path) : [path];
  });
}
