// `npm run openapi`: writes the OpenAPI document built from the code (src/edge/openapi/document.ts)
// to docs/openapi.json, the copy partners and tools read from the repository (client generators,
// Postman, CI). `npm run openapi -- --check` only compares and exits 1 when the file is stale;
// test/unit/openapi.test.ts fails the same way, so a change to a route, a schema or an error code
// that is not followed by `npm run openapi` cannot land.
import { readFileSync, writeFileSync } from 'node:fs';
import { openApiText } from '../src/edge/openapi/document.ts';

const target = new URL('../docs/openapi.json', import.meta.url);
const text = openApiText();
let current: string | null = null;
try {
  current = readFileSync(target, 'utf8');
} catch {
  current = null;
}
if (process.argv.includes('--check')) {
  if (current !== text) {
    process.stderr.write('docs/openapi.json is stale: run `npm run openapi` and commit it\n');
    process.exit(1);
  }
  process.stdout.write('docs/openapi.json is up to date\n');
} else if (current === text) {
  process.stdout.write('docs/openapi.json is up to date\n');
} else {
  writeFileSync(target, text);
  process.stdout.write(`wrote docs/openapi.json (${Buffer.byteLength(text)} bytes)\n`);
}
