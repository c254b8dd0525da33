// Dispatcher processes against one embedded store (LMDB, shared by several processes on one
// machine): a dispatcher SIGKILLed in the middle of deliveries loses nothing — after a restart every
// event is delivered at least once, still in order per transaction; and two dispatcher processes
// running at once never deliver one event (or one transaction) twice concurrently, while the
// per-partner sequence stays dense and unique.
//
// This file is also the child process: with WEBHOOKS_CHILD=1 it runs one dispatcher
// (`node --import tsx webhooks-crash.test.ts <lmdb dir> <receiver url>`) and prints a JSON line per
// attempt on stdout.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LmdbStore } from '../../src/store/lmdb-store.ts';
import { defaultReadModelIndexes } from '../../src/store/store.ts';
import { createKeyRing } from '../../src/edge/auth.ts';
import { PartnerDirectory } from '../../src/ports/partners.ts';
import { createWebhookServices, webhookReadModelIndexes } from '../../src/webhooks/index.ts';
import { eventually } from '../support/eventually.ts';
import { commitWebhooks, newTransaction, startWebhookReceiver, type FedTransaction, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { teardown } from '../support/teardown.ts';

const thisFile = fileURLToPath(import.meta.url);
const secret = 'acme-webhook-secret-0123456789';
const indexes = [...defaultReadModelIndexes, ...webhookReadModelIndexes];

// ---------------------------------------------------------------- child
async function runChild(dir: string, url: string, name: string): Promise<void> {
  const store = new LmdbStore({ dir, readModelIndexes: indexes });
  await store.init();
  const partners = new PartnerDirectory(createKeyRing());
  partners.set({ id: 'acme', name: 'Acme', apiKeySha256: [], kycEnabled: false, kybApproved: true, disabledUsers: new Set(), webhook: { url, secret }, fees: undefined });
  const line = (level: string) => (fields: Record<string, unknown>, message: string): void => {
    if (message === 'webhook attempt' || level === 'error') process.stdout.write(`${JSON.stringify({ child: name, level, message, ...fields })}\n`);
  };
  const services = createWebhookServices(
    { env: { sandbox: true }, processId: name, clock: { nowMs: () => Date.now() }, log: { info: line('info'), warn: line('warn'), error: line('error') }, store, partners },
    {
      policy: { retryDelayMsBase: 50, retryDelayMsMax: 500 },
      transport: { attemptTimeoutMs: 1_000 },
      limits: { leaseMs: 1_500, claimMarginMs: 200, pollIntervalMs: 20, claimBatchMax: 8 },
    },
  );
  await services.startWebhooksRole();
  process.stdout.write('ready\n');
  // Runs until killed.
}

if (process.env.WEBHOOKS_CHILD === '1') {
  const [dir, url, name] = process.argv.slice(2);
  if (dir === undefined || url === undefined) throw new Error('usage: webhooks-crash.test.ts <dir> <url> [name]');
  runChild(dir, url, name ?? 'child').catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
} else {
  defineTests();
}

// ---------------------------------------------------------------- parent
interface Child {
  readonly process: ChildProcess;
  readonly attempts: Array<{ child: string; eventId: string; httpStatus: number | null }>;
  readonly exited: Promise<void>;
}

async function startChild(dir: string, url: string, name: string): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', thisFile, dir, url, name], {
    env: { ...process.env, WEBHOOKS_CHILD: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const attempts: Child['attempts'] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4_000);
  });
  let ready = false;
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      if (line === 'ready') ready = true;
      else if (line.startsWith('{')) {
        const parsed = JSON.parse(line) as { child: string; eventId?: string; httpStatus?: number | null; message: string };
        if (parsed.message === 'webhook attempt' && parsed.eventId !== undefined) {
          attempts.push({ child: parsed.child, eventId: parsed.eventId, httpStatus: parsed.httpStatus ?? null });
        }
      }
    }
  });
  await eventually(() => {
    if (child.exitCode !== null) throw new Error(`child exited early: ${stderr}`);
    assert.ok(ready, 'child ready');
  }, 30_000, 25);
  return { process: child, attempts, exited };
}

async function kill(child: Child): Promise<void> {
  if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
}

