// The typed-client section of docs/partner-guide.md cannot rot: its ```ts blocks are extracted
// from the markdown, grouped by the file name after `ts` (the blocks of one name are one program,
// in order), written to a temporary directory with the client's import pointed at this
// repository's clients/typescript/src/index.ts, and run with `node --import tsx` as a partner runs
// them. The webhook receiver program is started first and is the partner's webhook destination;
// the payout-and-onramp program then runs against the started service and must print both
// transactions PAYMENT_COMPLETED and the typed error, and the receiver must have verified and
// printed the lifecycle, refused a forged delivery (401) and recognised a redelivery by its id.
// tsx does not typecheck, so the programs are also typechecked with the client's own compiler
// options (strict, exactOptionalPropertyTypes …): a snippet of a typed client must compile.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { runnerEnv, stopChild } from '../support/processes.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';

const run = promisify(execFile);
const repoRoot = join(import.meta.dirname, '../..');
const guidePath = join(repoRoot, 'docs/partner-guide.md');
/** How the guide imports the client (from the repository's root); rewritten to an absolute path. */
const clientSpecifier = './clients/typescript/src/index.ts';
const clientPath = join(repoRoot, 'clients/typescript/src/index.ts');
const programTimeoutMs = 120_000;
const typescriptCompiler = join(repoRoot, 'node_modules/typescript/bin/tsc');

const secret = `whsec_${randomBytes(32).toString('base64url')}`;
let workDir: string | undefined;
let receiver: ChildProcess | undefined;
const receiverLines: string[] = [];
let receiverUrl = '';
let service: ServiceHarness | undefined;

/** The guide's ```ts blocks, by the program (file name) each belongs to, in order. */
function typescriptPrograms(markdown: string): Map<string, string[]> {
  const programs = new Map<string, string[]>();
  for (const match of markdown.matchAll(/^```ts (\S+)\n([\s\S]*?)^```$/gm)) {
    const name = match[1] ?? '';
    programs.set(name, [...(programs.get(name) ?? []), match[2] ?? '']);
  }
  return programs;
}

/** Writes one program as a .mts file (ES module whatever the folder: top-level await works). */
function writeProgram(directory: string, name: string, blocks: readonly string[]): string {
  const source = blocks.join('\n');
  assert.ok(source.includes(`'${clientSpecifier}'`), `${name} imports the client as ${clientSpecifier}`);
  const path = join(directory, name.replace(/\.ts$/, '.mts'));
  writeFileSync(path, source.replaceAll(`'${clientSpecifier}'`, JSON.stringify(clientPath)));
  return path;
}

function programEnv(extra: Readonly<Record<string, string>>): Record<string, string> {
  return { ...runnerEnv(), PATH: process.env['PATH'] ?? '', ...extra };
}

