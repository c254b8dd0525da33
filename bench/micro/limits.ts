// Limit checks: one counter's reservation arithmetic (`reserve`/`release` through the per-window
// functions), on an empty counter and on a method-day counter near its cap (every accepted
// transaction of the day is an entry; the counter's buckets keep what a reservation copies small).
// Baseline: JSON.parse + JSON.stringify of the reservation as it travels between actors.
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { emptyCounter, release, reserve, reserveMethodDay, reserveUserDay, type CounterState } from '../../src/domain/limits.ts';
import { decimal } from '../../src/domain/money.ts';
import { jsonRoundTripCase, repeatedCase, type MicroSuite } from '../lib/micro.ts';

const opsPerCall = 50;
const amount = decimal(5_000_000n, 2); // 50,000.00 COP
const smallAmount = decimal(1_000_000n, 2); // 10,000.00 COP

/** A BREB method-day counter holding `entries` reservations of 50,000 COP. */
export function counterWith(entries: number): CounterState {
  let state = emptyCounter();
  for (let index = 0; index < entries; index += 1) {
    const result = reserveMethodDay(state, defaultLimitsConfig, 'BREB', { transactionId: `tx-${index}`, amount });
    if (!result.ok) throw new Error('limits bench: counter fixture over its cap');
    state = result.state;
  }
  return state;
}

export function limitsSuite(): MicroSuite {
  const empty = emptyCounter();
  const nearCap = counterWith(499); // 24,950,000 of 25,000,000 COP
  const full = counterWith(500);
  let busyDay = emptyCounter();
  for (let index = 0; index < 20_000; index += 1) {
    const result = reserve(busyDay, { transactionId: `tx-${index}`, amount, cap: null, countCap: null });
    if (result.ok) busyDay = result.state;
  }
  const reservation = { transactionId: 'tx-new', amount: '50000.00', window: 'methodDay', method: 'BREB' };
  return {
    group: 'limits',
    baselineLabel: 'JSON.parse+stringify of a reservation command payload',
    baseline: jsonRoundTripCase('baseline: JSON round trip of a reservation', reservation, opsPerCall),
    cases: [
      repeatedCase('reserveUserDay on an empty counter (granted)', opsPerCall, () =>
        reserveUserDay(empty, defaultLimitsConfig, 'BREB', { transactionId: 'tx-new', amount }),
      ),
      repeatedCase('reserveMethodDay near the cap, 499 entries (granted)', opsPerCall, () =>
        reserveMethodDay(nearCap, defaultLimitsConfig, 'BREB', { transactionId: 'tx-new', amount }),
      ),
      repeatedCase('reserveMethodDay at the cap, 500 entries (refused)', opsPerCall, () =>
        reserveMethodDay(full, defaultLimitsConfig, 'BREB', { transactionId: 'tx-new', amount: smallAmount }),
      ),
      repeatedCase('release from a 499-entry counter', opsPerCall, () => release(nearCap, 'tx-250')),
      // The hot-accept day: thousands in flight. With the counter's buckets a reservation copies
      // one bucket, so this row should stay near the 499-entry one (before buckets it was ≈ 10×
      // slower per 10× entries).
      repeatedCase('reserve in a counter of 20,000 in-flight entries (granted, uncapped)', opsPerCall, () =>
        reserve(busyDay, { transactionId: 'tx-new', amount, cap: null, countCap: null }),
      ),
    ],
  };
}
