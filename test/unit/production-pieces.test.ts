// Outside sandbox mode (SANDBOX=0), a role run apart — the shape of the production manifests —
// refuses to start when a piece production needs is missing, and the start-up error names every
// one, so that a deployment either has them or chooses sandbox mode on purpose (SANDBOX=1). The
// shipped production manifests (Kubernetes, systemd) default to SANDBOX=0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readEnv } from '../../src/config/env.ts';

const repoDir = join(import.meta.dirname, '../..');
const redisUrl = 'redis://127.0.0.1:6379';

function start(env: Record<string, string>): string | null {
  try {
    readEnv({ HOST: '127.0.0.1', ...env });
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const refusals: ReadonlyArray<{ role: string; env: Record<string, string>; names: readonly RegExp[] }> = [
  // No production fiat rail adapter exists yet: a payout process would pay nobody.
  { role: 'payout', env: { REDIS_URL: redisUrl }, names: [/fiat rail/] },
  { role: 'edge', env: { REDIS_URL: redisUrl }, names: [/fiat rail/, /CHAINS_FILE/] },
  { role: 'watcher', env: { REDIS_URL: redisUrl }, names: [/fiat rail/, /CHAINS_FILE/] },
  { role: 'admin', env: { REDIS_URL: redisUrl }, names: [/CHAINS_FILE/] },
  // A role apart on its own in-process bus serves nobody.
  { role: 'shard', env: {}, names: [/REDIS_URL/] },
  { role: 'webhooks', env: {}, names: [/REDIS_URL/] },
];

for (const { role, env, names } of refusals) {
  test(`SANDBOX=0: the ${role} role missing production pieces refuses to start, naming each`, () => {
    const message = start({ ROLE: role, SANDBOX: '0', ...env });
    assert.ok(message !== null, `${role} started`);
    assert.match(message, /SANDBOX/);
    for (const name of names) assert.match(message, name);
    assert.match(message, /SANDBOX=1/, 'it says how to run a trial instead');
  });
}

test('SANDBOX=0: a process that has what its role needs starts (shard and webhooks on Redis)', () => {
  assert.equal(start({ ROLE: 'shard', SANDBOX: '0', REDIS_URL: redisUrl }), null);
  assert.equal(start({ ROLE: 'webhooks', SANDBOX: '0', REDIS_URL: redisUrl }), null);
});

test('sandbox mode and the one-process `all` (development, trials) are not refused', () => {
  assert.equal(start({ ROLE: 'payout', SANDBOX: '1' }), null);
  assert.equal(start({ ROLE: 'edge', SANDBOX: '1', REDIS_URL: redisUrl }), null);
  assert.equal(start({ ROLE: 'all', SANDBOX: '0' }), null);
  assert.equal(start({}), null);
});

test('the production manifests default to SANDBOX=0; the local compose stack stays a sandbox trial', () => {
  const read = (path: string): string => readFileSync(join(repoDir, path), 'utf8');
  assert.match(read('deploy/k8s/configmap.yaml'), /^ {2}SANDBOX: "0"$/m);
  assert.match(read('deploy/systemd/payments.env.example'), /^SANDBOX=0$/m);
  assert.match(read('deploy/compose.yaml'), /^ {4}SANDBOX: "1"$/m);
});
