// The sizes of src/ hold (issue 21, "done means"): no file over 600 lines, and no function over
// 100 lines without a comment at its top saying why it is long. The checker is
// test/support/source-sizes.ts; eslint.config.js warns earlier, at 70 lines per function.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describeSizeFinding, functionSizes, lineCount, sourceSizeFindings } from '../support/source-sizes.ts';

const root = join(import.meta.dirname, '../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

test('no file of src/ is over 600 lines, and no function over 100 lines lacks a why-comment', () => {
  const files = sourceFiles('src');
  assert.ok(files.length > 100, `found only ${files.length} files under src/`);
  const findings = files.flatMap((file) => sourceSizeFindings(file, readFileSync(join(root, file), 'utf8')));
  assert.deepEqual(findings.map(describeSizeFinding), []);
});

// The checker itself, on synthetic texts (the real src/ is never edited to prove it).
function body(lines: number): string {
  return Array.from({ length: lines }, (_, index) => `  const v${index} = ${index};`).join('\n');
}

test('lines are counted as an editor counts them', () => {
  assert.equal(lineCount(''), 0);
  assert.equal(lineCount('a'), 1);
  assert.equal(lineCount('a\n'), 1);
  assert.equal(lineCount('a\nb'), 2);
  assert.equal(lineCount('a\n\nb\n'), 3);
});

test('the checker names a file over 600 lines, and passes one of 600', () => {
  const at = `${Array.from({ length: 600 }, (_, index) => `export const v${index} = ${index};`).join('\n')}\n`;
  assert.deepEqual(sourceSizeFindings('src/x/at.ts', at), []);
  const over = `${at}export const one = 1;\n`;
  assert.deepEqual(sourceSizeFindings('src/x/over.ts', over).map(describeSizeFinding), [
    'src/x/over.ts:1 has 601 lines (at most 600): split it along its seams',
  ]);
});

test('the checker measures every kind of function, nested ones too', () => {
  const text = [
    'export function declared() {', body(3), '}',
    'export const arrow = async (a: number) => {', body(2), '};',
    'const expression = function () { return 1; };',
    'class Holder {',
    '  constructor() {', body(1), '  }',
    '  method() {', '    const inner = () => 2;', '    return inner();', '  }',
    '  get value() { return 3; }',
    '}',
    'const literal = { handler() { return 4; }, other: () => 5 };',
  ].join('\n');
  const sizes = functionSizes('src/x/kinds.ts', text).map(({ name, line, lines }) => `${name}@${line}:${lines}`);
  assert.deepEqual(sizes, [
    'declared@1:5', 'arrow@6:4', 'expression@10:1', 'constructor@12:3', 'method@15:4', 'inner@16:1', 'value@19:1', 'handler@21:1', 'other@21:1',
  ]);
});

test('the checker names a function over 100 lines by file:line, and passes one of 100', () => {
  const at = `export function atLimit() {\n${body(98)}\n}\n`;
  assert.deepEqual(sourceSizeFindings('src/x/at.ts', at), []);
  const over = `// A helper.\n\nexport function overLimit() {\n${body(99)}\n}\n`;
  assert.deepEqual(sourceSizeFindings('src/x/over.ts', over).map(describeSizeFinding), [
    'src/x/over.ts:3 overLimit has 101 lines (over 100) and no comment at its top saying why it is long ("… long because …")',
  ]);
  const method = `export class Big {\n  private handle = async () => {\n${body(99)}\n  };\n}\n`;
  assert.deepEqual(sourceSizeFindings('src/x/method.ts', method).map(describeSizeFinding), [
    'src/x/method.ts:2 handle has 101 lines (over 100) and no comment at its top saying why it is long ("… long because …")',
  ]);
});

test('a why-comment above a long function or in its first lines lets it pass; any other comment does not', () => {
  const long = body(120);
  const passing = [
    `/**\n * Runs the batch.\n * It is long because its steps share one lock.\n */\nexport function jsdoc() {\n${long}\n}\n`,
    `// Long because splitting would hide the order of the steps.\nexport const arrow = () => {\n${long}\n};\n`,
    `export function inside() {\n  // This is long because every branch returns a reply.\n${long}\n}\n`,
    `export class Holder {\n  /** Long because the cases read best side by side. */\n  method() {\n${long}\n  }\n}\n`,
  ];
  for (const text of passing) assert.deepEqual(sourceSizeFindings('src/x/why.ts', text), [], text.slice(0, 80));
  const failing = [
    `/** Runs the batch. */\nexport function jsdoc() {\n${long}\n}\n`,
    `// Long because of history.\n\nconst unrelated = 1;\nexport function below() {\n${long}\n}\n`,
    `export function deep() {\n${body(10)}\n  // long because it is placed too far down to count.\n${long}\n}\n`,
  ];
  for (const text of failing) assert.equal(sourceSizeFindings('src/x/why.ts', text).length, 1, text.slice(0, 80));
});
