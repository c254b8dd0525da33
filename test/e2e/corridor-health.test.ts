// Corridor health over HTTP (docs/corridor-health.md): with the sandbox rail failing every payout,
// GET /public/corridors/health turns the corridor's rail `degraded` once the configured share of
// recent payouts has failed, and back `up` once payouts succeed again; its p50/p95 settlement
// times equal those computed from the transactions' own timestamps (deposit seen → payout
// completed, as their signed receipts state them); /metrics carries the same figures.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PaymentsClient } from '../../clients/typescript/src/index.ts';
import { startServiceHarness, testPartners, type ServiceHarness } from '../support/service-harness.ts';
import { checkedFetch } from '../support/openapi-validation.ts';
import { eventually } from '../support/eventually.ts';
import { teardown } from '../support/teardown.ts';
import { call, payoutQuoteBody, untilStatus } from './support.ts';

const corridor = { blockchain: 'STELLAR', cryptoCurrency: 'USDC', paymentMethod: 'BREB', targetCurrency: 'COP' } as const;

describe('corridor health', () => {
  let harness: ServiceHarness | undefined;
  let client: PaymentsClient;

  before(async () => {
    harness = await startServiceHarness({
      env: {
        // A small window so the flip takes a few payouts: degraded at half of the last 4 failing, up under a quarter.
        CORRIDOR_HEALTH_RECENT_PAYOUTS: '4',
        CORRIDOR_HEALTH_MIN_PAYOUTS: '2',
        CORRIDOR_HEALTH_FAILURE_SHARE_DEGRADED: '0.5',
        CORRIDOR_HEALTH_FAILURE_SHARE_RECOVERED: '0.25',
        CORRIDOR_HEALTH_CACHE_MS: '100',
      },
    });
    client = new PaymentsClient({ baseUrl: harness.baseUrl, apiKey: harness.apiKeys[testPartners.kycOff] ?? '', fetch: checkedFetch });
  });

  after(() => teardown(() => harness?.stop()));

  async function payouts(count: number, status: 'PAYMENT_FAILED' | 'PAYMENT_COMPLETED'): Promise<string[]> {
    const key = harness?.apiKeys[testPartners.kycOff] ?? '';
    return Promise.all(
      Array.from({ length: count }, async () => {
        const quote = await client.createQuote(payoutQuoteBody);
        const accepted = await client.acceptTransaction({ quote_id: quote.quote_id, user_id: `health-${randomUUID()}`, account_number: '3001234567' });
        const id = accepted.id ?? assert.fail('a transaction id');
        await client.sandboxDeposit({ transaction_id: id });
        await untilStatus(harness?.baseUrl ?? '', key, id, status, 30_000);
        return id;
      }),
    );
  }

  async function health() {
    const { corridors } = await client.getCorridorHealth();
    const entry = corridors.find((item) => Object.entries(corridor).every(([name, value]) => item[name as keyof typeof corridor] === value));
    return entry ?? assert.fail('the STELLAR USDC → COP (BREB) corridor is listed');
  }

  test('degraded when the rail fails the configured share of payouts, up again when it recovers; p50/p95 from the transactions’ own times', async () => {
    const before = await health();
    assert.equal(before.rail.state, 'up');
    assert.equal(before.liquidity, 'ok');

    await harness?.rail?.setFailureRate(1);
    await payouts(2, 'PAYMENT_FAILED');
    const degraded = await eventually(async () => {
      const entry = await health();
      assert.equal(entry.rail.state, 'degraded');
      return entry;
    }, 10_000);
    assert.equal(degraded.rail.recent_failure_share, 1);
    assert.ok(degraded.rail.since !== null && Date.parse(degraded.rail.since) <= Date.now());
    const raw = await call(harness?.baseUrl ?? '', 'GET', '/public/corridors/health');
    assert.match(raw.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);

    await harness?.rail?.setFailureRate(0);
    const completed = await payouts(4, 'PAYMENT_COMPLETED');
    const recovered = await eventually(async () => {
      const entry = await health();
      assert.equal(entry.rail.state, 'up');
      assert.equal(entry.settlement.last_hour.payouts, 4);
      return entry;
    }, 10_000);
    assert.equal(recovered.rail.recent_failure_share, 0);

    // The transactions' own times, as their receipts state them: deposit seen → payout completed.
    const durations: number[] = [];
    for (const id of completed) {
      const { receipt } = await client.getReceipt(id);
      assert.ok(receipt.settlement !== null);
      durations.push(Date.parse(receipt.settlement.completed_at) - Date.parse(receipt.deposit.received_at));
    }
    durations.sort((a, b) => a - b);
    const nearestRank = (p: number): number => durations[Math.ceil((p / 100) * durations.length) - 1] ?? NaN;
    assert.deepEqual(recovered.settlement.last_hour, { payouts: 4, p50_ms: nearestRank(50), p95_ms: nearestRank(95) });
    assert.deepEqual(recovered.settlement.last_day, recovered.settlement.last_hour);

    // The same figures in /metrics (ops key).
    const metrics = await call(harness?.baseUrl ?? '', 'GET', '/metrics', { ops: harness?.opsApiKey ?? '' });
    assert.equal(metrics.status, 200);
    const labels = 'network="STELLAR",asset="USDC",method="BREB",currency="COP"';
    assert.match(metrics.text, new RegExp(`corridor_rail_state\\{${labels}\\} 0`));
    assert.match(metrics.text, new RegExp(`corridor_settlement_seconds\\{${labels},window="last_hour",quantile="p95"\\} ${nearestRank(95) / 1000}`));
    assert.match(metrics.text, new RegExp(`corridor_liquidity_level\\{${labels}\\} 0`));
  });
});
