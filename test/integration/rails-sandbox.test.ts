// The sandbox rail's contract, on the real embedded store: what a payout worker, the edge and the
// admin service rely on — a key pays once (also after a restart), liquidity goes down once per paid
// payout and never below zero, outages and the failure rate behave as set (deterministically),
// PIX charges carry a valid dynamic BR Code, refunds are idempotent.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { decimalFromExactString, toFixedString, type Decimal } from '../../src/domain/money.ts';
import { decodeBrCode } from '../../src/rails/brcode.ts';
import { RailUnavailableError, RailUsageError, type PayoutRequest } from '../../src/rails/rails.ts';
import { SandboxRail, type SandboxRailOptions } from '../../src/rails/sandbox-rail.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';

const d = (text: string): Decimal => decimalFromExactString(text);

let dir: string;
let store: LmdbStore;
const clock = { now: 1_700_000_000_000, nowMs: () => clock.now };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rails-sandbox-'));
  store = new LmdbStore({ dir });
  await store.init();
});

after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function rail(options: Partial<SandboxRailOptions> = {}): SandboxRail {
  return new SandboxRail({ store, clock, settingsCacheMs: 0, ...options });
}

function brebPayout(key: string, amount = '50000.00'): PayoutRequest {
  return { method: 'BREB', currency: 'COP', amount: d(amount), accountNumber: '@recipient', qrCode: null, taxId: null, idempotencyKey: key };
}

function pixPayout(key: string, amount: string): PayoutRequest {
  return { method: 'PIX', currency: 'BRL', amount: d(amount), accountNumber: 'pix@example.com', qrCode: null, taxId: '12345678909', idempotencyKey: key };
}

async function liquidityOf(sandbox: SandboxRail, method: 'BREB' | 'PIX'): Promise<string> {
  return toFixedString((await sandbox.liquidity(method)).amount);
}

