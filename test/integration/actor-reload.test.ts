// Every actor type of the service can always be read back. For each one, on the real runtime (bus,
// shard worker, embedded store): a command that leaves the actor's state as it was — on an actor
// with no state yet, the case that once wrote a snapshot its own `decode` could not read — then
// passivation (the actor leaves memory), the next command, a restart of the shard role (every
// actor reloaded from its snapshot, pending entries recovered), and the next command again. An
// actor that could not be read back would leave its commands pending forever: the next answer
// would never come.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { counterCommand, type CounterCommand } from '../../src/actors/counter-actor.ts';
import { loadQuote, loadQuoteRecord } from '../../src/actors/quote-actor.ts';
import { toJsonValue } from '../../src/actors/state-codec.ts';
import type { AcceptReply } from '../../src/actors/transaction-actor.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { defaultLimitsConfig } from '../../src/config/limits.ts';
import { kybCounterKey, kycMonthCounterKey } from '../../src/domain/limits.ts';
import { decimalFromString } from '../../src/domain/money.ts';
import { serviceBehaviors } from '../../src/service/behaviors.ts';
import { startActorHarness, type ActorHarness } from '../support/actor-harness.ts';
import { acceptPayload } from '../support/accept-payload.ts';
import { eventually } from '../support/eventually.ts';
import { sandboxDataKeyring } from '../../src/store/data-keys.ts';

const askTimeoutMs = 10_000;

let harness: ActorHarness;

before(async () => {
  harness = await startActorHarness({ busKind: 'memory' });
});

after(async () => {
  await harness.stop();
});

/** Every actor leaves memory; its snapshot is all that is left of it. */
function passivate(): void {
  for (const worker of harness.workers) worker.runtime.passivateIdle(-1);
}

function ask<Reply>(actorType: string, actorKey: string, kind: string, payload: unknown): Promise<Reply> {
  return harness.client.ask<Reply>(actorType, actorKey, kind, toJsonValue(payload), { timeoutMs: askTimeoutMs });
}

/** The counter's totals as last written, or null while it has none. */
async function counterTotals(key: string): Promise<{ reservedAmount: string; reservedCount: number } | null> {
  const snapshot = await harness.store.load(`counter/${key}`);
  if (snapshot === null || snapshot.state === null) return null;
  const state = snapshot.state as { reservedAmount: { decimal__: string }; reservedCount: number };
  return { reservedAmount: state.reservedAmount.decimal__, reservedCount: state.reservedCount };
}

function reserve(window: 'kycMonth' | 'kyb', transactionId: string, amount: string): CounterCommand {
  return {
    kind: 'reserve',
    window,
    transactionId,
    amount: decimalFromString(amount, 7),
    method: 'PIX',
    standing: { kycEnabled: true, kycApproved: false },
    kybApproved: false,
  };
}

async function tellCounter(key: string, command: CounterCommand): Promise<void> {
  await harness.client.tell('counter', key, command.kind, counterCommand(command), randomUUID());
}

/** A PIX payout quote of `amountBrl`, or (`breb`) a BREB one of `amountCop`. */
async function createQuote(quoteId: string, amount: number, method: 'PIX' | 'BREB' = 'PIX'): Promise<{ ok: boolean; quote?: { quote_id?: string } }> {
  return ask('quote', quoteId, 'create', {
    partnerId: 'reload-partner',
    request: { kind: 'payout', amount, cryptoCurrency: 'USDC', network: 'STELLAR', paymentMethod: method, targetCurrency: method === 'PIX' ? 'BRL' : 'COP' },
  });
}

const validKyc = {
  fullName: 'Ana María Pérez',
  documentType: 'NATIONAL_ID',
  documentNumber: '1.234.567-8',
  dateOfBirth: '1990-02-28',
  nationality: 'Colombian',
  city: 'Bogotá',
  address: 'Calle 100 # 10-20',
  email: 'ana.perez@example.co',
  phone: '+57 300 123 4567',
  documentRef: 'kyc-document:reload',
};

/** The actor types this file covers; a new actor type must get its case here. */
const covered = new Set<string>();

