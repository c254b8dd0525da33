// A rolling restart of every role under partner load, as separate processes of src/main.ts on one
// Redis and one embedded store (test/support/service-fleet.ts): 2 edges, 2 shard workers, payout,
// watcher and webhooks, on the sandbox chain and rail. (Not admin: it holds no work, and each
// process start costs ~4 s of CPU on a machine whose 2 cores run four test files at once.) While partners quote, accept, fund
// (Stellar deposits that the watcher detects, paid out by the payout role) and receive webhooks,
// every process is restarted one at a time (SIGTERM, wait for its exit, start a replacement). The
// partners reach the edges through a load balancer that health-checks /readyz and retries a
// request only when its connection was refused or reset before any response (POSTs carry an
// Idempotency-Key). At the end: no request got a 5xx (nor any answer but the expected ones), every
// accepted transaction was paid out exactly once and completed, every webhook event was delivered
// with no gap in any partner's sequence and the /events log agrees, and the daily count cap held
// exactly. Prints the request count, the retried connection errors and the duration.
// It times real processes' stops and readiness, so it runs with no other test file beside it:
// test runner: alone
// Alone it takes 70–120 s; beside the rest of this run's files on a slow day (the suite's other
// lanes starting fleets of their own) starting its seven processes took 30–90 s and the whole test
// passed 180 s, though nothing was wrong: its bound is 420 s.
// test runner: up to 480 s for this file
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { compare, decimalFromExactString, subtract, add, type Decimal } from '../../src/domain/money.ts';
import { defaultSandboxLiquidity, sandboxRailCollection } from '../../src/rails/sandbox-rail.ts';
import { serviceReadModelIndexes } from '../../src/service/context.ts';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { RedisLeases } from '../../src/bus/redis-leases.ts';
import { eventually } from '../support/eventually.ts';
import { LoadBalancer, type BalancedResponse } from '../support/load-balancer.ts';
import { startServiceFleet, type FleetProcess, type FleetRole, type ServiceFleet } from '../support/service-fleet.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

const shardCount = 8;
const partnerIds = ['alpha', 'beta', 'gamma'] as const;
/** The BREB daily count cap per user (src/config/limits.ts) and how often each cap user tries. */
const countCap = 15;
const capAttempts = 18;
/** Concurrent partner flows, the pause between a flow's transactions, and a bound on the total. */
const flows = 4;
const flowPauseMs = 150;
const transactionsMax = 400;
/** Grace of every process in this test; a graceful stop here takes well under it. */
const graceMs = 15_000;

interface Accepted {
  readonly id: string;
  readonly partnerId: string;
  readonly method: 'BREB' | 'PIX';
  readonly amount: Decimal;
}

let receiver: WebhookReceiver;
let fleet: ServiceFleet;
let balancer: LoadBalancer;
let leases: RedisLeases;

/** Whether a watcher process holds the `watchers` lease, from its health listener. */
async function watcherActive(watcher: FleetProcess): Promise<boolean> {
  const response = await fetch(`${watcher.healthUrl ?? ''}/readyz`, { signal: AbortSignal.timeout(5_000) });
  const report = (await response.json()) as { checks: Record<string, { detail: { active?: boolean } }> };
  return report.checks['watchers']?.detail.active === true;
}

before(async () => {
  receiver = await startWebhookReceiver();
  fleet = await startServiceFleet({
    partners: partnerIds.map((id) => ({ id, webhookUrl: receiver.url })),
    shards: shardCount,
    // Every process serves its health listener and is started only once its /readyz says ready,
    // as an orchestrator rolls an update.
    env: { SHUTDOWN_GRACE_MS: String(graceMs), HEALTH_PORT: '0' },
  });
  balancer = new LoadBalancer({ healthIntervalMs: 100 });
  leases = new RedisLeases({ redis: fleet.redisUrl, keyPrefix: fleet.keyPrefix });
});

after(() => teardown(
  () => balancer?.stop(),
  () => leases?.close(),
  () => fleet?.stop(),
  () => receiver?.close(),
));

