// Limits: the caps a partner runs into, exactly at and one minor unit past each boundary; the day
// and month windows at local midnight; reservation bookkeeping; the rejection catalogue.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  acceptanceCheckOrder,
  acceptanceCounterKeys,
  acceptanceRejectionCatalogue,
  checkPerTransaction,
  civilDayKey,
  commit,
  describeAcceptanceRejection,
  emptyCounter,
  firstRejection,
  isKycRequired,
  kybCounterKey,
  kycMonthCounterKey,
  methodDayCounterKey,
  methodDayKey,
  closedEntriesPerBucketMax,
  counterEntries,
  counterEntry,
  release,
  reserve,
  reserveKyb,
  reserveKycMonth,
  reserveMethodDay,
  reserveUserDay,
  userDayCounterKey,
  utcMonthKey,
} from '../../src/domain/limits.ts';
import { bucketIndexOf } from '../../src/domain/counter.ts';
import type {
  AcceptanceRejection,
  AcceptanceRejectionCode,
  CounterEntry,
  CounterState,
  KycStanding,
  LimitsConfig,
} from '../../src/domain/limits.ts';
import { defaultLimitsConfig, defaultLimitsConfigInput, parseLimitsConfig } from '../../src/config/limits.ts';
import { add, compare, decimal, decimalFromString, toFixedString, zero } from '../../src/domain/money.ts';
import type { Decimal } from '../../src/domain/money.ts';
import type { PaymentMethod } from '../../src/domain/assets.ts';
import { httpStatusOf } from '../../src/edge/errors.ts';

const config = defaultLimitsConfig;
const cop = (text: string): Decimal => decimalFromString(text, 2);
const brl = (text: string): Decimal => decimalFromString(text, 2);
const stellarUsdc = (text: string): Decimal => decimalFromString(text, 7);
const solanaUsdc = (text: string): Decimal => decimalFromString(text, 6);
const at = (iso: string): number => Date.parse(iso);

function mustReserve(result: { ok: true; state: CounterState } | { ok: false }, what: string): CounterState {
  assert.ok(result.ok, `${what} should be accepted`);
  return result.state;
}

/** Entries that count (released ones are tombstones). */
function countedEntries(state: CounterState): CounterEntry[] {
  return [...counterEntries(state)].map(([, entry]) => entry).filter((entry) => entry.status !== 'released');
}

function sumOfEntries(state: CounterState): Decimal {
  return countedEntries(state).reduce<Decimal>((sum, entry) => add(sum, entry.amount), zero(0));
}

function assertConsistent(state: CounterState): void {
  assert.equal(compare(state.reservedAmount, add(state.foldedAmount, sumOfEntries(state))), 0, 'reservedAmount is the folded amount plus the counted entries');
  assert.equal(state.reservedCount, state.foldedCount + countedEntries(state).length, 'reservedCount is the folded count plus the counted entries');
}

