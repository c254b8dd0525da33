// The layers of src/ hold (issue 21, "done means"): no import from a lower layer to a higher one
// or across directories of one layer, every directory in a layer, and no import circle. The
// layers are import-layers.json, which eslint.config.js also turns into lint rules; this test sees
// what lint cannot (type positions, dynamic imports, new directories, circles).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkImportLayers, describeFinding, relativeImports, type ImportGraph, type Layer } from '../support/import-layers.ts';

const root = join(import.meta.dirname, '../..');
const { layers } = JSON.parse(readFileSync(join(root, 'import-layers.json'), 'utf8')) as { layers: Layer[] };

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function srcGraph(): ImportGraph {
  const files = sourceFiles('src');
  return new Map(files.map((file) => [file, relativeImports(file, readFileSync(join(root, file), 'utf8'))]));
}

test('every import of src/ keeps to the layers, and there is no import circle', () => {
  const graph = srcGraph();
  assert.ok(graph.size > 100, `found only ${graph.size} files under src/`);
  const findings = checkImportLayers(graph, layers);
  assert.deepEqual(findings.map(describeFinding), []);
});

test('every directory of src/ is in exactly one layer, and every layer names existing ones', () => {
  const named = layers.flatMap((layer) => layer.dirs);
  assert.equal(new Set(named).size, named.length, 'a directory is named twice');
  const present = readdirSync(join(root, 'src'), { withFileTypes: true }).map((entry) => (entry.isDirectory() ? entry.name : entry.name.replace(/\.ts$/, '')));
  assert.deepEqual([...present].sort(), [...named].sort());
});

// The checker itself, on a synthetic tree (the real src/ is never edited to prove it).
const fixtureLayers: Layer[] = [{ dirs: ['domain'] }, { dirs: ['bus', 'store'] }, { dirs: ['edge'] }, { dirs: ['main'] }];

function fixture(files: Record<string, string>): ImportGraph {
  return new Map(Object.entries(files).map(([file, text]) => [file, relativeImports(file, text)]));
}

test('the checker passes imports that only point down', () => {
  const graph = fixture({
    'src/domain/money.ts': 'export const zero = 0;',
    'src/bus/bus.ts': "import { zero } from '../domain/money.ts';",
    'src/edge/routes/quotes.ts': "import type { Bus } from '../../bus/bus.ts';\nimport { x } from '../http.ts';",
    'src/edge/http.ts': "import { zero } from '../domain/money.ts';",
    'src/main.ts': "import './edge/http.ts';",
  });
  assert.deepEqual(checkImportLayers(graph, fixtureLayers), []);
});

test('the checker finds an import up the layers, in every form an import takes', () => {
  const forms = [
    "import { edgeThing } from '../edge/http.ts';",
    "import type { EdgeThing } from '../edge/http.ts';",
    "export { edgeThing } from '../edge/http.ts';",
    "const edge = await import('../edge/http.ts');",
    "let edge: import('../edge/http.ts').EdgeThing;",
  ];
  for (const form of forms) {
    const graph = fixture({ 'src/bus/bus.ts': form, 'src/edge/http.ts': '' });
    assert.deepEqual(checkImportLayers(graph, fixtureLayers).map(describeFinding), ['src/bus/bus.ts (layer 1) imports src/edge/http.ts (layer 2, higher)'], form);
  }
  const nested = fixture({ 'src/domain/money.ts': "import { main } from '../main.ts';", 'src/main.ts': '' });
  assert.deepEqual(checkImportLayers(nested, fixtureLayers).map((finding) => finding.kind), ['upward']);
});

test('the checker finds an import across directories of one layer, and a directory in no layer', () => {
  const graph = fixture({
    'src/bus/bus.ts': "import { store } from '../store/store.ts';",
    'src/store/store.ts': '',
    'src/extra/thing.ts': "import { zero } from '../domain/money.ts';",
    'src/domain/money.ts': '',
  });
  assert.deepEqual(checkImportLayers(graph, fixtureLayers).map(describeFinding), [
    'src/bus/bus.ts imports src/store/store.ts, another directory of its own layer 1',
    'src/extra/thing.ts: src/extra is in no layer of import-layers.json',
  ]);
});

test('the checker finds an import circle inside one directory, type-only imports included', () => {
  const graph = fixture({
    'src/edge/body.ts': "import { errorResponse } from './errors.ts';",
    'src/edge/errors.ts': "import type { HttpResponse } from './http.ts';",
    'src/edge/http.ts': "import { readBody } from './body.ts';",
    'src/edge/alone.ts': "import './alone.ts';",
    'src/edge/outside.ts': "import './body.ts';",
  });
  assert.deepEqual(checkImportLayers(graph, fixtureLayers).map(describeFinding), [
    'import circle: src/edge/body.ts -> src/edge/errors.ts -> src/edge/http.ts',
    'import circle: src/edge/alone.ts',
  ]);
});
