// The edge's cached liquidity: what acceptance and GET /payments/liquidity see. A good reading is
// kept through failed reads (never replaced by zero), expires after the staleness bound (then the
// method counts as unavailable), and follows the sandbox rail's real liquidity.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { PaymentMethod } from '../../src/domain/assets.ts';
import { decimalFromExactString, toFixedString, type Decimal } from '../../src/domain/money.ts';
import { CachedLiquidityView, railLiquiditySource, type LiquiditySource } from '../../src/rails/liquidity.ts';
import { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { eventually } from '../support/eventually.ts';

const d = (text: string): Decimal => decimalFromExactString(text);

let dir: string;
let store: LmdbStore;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rails-liquidity-'));
  store = new LmdbStore({ dir });
  await store.init();
});

after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A provider whose answers the test scripts: a value, an error, or a read that never answers. */
function scriptedSource(): LiquiditySource & { next: 'ok' | 'error' | 'hang'; amount: string; up: boolean } {
  const source = {
    next: 'ok' as 'ok' | 'error' | 'hang',
    amount: '1000.00',
    up: true,
    read(method: PaymentMethod) {
      void method;
      if (source.next === 'error') return Promise.reject(new Error('provider unreachable'));
      if (source.next === 'hang') return new Promise<never>(() => undefined);
      return Promise.resolve({ amount: d(source.amount), available: source.up });
    },
  };
  return source;
}

test('a failed read keeps the last good reading; after the staleness bound it is unknown and the method unavailable', async () => {
  const clock = { now: 1_000_000, nowMs: () => clock.now };
  const source = scriptedSource();
  const view = new CachedLiquidityView({ source, clock, methods: ['PIX'], refreshIntervalMs: 1_000, staleAfterMs: 10_000, readTimeoutMs: 50 });
  assert.equal(view.latest('PIX'), null, 'nothing known before the first read');
  assert.equal(view.available('PIX'), false);
  await view.refresh();
  assert.equal(toFixedString(view.latest('PIX')?.amount ?? d('0')), '1000.00');
  assert.equal(view.available('PIX'), true);

  clock.now += 6_000;
  source.next = 'error';
  await view.refresh();
  assert.equal(toFixedString(view.latest('PIX')?.amount ?? d('0')), '1000.00', 'a failed read is not a zero');
  assert.equal(view.latest('PIX')?.readAtMs, 1_000_000);
  assert.equal(view.health('PIX').consecutiveFailures, 1);

  source.next = 'hang';
  await view.refresh(); // bounded by readTimeoutMs
  assert.equal(view.health('PIX').consecutiveFailures, 2);
  assert.match(view.health('PIX').lastError ?? '', /timed out/);

  clock.now += 4_001; // 10,001 ms after the good read
  assert.equal(view.latest('PIX'), null);
  assert.equal(view.available('PIX'), false, 'unknown liquidity: acceptance refuses with rail_unavailable');
  assert.equal(view.health('PIX').state, 'stale');

  source.next = 'ok';
  source.amount = '750.50';
  source.up = false;
  await view.refresh();
  assert.equal(toFixedString(view.latest('PIX')?.amount ?? d('0')), '750.50');
  assert.equal(view.available('PIX'), false, 'fresh, but the provider reports an outage');
  assert.equal(view.health('PIX').state, 'fresh');
});

test('the view follows the sandbox rail: a payout lowers the figure at the next refresh', async () => {
  const clock = { nowMs: () => Date.now() };
  const rail = new SandboxRail({ store, clock, settingsCacheMs: 0 });
  await rail.setLiquidity('BREB', d('200000.00'));
  const view = new CachedLiquidityView({ source: railLiquiditySource(rail), clock, refreshIntervalMs: 50, staleAfterMs: 5_000 });
  await view.start();
  try {
    assert.equal(toFixedString(view.latest('BREB')?.amount ?? d('0')), '200000.00');
    await rail.payout({ method: 'BREB', currency: 'COP', amount: d('50000.00'), accountNumber: '@x', qrCode: null, taxId: null, idempotencyKey: `payout:${randomUUID()}` });
    await eventually(() => assert.equal(toFixedString(view.latest('BREB')?.amount ?? d('0')), '150000.00'), 5_000);
    await rail.setOutage('BREB', true);
    await view.refresh();
    assert.equal(view.available('BREB'), false);
  } finally {
    await view.stop();
  }
});

test('a refresh asked while a round is reading waits for a round of its own: a change reported meanwhile is seen', async () => {
  const clock = { now: 1_000_000, nowMs: () => clock.now };
  const pending: Array<() => void> = [];
  let up = true;
  const source: LiquiditySource = {
    read() {
      const available = up; // what the provider said when this read was made
      return new Promise((resolve) => {
        pending.push(() => resolve({ amount: d('10.00'), available }));
      });
    },
  };
  const view = new CachedLiquidityView({ source, clock, methods: ['PIX'], refreshIntervalMs: 1_000, staleAfterMs: 10_000, readTimeoutMs: 60_000 });
  const first = view.refresh(); // reads "up" and waits
  up = false; // the provider reports an outage while that read is in flight
  const second = view.refresh();
  pending.shift()?.();
  await first;
  await eventually(() => assert.equal(pending.length, 1, 'a second read was made'));
  pending.shift()?.();
  await second;
  assert.equal(view.available('PIX'), false, 'the refresh asked after the outage sees it');
});