describe('configuration', () => {
  test('defaults are the spec’s Limits table', () => {
    const breb = config.methods.BREB;
    assert.deepEqual(breb.transactionAmountMax, cop('5000000'));
    assert.deepEqual(breb.userDailyAmountMax, cop('25000000'));
    assert.deepEqual(breb.methodDailyAmountMax, cop('25000000'));
    assert.equal(breb.userDailyCountMax, 15);
    assert.equal(breb.dayUtcOffsetMinutes, -300);
    assert.deepEqual(config.methods.PIX, {
      transactionAmountMax: null,
      userDailyAmountMax: null,
      methodDailyAmountMax: null,
      userDailyCountMax: null,
      dayUtcOffsetMinutes: -180,
    });
    assert.equal(compare(config.kycFreeMonthlyVolumeMax, decimal(25n, 0)), 0);
    assert.equal(compare(config.kybUnapprovedCompletedTotalMax, decimal(100n, 0)), 0);
  });

  test('an empty section means the defaults; a partial one overrides only what it names', () => {
    assert.deepEqual(parseLimitsConfig({}), config);
    assert.deepEqual(parseLimitsConfig(defaultLimitsConfigInput), config);
    const overridden = parseLimitsConfig({ methods: { BREB: { transactionAmountMax: 1000000.5 } } });
    assert.deepEqual(overridden.methods.BREB.transactionAmountMax, cop('1000000.50'));
    assert.deepEqual(overridden.methods.BREB.userDailyAmountMax, cop('25000000'));
    assert.deepEqual(overridden.methods.PIX, config.methods.PIX);
  });

  test('refund floors: per network by default (fees and rent covered), overridable one by one, never negative', () => {
    assert.deepEqual(
      Object.fromEntries(Object.entries(config.chainRefundFloors).map(([network, floor]) => [network, toFixedString(floor)])),
      { STELLAR: '0.1000000', SOLANA: '1.0000000', CELO: '0.1000000' },
    );
    const changed = parseLimitsConfig({ chainRefundFloors: { SOLANA: '2.5' } });
    assert.equal(compare(changed.chainRefundFloors.SOLANA, decimal(25n, 1)), 0);
    assert.deepEqual(changed.chainRefundFloors.CELO, config.chainRefundFloors.CELO);
    assert.equal(compare(parseLimitsConfig({ chainRefundFloors: { CELO: 0 } }).chainRefundFloors.CELO, decimal(0n, 0)), 0, '0: refund every amount');
    assert.throws(() => parseLimitsConfig({ chainRefundFloors: { CELO: '-1' } }), /chainRefundFloors/);
    assert.throws(() => parseLimitsConfig({ chainRefundFloors: { TRON: '1' } }), /TRON/);
  });

  test('null removes a cap; a cap can be set on PIX', () => {
    const loosened = parseLimitsConfig({ methods: { BREB: { userDailyCountMax: null }, PIX: { transactionAmountMax: '100000' } } });
    assert.equal(loosened.methods.BREB.userDailyCountMax, null);
    assert.deepEqual(loosened.methods.PIX.transactionAmountMax, brl('100000'));
  });

  const invalid: { note: string; input: unknown; field: RegExp }[] = [
    { note: 'unknown field', input: { methods: { BREB: { perTx: 1 } } }, field: /methods\.BREB/ },
    { note: 'unknown method', input: { methods: { SPEI: {} } }, field: /methods/ },
    { note: 'negative cap', input: { methods: { BREB: { userDailyAmountMax: -1 } } }, field: /userDailyAmountMax/ },
    { note: 'more decimals than COP has', input: { methods: { BREB: { transactionAmountMax: '1.001' } } }, field: /transactionAmountMax/ },
    { note: 'fractional count', input: { methods: { BREB: { userDailyCountMax: 1.5 } } }, field: /userDailyCountMax/ },
    { note: 'text threshold', input: { kycFreeMonthlyVolumeMax: 'twenty' }, field: /kycFreeMonthlyVolumeMax/ },
    { note: 'absurd offset', input: { methods: { PIX: { dayUtcOffsetMinutes: 6000 } } }, field: /dayUtcOffsetMinutes/ },
  ];
  for (const { note, input, field } of invalid) {
    test(`rejects ${note}, naming the field`, () => {
      assert.throws(() => parseLimitsConfig(input), (error: unknown) => error instanceof Error && field.test(error.message));
    });
  }
});

describe('per-transaction cap', () => {
  const cases: { method: PaymentMethod; amount: Decimal; ok: boolean }[] = [
    { method: 'BREB', amount: cop('0.01'), ok: true },
    { method: 'BREB', amount: cop('5000000.00'), ok: true },
    { method: 'BREB', amount: cop('5000000.01'), ok: false },
    { method: 'BREB', amount: cop('25000000'), ok: false },
    { method: 'PIX', amount: brl('999999999999.99'), ok: true },
  ];
  for (const { method, amount, ok } of cases) {
    test(`${method} ${amount.units} minor units → ${ok ? 'accepted' : 'transaction_cap'}`, () => {
      const result = checkPerTransaction(config, method, amount);
      if (ok) assert.deepEqual(result, { ok: true });
      else assert.deepEqual(result, { ok: false, rejection: { code: 'transaction_cap', method, cap: cop('5000000') } });
    });
  }
});

describe('user daily amount (BREB 25,000,000 COP)', () => {
  test('exactly at the cap is accepted; one centavo more is rejected', () => {
    let state = emptyCounter();
    for (let i = 0; i < 5; i += 1) {
      state = mustReserve(reserveUserDay(state, config, 'BREB', { transactionId: `t${i}`, amount: cop('5000000') }), `t${i}`);
    }
    assert.deepEqual(state.reservedAmount, cop('25000000'));
    assert.deepEqual(reserveUserDay(state, config, 'BREB', { transactionId: 'over', amount: cop('0.01') }), {
      ok: false,
      rejection: { code: 'user_daily_amount_cap', method: 'BREB', cap: cop('25000000') },
    });
  });

  test('24,999,999.99 then 0.01 fits; a further 0.01 does not', () => {
    let state = emptyCounter();
    for (const [id, amount] of [['a', '4999999.99'], ['b', '5000000'], ['c', '5000000'], ['d', '5000000'], ['e', '5000000']] as const) {
      state = mustReserve(reserveUserDay(state, config, 'BREB', { transactionId: id, amount: cop(amount) }), id);
    }
    state = mustReserve(reserveUserDay(state, config, 'BREB', { transactionId: 'f', amount: cop('0.01') }), 'f');
    const over = reserveUserDay(state, config, 'BREB', { transactionId: 'g', amount: cop('0.01') });
    assert.equal(over.ok ? 'ok' : over.rejection.code, 'user_daily_amount_cap');
  });
});

