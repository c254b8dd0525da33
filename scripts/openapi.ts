// `npm run openapi`: writes the OpenAPI document built from the code (src/edge/openapi/document.ts)
// to docs/openapi.json, the copy partners and tools read from the repository (client generators,
// Postman, CI), and regenerates the TypeScript client's types from it
// (clients/typescript/src/schema.ts, with openapi-typescript). `npm run openapi -- --check` only
// compares and exits 1 when either file is stale; test/unit/openapi.test.ts fails the same way, so
// a change to a route, a schema or an error code that is not followed by `npm run openapi` cannot
// land.
import { readFileSync, writeFileSync } from 'node:fs';
import { clientSchemaText, openApiText } from './openapi-files.ts';

const files = [
  { path: 'docs/openapi.json', text: openApiText() },
  { path: 'clients/typescript/src/schema.ts', text: await clientSchemaText() },
];
let stale = 0;
for (const file of files) {
  const target = new URL(`../${file.path}`, import.meta.url);
  let current: string | null = null;
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    current = null;
  }
  if (current === file.text) {
    process.stdout.write(`${file.path} is up to date\n`);
  } else if (process.argv.includes('--check')) {
    process.stderr.write(`${file.path} is stale: run \`npm run openapi\` and commit it\n`);
    stale += 1;
  } else {
    writeFileSync(target, file.text);
    process.stdout.write(`wrote ${file.path} (${Buffer.byteLength(file.text)} bytes)\n`);
  }
}
if (stale > 0) process.exit(1);
