// Lint rules that guard correctness, not taste: promises must be awaited or handled, the pure
// domain core must never read the clock or draw randomness (time and ids are parameters there),
// and no import runs up the layers of src/ (import-layers.json; docs/architecture.md).
import { readFileSync } from 'node:fs';
import tseslint from 'typescript-eslint';

/** The layers of src/, lowest first (the same list test/unit/import-layers.test.ts checks). */
const { layers } = JSON.parse(readFileSync(new URL('./import-layers.json', import.meta.url), 'utf8'));

/**
 * The import patterns a file of `dir` may not use: every directory of its own layer but itself and
 * of every layer above. Relative imports only (the test covers the rest); a directory's pattern
 * matches it at any depth, `../x/a.ts` and `../../x/a.ts` alike.
 */
function importsAbove(dir) {
  const rank = layers.findIndex((layer) => layer.dirs.includes(dir));
  const above = layers.slice(rank).flatMap((layer) => layer.dirs).filter((other) => other !== dir);
  return above.map((other) => (other === 'main' ? ['../main.ts', '../../main.ts', '../../../main.ts'] : [`**/${other}/*`])).flat();
}

function layerPattern(dir) {
  const rank = layers.findIndex((layer) => layer.dirs.includes(dir));
  return {
    group: importsAbove(dir),
    message: `src/${dir} is in layer ${rank} of import-layers.json: it imports only from lower layers (docs/architecture.md).`,
  };
}

/** One block per directory of src/ (main.ts is the top: nothing above it). */
const layerBlocks = layers
  .flatMap((layer) => layer.dirs)
  .filter((dir) => dir !== 'main' && dir !== 'domain')
  .map((dir) => ({
    files: [`src/${dir}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', { patterns: [layerPattern(dir)] }] },
  }));

const impureInDomain = [
  { object: 'Date', property: 'now', message: 'src/domain is pure: take `nowMs` as a parameter.' },
  { object: 'Math', property: 'random', message: 'src/domain is pure: take randomness/ids as parameters.' },
  { object: 'crypto', property: 'randomUUID', message: 'src/domain is pure: take ids as parameters.' },
  { object: 'performance', property: 'now', message: 'src/domain is pure: take time as a parameter.' },
];

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', 'bench/results/**', '**/*.js', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // node:test's test/describe return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }],
      }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      'no-var': 'error',
      'prefer-const': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', ...impureInDomain],
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['node:*', 'fs', 'net', 'http', 'https', 'crypto', 'ioredis', 'mongodb', 'lmdb', 'uWebSockets.js'],
            message: 'src/domain is pure: no I/O, no runtime modules.' },
          // Every layer above, from src/domain and from its folders (src/domain/transaction/) alike.
          layerPattern('domain'),
        ],
      }],
      'no-restricted-syntax': ['error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'src/domain is pure: no `new Date()`; take `nowMs`.' },
        { selector: "CallExpression[callee.name='randomUUID']", message: 'src/domain is pure: take ids as parameters.' },
        { selector: 'AwaitExpression', message: 'src/domain is synchronous: no await.' },
      ],
    },
  },
  ...layerBlocks,
);