describe('user daily count (BREB 15)', () => {
  test('the 15th transaction is accepted, the 16th rejected, and a release makes room', () => {
    let state = emptyCounter();
    for (let i = 1; i <= 15; i += 1) {
      state = mustReserve(reserveUserDay(state, config, 'BREB', { transactionId: `t${i}`, amount: cop('1') }), `transaction ${i}`);
    }
    assert.equal(state.reservedCount, 15);
    const sixteenth = reserveUserDay(state, config, 'BREB', { transactionId: 't16', amount: cop('1') });
    assert.deepEqual(sixteenth, { ok: false, rejection: { code: 'user_daily_count_cap', method: 'BREB', countCap: 15 } });
    state = release(state, 't3'); // expired: no longer counts
    mustReserve(reserveUserDay(state, config, 'BREB', { transactionId: 't16', amount: cop('1') }), 'after a release');
  });

  test('the count cap answers before the amount cap when both are reached', () => {
    let state = emptyCounter();
    for (let i = 0; i < 15; i += 1) {
      state = mustReserve(reserveUserDay(state, config, 'BREB', { transactionId: `t${i}`, amount: cop(i < 5 ? '5000000' : '0') }), `t${i}`);
    }
    const result = reserveUserDay(state, config, 'BREB', { transactionId: 'x', amount: cop('1') });
    assert.equal(result.ok ? 'ok' : result.rejection.code, 'user_daily_count_cap');
  });
});

describe('method daily cap (BREB 25,000,000 COP, all partners)', () => {
  test('exactly at the cap is accepted; one centavo more is rejected', () => {
    let state = emptyCounter();
    for (let i = 0; i < 5; i += 1) {
      state = mustReserve(reserveMethodDay(state, config, 'BREB', { transactionId: `p${i}`, amount: cop('5000000') }), `p${i}`);
    }
    assert.deepEqual(reserveMethodDay(state, config, 'BREB', { transactionId: 'over', amount: cop('0.01') }), {
      ok: false,
      rejection: { code: 'method_daily_cap', method: 'BREB' },
    });
  });

  test('partners share one method counter per day; users do not', () => {
    const nowMs = at('2026-11-23T15:00:00Z');
    const acme = acceptanceCounterKeys(config, { partnerId: 'acme', userId: 'u1', method: 'BREB', nowMs });
    const beta = acceptanceCounterKeys(config, { partnerId: 'beta', userId: 'u1', method: 'BREB', nowMs });
    assert.equal(acme.methodDay, beta.methodDay);
    assert.notEqual(acme.userDay, beta.userDay);
    assert.notEqual(acme.kycMonth, beta.kycMonth);
    assert.notEqual(acme.kyb, beta.kyb);
  });
});

describe('PIX has no internal caps', () => {
  test('no per-transaction, daily amount or count limit, and no daily counters to keep', () => {
    assert.deepEqual(checkPerTransaction(config, 'PIX', brl('999999999999999')), { ok: true });
    let user = emptyCounter();
    let method = emptyCounter();
    for (let i = 0; i < 200; i += 1) {
      const transaction = { transactionId: `t${i}`, amount: brl('999999999999') };
      user = mustReserve(reserveUserDay(user, config, 'PIX', transaction), `user ${i}`);
      method = mustReserve(reserveMethodDay(method, config, 'PIX', transaction), `method ${i}`);
    }
    const keys = acceptanceCounterKeys(config, { partnerId: 'acme', userId: 'u1', method: 'PIX', nowMs: at('2026-11-23T15:00:00Z') });
    assert.equal(keys.userDay, null);
    assert.equal(keys.methodDay, null);
  });
});

