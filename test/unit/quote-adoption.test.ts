// The quote actor adopting an offer (src/actors/quote-actor.ts): a quote priced by the edge has no
// actor until a transaction claims it, and the claim carries the quote. The actor takes it only
// when it is the actor's own quote and the claiming partner's, writes it with its use and the
// expiry document retention reads, and from then on single use is exactly as before: a second
// transaction hears quote_in_use whatever quote its claim carries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CommandEnvelope, JsonValue } from '../../src/actors/envelope.ts';
import { quoteBehavior, quoteClaimResultKind, quoteExpiryCollection, quoteUseCommand, type QuoteRecord } from '../../src/actors/quote-actor.ts';
import { loadDefaultCorridors } from '../../src/config/corridors.ts';
import { decimal } from '../../src/domain/money.ts';
import type { Quote } from '../../src/domain/quote.ts';
import { handleCommand } from '../support/handle-command.ts';
import { brebPayoutQuote } from '../support/quotes.ts';

const t0 = 1_700_000_000_000;
const corridors = loadDefaultCorridors();
const quotes = quoteBehavior({ corridors: () => corridors, rates: () => corridors.rates, partnerFee: () => undefined });
const offer: Quote = { ...brebPayoutQuote(t0), id: '0b6f3c2e-4d0a-4c36-9a59-6d1f0e2b7c11' };

let sequence = 0;
/** A claim as the transaction actor sends it (through the same command builder and codec). */
function claimOf(transactionId: string, partnerId: string, quote?: Quote, actorKey = offer.id): CommandEnvelope {
  const command = quoteUseCommand(actorKey, 'claim', { transactionId, partnerId, ...(quote === undefined ? {} : { quote }) });
  sequence += 1;
  return { commandId: `c-${sequence}`, actorType: command.actorType, actorKey, kind: command.kind, payload: command.payload, sentAtMs: t0 };
}

function claimAnswer(outcome: ReturnType<typeof quotes.handle>): JsonValue | undefined {
  const sent = outcome.send?.[0];
  assert.equal(sent?.kind, quoteClaimResultKind);
  return sent?.payload;
}

test('a claim carrying its offer is granted: the quote is written with the use and its expiry document', () => {
  const outcome = handleCommand(quotes, null, claimOf('tx-a', 'acme', offer), { nowMs: t0, commandId: 'c' });
  assert.deepEqual(claimAnswer(outcome), { outcome: { ok: true } });
  assert.deepEqual(outcome.state, { quote: offer, use: { transactionId: 'tx-a', status: 'held' } });
  assert.deepEqual(outcome.readModels, [{ collection: quoteExpiryCollection, id: offer.id, doc: { partnerId: 'acme', expiresAtMs: offer.expiresAtMs } }]);
});

test('an adopted quote is single use: a second transaction hears quote_in_use, then quote_used, and keeps the first price', () => {
  const adopted = handleCommand(quotes, null, claimOf('tx-a', 'acme', offer), { nowMs: t0, commandId: 'c' }).state as QuoteRecord;
  const other = { ...offer, rate: decimal(1n, 0) };
  const second = handleCommand(quotes, adopted, claimOf('tx-b', 'acme', other), { nowMs: t0, commandId: 'c' });
  assert.deepEqual(claimAnswer(second), { outcome: { ok: false, rejection: { code: 'quote_in_use' } } });
  assert.equal(second.state, undefined, 'nothing written; the quote carried by the claim is ignored');
  const used: QuoteRecord = { ...adopted, use: { transactionId: 'tx-a', status: 'used' } };
  const third = handleCommand(quotes, used, claimOf('tx-c', 'acme', offer), { nowMs: t0, commandId: 'c' });
  assert.deepEqual(claimAnswer(third), { outcome: { ok: false, rejection: { code: 'quote_used', transactionId: 'tx-a' } } });
});

test("a claim whose quote is another actor's or another partner's, or carries none (previous release), is quote_not_found and writes nothing", () => {
  const notFound = { outcome: { ok: false, rejection: { code: 'quote_not_found' } } };
  for (const command of [
    claimOf('tx-a', 'acme', offer, 'ffffffff-4d0a-4c36-9a59-6d1f0e2b7c11'),
    claimOf('tx-a', 'globex', offer),
    claimOf('tx-a', 'acme', { ...offer, partnerId: 'globex' }),
    claimOf('tx-a', 'acme'),
  ]) {
    const outcome = handleCommand(quotes, null, command, { nowMs: t0, commandId: 'c' });
    assert.deepEqual(claimAnswer(outcome), notFound);
    assert.equal(outcome.state, undefined);
    assert.equal(outcome.readModels, undefined);
  }
});
