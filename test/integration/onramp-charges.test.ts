// Onramp acceptance before the transaction actor, against the embedded store and the sandbox rail:
// the PIX charge is one per transaction whatever the retries, its BR Code is a valid dynamic code for
// the quoted BRL, a payment notice can be matched to the transaction, and the inventory and the PIX
// outage answer with the catalogue's rejections instead of a charge. The inventory is the real one
// (its actor on an in-process actor runtime).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { resolveChainSetups } from '../../src/chains/config.ts';
import { randomAddress } from '../../src/chains/sandbox-chain.ts';
import { sandboxDestinations } from '../support/sandbox-destinations.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { decimalFromExactString } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { decodeBrCode } from '../../src/rails/brcode.ts';
import { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { chargeById, chargeOfTransaction, OnrampCharges } from '../../src/onramp/charges.ts';
import { ActorOnrampInventory } from '../../src/onramp/inventory.ts';
import type { SnapshotStore } from '../../src/store/store.ts';
import { startActorHarness, type ActorHarness } from '../support/actor-harness.ts';

let harness: ActorHarness;
let store: SnapshotStore;
let rail: SandboxRail;
let inventory: ActorOnrampInventory;
let charges: OnrampCharges;
const clock = { nowMs: () => Date.now() };

function onrampQuote(overrides: Partial<Quote> = {}): Quote {
  const nowMs = clock.nowMs();
  return {
    id: randomUUID(),
    partnerId: 'demo',
    kind: 'onramp',
    direction: 'onramp',
    network: 'SOLANA',
    cryptoCurrency: 'USDC',
    paymentMethod: 'PIX',
    targetCurrency: 'BRL',
    tokenDecimals: 6,
    sourceAmount: decimalFromExactString('250.00'),
    targetAmount: decimalFromExactString('46.020183'),
    fee: { amount: decimalFromExactString('0.700815'), currency: 'USDC', type: 'percentage' },
    rate: decimalFromExactString('5.3510'),
    createdAtMs: nowMs,
    expiresAtMs: nowMs + 1_800_000,
    ...overrides,
  };
}

before(async () => {
  harness = await startActorHarness({ busKind: 'memory', onrampOpenHoldsMax: 2 });
  store = harness.store;
  rail = new SandboxRail({ store, clock });
  inventory = new ActorOnrampInventory({ store, actors: harness.client, initialDefault: decimalFromExactString('500') });
  const setups = resolveChainSetups(null, { sandbox: true, corridors: loadDefaultCorridors() });
  charges = new OnrampCharges({ store, rail, inventory, destinations: sandboxDestinations(store, setups, clock), setups: () => setups, clock, log: pino({ level: 'silent' }) });
});

after(async () => {
  await harness.stop();
});

test('one charge per transaction: a retried acceptance gets the same charge; the BR Code asks for the quoted BRL', async () => {
  const quote = onrampQuote();
  const transactionId = randomUUID();
  const destination = randomAddress('SOLANA');
  const first = await charges.prepare({ partnerId: 'demo', transactionId, quote, destination });
  const retry = await charges.prepare({ partnerId: 'demo', transactionId, quote, destination });
  assert.ok(first.ok && retry.ok);
  assert.deepEqual(retry.paymentContext, first.paymentContext);
  const context = first.paymentContext as Record<string, unknown>;
  assert.equal(context['type'], 'pix_charge');
  assert.equal(context['amount'], 250);
  assert.equal(context['cryptoAmount'], 46.020183);
  assert.equal(context['expiresAt'], quote.expiresAtMs);
  assert.equal(context['destination'], destination);
  assert.equal(context['mintAddress'], 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
  assert.equal('depositAddress' in context, false);
  const decoded = decodeBrCode(context['brCode']);
  assert.ok(decoded.ok, 'a valid BR Code (CRC included)');
  assert.equal(decoded.value.kind, 'dynamic');
  assert.equal(decoded.value.amount, '250.00');

  const other = await charges.prepare({ partnerId: 'demo', transactionId: randomUUID(), quote, destination });
  assert.ok(other.ok);
  assert.notEqual((other.paymentContext as Record<string, unknown>)['chargeId'], context['chargeId'], 'another transaction, another charge');
});

test('a payment notice for the charge can be matched to the transaction (and back)', async () => {
  const transactionId = randomUUID();
  const prepared = await charges.prepare({ partnerId: 'demo', transactionId, quote: onrampQuote(), destination: randomAddress('SOLANA') });
  assert.ok(prepared.ok);
  const chargeId = String((prepared.paymentContext as Record<string, unknown>)['chargeId']);
  assert.equal((await chargeById(store, chargeId))?.transactionId, transactionId);
  assert.equal((await chargeOfTransaction(store, transactionId))?.chargeId, chargeId);
});

test('more crypto than the inventory holds: liquidity_insufficient, and no charge is created', async () => {
  const transactionId = randomUUID();
  const answer = await charges.prepare({ partnerId: 'demo', transactionId, quote: onrampQuote({ network: 'CELO', targetAmount: decimalFromExactString('500.000001') }), destination: randomAddress('CELO') });
  assert.deepEqual(answer, { ok: false, rejection: { code: 'liquidity_insufficient' } });
  assert.equal(await chargeOfTransaction(store, transactionId), null);
  assert.ok((await charges.prepare({ partnerId: 'demo', transactionId, quote: onrampQuote({ network: 'CELO', targetAmount: decimalFromExactString('500') }), destination: randomAddress('CELO') })).ok, 'exactly the inventory is fine');
});

test('PIX down at the provider: rail_unavailable (retryable), no charge', async () => {
  await rail.setOutage('PIX', true);
  try {
    const transactionId = randomUUID();
    const answer = await charges.prepare({ partnerId: 'demo', transactionId, quote: onrampQuote(), destination: randomAddress('SOLANA') });
    assert.deepEqual(answer, { ok: false, rejection: { code: 'rail_unavailable', method: 'PIX' } });
    assert.equal(await chargeOfTransaction(store, transactionId), null);
  } finally {
    await rail.setOutage('PIX', false);
  }
});

test('deliveries in flight at the bound of open inventory holds: acceptance answers 503-style (retry later), no charge', async () => {
  const keys = [`delivery:${randomUUID()}`, `delivery:${randomUUID()}`];
  for (const key of keys) assert.equal(await inventory.hold(key, 'SOLANA', 'USDC', decimalFromExactString('1')), 'held');
  try {
    const transactionId = randomUUID();
    const answer = await charges.prepare({ partnerId: 'demo', transactionId, quote: onrampQuote(), destination: randomAddress('SOLANA') });
    assert.deepEqual(answer, { ok: false, unavailable: 'Onramp deliveries on SOLANA (too many in flight)' });
    assert.equal(await chargeOfTransaction(store, transactionId), null);
  } finally {
    for (const key of keys) await inventory.release(key, 'SOLANA', 'USDC');
  }
  assert.ok((await charges.prepare({ partnerId: 'demo', transactionId: randomUUID(), quote: onrampQuote(), destination: randomAddress('SOLANA') })).ok, 'room again once they finish');
});
