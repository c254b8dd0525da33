// LIMITS_FILE: an operator raises or lowers caps in a JSON file; what the file omits keeps the
// spec's default, and a typo is refused at start-up rather than silently ignored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultLimitsConfig, loadLimitsFile } from '../../src/config/limits.ts';
import { toPlainString } from '../../src/domain/money.ts';

function withFile(content: string, run: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'limits-file-'));
  try {
    const path = join(dir, 'limits.json');
    writeFileSync(path, content);
    run(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a limits file raises the BREB method cap and keeps every field it omits at the default', () => {
  withFile(JSON.stringify({ methods: { BREB: { methodDailyAmountMax: '1000000000000' } } }), (path) => {
    const limits = loadLimitsFile(path);
    const breb = limits.methods.BREB;
    assert.equal(breb.methodDailyAmountMax === null ? null : toPlainString(breb.methodDailyAmountMax), '1000000000000');
    assert.deepEqual(breb.userDailyAmountMax, defaultLimitsConfig.methods.BREB.userDailyAmountMax);
    assert.equal(breb.userDailyCountMax, defaultLimitsConfig.methods.BREB.userDailyCountMax);
    assert.deepEqual(limits.methods.PIX, defaultLimitsConfig.methods.PIX);
  });
});

test('a limits file with an unknown field or a bad amount is refused, naming the file', () => {
  withFile(JSON.stringify({ methods: { BREB: { methodDailyCap: '1' } } }), (path) => {
    assert.throws(() => loadLimitsFile(path), /invalid limits configuration/);
  });
  withFile(JSON.stringify({ methods: { BREB: { methodDailyAmountMax: '-5' } } }), (path) => {
    assert.throws(() => loadLimitsFile(path), /invalid limits configuration/);
  });
  withFile('{ not json', (path) => {
    assert.throws(() => loadLimitsFile(path), new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot read limits file`));
  });
});
