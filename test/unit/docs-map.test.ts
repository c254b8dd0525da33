// docs/README.md is the map a partner developer or an operator starts from: a page that is not on
// it is as good as missing, and a page named on it that is not there is a dead end. Both are
// checked here, so a new page (or a moved one) cannot be left off the map.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const docsDir = join(import.meta.dirname, '../../docs');
const map = readFileSync(join(docsDir, 'README.md'), 'utf8');

/** The paths the map names in backticks (relative to docs/), markdown pages and documents only. */
function namedPaths(markdown: string): string[] {
  return [...markdown.matchAll(/`([^`\s]+\.(?:md|json))`/g)].map((match) => match[1] ?? '').filter((path) => !path.includes('*'));
}

test('every page of docs/, the client README and the deploy README are on the map', () => {
  const named = new Set(namedPaths(map));
  const pages = readdirSync(docsDir).filter((name) => name.endsWith('.md') && name !== 'README.md');
  const expected = [...pages, '../clients/typescript/README.md', '../deploy/README.md'];
  assert.deepEqual(expected.filter((page) => !named.has(page)), [], 'pages missing from docs/README.md');
});

test('every path the map names exists', () => {
  const missing = namedPaths(map).filter((path) => !path.startsWith('/') && !existsSync(resolve(docsDir, path)));
  assert.deepEqual(missing, [], 'paths on docs/README.md that do not exist');
});
