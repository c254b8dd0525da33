// Where the keys generated at start end up: printed on a terminal (`npm start` keeps showing them),
// otherwise in a 0600 file under DATA_DIR and never on stdout, which is then a log stream. The
// whole process with stdout on a pipe: test/e2e/edge-capabilities.test.ts ("npm start").
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatedKeysPath, reportGeneratedKeys } from '../../src/service/generated-keys.ts';

const keys = { demoApiKey: 'demo_0123456789abcdef', opsApiKey: 'ops_fedcba9876543210' };
let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'generated-keys-'));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('generated keys', () => {
  test('on a terminal they are printed (and used in the example), and no file is written', () => {
    const dataDir = join(dir, 'terminal');
    const report = reportGeneratedKeys(keys, { isTty: true, dataDir, role: 'all' });
    assert.deepEqual(report.lines, ['demo partner API key: demo_0123456789abcdef', 'ops API key: ops_fedcba9876543210']);
    assert.equal(report.demoKeyInExample, keys.demoApiKey);
    assert.equal(existsSync(generatedKeysPath(dataDir, 'all')), false);
  });

  test('elsewhere only the path is printed; the file is 0600, even over an older file with wider permissions', () => {
    const dataDir = join(dir, 'log-stream');
    const path = generatedKeysPath(dataDir, 'edge');
    reportGeneratedKeys({ opsApiKey: 'ops_old' }, { isTty: false, dataDir, role: 'edge' });
    chmodSync(path, 0o644);
    const report = reportGeneratedKeys(keys, { isTty: false, dataDir, role: 'edge' });
    const printed = report.lines.join('\n');
    assert.ok(printed.includes(path), printed);
    assert.ok(!printed.includes(keys.demoApiKey) && !printed.includes(keys.opsApiKey), printed);
    assert.equal(report.demoKeyInExample, '$DEMO_API_KEY');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const text = readFileSync(path, 'utf8');
    assert.match(text, /^DEMO_API_KEY=demo_0123456789abcdef$/m);
    assert.match(text, /^OPS_API_KEY=ops_fedcba9876543210$/m);
    assert.ok(!text.includes('ops_old'), 'replaced at every start');
  });

  test('a symbolic link in the file\'s place is not followed: nothing is written, and the keys are still not printed', () => {
    const dataDir = join(dir, 'linked');
    const target = join(dir, 'elsewhere.txt');
    writeFileSync(target, 'untouched');
    const report = reportGeneratedKeys({ opsApiKey: 'ops_unused' }, { isTty: false, dataDir, role: 'all' });
    rmSync(generatedKeysPath(dataDir, 'all'));
    symlinkSync(target, generatedKeysPath(dataDir, 'all'));
    const refused = reportGeneratedKeys(keys, { isTty: false, dataDir, role: 'all' });
    assert.equal(readFileSync(target, 'utf8'), 'untouched');
    assert.match(refused.lines.join('\n'), /could not be written/);
    assert.ok(!refused.lines.join('\n').includes(keys.opsApiKey));
    assert.equal(report.lines.length, 1);
  });

  test('nothing generated: nothing to say', () => {
    assert.deepEqual(reportGeneratedKeys({}, { isTty: false, dataDir: join(dir, 'none'), role: 'all' }).lines, []);
  });
});