describe('payouts', () => {
  test('a key pays once: a repeat, and a restarted rail on the same store, return the first outcome', async () => {
    const first = rail({ seed: 'idem' });
    await first.setLiquidity('BREB', d('100000.00'));
    const key = `payout:${randomUUID()}`;
    const paid = await first.payout(brebPayout(key));
    assert.equal(paid.status, 'succeeded');
    assert.deepEqual(await first.payout(brebPayout(key)), paid);
    const restarted = rail({ seed: 'idem' });
    assert.deepEqual(await restarted.payout(brebPayout(key)), paid);
    assert.deepEqual(await restarted.payoutStatus(key), paid);
    assert.equal(await liquidityOf(restarted, 'BREB'), '50000.00', 'liquidity went down once');
  });

  test('concurrent calls with one key pay once', async () => {
    const sandbox = rail();
    await sandbox.setLiquidity('PIX', d('1000.00'));
    const key = `payout:${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 8 }, () => sandbox.payout(pixPayout(key, '10.00'))));
    assert.equal(new Set(results.map((result) => JSON.stringify(result))).size, 1);
    assert.equal(await liquidityOf(sandbox, 'PIX'), '990.00');
  });

  test('the same key with another request is refused as a bug, and nothing more is paid', async () => {
    const sandbox = rail();
    const key = `payout:${randomUUID()}`;
    await sandbox.payout(brebPayout(key, '20000.00'));
    const before = await liquidityOf(sandbox, 'BREB');
    await assert.rejects(sandbox.payout(brebPayout(key, '20000.01')), RailUsageError);
    assert.equal(await liquidityOf(sandbox, 'BREB'), before);
  });

  test('liquidity: successful payouts decrement it; a payout above it fails and it never goes negative', async () => {
    const sandbox = rail();
    await sandbox.setLiquidity('PIX', d('100.00'));
    assert.equal((await sandbox.payout(pixPayout(`payout:${randomUUID()}`, '60.00'))).status, 'succeeded');
    const short = await sandbox.payout(pixPayout(`payout:${randomUUID()}`, '40.01'));
    assert.equal(short.status, 'failed');
    assert.equal(short.status === 'failed' ? short.reason : '', 'insufficient_liquidity');
    assert.equal(await liquidityOf(sandbox, 'PIX'), '40.00');
    assert.equal((await sandbox.payout(pixPayout(`payout:${randomUUID()}`, '40.00'))).status, 'succeeded');
    assert.equal(await liquidityOf(sandbox, 'PIX'), '0.00');
    await assert.rejects(sandbox.setLiquidity('PIX', d('-1.00')), RangeError);
  });

  test('an outage: the method is unavailable and payouts answer retry without paying; then it recovers', async () => {
    const sandbox = rail();
    await sandbox.setLiquidity('BREB', d('100000.00'));
    await sandbox.setOutage('BREB', true);
    assert.equal(await sandbox.available('BREB'), false);
    assert.equal(await sandbox.available('PIX'), true);
    const key = `payout:${randomUUID()}`;
    assert.equal((await sandbox.payout(brebPayout(key))).status, 'retry');
    assert.equal(await sandbox.ledgerEntry(key), null, 'nothing was paid during the outage');
    await sandbox.setOutage('BREB', false);
    assert.equal((await sandbox.payout(brebPayout(key))).status, 'succeeded');
  });

  test('the failure rate is a seeded draw per key: the same seed fails the same payouts, in any order, on any store', async () => {
    const keys = Array.from({ length: 150 }, (_, index) => `payout:rate-${index}`);
    const run = async (seed: string, order: readonly string[]): Promise<Map<string, string>> => {
      const ownDir = mkdtempSync(join(tmpdir(), 'rails-rate-'));
      const own = new LmdbStore({ dir: ownDir });
      await own.init();
      try {
        const sandbox = new SandboxRail({ store: own, clock, seed, failureRate: 0.3, settingsCacheMs: 0 });
        await sandbox.setLiquidity('BREB', d('100000000000.00'));
        const seen = new Map<string, string>();
        for (const key of order) seen.set(key, (await sandbox.payout(brebPayout(key, '10000.00'))).status);
        return seen;
      } finally {
        await own.close();
        rmSync(ownDir, { recursive: true, force: true });
      }
    };
    const [first, second, otherSeed] = await Promise.all([run('seed-1', keys), run('seed-1', [...keys].reverse()), run('seed-2', keys)]);
    assert.deepEqual(keys.map((key) => second.get(key)), keys.map((key) => first.get(key)));
    const failed = [...first.values()].filter((status) => status === 'failed').length;
    assert.ok(failed > 150 * 0.18 && failed < 150 * 0.42, `about 30% failed (${failed})`);
    assert.notDeepEqual(keys.map((key) => otherSeed.get(key)), keys.map((key) => first.get(key)));
    await rail().setLiquidity('BREB', d('1000000.00'));
    assert.equal((await rail({ failureRate: 1 }).payout(brebPayout(`payout:${randomUUID()}`))).status, 'failed');
    assert.equal((await rail({ failureRate: 0 }).payout(brebPayout(`payout:${randomUUID()}`))).status, 'succeeded');
  });

  test('a pending period: the payout is pending, then succeeds; liquidity is held from acceptance', async () => {
    const sandbox = rail({ pendingMs: 5_000 });
    await sandbox.setLiquidity('PIX', d('50.00'));
    const key = `payout:${randomUUID()}`;
    assert.equal((await sandbox.payout(pixPayout(key, '20.00'))).status, 'pending');
    assert.equal(await liquidityOf(sandbox, 'PIX'), '30.00');
    clock.now += 4_999;
    assert.equal((await sandbox.payoutStatus(key))?.status, 'pending');
    clock.now += 1;
    assert.equal((await sandbox.payoutStatus(key))?.status, 'succeeded');
    assert.equal(await liquidityOf(sandbox, 'PIX'), '30.00');
  });

  test('latency is spent on every answer', async () => {
    const slept: number[] = [];
    const sandbox = rail({ latencyMs: 250, sleep: async (ms) => void slept.push(ms) });
    await sandbox.payout(pixPayout(`payout:${randomUUID()}`, '1.00'));
    await sandbox.setLatency(40);
    await sandbox.liquidity('PIX');
    assert.deepEqual(slept, [250, 40]);
  });

  test('knobs set through one rail reach another process on the same store', async () => {
    const admin = rail();
    const worker = new SandboxRail({ store, clock, settingsCacheMs: 1_000 });
    assert.equal(await worker.available('PIX'), true);
    await admin.setOutage('PIX', true);
    await admin.setFailureRate(0.5);
    assert.equal(await worker.available('PIX'), true, 'cached for up to settingsCacheMs');
    clock.now += 1_000;
    assert.equal(await worker.available('PIX'), false);
    assert.equal((await worker.settings()).failureRate, 0.5);
    await admin.setOutage('PIX', false);
    await admin.setFailureRate(0);
    await assert.rejects(admin.setFailureRate(1.5), RangeError);
  });
});

describe('PIX charges and refunds', () => {
  test('a charge is a valid dynamic BR Code with the amount, and the same key returns the same charge', async () => {
    const sandbox = rail();
    const request = { amount: d('123.45'), expiresAtMs: clock.now + 3_600_000, idempotencyKey: `charge:${randomUUID()}`, description: 'onramp' };
    const charge = await sandbox.createPixCharge(request);
    const decoded = decodeBrCode(charge.brCode);
    assert.ok(decoded.ok);
    assert.equal(decoded.value.amount, '123.45');
    assert.deepEqual(await sandbox.createPixCharge({ ...request, expiresAtMs: request.expiresAtMs + 10 }), charge);
    assert.deepEqual(await rail().createPixCharge(request), charge, 'after a restart too');
    await assert.rejects(sandbox.createPixCharge({ ...request, amount: d('123.46') }), RailUsageError);
  });

  test('charges are refused during a PIX outage', async () => {
    const sandbox = rail();
    await sandbox.setOutage('PIX', true);
    try {
      await assert.rejects(
        sandbox.createPixCharge({ amount: d('10.00'), expiresAtMs: clock.now + 1, idempotencyKey: `charge:${randomUUID()}`, description: 'x' }),
        RailUnavailableError,
      );
    } finally {
      await sandbox.setOutage('PIX', false);
    }
  });

  test('a paid charge can be refunded once per key, not above what was paid; outages answer retry', async () => {
    const sandbox = rail();
    const charge = await sandbox.createPixCharge({ amount: d('50.00'), expiresAtMs: clock.now + 60_000, idempotencyKey: `charge:${randomUUID()}`, description: 'x' });
    const payment = await sandbox.simulatePixPayment({ chargeId: charge.chargeId, amount: d('49.00') });
    assert.ok(payment);
    assert.equal(toFixedString(payment.amount), '49.00');
    const key = `refund:${randomUUID()}`;
    await assert.rejects(sandbox.refundPixPayment({ providerPaymentId: payment.providerPaymentId, amount: d('49.01'), idempotencyKey: `refund:${randomUUID()}` }), RailUsageError);
    await sandbox.setOutage('PIX', true);
    assert.equal((await sandbox.refundPixPayment({ providerPaymentId: payment.providerPaymentId, amount: d('49.00'), idempotencyKey: key })).status, 'retry');
    await sandbox.setOutage('PIX', false);
    const refund = await sandbox.refundPixPayment({ providerPaymentId: payment.providerPaymentId, amount: d('49.00'), idempotencyKey: key });
    assert.equal(refund.status, 'succeeded');
    assert.deepEqual(await rail().refundPixPayment({ providerPaymentId: payment.providerPaymentId, amount: d('49.00'), idempotencyKey: key }), refund);
    assert.equal(await sandbox.simulatePixPayment({ chargeId: randomUUID(), amount: null }), null);
  });
});