/** The Colombian civil day (the BREB cap window), to notice a run that crosses midnight. */
function colombianDay(nowMs: number): string {
  return new Date(nowMs - 5 * 60 * 60 * 1000).toISOString().slice(0, 10);
}

function expectOk(response: BalancedResponse, what: string): Record<string, unknown> {
  assert.equal(response.status, 200, `${what}: ${response.status} ${response.text}`);
  return response.json;
}

/** Shard ownership as Redis holds it: owned shards, live workers, distinct owners. */
async function ownership(leases: RedisLeases): Promise<{ owned: number; workers: number; owners: Set<string> }> {
  const [shards, members] = await Promise.all([leases.listAll('shard:'), leases.listAll('member:')]);
  return { owned: new Set(shards.map((holder) => holder.name)).size, workers: members.length, owners: new Set(shards.map((holder) => holder.owner)) };
}

/** Every shard owned, spread over both live shard workers (a worker joins within a few lease rounds). */
async function untilShardsSpread(leases: RedisLeases): Promise<void> {
  await eventually(async () => {
    const seen = await ownership(leases);
    assert.equal(seen.owned, shardCount, 'every shard has an owner');
    assert.equal(seen.workers, 2, 'two live shard workers');
    assert.equal(seen.owners.size, 2, 'the shards are spread over both workers');
  }, 30_000, 100);
}

/** The same, as /metrics shows it (read through the load balancer with the ops key). */
async function metricsOwnership(): Promise<{ owned: number; workers: number; owners: Set<string>; actors: number }> {
  const response = await balancer.request('GET', '/metrics', { ops: fleet.opsApiKey });
  assert.equal(response.status, 200, response.text);
  let owned = 0;
  let workers = -1;
  let actors = 0;
  const owners = new Set<string>();
  for (const line of response.text.split('\n')) {
    if (/^shard_owned\{/.test(line) && line.endsWith(' 1')) owned += 1;
    const live = /^shard_workers_live (\d+)$/.exec(line);
    if (live) workers = Number(live[1]);
    const owner = /^shard_lease_owner\{shard="\d+",worker="([^"]+)"\} 1$/.exec(line);
    if (owner?.[1] !== undefined) owners.add(owner[1]);
    const inMemory = /^shard_worker_actors_in_memory\{worker="[^"]+"\} (\d+)$/.exec(line);
    if (inMemory) actors += Number(inMemory[1]);
  }
  return { owned, workers, owners, actors };
}

