// Lint rules that guard correctness, not taste: promises must be awaited or handled, and the pure
// domain core must never read the clock or draw randomness (time and ids are parameters there).
import tseslint from 'typescript-eslint';

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
          // From src/domain and from its folders (src/domain/transaction/).
          { group: ['actors', 'bus', 'store', 'edge', 'chains', 'rails', 'webhooks', 'grpc'].flatMap((shell) => [`../${shell}/*`, `../../${shell}/*`]),
            message: 'src/domain does not depend on the shell.' },
        ],
      }],
      'no-restricted-syntax': ['error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'src/domain is pure: no `new Date()`; take `nowMs`.' },
        { selector: "CallExpression[callee.name='randomUUID']", message: 'src/domain is pure: take ids as parameters.' },
        { selector: 'AwaitExpression', message: 'src/domain is synchronous: no await.' },
      ],
    },
  },
);