describe('KYC gate (25 per UTC month, source asset 1:1 USD)', () => {
  const gated: KycStanding = { kycEnabled: true, kycApproved: false };
  const cases: { note: string; standing: KycStanding; existing: Decimal; amount: Decimal; kycRequired: boolean }[] = [
    { note: 'exactly 25 in one transaction', standing: gated, existing: zero(7), amount: stellarUsdc('25'), kycRequired: false },
    { note: '20 then 5 (total exactly 25)', standing: gated, existing: stellarUsdc('20'), amount: stellarUsdc('5'), kycRequired: false },
    { note: '25 + 1 Stellar minor unit', standing: gated, existing: zero(7), amount: stellarUsdc('25.0000001'), kycRequired: true },
    { note: '25 then 1 Stellar minor unit', standing: gated, existing: stellarUsdc('25'), amount: stellarUsdc('0.0000001'), kycRequired: true },
    { note: '25 then 1 Solana minor unit', standing: gated, existing: solanaUsdc('25'), amount: solanaUsdc('0.000001'), kycRequired: true },
    { note: 'mixed networks, 24.999999 + 0.0000010', standing: gated, existing: solanaUsdc('24.999999'), amount: stellarUsdc('0.000001'), kycRequired: false },
    { note: 'approved user is not gated', standing: { kycEnabled: true, kycApproved: true }, existing: stellarUsdc('1000'), amount: stellarUsdc('500'), kycRequired: false },
    { note: 'KYC disabled for the partner', standing: { kycEnabled: false, kycApproved: false }, existing: stellarUsdc('1000'), amount: stellarUsdc('500'), kycRequired: false },
  ];
  for (const { note, standing, existing, amount, kycRequired } of cases) {
    test(`${note} → ${kycRequired ? 'kycRequired' : 'allowed'}`, () => {
      assert.equal(isKycRequired(config, standing, existing, amount), kycRequired);
      const state: CounterState = compare(existing, zero(0)) === 0
        ? emptyCounter()
        : mustReserve(reserve(emptyCounter(), { transactionId: 'earlier', amount: existing, cap: null, countCap: null }), 'earlier');
      const result = reserveKycMonth(state, config, standing, { transactionId: 'new', amount });
      assert.equal(!result.ok, kycRequired);
      if (result.ok) assert.deepEqual(result.state.reservedAmount, add(existing, amount));
    });
  }

  test('ungated volume still counts, so enabling KYC mid-month sees it', () => {
    const ungated: KycStanding = { kycEnabled: false, kycApproved: false };
    const state = mustReserve(reserveKycMonth(emptyCounter(), config, ungated, { transactionId: 'a', amount: stellarUsdc('30') }), 'a');
    assert.deepEqual(reserveKycMonth(state, config, gated, { transactionId: 'b', amount: stellarUsdc('1') }), { ok: false, kycRequired: true });
  });
});

describe('KYB cap (100 across completed and in-flight transactions)', () => {
  /** A KYB counter holding `amount` (completed, or reserved by a transaction in flight). */
  const holding = (amount: Decimal, status: 'open' | 'completed'): CounterState => {
    const reserved = reserve(emptyCounter(), { transactionId: 'held', amount, cap: null, countCap: null });
    assert.ok(reserved.ok);
    return status === 'open' ? reserved.state : commit(reserved.state, { transactionId: 'held', amount });
  };
  const cases: { note: string; held: Decimal; amount: Decimal; ok: boolean }[] = [
    { note: 'first transaction of exactly 100', held: zero(7), amount: stellarUsdc('100'), ok: true },
    { note: '90 held + 10', held: stellarUsdc('90'), amount: stellarUsdc('10'), ok: true },
    { note: '90 held + 10.0000001', held: stellarUsdc('90'), amount: stellarUsdc('10.0000001'), ok: false },
    { note: '100 held + 1 Solana minor unit', held: stellarUsdc('100'), amount: solanaUsdc('0.000001'), ok: false },
  ];
  for (const { note, held, amount, ok } of cases) {
    for (const status of ['completed', 'open'] as const) {
      test(`${note} (${status === 'open' ? 'in flight' : 'completed'}) → ${ok ? 'reserved' : 'kyb_cap'}`, () => {
        const state = holding(held, status);
        const result = reserveKyb(state, config, false, { transactionId: 'new', amount });
        if (!ok) {
          assert.deepEqual(result, { ok: false, rejection: { code: 'kyb_cap', cap: config.kybUnapprovedCompletedTotalMax } });
          return;
        }
        assert.ok(result.ok);
        assert.deepEqual(result.state.reservedAmount, add(held, amount), 'the new amount is held at once');
        assert.equal(counterEntry(result.state, 'new')?.status, 'open');
      });
    }
  }

  test('an approved partner is not capped, and nothing is held for it', () => {
    const state = holding(stellarUsdc('100'), 'completed');
    assert.deepEqual(reserveKyb(state, config, true, { transactionId: 'new', amount: stellarUsdc('500') }), { ok: true, state });
  });

  test('held at acceptance, given back on expiry or failure, kept on completion; each counted once', () => {
    const reserveOk = (state: CounterState, transactionId: string, amount: string): CounterState => {
      const result = reserveKyb(state, config, false, { transactionId, amount: stellarUsdc(amount) });
      assert.ok(result.ok, `${transactionId} reserved`);
      return result.state;
    };
    let state = reserveOk(emptyCounter(), 'a', '60');
    state = reserveOk(state, 'a', '60'); // redelivered: counted once
    assert.equal(reserveKyb(state, config, false, { transactionId: 'b', amount: stellarUsdc('40.0000001') }).ok, false, '60 in flight count');
    state = reserveOk(state, 'b', '40');
    state = release(state, 'a'); // expired
    assert.deepEqual(state.reservedAmount, stellarUsdc('40'));
    state = commit(state, { transactionId: 'b', amount: stellarUsdc('40') }); // completed
    state = commit(state, { transactionId: 'b', amount: stellarUsdc('40') }); // redelivered
    assert.equal(release(state, 'b'), state, 'a completed transaction is never released');
    assert.equal(reserveOk(state, 'a', '60'), state, 'a late reserve of the expired one counts nothing');
    assert.deepEqual(state.reservedAmount, stellarUsdc('40'));
    assert.equal(state.reservedCount, 1);
    assert.equal(reserveKyb(state, config, false, { transactionId: 'c', amount: stellarUsdc('60.0000001') }).ok, false);
  });

  test('a KYB counter that held completions only (written before the reservation) goes on counting them', () => {
    let state = commit(emptyCounter(), { transactionId: 'old-completed', amount: stellarUsdc('70') });
    // Accepted before the upgrade (never reserved here), completed after: counted on completion.
    state = commit(state, { transactionId: 'old-in-flight', amount: stellarUsdc('20') });
    // Accepted before the upgrade, expired after: its release finds nothing to give back.
    assert.equal(release(state, 'old-expired'), state);
    assert.deepEqual(state.reservedAmount, stellarUsdc('90'));
    assert.equal(reserveKyb(state, config, false, { transactionId: 'new', amount: stellarUsdc('10.0000001') }).ok, false);
  });
});

