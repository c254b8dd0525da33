// `npm run docs:screenshot`: starts the service (every role, sandbox, a temporary data directory,
// a free port), opens GET /docs in headless Chromium and checks that the reference page rendered
// the document — every operation drawn, no Content-Security-Policy violation or script error, no
// request leaving this host — then writes docs/api-reference.png. Needs a Chromium binary
// (CHROMIUM_PATH, default /usr/bin/chromium; Debian: `apt-get install chromium`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { readEnv } from '../src/config/env.ts';
import { startService } from '../src/service/service.ts';
import { operations } from '../src/edge/openapi/operations.ts';
import { buildOpenApiDocument } from '../src/edge/openapi/document.ts';

const executablePath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const dataDir = mkdtempSync(join(tmpdir(), 'docs-screenshot-'));
const service = await startService(readEnv({ PORT: '0', GRPC_PORT: '0', PAYOUT_GRPC_PORT: '0', HOST: '127.0.0.1', ADMIN_TLS: 'off', DATA_DIR: dataDir, SANDBOX: '1', LOG_LEVEL: 'silent' }));
const browser = await chromium.launch({
  executablePath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const origin = `http://127.0.0.1:${service.port ?? 0}`;
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('request', (request) => {
    if (!request.url().startsWith(origin) && !request.url().startsWith('data:')) problems.push(`request off this host: ${request.url()}`);
  });
  await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' });
  await page.waitForSelector('.opblock', { timeout: 30_000 });
  // Swagger UI draws each operation and each webhook as one block.
  const expected = operations.length + Object.keys(buildOpenApiDocument()['webhooks'] as object).length;
  const drawn = await page.locator('.opblock').count();
  if (drawn !== expected) problems.push(`${drawn} operations and webhooks drawn, ${expected} in the document`);
  // Swagger UI's own complaints about the document (unsupported fields, parse errors).
  const complaints = await page.locator('.errors-wrapper, .information-container :text("Warning")').count();
  if (complaints > 0) problems.push(`the page shows ${complaints} warning(s) or error(s) about the document`);
  if (problems.length > 0) throw new Error(`the reference page did not render cleanly:\n${problems.join('\n')}`);
  await page.screenshot({ path: new URL('../docs/api-reference.png', import.meta.url).pathname });
  process.stdout.write(`wrote docs/api-reference.png (${drawn} operations and webhooks drawn)\n`);
} finally {
  await browser.close();
  await service.stop({ graceMs: 2_000 });
  rmSync(dataDir, { recursive: true, force: true });
}