function defineTests(): void {
  describe('dispatcher processes', () => {
    let receiver: WebhookReceiver;
    let dir: string;
    let store: LmdbStore;
    const children: Child[] = [];

    before(async () => {
      receiver = await startWebhookReceiver();
    });
    after(() => teardown(
      ...[...children].map((child) => () => kill(child)),
      () => receiver?.close(),
    ));

    async function freshStore(): Promise<void> {
      dir = mkdtempSync(join(tmpdir(), 'webhooks-crash-'));
      store = new LmdbStore({ dir, readModelIndexes: indexes });
      await store.init();
    }

    async function closeStore(): Promise<void> {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }

    async function feed(count: number): Promise<FedTransaction[]> {
      const transactions = Array.from({ length: count }, () => newTransaction('acme'));
      for (const tx of transactions) await commitWebhooks(store, tx, [{ event: 'transaction.created', status: 'AWAITING_PAYMENT' }]);
      for (const tx of transactions) await commitWebhooks(store, tx, [{ event: 'transaction.updated', status: 'PAYMENT_EXPIRED' }]);
      return transactions;
    }

    function assertOrderedPerTransaction(transactions: readonly FedTransaction[]): void {
      for (const tx of transactions) {
        const arrivals = receiver.requests.filter((request) => request.transactionId === tx.transactionId);
        const created = arrivals.filter((request) => request.event === 'transaction.created');
        const updated = arrivals.filter((request) => request.event === 'transaction.updated');
        assert.ok(created.some((request) => request.status === 200), `${tx.transactionId} created delivered`);
        assert.ok(updated.some((request) => request.status === 200), `${tx.transactionId} updated delivered`);
        const lastCreated = Math.max(...created.map((request) => request.receivedAtMs));
        const firstUpdated = Math.min(...updated.map((request) => request.receivedAtMs));
        assert.ok(lastCreated <= firstUpdated, `${tx.transactionId}: updated started before created was finished`);
      }
    }

    test('SIGKILL in the middle of deliveries, then a restart: every event delivered at least once, in order', async () => {
      await freshStore();
      receiver.requests.length = 0;
      receiver.script([], { status: 200, delayMs: 150 });
      try {
        const transactions = await feed(30);
        const first = await startChild(dir, receiver.url, 'first');
        children.push(first);
        await eventually(() => {
          assert.ok(receiver.requests.length >= 10, 'some deliveries happened');
          assert.ok(receiver.inFlight() > 0, 'a delivery is in progress');
        }, 20_000, 5);
        await kill(first);
        const interrupted = receiver.requests.filter((request) => request.status === null).length;
        const deliveredBeforeKill = new Set(receiver.requests.filter((request) => request.status === 200).map((request) => request.eventId)).size;
        assert.ok(deliveredBeforeKill < transactions.length * 2, 'the kill happened before everything was delivered');

        const second = await startChild(dir, receiver.url, 'second');
        children.push(second);
        await eventually(async () => {
          assert.equal((await store.outboxPending('webhooks', 1_000)).length, 0, 'the outbox is drained');
        }, 30_000);
        const page = await createWebhookServices({ env: { sandbox: true }, processId: 'p', clock: { nowMs: () => Date.now() }, log: { info() {}, warn() {}, error() {} }, store, partners: { get: () => undefined } }).events.list('acme', 0, 500);
        assert.equal(page.events.length, transactions.length * 2, 'every event recorded once');
        assert.deepEqual(page.events.map((event) => event.sequence), page.events.map((_, index) => index + 1));
        const answered = new Set(receiver.requests.filter((request) => request.status === 200).map((request) => request.eventId));
        for (const event of page.events) assert.ok(answered.has(event.id), `${event.id} delivered`);
        assertOrderedPerTransaction(transactions);
        assert.ok(second.attempts.length > 0, 'the restarted dispatcher did the rest');
        assert.ok(interrupted >= 1, 'at least one delivery was cut off by the kill');
        await kill(second);
      } finally {
        await closeStore();
      }
    });

    test('two dispatcher processes at once: no event and no transaction delivered twice concurrently', async () => {
      await freshStore();
      receiver.requests.length = 0;
      // Slow answers and a 500 on every event's first try: maximum chance for overlaps.
      const seen = new Set<string>();
      receiver.respondWith((request) => {
        const first = request.eventId !== null && !seen.has(request.eventId);
        if (request.eventId !== null) seen.add(request.eventId);
        return { status: first ? 500 : 200, delayMs: 20 + (request.index % 5) * 10 };
      });
      try {
        const a = await startChild(dir, receiver.url, 'a');
        const b = await startChild(dir, receiver.url, 'b');
        children.push(a, b);
        const transactions = await feed(40);
        await eventually(async () => {
          assert.equal((await store.outboxPending('webhooks', 1_000)).length, 0, 'the outbox is drained');
        }, 60_000);
        assert.equal(receiver.maxConcurrentPerEvent(), 1, 'an event was delivered twice at the same time');
        assert.equal(receiver.maxConcurrentPerTransaction(), 1, 'a transaction had two deliveries at the same time');
        assertOrderedPerTransaction(transactions);
        assert.ok(a.attempts.length > 0 && b.attempts.length > 0, `both dispatchers worked (a: ${a.attempts.length}, b: ${b.attempts.length})`);
        const page = await createWebhookServices({ env: { sandbox: true }, processId: 'p', clock: { nowMs: () => Date.now() }, log: { info() {}, warn() {}, error() {} }, store, partners: { get: () => undefined } }).events.list('acme', 0, 500);
        assert.equal(page.events.length, transactions.length * 2, 'two recorders: each event recorded exactly once');
        assert.deepEqual(page.events.map((event) => event.sequence), page.events.map((_, index) => index + 1), 'dense, unique sequences');
        assert.equal(new Set(page.events.map((event) => event.id)).size, page.events.length);
        await kill(a);
        await kill(b);
      } finally {
        receiver.respondWith(null);
        await closeStore();
      }
    });
  });
}
