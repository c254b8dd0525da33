// One active watcher process, the others on standby: the process holding the `watchers` lease runs
// the watchers; a standby takes over when the holder stops (at once) or lapses (after the TTL);
// a holder whose lease was taken, or that could not renew for a whole TTL, stops its watchers; an
// activation that fails gives the lease back and is tried again. Real timers for the renewal
// rounds; the in-process lease store and the holders' lease time on a clock the test moves (the
// Redis adapter passes the same lease contract).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Leases } from '../../src/bus/leases.ts';
import { MemoryLeases } from '../../src/bus/memory-leases.ts';
import { WatcherLease, watcherLeaseName } from '../../src/chains/watcher-lease.ts';
import { eventually } from '../support/eventually.ts';

const ttlMs = 600;
const silentLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

interface Process {
  readonly lease: WatcherLease;
  /** Watchers started minus stopped: 0 or 1. */
  running(): number;
  activations(): number;
}

function watcherProcess(leases: Leases, owner: string, options: { failActivations?: number; now?: () => number } = {}): Process {
  let running = 0;
  let activations = 0;
  let failuresLeft = options.failActivations ?? 0;
  const lease = new WatcherLease({
    leases,
    owner,
    ttlMs,
    log: silentLog,
    ...(options.now ? { now: options.now } : {}),
    activate: async () => {
      activations += 1;
      if (failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('the chain did not answer');
      }
      running += 1;
    },
    deactivate: async () => {
      running = Math.max(0, running - 1);
    },
  });
  return { lease, running: () => running, activations: () => activations };
}

function movableClock(): { nowMs: () => number; advance: (ms: number) => void } {
  let offsetMs = 0;
  return { nowMs: () => Date.now() + offsetMs, advance: (ms) => { offsetMs += ms; } };
}

/** Counts the renewals that reached the store (the holder's rounds are on real timers). */
function countingRenewals(inner: Leases): { leases: Leases; renewals: () => number } {
  let renewals = 0;
  const leases: Leases = {
    acquire: (...args) => inner.acquire(...args),
    renew: async (...args) => {
      const renewed = await inner.renew(...args);
      if (renewed) renewals += 1;
      return renewed;
    },
    release: (...args) => inner.release(...args),
    owner: (name) => inner.owner(name),
    listAll: (prefix) => inner.listAll(prefix),
    changes: () => inner.changes(),
    close: () => inner.close(),
  };
  return { leases, renewals: () => renewals };
}

test('the first process runs the watchers, the second stands by and takes over at once when the first stops', async () => {
  const clock = movableClock();
  const { leases, renewals } = countingRenewals(new MemoryLeases({ clock }));
  const first = watcherProcess(leases, 'p1', { now: clock.nowMs });
  const second = watcherProcess(leases, 'p2', { now: clock.nowMs });
  await first.lease.start();
  await second.lease.start();
  assert.deepEqual([first.lease.active(), first.running()], [true, 1], 'started by the time start() resolves');
  assert.deepEqual([second.lease.active(), second.running(), second.activations()], [false, 0, 0]);
  // Two TTLs pass on the lease clock, half a TTL after each renewal: the lease never lapses, so
  // the standby never gets it.
  for (let step = 0; step < 4; step += 1) {
    const seen = renewals();
    await eventually(() => assert.ok(renewals() > seen, 'the holder renewed'), 3_000, 10);
    clock.advance(ttlMs / 2);
  }
  assert.equal(second.running(), 0, 'still standing by while the first renews');
  assert.equal((await leases.owner(watcherLeaseName))?.owner, 'p1');

  await first.lease.stop();
  assert.deepEqual([first.lease.active(), first.running()], [false, 0], 'a stop stops the watchers');
  await eventually(() => assert.deepEqual([second.lease.active(), second.running()], [true, 1]), 2_000, 20);
  assert.equal((await leases.owner(watcherLeaseName))?.owner, 'p2');
  await second.lease.stop();
  assert.equal(await leases.owner(watcherLeaseName), null, 'released on stop');
});

test('a holder that lapsed stops its watchers once it sees the lease taken; never two for longer than that', async () => {
  const clock = movableClock();
  const leases = new MemoryLeases({ clock });
  const first = watcherProcess(leases, 'p1');
  const second = watcherProcess(leases, 'p2');
  await first.lease.start();
  await second.lease.start();
  // The first process's renewals stop reaching the store in time: its lease lapses.
  clock.advance(ttlMs + 1);
  await eventually(() => {
    assert.deepEqual([second.lease.active(), second.running()], [true, 1], 'the standby took the lapsed lease');
    assert.deepEqual([first.lease.active(), first.running()], [false, 0], 'the old holder stopped its watchers');
  }, 3_000, 20);
  await first.lease.stop();
  await second.lease.stop();
});

test('a holder cut off from the lease store stops its watchers after a whole TTL without renewal', async () => {
  const inner = new MemoryLeases();
  let reachable = true;
  const flaky: Leases = {
    acquire: (...args) => (reachable ? inner.acquire(...args) : Promise.reject(new Error('ECONNREFUSED'))),
    renew: (...args) => (reachable ? inner.renew(...args) : Promise.reject(new Error('ECONNREFUSED'))),
    release: (...args) => (reachable ? inner.release(...args) : Promise.reject(new Error('ECONNREFUSED'))),
    owner: (name) => inner.owner(name),
    listAll: (prefix) => inner.listAll(prefix),
    changes: () => inner.changes(),
    close: () => inner.close(),
  };
  const holder = watcherProcess(flaky, 'p1');
  await holder.lease.start();
  assert.equal(holder.running(), 1);
  reachable = false;
  const cutAtMs = Date.now();
  await eventually(() => assert.equal(holder.running(), 0), 3_000, 10);
  // It renewed at most one round (ttl/3) before the cut: it stops no sooner than ~2/3 of a TTL after.
  assert.ok(Date.now() - cutAtMs >= ttlMs / 2, 'not before the lease could have lapsed');
  assert.equal(holder.lease.health().report(Date.now(), 15_000).detail['consecutiveFailures'] as number > 0, true);
  reachable = true;
  await eventually(() => assert.equal(holder.running(), 1, 'takes it again once the store answers'), 3_000, 20);
  await holder.lease.stop();
});

test('an activation that fails gives the lease back and is tried again', async () => {
  const leases = new MemoryLeases();
  const flaky = watcherProcess(leases, 'p1', { failActivations: 2 });
  await flaky.lease.start();
  assert.deepEqual([flaky.lease.active(), flaky.running()], [false, 0]);
  assert.equal(await leases.owner(watcherLeaseName), null, 'given back: another process may take it');
  await eventually(() => assert.deepEqual([flaky.lease.active(), flaky.running(), flaky.activations()], [true, 1, 3]), 3_000, 20);
  await flaky.lease.stop();
});