describe('an actor whose command changed nothing is read back after passivation and after a restart', () => {
  test('counter: refusals that change nothing (the KYC gate, the KYB cap) on counters with no state yet', async () => {
    covered.add('counter');
    const kycKey = kycMonthCounterKey('reload-partner', `u-${randomUUID()}`, '2026-01');
    const kybKey = kybCounterKey(`reload-partner-${randomUUID()}`);
    // 30 USDC is past the 25 the KYC gate lets through, 150 past the 100 of the KYB cap: each
    // counter answers "no" (to the asking transaction) and keeps no reservation.
    await tellCounter(kycKey, reserve('kycMonth', 'tx-refused', '30'));
    await tellCounter(kybKey, reserve('kyb', 'tx-refused', '150'));
    // The refusals are written (each sent its answer), with nothing counted.
    await eventually(async () => {
      assert.notEqual(await harness.store.load(`counter/${kycKey}`), null);
      assert.notEqual(await harness.store.load(`counter/${kybKey}`), null);
    });

    passivate();
    await tellCounter(kycKey, reserve('kycMonth', 'tx-a', '10'));
    await tellCounter(kybKey, reserve('kyb', 'tx-a', '10'));
    await eventually(async () => assert.deepEqual(await counterTotals(kycKey), { reservedAmount: '10.0000000', reservedCount: 1 }));
    // The KYB counter reserves at acceptance or counts only completions (either way, it answers):
    // a completion is counted in both.
    await tellCounter(kybKey, { kind: 'commit', transactionId: 'tx-a', amount: decimalFromString('10', 7) });
    await eventually(async () => assert.deepEqual(await counterTotals(kybKey), { reservedAmount: '10.0000000', reservedCount: 1 }));

    await harness.restartWorkers();
    await tellCounter(kycKey, { kind: 'release', transactionId: 'tx-a' });
    await tellCounter(kybKey, reserve('kyb', 'tx-b', '150'));
    await tellCounter(kybKey, { kind: 'commit', transactionId: 'tx-c', amount: decimalFromString('5', 7) });
    await eventually(async () => {
      assert.deepEqual(await counterTotals(kycKey), { reservedAmount: '0.0000000', reservedCount: 0 });
      assert.deepEqual(await counterTotals(kybKey), { reservedAmount: '15.0000000', reservedCount: 2 });
    });
  });

  test('quote: a refused create and a claim of no quote change nothing; then it is made, claimed and used across reloads', async () => {
    covered.add('quote');
    const quoteId = randomUUID();
    const refused = await createQuote(quoteId, 1, 'BREB');
    assert.equal(refused.ok, false, 'below the corridor minimum of 10,000 COP');
    // A claim of a quote that does not exist is answered (to the claiming transaction), and that
    // answer is written with the actor, which still has no state.
    await harness.client.tell('quote', quoteId, 'claim', toJsonValue({ transactionId: 'tx-lost', partnerId: 'reload-partner' }), randomUUID());
    await eventually(async () => assert.notEqual(await harness.store.load(`quote/${quoteId}`), null));
    assert.equal(await loadQuoteRecord(harness.store, quoteId), null, 'still no quote');

    passivate();
    const created = await createQuote(quoteId, 100);
    assert.equal(created.ok, true, JSON.stringify(created));
    assert.equal(created.quote?.quote_id, quoteId);
    await harness.client.tell('quote', quoteId, 'claim', toJsonValue({ transactionId: 'tx-a', partnerId: 'reload-partner' }), randomUUID());
    await eventually(async () => assert.deepEqual((await loadQuoteRecord(harness.store, quoteId))?.use, { transactionId: 'tx-a', status: 'held' }));

    await harness.restartWorkers();
    const again = await createQuote(quoteId, 100);
    assert.deepEqual(again, created, 'the quote as first made');
    await harness.client.tell('quote', quoteId, 'consume', toJsonValue({ transactionId: 'tx-a' }), randomUUID());
    await eventually(async () => assert.deepEqual((await loadQuoteRecord(harness.store, quoteId))?.use, { transactionId: 'tx-a', status: 'used' }));
    passivate();
    assert.deepEqual(await createQuote(quoteId, 100), created);
  });

  test('transaction: a command for a transaction that does not exist, then the acceptance, then a repeat of it', async () => {
    covered.add('transaction');
    const quoteId = randomUUID();
    assert.equal((await createQuote(quoteId, 100)).ok, true);
    const quote = await loadQuote(harness.store, quoteId);
    assert.ok(quote);
    const transactionId = randomUUID();
    const unknown = await ask<{ ok: boolean; code?: string }>('transaction', transactionId, 'PayoutSucceeded', { kind: 'PayoutSucceeded', railReference: 'p-1' });
    assert.deepEqual(unknown, { ok: false, code: 'not_found' });

    passivate();
    const payload = acceptPayload(quote, { userId: `u-${randomUUID()}` });
    const accepted = await ask<AcceptReply>('transaction', transactionId, 'accept', payload);
    assert.equal(accepted.ok && !accepted.kycRequired ? accepted.id : null, transactionId, JSON.stringify(accepted));

    await harness.restartWorkers();
    assert.deepEqual(await ask<AcceptReply>('transaction', transactionId, 'accept', payload), accepted, 'answered as before');
    passivate();
    assert.deepEqual(await ask<AcceptReply>('transaction', transactionId, 'accept', payload), accepted);
  });

  test('kyc: an invalid submission changes nothing; the valid one approves, and a resubmission is answered alike', async () => {
    covered.add('kyc');
    const userId = `u-${randomUUID()}`;
    const submit = (submission: Record<string, string>) => ask<{ ok: boolean; status?: string; code?: string }>('kyc', `reload-partner:${userId}`, 'Submit', { kind: 'Submit', partnerId: 'reload-partner', userId, submission });
    const invalid = await submit({ ...validKyc, email: 'not an e-mail' });
    assert.equal(invalid.code, 'invalid_submission');

    passivate();
    assert.deepEqual(await submit(validKyc), { ok: true, status: 'APPROVED', documentRef: validKyc['documentRef'] });
    await harness.restartWorkers();
    assert.deepEqual(await submit(validKyc), { ok: true, status: 'APPROVED', documentRef: validKyc['documentRef'] });
    passivate();
    assert.deepEqual(await submit(validKyc), { ok: true, status: 'APPROVED', documentRef: validKyc['documentRef'] });
  });

  test('deposit: a settlement for an unknown deposit changes nothing; a claim links it; a repeated claim is answered alike', async () => {
    covered.add('deposit');
    const onChainId = randomUUID().replaceAll('-', '').repeat(2);
    const key = `STELLAR:${onChainId}`;
    const unknown = await ask<{ result: string; code?: string }>('deposit', key, 'refundSettled', { kind: 'refundSettled', refundOnChainId: 'r-1' });
    assert.deepEqual(unknown, { result: 'rejected', code: 'not_found' });

    passivate();
    const transactionId = randomUUID();
    const transfer = { network: 'STELLAR', onChainId, asset: 'USDC', amount: decimalFromString('12.5', 7), sender: 'GSENDER', memo: null };
    const claim = () => ask<{ result: string; transactionId?: string }>('deposit', key, 'claim', { kind: 'claim', transactionId, transfer });
    assert.deepEqual(await claim(), { result: 'enqueued', transactionId });
    await harness.restartWorkers();
    // A repeated claim changes nothing and tells the transaction again (a write with the same state).
    assert.deepEqual(await claim(), { result: 'alreadyProcessed', transactionId, differs: false });
    passivate();
    assert.deepEqual(await claim(), { result: 'alreadyProcessed', transactionId, differs: false });
  });

  test('onramp inventory: a command before its seed changes nothing; then it is seeded, held and released across reloads', async () => {
    covered.add('onramp-inventory');
    const key = 'SOLANA:USDC';
    const unseeded = await ask<{ ok: boolean; code?: string }>('onramp-inventory', key, 'release', { key: 'h-0' });
    assert.deepEqual([unseeded.ok, unseeded.code], [false, 'not_seeded']);

    passivate();
    const held = await ask<{ ok: boolean; available?: string; openHolds?: number }>('onramp-inventory', key, 'hold', { key: 'h-1', amount: '10', seed: '100' });
    assert.deepEqual([held.ok, held.available, held.openHolds], [true, '90.0000000', 1]);
    await harness.restartWorkers();
    // Releasing a key it never held changes nothing, then the held one comes back.
    const none = await ask<{ ok: boolean; available?: string }>('onramp-inventory', key, 'release', { key: 'h-unknown' });
    assert.deepEqual([none.ok, none.available], [true, '90.0000000']);
    passivate();
    const released = await ask<{ ok: boolean; available?: string; openHolds?: number }>('onramp-inventory', key, 'release', { key: 'h-1' });
    assert.deepEqual([released.ok, released.available, released.openHolds], [true, '100.0000000', 0]);
  });

  test('every actor type of the service has its case above', () => {
    const corridors = loadDefaultCorridors();
    const types = serviceBehaviors({ dataKeys: sandboxDataKeyring(), corridors: () => corridors, rates: () => corridors.rates, partnerFee: () => undefined, limits: () => defaultLimitsConfig }).map((behavior) => behavior.type);
    assert.deepEqual([...covered].sort(), [...types].sort());
  });
});
