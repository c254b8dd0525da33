// The one test command (README, CI and `npm run verify` all call it): finds every *.test.ts under
// test/ (optionally only under the folders named as arguments) and runs them with node:test,
// several files at once. Each test file starts whatever it needs itself (a private redis-server on
// a free port, an edge on a free port), so files are independent and may run in parallel.
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';

function findTests(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findTests(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

const roots = process.argv.slice(2);
const files = (roots.length > 0 ? roots : ['']).flatMap((root) => findTests(join('test', root)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

// Integration files mostly wait on Redis and child processes, so more files than cores is fine.
const concurrency = Number(process.env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism() * 2));
let failed = false;
const stream = run({ files, concurrency, timeout: 5 * 60_000 });
stream.on('test:fail', () => {
  failed = true;
});
stream.compose(new spec()).pipe(process.stdout);
stream.once('end', () => {
  process.exitCode = failed ? 1 : 0;
});
