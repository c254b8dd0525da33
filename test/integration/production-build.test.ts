// The production build as the image runs it (deploy/Dockerfile): in a temporary directory, the
// production dependencies only (`npm ci --omit=dev --ignore-scripts`, as the image's run stage
// installs them) and the build output (`npm run build`, compiled once into that directory's dist/),
// with proto/, config/ and web/ beside it. Every role then starts from there with plain `node
// dist/main.js <role>` on a private Redis, and answers /healthz; the admin CLI runs with plain
// `node dist/grpc/admin-cli.js`. tsx and every other dev-only package are absent from that install,
// so anything that still needed them would fail here, as it would in the container. (TypeScript
// itself is installed: viem, abitype and @solana/* name it as an optional peer, so npm keeps it
// with --omit=dev; nothing loads it at run time.)
//
// `npm ci --offline`: the install reads npm's cache only (CI's own `npm ci` of the checkout has just
// filled it), so this test needs no network and costs seconds, not minutes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServiceFleet, type FleetProcess, type FleetRole, type ServiceFleet } from '../support/service-fleet.ts';

const run = promisify(execFile);
const repoDir = join(import.meta.dirname, '../..');
/** What the image holds besides node_modules and dist/ (deploy/Dockerfile's run stage copies the same). */
const runtimeFiles = ['package.json', 'package-lock.json', 'proto', 'config', 'web'] as const;
/** Bounds on the install and the build, on a shared CI machine. */
const installTimeoutMs = 240_000;

let installDir: string;
let fleet: ServiceFleet | undefined;
/** How long the install and the build took (reported, not asserted: the machine is shared). */
const preparedMs: Record<string, number> = {};

async function timed(label: string, work: Promise<unknown>): Promise<void> {
  const startedAtMs = Date.now();
  await work;
  preparedMs[label] = Date.now() - startedAtMs;
}

before(async () => {
  installDir = mkdtempSync(join(tmpdir(), 'production-build-'));
  for (const file of runtimeFiles) cpSync(join(repoDir, file), join(installDir, file), { recursive: true });
  // The install and the build are independent: both at once.
  await Promise.all([
    timed('npm ci --omit=dev', run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], { cwd: installDir, timeout: installTimeoutMs })),
    // --noCheck: type checking is `npm run typecheck`'s (the same sources; CI runs it before the
    // tests); the emitted files are the same, at a third of the CPU.
    timed('npm run build', run('npm', ['run', 'build', '--', '--noCheck', '--outDir', join(installDir, 'dist')], { cwd: repoDir, timeout: installTimeoutMs })),
  ]);
  fleet = await startServiceFleet({
    partners: [{ id: 'alpha', webhookUrl: 'http://127.0.0.1:9/webhooks' }],
    shards: 4,
    // Every process serves its health listener and is reported started once its /readyz answers
    // 200. No NODE_OPTIONS from the test runner's environment (it could load a loader), and the
    // working directory is the install, whose node_modules has no tsx.
    env: { HEALTH_PORT: '0', NODE_OPTIONS: '' },
    program: { args: [join(installDir, 'dist/main.js')], cwd: installDir },
  });
});

after(async () => {
  await fleet?.stop();
  rmSync(installDir, { recursive: true, force: true });
});

test('the production install holds no dev-only package: no tsx, no esbuild', (t) => {
  t.diagnostic(`prepared in ${JSON.stringify(preparedMs)} ms`);
  const lock = JSON.parse(readFileSync(join(repoDir, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const devOnly = Object.entries(lock.packages)
    .filter(([path, entry]) => path.startsWith('node_modules/') && entry.dev === true)
    .map(([path]) => path);
  assert.ok(devOnly.includes('node_modules/tsx') && devOnly.includes('node_modules/esbuild'), 'tsx and esbuild are dev-only in the lockfile');
  const installed = devOnly.filter((path) => existsSync(join(installDir, path)));
  assert.deepEqual(installed, []);
  assert.ok(existsSync(join(installDir, 'node_modules/ioredis')), 'the production dependencies are installed');
  assert.ok(existsSync(join(installDir, 'dist/main.js')) && existsSync(join(installDir, 'dist/grpc/admin-cli.js')));
});

test('every role starts from the build with plain node and answers /healthz', async (t) => {
  const running = fleet;
  assert.ok(running !== undefined);
  const start = async (role: FleetRole): Promise<FleetProcess> => {
    const startedAtMs = Date.now();
    const member = await running.start(role, `${role}-1`);
    t.diagnostic(`${role}: ready in ${Date.now() - startedAtMs} ms`);
    return member;
  };
  // The shard worker first (an edge is ready only once every shard has a live worker), then the
  // others at once.
  const shard = await start('shard');
  const others = await Promise.all((['edge', 'watcher', 'payout', 'webhooks', 'all'] as const).map(start));
  const started = [shard, ...others];
  for (const member of started) {
    for (const baseUrl of [member.healthUrl, member.baseUrl]) {
      if (baseUrl === null) continue;
      const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      assert.equal(response.status, 200, `${member.name} ${baseUrl}/healthz`);
    }
    assert.ok(member.healthUrl !== null, `${member.name} has a health listener`);
  }
});

test('the admin CLI runs from the build with plain node', async (t) => {
  assert.ok(fleet !== undefined);
  const all = fleet.running().find((member) => member.role === 'all');
  assert.ok(all?.adminAddress, 'the `all` process of the previous test serves the admin service');
  const startedAtMs = Date.now();
  const { stdout } = await run(process.execPath, [join(installDir, 'dist/grpc/admin-cli.js'), 'shards'], {
    cwd: installDir,
    timeout: 30_000,
    env: { PATH: process.env['PATH'] ?? '', OPS_API_KEY: fleet.opsApiKey, ADMIN_ADDR: all.adminAddress, ADMIN_TLS_CA_FILE: fleet.certificates.caFile },
  });
  t.diagnostic(`admin-cli shards: ${Date.now() - startedAtMs} ms`);
  assert.match(stdout, /^shard\s+owner\s+token/);
});

test('deploy/Dockerfile runs the steps this test runs: build stage, then production dependencies, dist/ and plain node', () => {
  const dockerfile = readFileSync(join(repoDir, 'deploy/Dockerfile'), 'utf8');
  const instructions = dockerfile
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
    .replaceAll('\\\n', ' ');
  const stages = instructions.split(/^FROM /m).slice(1);
  assert.equal(stages.length, 2, 'a build stage and a run stage');
  const [buildStage = '', runStage = ''] = stages;
  assert.match(buildStage, /^RUN npm ci --ignore-scripts\b/m);
  assert.match(buildStage, /^RUN npm run build$/m);
  assert.match(runStage, /^RUN npm ci --omit=dev --ignore-scripts\b/m);
  for (const file of runtimeFiles) assert.match(runStage, new RegExp(`^COPY .*\\b${file}\\b`, 'm'), `the run stage copies ${file}`);
  assert.match(runStage, /^COPY --from=build \/opt\/payments\/dist \.\/dist$/m);
  assert.match(runStage, /^ENTRYPOINT \["node", "dist\/main\.js"\]$/m);
  assert.doesNotMatch(runStage, /tsx|\.ts\b/);
  // The build context carries what the build stage compiles.
  const context = readFileSync(join(repoDir, 'deploy/Dockerfile.dockerignore'), 'utf8');
  for (const file of ['tsconfig.json', 'tsconfig.build.json', 'src/**', ...runtimeFiles.map((name) => (name.includes('.') ? name : `${name}/**`))]) {
    assert.ok(context.split('\n').includes(`!${file}`), `the build context includes ${file}`);
  }
});
