// The demo partner exists in sandbox mode only. Outside it (SANDBOX=0) there is no demo partner,
// whatever the environment or the store says: DEMO_API_KEY is not honoured (401) and the start
// says so, and an admin change made to the demo partner during a sandbox run (stored, so it would
// otherwise win at every later start) does not bring it back.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { readEnv } from '../../src/config/env.ts';
import { sha256Hex } from '../../src/edge/auth.ts';
import { createAdminClient } from '../../src/grpc/admin-client.ts';
import { startService, type RunningService } from '../../src/service/service.ts';

let dataDir: string;

before(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'demo-partner-'));
});

after(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

const testDataKey = randomBytes(32).toString('base64');

function env(extra: Record<string, string>): ReturnType<typeof readEnv> {
  return readEnv({
    ROLE: 'all',
    // Outside sandbox mode personal data needs its key (a throwaway one here).
    DATA_ENCRYPTION_KEY: testDataKey,
    DATA_ENCRYPTION_KEY_ID: 'test-1',
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_PORT: '0',
    ADMIN_TLS: 'off',
    PAYOUT_GRPC_PORT: '0',
    SHARDS: '4',
    LOG_LEVEL: 'info',
    OPS_API_KEY: `ops_${randomUUID().replaceAll('-', '')}`,
    ...extra,
  });
}

/** A service whose log lines are kept (the start's warnings are part of what is tested). */
async function start(config: ReturnType<typeof readEnv>): Promise<{ service: RunningService; logLines: string[] }> {
  const logLines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  return { service: await startService(config, { log }), logLines };
}

/** What a partner with this key gets from an authenticated endpoint. */
async function statusWith(service: RunningService, apiKey: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${service.port ?? 0}/kyc/status?userId=u-1`, { headers: { 'X-API-Key': apiKey }, signal: AbortSignal.timeout(20_000) });
  await response.arrayBuffer();
  return response.status;
}

describe('the demo partner outside sandbox mode', () => {
  test('SANDBOX=0 without a partners file: no demo partner, DEMO_API_KEY gets 401, and the start says the key is ignored', async () => {
    const demoKey = `demo_${randomUUID().replaceAll('-', '')}`;
    const { service, logLines } = await start(env({ SANDBOX: '0', DEMO_API_KEY: demoKey, DATA_DIR: join(dataDir, 'production') }));
    try {
      assert.equal(await statusWith(service, demoKey), 401);
      assert.equal(service.ctx.partners.get('demo'), undefined);
      const warned = logLines.map((line) => JSON.parse(line) as { level: number; msg: string }).find((line) => line.msg.includes('DEMO_API_KEY'));
      assert.ok(warned !== undefined && warned.level === 40, `a warning names DEMO_API_KEY: ${logLines.join('')}`);
      assert.ok(!logLines.join('').includes(demoKey), 'the key itself is never logged');
    } finally {
      await service.stop();
    }
  });

  test('a demo key rotated through the admin service in a sandbox run does not bring the demo partner back with SANDBOX=0', async () => {
    const storeDir = join(dataDir, 'rotated');
    const partnersFile = join(dataDir, 'partners.json');
    const partnerKey = `acme_${randomUUID().replaceAll('-', '')}`;
    writeFileSync(partnersFile, JSON.stringify({ partners: [{ id: 'acme', name: 'Acme', apiKeySha256: [sha256Hex(partnerKey)], kycEnabled: false, kybApproved: true }] }));
    const sandboxEnv = env({ SANDBOX: '1', DEMO_API_KEY: `demo_${randomUUID().replaceAll('-', '')}`, DATA_DIR: storeDir, PARTNERS_FILE: partnersFile });
    const sandbox = await start(sandboxEnv);
    let rotatedKey: string;
    try {
      const admin = createAdminClient(`127.0.0.1:${sandbox.service.adminPort ?? 0}`, sandboxEnv.OPS_API_KEY ?? '', { transport: { kind: 'plaintext' } });
      try {
        rotatedKey = String((await admin.call('RotateApiKey', { partner_id: 'demo' }))['api_key']);
      } finally {
        admin.close();
      }
      assert.equal(await statusWith(sandbox.service, rotatedKey), 200, 'in sandbox mode the rotated key works');
    } finally {
      await sandbox.service.stop();
    }
    const production = await start(env({ SANDBOX: '0', DATA_DIR: storeDir, PARTNERS_FILE: partnersFile }));
    try {
      assert.equal(await statusWith(production.service, rotatedKey), 401);
      assert.equal(production.service.ctx.partners.get('demo'), undefined);
      assert.equal(await statusWith(production.service, partnerKey), 200, 'the partners of the file are served');
    } finally {
      await production.service.stop();
    }
  });
});
