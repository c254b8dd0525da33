// Corridor health at the edge (src/edge/corridor-health.ts) over a real store: the figures come
// from the settlement samples in the store, one snapshot serves every request for
// CORRIDOR_HEALTH_CACHE_MS (requests arriving together share one computation, so a busy public
// route costs the store one read per method per period), and a new period shows new payouts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { settlementSamplesCollection } from '../../src/actors/transaction-actor.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { defaultHealthThresholds } from '../../src/domain/corridor-health.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import { createCorridorHealth } from '../../src/edge/corridor-health.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';

let dir: string;
let store: LmdbStore;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'corridor-health-'));
  store = new LmdbStore({ dir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
});

after(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const t0 = 1_764_100_000_000;

async function payout(id: string, depositAtMs: number, finishedAtMs: number, succeeded = true): Promise<void> {
  await store.put(settlementSamplesCollection, id, {
    transactionId: id, paymentMethod: 'BREB', network: 'STELLAR', cryptoCurrency: 'USDC', targetCurrency: 'COP', succeeded, depositAtMs, finishedAtMs,
  });
}

test('one snapshot per cache period, shared by requests arriving together; the next period shows new payouts', async () => {
  let nowMs = t0;
  const corridors = loadDefaultCorridors();
  const health = createCorridorHealth({
    store,
    config: { corridors: () => corridors },
    clock: { nowMs: () => nowMs },
    liquidity: { latest: () => ({ amount: decimalFromExactString('1000000000.00'), readAtMs: nowMs }), available: (method) => method !== 'PIX' },
    thresholds: defaultHealthThresholds,
    cacheMs: 5_000,
    lowLiquidityMultiple: 10,
  });
  await payout('a', t0 - 60_000, t0 - 58_000);
  await payout('b', t0 - 50_000, t0 - 46_000);
  const [first, together] = await Promise.all([health.snapshot(), health.snapshot()]);
  assert.equal(first, together, 'requests arriving together share one computation');
  const breb = first.corridors.find((entry) => entry.blockchain === 'STELLAR' && entry.paymentMethod === 'BREB') ?? assert.fail('the BREB corridor');
  assert.deepEqual(breb.settlement.last_hour, { payouts: 2, p50_ms: 2_000, p95_ms: 4_000 });
  assert.equal(breb.rail.state, 'up');
  assert.equal(breb.liquidity, 'ok');
  const pix = first.corridors.find((entry) => entry.paymentMethod === 'PIX') ?? assert.fail('a PIX corridor');
  assert.equal(pix.rail.state, 'down', 'an unavailable rail is down');
  assert.equal(pix.rail.since, new Date(t0).toISOString());

  // A payout finishing inside the period is not seen until the period ends.
  await payout('c', t0 - 1_000, t0);
  nowMs = t0 + 4_999;
  assert.equal(await health.snapshot(), first);
  nowMs = t0 + 5_000;
  const next = await health.snapshot();
  assert.notEqual(next, first);
  const again = next.corridors.find((entry) => entry.blockchain === 'STELLAR' && entry.paymentMethod === 'BREB') ?? assert.fail('the BREB corridor');
  assert.deepEqual(again.settlement.last_hour, { payouts: 3, p50_ms: 2_000, p95_ms: 4_000 });

  // The same figures as /metrics families.
  const families = await health.metrics();
  assert.deepEqual(families.map((family) => family.name), ['corridor_rail_state', 'corridor_settlement_seconds', 'corridor_liquidity_level']);
});