test('rolling restart of every role under load: every request answered, every payout once, every webhook delivered', { timeout: 420_000 }, async (t) => {
  const startedAtMs = Date.now();
  const dayAtStart = colombianDay(startedAtMs);
  const roles: Array<[FleetRole, string]> = [
    ['shard', 'shard-1'],
    ['shard', 'shard-2'],
    ['edge', 'edge-1'],
    ['edge', 'edge-2'],
    ['payout', 'payout-1'],
    ['watcher', 'watcher-1'],
    ['webhooks', 'webhooks-1'],
  ];
  const processes = new Map<string, FleetProcess>();
  for (const started of await Promise.all(roles.map(([role, name]) => fleet.start(role, name)))) {
    processes.set(started.name, started);
    if (started.baseUrl !== null) balancer.add(started.name, started.baseUrl);
  }
  balancer.startHealthChecks();
  await eventually(async () => assert.equal((await ownership(leases)).owned, shardCount, 'every shard has an owner'), 30_000, 100);
  const readyMs = Date.now() - startedAtMs;

  // ---- the partner load ----
  const accepted: Accepted[] = [];
  const capAccepted = new Map<string, number>();
  const capRejected = new Map<string, number>();
  const unexpected: string[] = [];
  let transactions = 0;
  let loadRunning = true;

  const post = async (path: string, key: string, body: unknown): Promise<BalancedResponse> =>
    balancer.request('POST', path, { key, body, idempotencyKey: randomUUID() });

  /** One payout: quote, accept, fund on Stellar. A cap user's acceptance may be refused by the cap. */
  const onePayout = async (partnerId: string, method: 'BREB' | 'PIX', userId: string, capUser: boolean): Promise<void> => {
    const key = fleet.apiKeys[partnerId] ?? '';
    const amount = method === 'BREB' ? 20_000 : 50;
    const quote = expectOk(
      await post('/quote', key, { amount, crypto_currency: 'USDC', network: 'STELLAR', payment_method: method, target_currency: method === 'BREB' ? 'COP' : 'BRL' }),
      'quote',
    );
    const acceptance = await post('/transaction', key, {
      quote_id: quote['quote_id'],
      user_id: userId,
      account_number: method === 'BREB' ? '@maria.perez' : randomUUID(),
    });
    if (capUser && acceptance.status === 400 && acceptance.json['code'] === 'user_daily_count_cap') {
      capRejected.set(userId, (capRejected.get(userId) ?? 0) + 1);
      return;
    }
    const id = String(expectOk(acceptance, 'acceptance')['id']);
    if (capUser) capAccepted.set(userId, (capAccepted.get(userId) ?? 0) + 1);
    accepted.push({ id, partnerId, method, amount: decimalFromExactString(method === 'BREB' ? '20000.00' : '50.00') });
    expectOk(await post('/sandbox/deposits', key, { transaction_id: id }), 'sandbox deposit');
  };

  const capTries = (userId: string): number => (capAccepted.get(userId) ?? 0) + (capRejected.get(userId) ?? 0);
  /**
   * Flow i < 3 serves partner i's cap user (it alone, so the tries are counted exactly) on every
   * other round until it tried capAttempts times; regular users otherwise.
   */
  const flow = async (flowIndex: number): Promise<void> => {
    const capPartner = partnerIds[flowIndex];
    const capUserId = capPartner === undefined ? null : `cap-user-${capPartner}`;
    const capLeft = (): boolean => capUserId !== null && capTries(capUserId) < capAttempts;
    // The load also ends when the test does (timed out): flows left running would keep the file alive.
    for (let round = 0; (loadRunning || capLeft()) && !t.signal.aborted && transactions < transactionsMax; round += 1) {
      transactions += 1;
      const partnerId = partnerIds[(flowIndex + round) % partnerIds.length] ?? 'alpha';
      try {
        if (round % 2 === 0 && capLeft() && capPartner !== undefined && capUserId !== null) await onePayout(capPartner, 'BREB', capUserId, true);
        else await onePayout(partnerId, round % 4 === 1 ? 'BREB' : 'PIX', `user-${randomUUID()}`, false);
      } catch (error) {
        unexpected.push(error instanceof Error ? error.message : String(error));
      }
      // Kept: the pause paces each flow's load (a steady trickle is the load under test).
      await new Promise((resolve) => setTimeout(resolve, flowPauseMs));
    }
  };
  const load = Promise.all(Array.from({ length: flows }, (_, index) => flow(index)));

  // ---- the rolling restart: one process at a time ----
  const restarts: string[] = [];
  const order = ['edge-1', 'shard-1', 'payout-1', 'watcher-1', 'webhooks-1', 'edge-2', 'shard-2'];
  await eventually(() => assert.ok(transactions >= flows * 2, 'the load is under way before the first restart'), 30_000);
  for (const name of order) {
    const old = processes.get(name);
    assert.ok(old, name);
    // A shard worker goes only while the other one is up and owns its share (never zero owners).
    if (old.role === 'shard') await untilShardsSpread(leases);
    // The watcher goes surge-first: its replacement stands by until the old one releases the
    // `watchers` lease, then runs the watchers (deposits keep being found throughout).
    const surged = old.role === 'watcher' ? await fleet.start(old.role, `${name}'`) : null;
    if (surged !== null) assert.equal((await watcherActive(surged)), false, 'the new watcher process stands by');
    const stopped = await fleet.terminate(old, graceMs + 5_000);
    balancer.remove(name);
    assert.deepEqual([stopped.code, stopped.signal], [0, null], `${name} exits 0 on SIGTERM:\n${old.output()}`);
    assert.ok(stopped.stopMs < graceMs, `${name} stopped within the grace period (${stopped.stopMs} ms)`);
    const replacement = surged ?? (await fleet.start(old.role, `${name}'`));
    if (surged !== null) await eventually(async () => assert.equal(await watcherActive(surged), true, 'the standby took over'), 15_000, 100);
    processes.set(name, replacement);
    if (replacement.baseUrl !== null) balancer.add(name, replacement.baseUrl);
    restarts.push(`${name} ${stopped.stopMs} ms`);
    // Kept: a moment of load on the new process mix before the next process goes (pacing: waiting
    // for whole payouts here made the restarts too slow for the test's bound on a loaded machine).
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  loadRunning = false;
  await load;
  const restartedMs = Date.now() - startedAtMs;

  // ---- every accepted transaction completes, once ----
  assert.deepEqual(unexpected, [], 'every partner request got its expected answer');
  const completedWebhooks = (): Set<string> =>
    new Set(receiver.requests.filter((request) => request.status_ === 'PAYMENT_COMPLETED' && request.transactionId !== null).map((request) => request.transactionId ?? ''));
  await eventually(() => {
    const done = completedWebhooks();
    const missing = accepted.filter((transaction) => !done.has(transaction.id));
    assert.equal(missing.length, 0, `${missing.length} of ${accepted.length} transactions have no PAYMENT_COMPLETED webhook yet`);
  }, 45_000, 250);
  for (const transaction of accepted) {
    const key = fleet.apiKeys[transaction.partnerId] ?? '';
    const got = expectOk(await balancer.request('GET', `/transaction/${transaction.id}`, { key }), 'transaction status');
    assert.equal(got['status'], 'PAYMENT_COMPLETED', `transaction ${transaction.id}`);
  }

  // ---- webhooks: every event delivered, sequences without gaps, the /events log agrees ----
  let duplicateDeliveries = 0;
  const loggedSequence = new Map<string, number>();
  for (const partnerId of partnerIds) {
    const key = fleet.apiKeys[partnerId] ?? '';
    const events: Array<{ sequence: number; id: string; data: { id: string; status: string } }> = [];
    for (let afterSequence = 0; ; ) {
      const page = expectOk(await balancer.request('GET', `/events?after=${afterSequence}&limit=100`, { key }), 'events page');
      const batch = page['events'] as typeof events;
      events.push(...batch);
      const last = batch[batch.length - 1];
      if (last === undefined || batch.length < 100) break;
      afterSequence = last.sequence;
    }
    assert.deepEqual(events.map((event) => event.sequence), events.map((_, index) => index + 1), `${partnerId}: event sequences 1…n without gaps`);
    for (const event of events) loggedSequence.set(event.id, event.sequence);
    const delivered = receiver.requests.filter((request) => request.status === 200 && events.some((event) => event.id === request.eventId));
    const deliveredIds = new Set(delivered.map((request) => request.eventId));
    duplicateDeliveries += delivered.length - deliveredIds.size;
    const undelivered = events.filter((event) => !deliveredIds.has(event.id));
    assert.deepEqual(undelivered.map((event) => event.sequence), [], `${partnerId}: every logged event was delivered`);
    const mine = accepted.filter((transaction) => transaction.partnerId === partnerId);
    for (const transaction of mine) {
      const completed = events.filter((event) => event.data.id === transaction.id && event.data.status === 'PAYMENT_COMPLETED');
      assert.equal(completed.length, 1, `${transaction.id}: one PAYMENT_COMPLETED event`);
    }
    const logged = new Set(events.map((event) => event.data.id));
    assert.equal(mine.filter((transaction) => logged.has(transaction.id)).length, mine.length, `${partnerId}: every transaction is in the log`);
  }
  const foreign = receiver.requests.filter((request) => request.eventId === null || loggedSequence.get(request.eventId) !== request.sequence);
  assert.deepEqual(foreign.map((request) => request.eventId), [], 'every delivery is a logged event, with its logged sequence number');

  // ---- the count cap held exactly: each cap user got exactly countCap acceptances of capAttempts ----
  if (colombianDay(Date.now()) === dayAtStart) {
    for (const partnerId of partnerIds) {
      const userId = `cap-user-${partnerId}`;
      assert.deepEqual(
        [capAccepted.get(userId) ?? 0, capRejected.get(userId) ?? 0],
        [countCap, capAttempts - countCap],
        `${userId}: accepted up to the cap, refused beyond it`,
      );
    }
  }

  // ---- the rail paid each transaction once: one payout record each, liquidity down by exactly the sum ----
  const store = new LmdbStore({ dir: fleet.storeDir, readModelIndexes: serviceReadModelIndexes });
  await store.init();
  try {
    const paid: Record<'BREB' | 'PIX', Decimal> = { BREB: decimalFromExactString('0.00'), PIX: decimalFromExactString('0.00') };
    for (const transaction of accepted) {
      const record = await store.get(sandboxRailCollection, `payout:payout:${transaction.id}`);
      assert.ok(record, `${transaction.id} has its payout record`);
      assert.equal(record['status'], 'succeeded');
      assert.equal(compare(decimalFromExactString(String(record['amount'])), transaction.amount), 0, `${transaction.id} paid its quoted amount`);
      paid[transaction.method] = add(paid[transaction.method], transaction.amount);
    }
    for (const method of ['BREB', 'PIX'] as const) {
      const liquidity = await store.get(sandboxRailCollection, `liquidity:${method}`);
      const left = decimalFromExactString(String(liquidity?.['amount']));
      assert.equal(compare(subtract(defaultSandboxLiquidity[method], left), paid[method]), 0, `${method} liquidity went down by exactly what was paid`);
    }
  } finally {
    await store.close();
  }

  // ---- /metrics agrees with Redis: every shard owned, by the two live workers, actors in memory ----
  await untilShardsSpread(leases);
  const fromRedis = await ownership(leases);
  await eventually(async () => {
    const seen = await metricsOwnership();
    assert.deepEqual([seen.owned, seen.workers, [...seen.owners].sort()], [shardCount, 2, [...fromRedis.owners].sort()], 'metrics show the owners Redis holds');
    assert.ok(seen.actors > 0, 'the workers hold actors in memory');
  }, 20_000, 500);

  // ---- every process's health listener: ready, with its role's loops making rounds ----
  const checksByRole: Record<string, string[]> = {
    edge: ['shard-owners'],
    shard: ['shard-leases', 'shard-commands'],
    payout: ['payout-rounds'],
    watcher: ['watchers', 'watcher-lease', 'refund-rounds', 'sweep-rounds', 'delivery-rounds', 'pix-notice-rounds'],
    webhooks: ['webhook-rounds'],
  };
  for (const running of fleet.running()) {
    // A process restarted last may not have finished its first lease round (every ~3.3 s) yet.
    await eventually(async () => {
      const response = await fetch(`${running.healthUrl ?? ''}/readyz`);
      const report = (await response.json()) as { ready: string; status: string; checks: Record<string, { ready: boolean; detail: { rounds?: number } }> };
      assert.equal(response.status, 200, `${running.name}: ${JSON.stringify(report)}`);
      assert.deepEqual([report.status, report.ready], ['ok', 'ready'], running.name);
      assert.deepEqual(Object.keys(report.checks).sort(), [...(checksByRole[running.role] ?? [])].sort(), running.name);
      for (const [name, check] of Object.entries(report.checks)) {
        if (name !== 'watchers') assert.ok((check.detail.rounds ?? 0) > 0, `${running.name} ${name} has made rounds`);
      }
    }, 15_000, 200);
  }

  const stats = balancer.stats();
  const nonOk = Object.entries(stats.byStatus).filter(([status]) => status !== '200');
  assert.ok(
    nonOk.every(([status]) => status === '400'),
    `only 200s and the cap's 400s: ${JSON.stringify(stats.byStatus)}`,
  );
  assert.equal(stats.failures, 0, 'no request went unanswered');
  console.log(
    `rolling restart: ${stats.requests} requests (${JSON.stringify(stats.byStatus)}), ${stats.retriedConnectionErrors} retried connection errors, ` +
      `${accepted.length} transactions paid once, ${receiver.requests.length} webhook deliveries (${duplicateDeliveries} repeated), ` +
      `restarts: ${restarts.join(', ')}; ready in ${readyMs} ms, restarts done at ${restartedMs} ms, total ${Date.now() - startedAtMs} ms`,
  );
});
