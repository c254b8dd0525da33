// The sandbox's failure rehearsals (docs/sandbox.md) against the whole service: each webhook fault
// a partner sets arrives at its local receiver as configured, and a receiver running the documented
// handler pattern (verify with `verifyWebhook`, deduplicate by event id, apply by sequence, catch up
// with GET /events) still ends with each transaction's real final status; one partner's faults
// never touch another's deliveries. The test clocks (expire now, fail the next payout, short next
// deposit) each produce the real events, webhooks and refunds. Every answer is checked against the
// OpenAPI document (test/e2e/support.ts).
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { PaymentsApiError, PaymentsClient, verifyWebhook } from '../../clients/typescript/src/index.ts';
import { checkedFetch } from '../support/openapi-validation.ts';
import { startEdgeRole, type EdgeRole } from '../../src/service/edge-role.ts';
import { deliveriesCollection } from '../../src/webhooks/records.ts';
import { eventually } from '../support/eventually.ts';
import { startServiceHarness, testPartners, type BusKind, type ServiceHarness } from '../support/service-harness.ts';
import { teardown } from '../support/teardown.ts';
import { startWebhookReceiver, type ReceivedRequest, type ReceiverBehaviour, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { call, payoutQuoteBody, untilStatus } from './support.ts';

/** What the partner's own records say about one transaction, built only from what it accepted. */
interface PartnerView {
  readonly sequence: number;
  readonly status: string;
  readonly refundOnChainId: string | null;
}

/** The handler pattern of docs/sandbox.md ("The handler pattern that survives all of them"). */
class DocumentedHandler {
  readonly handled = new Set<string>();
  readonly refused: ReceivedRequest[] = [];
  readonly duplicates: string[] = [];
  readonly transactions = new Map<string, PartnerView>();

  constructor(private readonly secret: string) {}

  respond(request: ReceivedRequest): ReceiverBehaviour {
    const verdict = verifyWebhook(request.body, request.headers, this.secret);
    if (!verdict.ok || verdict.eventId === null || verdict.sequence === null || verdict.payload.event === 'webhook.test') {
      this.refused.push(request);
      return { status: 401 };
    }
    if (this.handled.has(verdict.eventId)) {
      this.duplicates.push(verdict.eventId);
      return { status: 200 };
    }
    this.handled.add(verdict.eventId);
    this.apply(verdict.sequence, verdict.payload.data);
    return { status: 200 };
  }

  /** Step 4: GET /events after a gap (or now and then); events already handled are skipped. */
  async catchUp(baseUrl: string, key: string): Promise<void> {
    const page = await call(baseUrl, 'GET', '/events?after=0&limit=500', { key });
    assert.equal(page.status, 200, page.text);
    for (const item of page.json['events'] as Array<{ sequence: number; id: string; data: { id: string; status: string; refundOnChainId: string | null } }>) {
      if (this.handled.has(item.id)) continue;
      this.handled.add(item.id);
      this.apply(item.sequence, item.data);
    }
  }

  /** Step 3: an older sequence never moves a transaction back. */
  private apply(sequence: number, data: { readonly id: string; readonly status: string; readonly refundOnChainId: string | null }): void {
    const current = this.transactions.get(data.id);
    if (current !== undefined && current.sequence >= sequence) return;
    this.transactions.set(data.id, { sequence, status: data.status, refundOnChainId: data.refundOnChainId });
  }
}

const partnerA = testPartners.kycOff;
const partnerB = testPartners.kybPending;

for (const busKind of ['memory', 'redis'] as const satisfies readonly BusKind[]) {
  describe(`sandbox failure rehearsals: webhook faults and test clocks (${busKind} bus)`, () => {
    const secretA = `whsec_${randomBytes(32).toString('base64url')}`;
    const secretB = `whsec_${randomBytes(32).toString('base64url')}`;
    const handlerA = new DocumentedHandler(secretA);
    const handlerB = new DocumentedHandler(secretB);
    let receiverA: WebhookReceiver | undefined;
    let receiverB: WebhookReceiver | undefined;
    let harness: ServiceHarness | undefined;
    /** An edge over the same service with sandbox mode off (the last test). */
    let liveEdge: EdgeRole | undefined;

    const base = (): string => harness?.baseUrl ?? assert.fail('the service runs');
    const keyOf = (partnerId: string): string => harness?.apiKeys[partnerId] ?? assert.fail(`a key for ${partnerId}`);
    const deliveriesTo = (receiver: WebhookReceiver | undefined, transactionId: string): ReceivedRequest[] =>
      (receiver?.requests ?? []).filter((request) => request.transactionId === transactionId);

    before(async () => {
      receiverA = await startWebhookReceiver();
      receiverB = await startWebhookReceiver();
      receiverA.respondWith((request) => handlerA.respond(request));
      receiverB.respondWith((request) => handlerB.respond(request));
      harness = await startServiceHarness({
        busKind,
        webhooks: { [partnerA]: { url: receiverA.url, secret: secretA }, [partnerB]: { url: receiverB.url, secret: secretB } },
      });
    });

    after(() => teardown(() => liveEdge?.stop(), () => harness?.stop(), () => receiverA?.close(), () => receiverB?.close()));

    afterEach(async () => {
      for (const partnerId of [partnerA, partnerB]) {
        const reset = await call(base(), 'DELETE', '/sandbox/webhook-faults', { key: keyOf(partnerId) });
        assert.equal(reset.status, 200, reset.text);
      }
    });

    async function accept(partnerId: string): Promise<string> {
      const key = keyOf(partnerId);
      const quote = await call(base(), 'POST', '/quote', { key, body: payoutQuoteBody });
      assert.equal(quote.status, 200, quote.text);
      const accepted = await call(base(), 'POST', '/transaction', { key, body: { quote_id: quote.json['quote_id'], user_id: `rehearsal-${randomUUID()}`, account_number: '3001234567' } });
      assert.equal(accepted.status, 200, accepted.text);
      return String(accepted.json['id']);
    }

    async function deposit(partnerId: string, transactionId: string): Promise<Record<string, unknown>> {
      const deposited = await call(base(), 'POST', '/sandbox/deposits', { key: keyOf(partnerId), body: { transaction_id: transactionId } });
      assert.equal(deposited.status, 200, deposited.text);
      return deposited.json;
    }

    /** A whole payout of partner A: accepted, funded, completed. */
    async function completedPayout(partnerId: string = partnerA): Promise<string> {
      const id = await accept(partnerId);
      await deposit(partnerId, id);
      await untilStatus(base(), keyOf(partnerId), id, 'PAYMENT_COMPLETED');
      return id;
    }

    async function setFaults(partnerId: string, faults: Record<string, unknown>): Promise<Record<string, unknown>> {
      const set = await call(base(), 'PUT', '/sandbox/webhook-faults', { key: keyOf(partnerId), body: faults });
      assert.equal(set.status, 200, set.text);
      return set.json;
    }

    /** The handler's view of a transaction reaches `status` (and a refund, when asked). */
    async function handlerSees(handler: DocumentedHandler, id: string, status: string, refunded = false): Promise<void> {
      await eventually(() => {
        const view = handler.transactions.get(id);
        assert.equal(view?.status, status, `the partner's view of ${id}`);
        if (refunded) assert.equal(typeof view?.refundOnChainId, 'string', 'the refund reached the partner');
      }, 30_000);
    }

    test('faults are set, read and reset per partner; bad values are 400 with a reason naming the field', async () => {
      const off = { duplicate: false, out_of_order: false, delay_ms: 0, wrong_signature_next: 0, drop_first_attempts: 0 };
      assert.deepEqual((await call(base(), 'GET', '/sandbox/webhook-faults', { key: keyOf(partnerA) })).json, off);
      const set = await setFaults(partnerA, { duplicate: true, delay_ms: 250 });
      assert.deepEqual(set, { ...off, duplicate: true, delay_ms: 250 });
      assert.deepEqual((await call(base(), 'GET', '/sandbox/webhook-faults', { key: keyOf(partnerA) })).json, set);
      assert.deepEqual((await call(base(), 'GET', '/sandbox/webhook-faults', { key: keyOf(partnerB) })).json, off, "another partner's faults are its own");
      for (const [body, field] of [
        [{ delay_ms: 10_001 }, 'delay_ms'],
        [{ delay_ms: 1.5 }, 'delay_ms'],
        [{ drop_first_attempts: 5 }, 'drop_first_attempts'],
        [{ wrong_signature_next: -1 }, 'wrong_signature_next'],
        [{ duplicate: 'yes' }, 'duplicate'],
        [{ reorder: true }, 'reorder'],
      ] as const) {
        const refused = await call(base(), 'PUT', '/sandbox/webhook-faults', { key: keyOf(partnerA), body });
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.equal(refused.json['code'], 'invalid_request');
        assert.match(String(refused.json['reason']), new RegExp(field));
      }
      assert.deepEqual((await call(base(), 'GET', '/sandbox/webhook-faults', { key: keyOf(partnerA) })).json, set, 'a refused PUT changes nothing');
      const reset = await call(base(), 'DELETE', '/sandbox/webhook-faults', { key: keyOf(partnerA) });
      assert.deepEqual([reset.status, reset.json], [200, off]);
      assert.equal((await call(base(), 'GET', '/sandbox/webhook-faults')).status, 401);
    });

    test('the typed client sets, reads and resets the faults, and runs a test clock', async () => {
      const client = new PaymentsClient({ baseUrl: base(), apiKey: keyOf(partnerA), fetch: checkedFetch });
      const set = await client.setSandboxWebhookFaults({ delay_ms: 100, drop_first_attempts: 1 });
      assert.equal(set.drop_first_attempts, 1);
      assert.deepEqual(await client.getSandboxWebhookFaults(), set);
      const reset = await client.resetSandboxWebhookFaults();
      assert.deepEqual([reset.delay_ms, reset.drop_first_attempts], [0, 0]);
      const id = await accept(partnerA);
      assert.equal((await client.sandboxExpire(id)).status, 'PAYMENT_EXPIRED');
      await assert.rejects(client.sandboxFailNextPayout(id), (error) => error instanceof PaymentsApiError && error.status === 409 && error.code === 'rehearsal_not_applicable');
    });

    test("duplicate: every event arrives twice with the same id; B's faults leave A's deliveries alone", async () => {
      await setFaults(partnerB, { duplicate: true, drop_first_attempts: 2, delay_ms: 2_000, wrong_signature_next: 5 });
      const untouched = await completedPayout(partnerA);
      await handlerSees(handlerA, untouched, 'PAYMENT_COMPLETED');
      const plain = deliveriesTo(receiverA, untouched);
      assert.equal(new Set(plain.map((request) => request.eventId)).size, plain.length, "B's duplicate fault does not reach A");
      assert.ok(plain.every((request) => request.headers['x-service-attempt'] === '1'), "B's dropped attempts are not A's");
      assert.ok(plain.every((request) => verifyWebhook(request.body, request.headers, secretA).ok), "B's wrong signatures are not A's");

      await call(base(), 'DELETE', '/sandbox/webhook-faults', { key: keyOf(partnerB) });
      await setFaults(partnerA, { duplicate: true });
      const id = await completedPayout(partnerA);
      await handlerSees(handlerA, id, 'PAYMENT_COMPLETED');
      // Each copy goes right after the first one; wait until every event has had its second.
      const perEvent = await eventually(() => {
        const counts = new Map<string, number>();
        for (const request of deliveriesTo(receiverA, id)) counts.set(request.eventId ?? '', (counts.get(request.eventId ?? '') ?? 0) + 1);
        assert.ok(counts.size >= 3, 'created, processing, completed at least');
        assert.deepEqual([...counts.values()].filter((copies) => copies !== 2), [], 'each event exactly twice');
        return counts;
      }, 20_000);
      assert.ok([...perEvent.keys()].every((eventId) => handlerA.duplicates.includes(eventId)), 'the handler recognised each second copy');
    });

    test('out of order: a later sequence arrives before an earlier one; the handler ends on the real status', async () => {
      await setFaults(partnerA, { out_of_order: true });
      const id = await completedPayout(partnerA);
      await handlerSees(handlerA, id, 'PAYMENT_COMPLETED');
      const sequences = deliveriesTo(receiverA, id).map((request) => request.sequence ?? 0);
      assert.ok(sequences.some((sequence, index) => index > 0 && sequence < (sequences[index - 1] ?? 0)), `sequences in arrival order: ${sequences.join(', ')}`);
      assert.equal(new Set(sequences).size, sequences.length, 'each event once (nothing lost, nothing doubled)');
    });

    test('delay: each delivery arrives no sooner than the delay after its event', async () => {
      const delayMs = 1_500;
      await setFaults(partnerA, { delay_ms: delayMs });
      const before = Date.now();
      const id = await accept(partnerA);
      const first = await eventually(() => deliveriesTo(receiverA, id)[0] ?? assert.fail('no delivery yet'), 20_000);
      // The event was committed after `before`, and left at least `delayMs` after its commit.
      assert.ok(first.receivedAtMs - before >= delayMs, `arrived ${first.receivedAtMs - before} ms after the acceptance began`);
      assert.ok(verifyWebhook(first.body, first.headers, secretA).ok, 'signed when it left: the timestamp is fresh');
      assert.equal(first.status_, 'AWAITING_PAYMENT');
      await handlerSees(handlerA, id, 'AWAITING_PAYMENT');
    });

    test('wrong signature: the next attempt fails verification with the real secret; GET /events catches it up', async () => {
      await setFaults(partnerA, { wrong_signature_next: 1 });
      const id = await completedPayout(partnerA);
      await handlerSees(handlerA, id, 'PAYMENT_COMPLETED');
      const [forged, ...rest] = deliveriesTo(receiverA, id);
      assert.equal(forged?.status_, 'AWAITING_PAYMENT');
      assert.equal(forged?.status, 401, 'the handler refused it');
      assert.ok(forged !== undefined && !verifyWebhook(forged.body, forged.headers, secretA).ok);
      assert.ok(rest.every((request) => verifyWebhook(request.body, request.headers, secretA).ok), 'only the next one was forged');
      assert.equal((await call(base(), 'GET', '/sandbox/webhook-faults', { key: keyOf(partnerA) })).json['wrong_signature_next'], 0, 'spent');
      assert.ok(!handlerA.handled.has(forged.eventId ?? ''), 'the forged delivery was never trusted');
      await handlerA.catchUp(base(), keyOf(partnerA));
      assert.ok(handlerA.handled.has(forged.eventId ?? ''), 'the refused event is caught up from GET /events');
      assert.equal(handlerA.transactions.get(id)?.status, 'PAYMENT_COMPLETED', 'catching up an older event does not move the transaction back');
    });

    test('drop the first N attempts: N failed attempts, then attempt N+1 delivers', async () => {
      await setFaults(partnerA, { drop_first_attempts: 1 });
      const id = await accept(partnerA);
      const arrived = await eventually(() => deliveriesTo(receiverA, id)[0] ?? assert.fail('no delivery yet'), 20_000);
      assert.equal(arrived.headers['x-service-attempt'], '2', 'the first attempt never arrived');
      const record = await eventually(async () => {
        const doc = await harness?.ctx.store.get(deliveriesCollection, arrived.eventId ?? '');
        assert.equal(doc?.['status'], 'delivered');
        return doc;
      });
      const attempts = record?.['attempts'] as Array<{ outcome: string; error: string | null }>;
      assert.deepEqual(attempts.map((attempt) => [attempt.outcome, attempt.error]), [['retryable', 'sandbox_dropped'], ['delivered', null]]);
      await handlerSees(handlerA, id, 'AWAITING_PAYMENT');
    });

    test('expire now: PAYMENT_EXPIRED at once, and a later deposit is the partner\'s unmatched deposit, refunded by the partner\'s call', async () => {
      const id = await accept(partnerA);
      const foreign = await call(base(), 'POST', `/sandbox/transactions/${id}/expire`, { key: keyOf(partnerB) });
      assert.equal(foreign.status, 404, "another partner's transaction is not found");
      const expired = await call(base(), 'POST', `/sandbox/transactions/${id}/expire`, { key: keyOf(partnerA) });
      assert.deepEqual([expired.status, expired.json], [200, { transaction_id: id, rehearsal: 'expire', status: 'PAYMENT_EXPIRED' }]);
      await untilStatus(base(), keyOf(partnerA), id, 'PAYMENT_EXPIRED');
      await handlerSees(handlerA, id, 'PAYMENT_EXPIRED');
      const again = await call(base(), 'POST', `/sandbox/transactions/${id}/expire`, { key: keyOf(partnerA) });
      assert.deepEqual([again.status, again.json['code']], [409, 'rehearsal_not_applicable']);
      // A deposit after the expiry funds nothing: it waits as the partner's unmatched deposit
      // (docs/unmatched-deposits.md) until the partner refunds or applies it.
      await deposit(partnerA, id);
      const late = await eventually(async () => {
        const listed = await call(base(), 'GET', '/unmatched-deposits/list?state=open', { key: keyOf(partnerA) });
        const found = (listed.json['unmatched_deposits'] as Array<Record<string, unknown>>).find((item) => item['transaction_id'] === id);
        assert.ok(found, 'the late deposit is listed as unmatched');
        return found;
      }, 20_000);
      assert.equal(late['reason'], 'deposit_late');
      const refund = await call(base(), 'POST', `/unmatched-deposit/${String(late['id'])}/refund`, { key: keyOf(partnerA), idempotencyKey: randomUUID() });
      assert.equal(refund.status, 200, refund.text);
      await eventually(async () => {
        const got = await call(base(), 'GET', `/unmatched-deposit/${String(late['id'])}`, { key: keyOf(partnerA) });
        assert.equal(got.json['state'], 'refunded');
      }, 20_000);
      await untilStatus(base(), keyOf(partnerA), id, 'PAYMENT_EXPIRED');
    });

    test('fail the next payout: the rail refuses it, PAYMENT_FAILED, and the deposit is refunded', async () => {
      const id = await accept(partnerA);
      const armed = await call(base(), 'POST', `/sandbox/transactions/${id}/fail-next-payout`, { key: keyOf(partnerA) });
      assert.deepEqual([armed.status, armed.json], [200, { transaction_id: id, rehearsal: 'fail-next-payout', status: 'AWAITING_PAYMENT' }]);
      await deposit(partnerA, id);
      await untilStatus(base(), keyOf(partnerA), id, 'PAYMENT_FAILED');
      await handlerSees(handlerA, id, 'PAYMENT_FAILED', true);
      const late = await call(base(), 'POST', `/sandbox/transactions/${id}/fail-next-payout`, { key: keyOf(partnerA) });
      assert.deepEqual([late.status, late.json['code']], [409, 'rehearsal_not_applicable']);
      // Only that transaction's payout: the next one completes.
      await completedPayout(partnerA);
    });

    test('short next deposit: 90 % of the quoted amount arrives, WRONG_AMOUNT, and it is refunded', async () => {
      const id = await accept(partnerA);
      const foreign = await call(base(), 'POST', `/sandbox/transactions/${id}/short-next-deposit`, { key: keyOf(partnerB) });
      assert.equal(foreign.status, 404);
      const armed = await call(base(), 'POST', `/sandbox/transactions/${id}/short-next-deposit`, { key: keyOf(partnerA) });
      assert.equal(armed.status, 200, armed.text);
      const transaction = await call(base(), 'GET', `/transactions/list?externalUserId=${encodeURIComponent(String((await call(base(), 'GET', `/transaction/${id}`, { key: keyOf(partnerA) })).json['user_id']))}`, { key: keyOf(partnerA) });
      const quoted = Number((transaction.json['transactions'] as Array<{ quote: { sourceAmount: number } }>)[0]?.quote.sourceAmount);
      const sent = await deposit(partnerA, id);
      assert.ok(Number(sent['amount']) < quoted, `sent ${String(sent['amount'])} of ${quoted}`);
      assert.equal(Number(sent['amount']), Math.floor(quoted * 0.9 * 1e7) / 1e7);
      await untilStatus(base(), keyOf(partnerA), id, 'WRONG_AMOUNT');
      await handlerSees(handlerA, id, 'WRONG_AMOUNT', true);
    });

    test('outside sandbox mode none of the rehearsals exists: 404', async () => {
      const id = await accept(partnerA);
      // Started after the acceptance: the second edge of this process takes over the edge's reply stream.
      const ctx = harness?.ctx ?? assert.fail('the service runs');
      liveEdge = await startEdgeRole({ ...ctx, env: { ...ctx.env, sandbox: false } });
      const url = `http://127.0.0.1:${liveEdge.port}`;
      for (const [method, path] of [
        ['PUT', '/sandbox/webhook-faults'],
        ['GET', '/sandbox/webhook-faults'],
        ['DELETE', '/sandbox/webhook-faults'],
        ['POST', `/sandbox/transactions/${id}/expire`],
        ['POST', `/sandbox/transactions/${id}/fail-next-payout`],
        ['POST', `/sandbox/transactions/${id}/short-next-deposit`],
      ] as const) {
        const answer = await call(url, method, path, { key: keyOf(partnerA), ...(method === 'PUT' ? { body: { duplicate: true } } : {}) });
        assert.deepEqual([answer.status, answer.json['code']], [404, 'not_found'], `${method} ${path}`);
      }
      assert.equal((await call(url, 'GET', `/transaction/${id}`, { key: keyOf(partnerA) })).json['status'], 'AWAITING_PAYMENT', 'nothing expired it');
      const faults = await call(base(), 'GET', '/sandbox/webhook-faults', { key: keyOf(partnerA) });
      assert.equal(faults.json['duplicate'], false, 'the refused PUT set nothing');
    });
  });
}