describe('closed entries (tombstones and completions) are bounded per bucket', () => {
  /** `count` distinct ids that all fall in one bucket. */
  function idsOfOneBucket(count: number): string[] {
    const bucket = bucketIndexOf('t0');
    const ids: string[] = [];
    for (let index = 0; ids.length < count; index += 1) if (bucketIndexOf(`t${index}`) === bucket) ids.push(`t${index}`);
    return ids;
  }
  const uncapped = { cap: null, countCap: null };

  test(`a bucket keeps its newest ${closedEntriesPerBucketMax} released entries; the totals are untouched`, () => {
    const ids = idsOfOneBucket(closedEntriesPerBucketMax + 5);
    let state = emptyCounter();
    for (const id of ids) state = release(mustReserve(reserve(state, { transactionId: id, amount: stellarUsdc('1'), ...uncapped }), id), id);
    state = mustReserve(reserve(state, { transactionId: 'open', amount: stellarUsdc('2'), ...uncapped }), 'open');
    const released = [...counterEntries(state)].filter(([, entry]) => entry.status === 'released').map(([id]) => id);
    assert.deepEqual(released, ids.slice(5), 'the five oldest went');
    assert.deepEqual(state.reservedAmount, stellarUsdc('2'));
    assert.equal(state.reservedCount, 1);
    assertConsistent(state);
    // A late reserve of a kept tombstone still counts nothing; of a forgotten one, it counts (stricter, never looser).
    assert.equal(mustReserve(reserve(state, { transactionId: ids.at(-1) ?? '', amount: stellarUsdc('1'), ...uncapped }), 'kept'), state);
    assert.equal(mustReserve(reserve(state, { transactionId: ids[0] ?? '', amount: stellarUsdc('1'), ...uncapped }), 'forgotten').reservedCount, 2);
  });

  test(`a bucket lists its newest ${closedEntriesPerBucketMax} completed entries; older ones stay in the totals as folded`, () => {
    const ids = idsOfOneBucket(closedEntriesPerBucketMax + 3);
    let state = emptyCounter();
    for (const id of ids) state = commit(mustReserve(reserve(state, { transactionId: id, amount: stellarUsdc('1'), ...uncapped }), id), { transactionId: id, amount: stellarUsdc('1') });
    assert.equal(state.reservedCount, ids.length, 'every completion still counts');
    assert.deepEqual(state.reservedAmount, stellarUsdc(String(ids.length)));
    assert.equal(state.foldedCount, 3);
    assert.deepEqual(state.foldedAmount, stellarUsdc('3'));
    assert.equal(counterEntry(state, ids[0] ?? ''), undefined, 'the oldest completion is no longer listed');
    assert.equal(counterEntry(state, ids.at(-1) ?? '')?.status, 'completed');
    assertConsistent(state);
    // A late release of a folded completion gives nothing back.
    assert.equal(release(state, ids[0] ?? ''), state);
  });
});