before(async () => {
  const programs = typescriptPrograms(readFileSync(guidePath, 'utf8'));
  workDir = mkdtempSync(join(tmpdir(), 'partner-guide-client-'));
  const receiverFile = writeProgram(workDir, 'webhook-receiver.ts', programs.get('webhook-receiver.ts') ?? assert.fail('a webhook-receiver.ts block'));
  writeProgram(workDir, 'payout-and-onramp.ts', programs.get('payout-and-onramp.ts') ?? assert.fail('payout-and-onramp.ts blocks'));

  // cwd is the repository, so `--import tsx` resolves from its node_modules.
  const child = spawn(process.execPath, ['--import', 'tsx', receiverFile], {
    cwd: repoRoot,
    env: programEnv({ PORT: '0', WEBHOOK_SECRET: secret }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  receiver = child;
  let pending = '';
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    const lines = (pending + text).split('\n');
    pending = lines.pop() ?? '';
    receiverLines.push(...lines);
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => receiverLines.push(`stderr: ${text}`));
  receiverUrl = await eventually(() => {
    assert.equal(child.exitCode, null, `the receiver exited: ${receiverLines.join('\n')}`);
    const line = receiverLines.find((candidate) => candidate.startsWith('webhook receiver listening on '));
    assert.ok(line !== undefined, 'the receiver says where it listens');
    return line.slice('webhook receiver listening on '.length);
  }, 30_000);
  service = await startServiceHarness({ webhooks: { [testPartners.kycOff]: { url: receiverUrl, secret } } });
});

after(() =>
  teardown(
    () => service?.stop(),
    () => (receiver === undefined ? undefined : stopChild(receiver)),
    () => (workDir === undefined ? undefined : rmSync(workDir, { recursive: true, force: true })),
  ),
);

test('the typed-client section has its programs as ts blocks: the flows with the client, and a webhook receiver', () => {
  const programs = typescriptPrograms(readFileSync(guidePath, 'utf8'));
  assert.deepEqual([...programs.keys()].sort(), ['payout-and-onramp.ts', 'webhook-receiver.ts']);
  const flows = (programs.get('payout-and-onramp.ts') ?? []).join('\n');
  for (const call of ['createQuote(', 'idempotencyKey', 'sandboxDeposit(', 'createOnrampQuote(', 'sandboxPixPayment(', 'PaymentsApiError']) {
    assert.ok(flows.includes(call), `the flows use ${call}`);
  }
  assert.match((programs.get('webhook-receiver.ts') ?? []).join('\n'), /verifyWebhook\(/);
});

test('the programs typecheck with the client\'s compiler options', async () => {
  const directory = workDir ?? assert.fail('the programs were written');
  const config = {
    extends: join(repoRoot, 'clients/typescript/tsconfig.json'),
    compilerOptions: { typeRoots: [join(repoRoot, 'node_modules/@types')] },
    include: ['*.mts'],
  };
  writeFileSync(join(directory, 'tsconfig.json'), JSON.stringify(config));
  await run(process.execPath, [typescriptCompiler, '-p', join(directory, 'tsconfig.json')], { cwd: repoRoot, timeout: programTimeoutMs }).catch(
    (error: { stdout?: string; message: string }) => {
      throw new Error(`the guide's programs do not typecheck: ${error.message}\n${error.stdout ?? ''}`);
    },
  );
});

test('the payout-and-onramp program runs against the service: both end PAYMENT_COMPLETED, the error is typed', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', join(workDir ?? '', 'payout-and-onramp.mts')], {
    cwd: repoRoot,
    env: programEnv({ BASE_URL: service?.baseUrl ?? '', API_KEY: service?.apiKeys[testPartners.kycOff] ?? '' }),
    timeout: programTimeoutMs,
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`the guide's program failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
  });
  const payoutId = /^payout ([0-9a-f-]{36}): PAYMENT_COMPLETED$/m.exec(stdout)?.[1] ?? assert.fail(`a completed payout:\n${stdout}`);
  const onrampId = /^onramp ([0-9a-f-]{36}): PAYMENT_COMPLETED$/m.exec(stdout)?.[1] ?? assert.fail(`a completed onramp:\n${stdout}`);
  assert.match(stdout, /^error 400 minimum retryable=false request=guide-client-below-minimum: \S/m, stdout);

  // The receiver verified the deliveries of both lifecycles and printed them.
  await eventually(() => {
    for (const id of [payoutId, onrampId]) {
      const pattern = new RegExp(`^event evt_\\S+ transaction\\.updated: transaction ${id} PAYMENT_COMPLETED$`, 'm');
      assert.match(receiverLines.join('\n'), pattern, `the receiver printed ${id} completed`);
    }
  }, 20_000);
  assert.deepEqual(receiverLines.filter((line) => line.startsWith('refused') || line.startsWith('stderr')), [], 'every real delivery verifies');
});

test('the receiver answers 401 to a forged delivery and recognises a redelivery by its event id', async () => {
  const body = JSON.stringify({ event: 'transaction.updated', data: { id: 'guide-check', status: 'PAYMENT_COMPLETED' } });
  // The receiver is the partner's own program and judges freshness by its wall clock (not the
  // service's injected one), so the delivery forged here is stamped with that same clock.
  const timestamp = String(Math.floor(Date.now() / 1_000));
  const eventId = `evt_${randomBytes(16).toString('hex')}`;
  const sign = (key: string): string => `v1=${createHmac('sha256', key).update(`${timestamp}.${body}`).digest('hex')}`;
  const deliver = (signature: string): Promise<Response> =>
    fetch(receiverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-timestamp': timestamp, 'x-service-signature': signature, 'x-service-event-id': eventId },
      body,
    });

  assert.equal((await deliver(sign(`whsec_${randomBytes(32).toString('base64url')}`))).status, 401, 'another secret: refused');
  assert.equal((await deliver(sign(secret))).status, 200);
  assert.equal((await deliver(sign(secret))).status, 200, 'a redelivery is acknowledged');
  await eventually(() => {
    assert.deepEqual(
      receiverLines.filter((line) => line.includes(eventId) || line === 'refused: bad_signature'),
      ['refused: bad_signature', `event ${eventId} transaction.updated: transaction guide-check PAYMENT_COMPLETED`, `duplicate ${eventId}`],
    );
  });
});
