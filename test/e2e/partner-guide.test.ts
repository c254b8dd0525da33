// docs/partner-guide.md cannot rot: its shell blocks are extracted from the markdown and run, in
// order, as one bash script (`set -euo pipefail`, curl and jq as a partner runs them) against a
// started service, with BASE_URL and the API key of a partner whose KYC is off. The payout and the
// onramp must both end PAYMENT_COMPLETED, as the guide says.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { teardown } from '../support/teardown.ts';

const run = promisify(execFile);
const guidePath = join(import.meta.dirname, '../../docs/partner-guide.md');
let service: ServiceHarness;

before(async () => {
  service = await startServiceHarness();
});

after(() => teardown(() => service?.stop()));

/** The fenced ```sh blocks of a markdown text, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
}

test('the guide has its walkthroughs as shell blocks', () => {
  const blocks = shellBlocks(readFileSync(guidePath, 'utf8'));
  assert.ok(blocks.length >= 7, `found ${blocks.length} blocks`);
  assert.ok(blocks.some((block) => block.includes('/quote/onramp')) && blocks.some((block) => block.includes('/sandbox/deposits')));
});

test('every shell block of docs/partner-guide.md runs against the service: a payout and an onramp end PAYMENT_COMPLETED', async () => {
  const script = ['set -euo pipefail', ...shellBlocks(readFileSync(guidePath, 'utf8'))].join('\n');
  const { stdout } = await run('bash', ['-c', script], {
    env: { PATH: process.env['PATH'] ?? '', BASE_URL: service.baseUrl, API_KEY: service.apiKeys[testPartners.kycOff] ?? '' },
    timeout: 120_000,
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`the guide's script failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
  });
  assert.match(stdout, /^payout [0-9a-f-]{36}: PAYMENT_COMPLETED$/m, stdout);
  assert.match(stdout, /^onramp [0-9a-f-]{36}: PAYMENT_COMPLETED$/m, stdout);
});