describe('windows', () => {
  const days: { instant: string; method: PaymentMethod; day: string }[] = [
    { instant: '2026-11-23T04:59:59.999Z', method: 'BREB', day: '2026-11-22' }, // 23:59:59.999 in Bogotá
    { instant: '2026-11-23T05:00:00.000Z', method: 'BREB', day: '2026-11-23' }, // 00:00 in Bogotá
    { instant: '2026-11-23T02:59:59.999Z', method: 'PIX', day: '2026-11-22' }, // 23:59:59.999 in São Paulo
    { instant: '2026-11-23T03:00:00.000Z', method: 'PIX', day: '2026-11-23' }, // 00:00 in São Paulo
    { instant: '2026-11-23T04:00:00.000Z', method: 'BREB', day: '2026-11-22' },
    { instant: '2026-11-23T04:00:00.000Z', method: 'PIX', day: '2026-11-23' },
    { instant: '2027-01-01T04:59:59.999Z', method: 'BREB', day: '2026-12-31' },
    { instant: '2027-01-01T05:00:00.000Z', method: 'BREB', day: '2027-01-01' },
    { instant: '2028-03-01T02:00:00.000Z', method: 'PIX', day: '2028-02-29' },
  ];
  for (const { instant, method, day } of days) {
    test(`${instant} is ${day} for ${method}`, () => {
      assert.equal(methodDayKey(config, method, at(instant)), day);
    });
  }

  const months: { instant: string; month: string }[] = [
    { instant: '2026-11-30T23:59:59.999Z', month: '2026-11' },
    { instant: '2026-12-01T00:00:00.000Z', month: '2026-12' }, // still 30 Nov in Bogotá: the KYC month is UTC
    { instant: '2026-12-31T23:59:59.999Z', month: '2026-12' },
    { instant: '2027-01-01T00:00:00.000Z', month: '2027-01' },
  ];
  for (const { instant, month } of months) {
    test(`${instant} is KYC month ${month}`, () => {
      assert.equal(utcMonthKey(at(instant)), month);
    });
  }

  test('a day key is the civil date at the offset', () => {
    assert.equal(civilDayKey(0, 0), '1970-01-01');
    assert.equal(civilDayKey(at('2026-11-23T12:00:00Z'), 14 * 60), '2026-11-24');
  });

  test('a bad clock value is a bug', () => {
    for (const nowMs of [Number.NaN, -1, 1.5, Number.MAX_SAFE_INTEGER]) {
      assert.throws(() => utcMonthKey(nowMs), /invariant/);
    }
  });

  test('a user capped late on one Bogotá day can transact again at local midnight', () => {
    // A small model of the counter actors: one state per counter key, driven by a fake clock.
    const counters = new Map<string, CounterState>();
    const accept = (nowMs: number, transactionId: string): string => {
      const keys = acceptanceCounterKeys(config, { partnerId: 'acme', userId: 'u1', method: 'BREB', nowMs });
      assert.ok(keys.userDay !== null);
      const result = reserveUserDay(counters.get(keys.userDay) ?? emptyCounter(), config, 'BREB', { transactionId, amount: cop('10') });
      if (!result.ok) return result.rejection.code;
      counters.set(keys.userDay, result.state);
      return 'accepted';
    };
    const lastMs = at('2026-11-23T04:59:59.999Z');
    for (let i = 0; i < 15; i += 1) assert.equal(accept(lastMs - i * 60_000, `t${i}`), 'accepted');
    assert.equal(accept(lastMs, 't15'), 'user_daily_count_cap');
    assert.equal(accept(lastMs + 1, 't15'), 'accepted');
  });
});

describe('counter keys', () => {
  test('user keys carry the partner: the same user id under two partners is two users', () => {
    assert.notEqual(userDayCounterKey('acme', 'u1', 'BREB', '2026-11-23'), userDayCounterKey('beta', 'u1', 'BREB', '2026-11-23'));
    assert.notEqual(kycMonthCounterKey('acme', 'u1', '2026-11'), kycMonthCounterKey('beta', 'u1', '2026-11'));
  });

  test('separators inside ids cannot make two keys collide', () => {
    assert.notEqual(userDayCounterKey('a:b', 'c', 'BREB', '2026-11-23'), userDayCounterKey('a', 'b:c', 'BREB', '2026-11-23'));
    assert.notEqual(kycMonthCounterKey('a:b', 'c', '2026-11'), kycMonthCounterKey('a', 'b:c', '2026-11'));
  });

  test('keys name their window', () => {
    const keys = acceptanceCounterKeys(config, { partnerId: 'acme', userId: 'u1', method: 'BREB', nowMs: at('2026-11-23T04:59:59.999Z') });
    assert.deepEqual(keys, {
      userDay: userDayCounterKey('acme', 'u1', 'BREB', '2026-11-22'),
      methodDay: methodDayCounterKey('BREB', '2026-11-22'),
      kycMonth: kycMonthCounterKey('acme', 'u1', '2026-11'),
      kyb: kybCounterKey('acme'),
    });
  });
});

describe('reservation arithmetic', () => {
  const uncapped = { cap: null, countCap: null };

  test('reserving the same transaction twice counts it once', () => {
    const once = mustReserve(reserve(emptyCounter(), { transactionId: 'a', amount: cop('10'), ...uncapped }), 'first');
    const twice = reserve(once, { transactionId: 'a', amount: cop('10'), cap: cop('10'), countCap: 1 });
    assert.ok(twice.ok, 'a repeated reservation is not re-checked against the cap');
    assert.equal(twice.state, once);
  });

  test('release is idempotent: twice, or for an unknown id, changes nothing', () => {
    let state = emptyCounter();
    state = mustReserve(reserve(state, { transactionId: 'a', amount: cop('10'), ...uncapped }), 'a');
    state = mustReserve(reserve(state, { transactionId: 'b', amount: cop('5'), ...uncapped }), 'b');
    const released = release(state, 'a');
    assert.deepEqual(released.reservedAmount, cop('5'));
    assert.equal(released.reservedCount, 1);
    assert.equal(release(released, 'a'), released);
    assert.equal(release(released, 'never-seen'), released);
    assertConsistent(released);
  });

  test('a reserve delivered again after its release counts nothing (the released entry stays as a tombstone)', () => {
    let state = mustReserve(reserve(emptyCounter(), { transactionId: 'a', amount: cop('10'), ...uncapped }), 'a');
    state = release(state, 'a');
    const late = mustReserve(reserve(state, { transactionId: 'a', amount: cop('10'), ...uncapped }), 'late duplicate');
    assert.equal(late, state, 'nothing changes');
    assert.equal(late.reservedCount, 0);
    assert.deepEqual(late.reservedAmount, cop('0'));
    // A completion after a release is a fact: it counts again.
    const completed = commit(late, { transactionId: 'a', amount: cop('10') });
    assert.equal(completed.reservedCount, 1);
    assert.deepEqual(completed.reservedAmount, cop('10'));
    assertConsistent(completed);
  });

  test('a completed transaction keeps its reservation', () => {
    let state = mustReserve(reserve(emptyCounter(), { transactionId: 'a', amount: cop('10'), ...uncapped }), 'a');
    state = commit(state, { transactionId: 'a', amount: cop('10') });
    assert.equal(commit(state, { transactionId: 'a', amount: cop('10') }), state);
    assert.equal(release(state, 'a'), state);
    assert.deepEqual(state.reservedAmount, cop('10'));
    assert.equal(state.reservedCount, 1);
  });

  test('the same transaction with two amounts, or a negative amount, is a bug', () => {
    const state = mustReserve(reserve(emptyCounter(), { transactionId: 'a', amount: cop('10'), ...uncapped }), 'a');
    assert.throws(() => reserve(state, { transactionId: 'a', amount: cop('11'), ...uncapped }), /invariant/);
    assert.throws(() => commit(state, { transactionId: 'a', amount: cop('11') }), /invariant/);
    assert.throws(() => reserve(state, { transactionId: 'b', amount: cop('-1'), ...uncapped }), /invariant/);
  });

  test('a seeded random sequence matches a reference model and never exceeds the caps', () => {
    let seed = 0x9e3779b9;
    const next = (bound: number): number => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed % bound;
    };
    const cap = cop('1000');
    const countCap = 6;
    for (let run = 0; run < 20; run += 1) {
      let state = emptyCounter();
      const model = new Map<string, { amountMinor: bigint; status: 'open' | 'completed' | 'released' }>();
      const countedModel = (): Array<{ amountMinor: bigint }> => [...model.values()].filter((entry) => entry.status !== 'released');
      for (let step = 0; step < 300; step += 1) {
        const id = `t${next(12)}`;
        const amountMinor = BigInt(1 + next(40000));
        const known = model.get(id);
        const op = next(3);
        if (op === 0) {
          const amount = decimal(known?.amountMinor ?? amountMinor, 2);
          const totalMinor = countedModel().reduce((sum, entry) => sum + entry.amountMinor, 0n);
          const fits = known !== undefined || (countedModel().length + 1 <= countCap && totalMinor + amount.units <= cap.units);
          const result = reserve(state, { transactionId: id, amount, cap, countCap });
          assert.equal(result.ok, fits, `reserve ${id} at step ${step}`);
          if (result.ok) {
            state = result.state;
            if (known === undefined) model.set(id, { amountMinor: amount.units, status: 'open' });
          }
        } else if (op === 1) {
          state = release(state, id);
          if (known !== undefined && known.status === 'open') known.status = 'released';
        } else if (known !== undefined && known.status !== 'released') {
          // A transaction completes or is released, never both (the state machine).
          state = commit(state, { transactionId: id, amount: decimal(known.amountMinor, 2) });
          known.status = 'completed';
        }
        assertConsistent(state);
        assert.equal(state.reservedCount, countedModel().length);
        assert.ok(compare(state.reservedAmount, cap) <= 0 && state.reservedCount <= countCap);
      }
    }
  });
});

describe('acceptance rejection catalogue', () => {
  const rows: { rejection: AcceptanceRejection; httpStatus: number; retryable: boolean; reason: string }[] = [
    { rejection: { code: 'user_disabled' }, httpStatus: 403, retryable: false, reason: 'The user is disabled; no transaction can be accepted for this user' },
    { rejection: { code: 'quote_not_found' }, httpStatus: 400, retryable: false, reason: 'The quote does not exist; request a new quote' },
    { rejection: { code: 'quote_expired' }, httpStatus: 400, retryable: false, reason: 'The quote has expired; request a new quote' },
    {
      rejection: { code: 'quote_used', transactionId: '0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f' },
      httpStatus: 400,
      retryable: false,
      reason: 'The quote was already accepted (transaction 0b6f6a8e-0a3c-4d5e-9f10-1a2b3c4d5e6f); request a new quote',
    },
    {
      rejection: { code: 'quote_in_use' },
      httpStatus: 400,
      retryable: true,
      reason: 'Another acceptance of this quote is in progress; retry shortly or request a new quote',
    },
    {
      rejection: { code: 'transaction_cap', method: 'BREB', cap: cop('5000000') },
      httpStatus: 400,
      retryable: false,
      reason: 'The amount exceeds the BREB maximum of 5000000.00 COP per transaction',
    },
    {
      rejection: { code: 'kyb_cap', cap: defaultLimitsConfig.kybUnapprovedCompletedTotalMax },
      httpStatus: 400,
      retryable: false,
      reason: 'Partner is limited to a total of 100 until KYB is approved',
    },
    { rejection: { code: 'rail_unavailable', method: 'PIX' }, httpStatus: 400, retryable: true, reason: 'Payments via PIX are temporarily unavailable' },
    { rejection: { code: 'account_unverifiable' }, httpStatus: 400, retryable: false, reason: 'The account number could not be verified' },
    {
      rejection: { code: 'liquidity_insufficient' },
      httpStatus: 400,
      retryable: true,
      reason: 'Cannot process because liquidity is below the requested amount; try a smaller amount or another method.',
    },
    {
      rejection: { code: 'user_daily_count_cap', method: 'BREB', countCap: 15 },
      httpStatus: 400,
      retryable: false,
      reason: 'The maximum number of transactions for today was reached',
    },
    {
      rejection: { code: 'user_daily_amount_cap', method: 'BREB', cap: cop('25000000') },
      httpStatus: 400,
      retryable: false,
      reason: "The user reached today's BREB limit of 25000000.00 COP",
    },
    { rejection: { code: 'method_daily_cap', method: 'BREB' }, httpStatus: 400, retryable: false, reason: "BREB reached today's payout limit" },
  ];

  for (const { rejection, httpStatus, retryable, reason } of rows) {
    test(`${rejection.code} → ${httpStatus}: ${reason}`, () => {
      assert.deepEqual(describeAcceptanceRejection(rejection), { code: rejection.code, retryable, reason });
      // The status is the edge's, from the one catalogue (src/edge/errors.ts).
      assert.equal(httpStatusOf(rejection.code), httpStatus);
    });
  }

  test('the table above covers every code in the catalogue', () => {
    const tested = new Set<AcceptanceRejectionCode>(rows.map((row) => row.rejection.code));
    assert.deepEqual([...tested].sort(), Object.keys(acceptanceRejectionCatalogue).sort());
  });

  test('the order of precedence names every check exactly once', () => {
    const expected = [...Object.keys(acceptanceRejectionCatalogue), 'kyc_required'].sort();
    assert.deepEqual([...acceptanceCheckOrder].sort(), expected);
  });

  test('when several checks fail, the earliest in the order answers', () => {
    const found: AcceptanceRejection[] = [
      { code: 'method_daily_cap', method: 'BREB' },
      { code: 'liquidity_insufficient' },
      { code: 'transaction_cap', method: 'BREB', cap: cop('5000000') },
    ];
    assert.equal(firstRejection(found)?.code, 'transaction_cap');
    assert.equal(firstRejection([...found, { code: 'user_disabled' }])?.code, 'user_disabled');
    assert.equal(firstRejection([]), undefined);
  });

  test('reasons show the configured caps', () => {
    const custom: LimitsConfig = parseLimitsConfig({ methods: { BREB: { transactionAmountMax: '1000000.5' } }, kybUnapprovedCompletedTotalMax: 250.5 });
    const perTransaction = checkPerTransaction(custom, 'BREB', cop('1000000.51'));
    assert.ok(!perTransaction.ok);
    assert.match(describeAcceptanceRejection(perTransaction.rejection).reason, /1000000\.50 COP/);
    const held = commit(emptyCounter(), { transactionId: 'done', amount: stellarUsdc('250') });
    const kyb = reserveKyb(held, custom, false, { transactionId: 'new', amount: stellarUsdc('1') });
    assert.ok(!kyb.ok);
    assert.equal(describeAcceptanceRejection(kyb.rejection).reason, 'Partner is limited to a total of 250.5 until KYB is approved');
  });
});
